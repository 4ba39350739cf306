import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CURRENCY_EXPONENTS } from '../src/app/currency.ts';
import { createLogger } from '../src/app/logger.ts';
import { configureExtpaySandboxCompany, type DemoSeed, extpayWebhookUrl, seedDemo } from '../src/app/seed.ts';
import { buildServer } from '../src/app/server.ts';
import type { Http } from '../src/app/http.ts';
import { sandboxApiBaseUrl } from '../src/providers/extpay/types.ts';
import { SANDBOX_CARDS } from '../src/sandbox/cards.ts';
import { EXTPAY_CARDS } from '../src/sandbox/extpay-provider.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { THREEDS_CARDS } from '../src/sandbox/threeds-gateway.ts';
import { DEMO_TOKEN_NAME, type DemoFunnelOptions, demoFunnelOptions, enableDemoFunnel } from '../web/demo/funnel.ts';
import { ApiClient, startTestApp, type TestApp } from './support/harness.ts';

let app: TestApp;
let sandbox: { url: string; close(): Promise<void> };
let seed: DemoSeed;
let options: DemoFunnelOptions;
let demoServer: Http;
/** The demo pages and their backend, as a browser reaches them: no token. */
let browser: ApiClient;
let demoUrl: string;
/** The demo's 3-D Secure gateway: its sandbox api key and the webhook URL its view shows. */
let threeds: { id: string; apiKey: string; webhookUrl: string };

/** The demo's extpay connection, decrypted: the key and company the sandbox must know. */
let extpay: { id: string; apiKey: string; companyId: string; webhookSecret: string };

/** The sandbox's record of the demo extpay company. */
async function extpayLedger(): Promise<any> {
  return (await fetch(`${sandbox.url}/extpay/sandbox/sandbox/ledger?company_id=${encodeURIComponent(extpay.companyId)}`)).json();
}

/** The page's first step with extpay: Create Order through the funnel's backend. */
async function extpayOrder(email: string, attemptId = `attempt-${email.replace(/[^A-Za-z0-9]/g, '')}`) {
  return browser.post('/demo/api/extpay-order', {
    attempt_id: attemptId,
    email,
    first_name: 'Ada',
    last_name: 'Lovelace',
    billing: { line1: '1 Main St', city: 'Springfield', postal_code: '12345', country: 'US' },
  });
}

/**
 * A customer paying on the provider's hosted page (what the embed's iframe posts), like
 * test/extpay.test.ts's buy(): the sandbox's 303 back to the return URL, not followed.
 */
async function payOnHostedPage(purchaseUrl: string, card: string, returnUrl?: string): Promise<{ status: number; location: URL | null }> {
  const u = new URL(purchaseUrl);
  const form = new URLSearchParams({ session: u.searchParams.get('session')!, email: 'ada@example.com', name: 'Ada Lovelace', card_number: card, setup_future_usage: 'off_session' });
  if (returnUrl) form.set('return_url', returnUrl);
  const res = await fetch(`${u.origin}${u.pathname}`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form });
  await res.text();
  const loc = res.headers.get('location');
  return { status: res.status, location: loc ? new URL(loc) : null };
}

/** The sandbox's record of the demo 3-D Secure account. */
async function ledger(): Promise<any> {
  return (await fetch(`${sandbox.url}/3ds/sandbox/ledger?api_key=${encodeURIComponent(threeds.apiKey)}`)).json();
}

async function configureSandboxAccount(settings: Record<string, unknown>): Promise<void> {
  const r = await fetch(`${sandbox.url}/3ds/sandbox/accounts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ api_key: threeds.apiKey, ...settings }),
  });
  expect(r.status, await r.text()).toBe(200);
}

/** A browser on the hosted page pressing one of its links: the sandbox's 302, not followed. */
async function hostedPage(redirectUrl: string, result: 'success' | 'fail' | 'abandon'): Promise<URL> {
  const page = await fetch(redirectUrl);
  expect(page.status).toBe(200);
  expect(await page.text()).toContain('id="authenticate"');
  const r = await fetch(`${redirectUrl}/complete?result=${result}`, { redirect: 'manual' });
  expect(r.status).toBe(302);
  return new URL(r.headers.get('location')!);
}

/** Lead, then Pay with 3-D Secure: the answer asks for the redirect. */
async function leadAndPayThreeDs(email: string, card: string): Promise<{ orderNumber: string; redirectUrl: string; pay: any }> {
  const lead = await browser.post('/demo/api/lead', { email, first_name: 'Ada', last_name: 'Lovelace' });
  expect(lead.status, JSON.stringify(lead.body)).toBe(201);
  const orderNumber = lead.body.data.order_number as string;
  const pay = await browser.post('/demo/api/pay', {
    order_number: orderNumber,
    attempt_id: `attempt-${orderNumber.slice(-12)}`,
    method: 'threeds',
    risk_session_id: 'rs_demo_test',
    card_number: card.replace(/(\d{4})(?=\d)/g, '$1 '),
    card_exp: '12/30',
    card_cvv: '123',
    billing: { line1: '1 Main St', city: 'Springfield', postal_code: '12345', country: 'US' },
  });
  return { orderNumber, redirectUrl: pay.body?.data?.redirect_url, pay };
}

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, slowMs: 50 });
  app = await startTestApp();
  seed = await seedDemo(app.ctx, { sandboxUrl: sandbox.url });
  options = (await demoFunnelOptions(app.ctx, seed))!;
  // Routes are added before listen, as `npm start` does; this server shares the test app's services.
  demoServer = await buildServer(app.ctx, createLogger('warn'));
  enableDemoFunnel(demoServer, options);
  await demoServer.listen({ host: '127.0.0.1', port: 0 });
  const addr = demoServer.server.address();
  demoUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  browser = new ApiClient(demoUrl, undefined);
  const row = await app.ctx.store.run((db) => app.ctx.services.gateways.findGateway(db, seed.team_id, seed.threeds_gateway_id!));
  threeds = { id: row!.id, apiKey: app.ctx.services.gateways.account(row!).credentials.api_key!, webhookUrl: app.ctx.services.gateways.gatewayView(row!).webhook_url! };
  const conn = await app.ctx.store.run((db) => app.ctx.services.connections.findLive(db, seed.team_id, seed.extpay_connection_id!));
  const c = app.ctx.services.connections.connection(conn!);
  extpay = { id: conn!.id, apiKey: c.apiKey, companyId: c.companyId, webhookSecret: c.webhookSecret! };
});
afterAll(async () => {
  await demoServer?.close();
  await app?.close();
  await sandbox?.close();
});

describe('demo funnel', () => {
  it('serves the three pages; the checkout lists every sandbox test card', async () => {
    const checkout = await browser.get('/demo', { accept: 'text/html' });
    expect(checkout.status).toBe(200);
    expect(checkout.headers.get('content-type')).toMatch(/^text\/html/);
    for (const number of Object.values(SANDBOX_CARDS)) expect(checkout.text).toContain(`data-card="${number}"`);
    expect(checkout.text).toContain('Declined: insufficient funds');
    expect(checkout.text).toContain('value="4111 1111 1111 1111"');
    expect(checkout.text).not.toContain(options.token);
    for (const page of ['/demo/upsell', '/demo/thank-you', '/demo/assets/demo.js', '/demo/assets/demo.css']) {
      const r = await browser.get(page);
      expect(r.status, page).toBe(200);
      expect(r.text).not.toContain(options.token);
    }
    // The pages show amounts in the API's minor units (HUF with 2 decimals, where Intl has 0).
    const script = await browser.get('/demo/assets/demo.js');
    expect(script.text.split('\n')[0]).toBe(`window.CHECKSTAND_CURRENCY_EXPONENTS = ${JSON.stringify(CURRENCY_EXPONENTS)};`);
    expect((await browser.get('/demo/assets/constructor')).status).toBe(404);
    expect((await browser.get('/demo/assets/..%2Ffunnel.ts')).status).toBe(404);
  });

  it('the config names the campaign, the offer, the upsell and the test cards, never the token', async () => {
    const r = await browser.get('/demo/api/config');
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      campaign_id: seed.campaign_id,
      currency: 'USD',
      offers: [{ id: seed.offers.serum, price: 3900, shipping: 495 }],
      // The guide (step 2, $9): the step-1 upsell is a $0 trial, which the gateway refuses to charge.
      upsell: { id: seed.upsells[1]!.upsell_id, offer: { id: seed.offers.guide, price: 900 } },
    });
    expect(r.body.data.test_cards).toContainEqual({ name: 'approve', number: '4111111111111111', response_code: '100', effect: 'Approved' });
    expect(r.text).not.toContain(options.token);
  });

  it('lead → pay (approve card) → upsell → complete, through the public API', async () => {
    const lead = await browser.post('/demo/api/lead', { email: 'ada.demo@example.com', first_name: 'Ada', last_name: 'Lovelace' });
    expect(lead.status, JSON.stringify(lead.body)).toBe(201);
    const orderNumber = lead.body.data.order_number as string;
    expect(lead.body.data).toMatchObject({ status: 'lead', campaign_id: seed.campaign_id, total: 4395 });

    const pay = await browser.post('/demo/api/pay', {
      order_number: orderNumber,
      attempt_id: 'attempt-0001',
      card_number: '4111 1111 1111 1111',
      card_exp: '12/30',
      card_cvv: '123',
      billing: { line1: '1 Main St', city: 'Springfield', postal_code: '12345', country: 'US' },
    });
    expect(pay.status, JSON.stringify(pay.body)).toBe(200);
    expect(pay.body).toMatchObject({ success: true, data: { order_number: orderNumber, payment_status: 'completed' } });

    const upsell = await browser.post('/demo/api/upsell', { order_number: orderNumber });
    expect(upsell.status, JSON.stringify(upsell.body)).toBe(200);
    expect(upsell.body.success).toBe(true);
    expect(upsell.body.data.lines.map((l: { upsell_id: string | null }) => l.upsell_id)).toContain(seed.upsells[1]!.upsell_id);
    expect(upsell.body.data.total).toBe(4395 + 900);

    const complete = await browser.post('/demo/api/complete', { order_number: orderNumber });
    expect(complete.status, JSON.stringify(complete.body)).toBe(200);
    expect(complete.body.success).toBe(true);
    expect(complete.body.data).toMatchObject({ order_number: orderNumber });

    // The merchant's view of the same order, through the API with the merchant's own token.
    const merchant = new ApiClient(app.url, seed.token);
    const order = await merchant.get(`/v1/orders/${orderNumber}`);
    expect(order.body.data.lines).toHaveLength(2);
    // Completion queued the purchase confirmation (the worker, not running here, would send it).
    const mail = await merchant.get(`/v1/mail?order_number=${orderNumber}`);
    expect(mail.body.data).toEqual([expect.objectContaining({ kind: 'purchase_confirmation', to: 'ada.demo@example.com', status: 'pending' })]);
    const shown = await merchant.get(`/v1/mail/${mail.body.data[0].id}`);
    expect(shown.body.data.text_body).toContain('Total: $52.95');
    expect(shown.body.data.text_body).toContain('- Skin Routine Guide × 1: $9.00');
  });

  it("a decline card shows the API's decline; the same attempt id replays the first answer", async () => {
    const lead = await browser.post('/demo/api/lead', { email: 'grace.demo@example.com' });
    const orderNumber = lead.body.data.order_number as string;
    const body = { order_number: orderNumber, attempt_id: 'attempt-decline-1', card_number: SANDBOX_CARDS.insufficientFunds, card_exp: '12/30', card_cvv: '123' };
    const pay = await browser.post('/demo/api/pay', body);
    expect(pay.status).toBe(402);
    expect(pay.body).toMatchObject({ success: false, data: { order_number: orderNumber } });
    expect(pay.body.message).toMatch(/declined/i);
    const again = await browser.post('/demo/api/pay', body);
    expect(again.text).toBe(pay.text);
  });

  it('seeds a 3-D Secure gateway on the sandbox and tells the sandbox where its webhooks go', async () => {
    expect(seed.threeds_gateway_id).toMatch(/^gw_/);
    expect(options.threeDsGatewayId).toBe(seed.threeds_gateway_id);
    const merchant = new ApiClient(app.url, seed.token);
    const gw = await merchant.get(`/v1/gateways/${seed.threeds_gateway_id}`);
    expect(gw.status, JSON.stringify(gw.body)).toBe(200);
    expect(gw.body.data).toMatchObject({
      kind: 'threeds',
      base_url: `${sandbox.url}/3ds`,
      test_mode: true,
      is_active: true,
      risk_sdk_key: 'pk_test_demo',
      webhook_secret_configured: true,
      webhook_url: `${threeds.webhookUrl}`,
    });
    expect(threeds.apiKey).toMatch(/^sk_test_demo_[A-Za-z0-9]{24}$/);
    // The campaign still pays through the NMI-compatible gateway.
    expect((await merchant.get(`/v1/campaigns/${seed.campaign_id}`)).body.data.gateway_id).toBe(seed.gateway_id);
    const account = (await ledger()).account;
    expect(account).toMatchObject({ webhook_url: threeds.webhookUrl, webhook_secret_set: true });

    // The test app's view shows port 0 (it listens on a port picked later): point the sandbox at
    // where the app really is, as PUBLIC_BASE_URL would, so its signed webhooks arrive.
    await configureSandboxAccount({ webhook_url: `${app.url}/webhooks/gateways/${threeds.id}`, webhook_retry_delays_ms: [0, 50, 100] });
  });

  it('offers "Card with 3-D Secure" with its own test cards', async () => {
    const checkout = await browser.get('/demo', { accept: 'text/html' });
    expect(checkout.text).toContain('Card (sandbox gateway)');
    expect(checkout.text).toContain('Card with 3-D Secure (sandbox 3DS gateway)');
    for (const number of Object.values(THREEDS_CARDS)) expect(checkout.text).toContain(`data-card="${number}"`);
    const config = await browser.get('/demo/api/config');
    expect(config.body.data.payment_methods).toEqual([
      { id: 'card', label: 'Card (sandbox gateway)' },
      { id: 'threeds', label: 'Card with 3-D Secure (sandbox 3DS gateway)' },
      { id: 'extpay', label: 'Pay with extpay (embedded checkout)' },
    ]);
    expect(config.body.data.threeds_test_cards.map((c: { number: string }) => c.number)).toEqual(Object.values(THREEDS_CARDS));
    expect(config.body.data.threeds_test_cards).toContainEqual({ name: 'challenge', number: THREEDS_CARDS.challenge, effect: expect.stringMatching(/hosted 3-D Secure page/) });
    const back = await browser.get('/demo/return?order_number=ord_x&payment_id=pay_x', { accept: 'text/html' });
    expect(back.status).toBe(200);
    expect(back.text).toContain('data-page="return"');
    expect(back.text).not.toContain(options.token);
  });

  it('lead → pay with 3-D Secure → hosted page → /demo/return → capture 200 → upsell → complete', async () => {
    const email = 'ada.3ds@example.com';
    const { orderNumber, redirectUrl, pay } = await leadAndPayThreeDs(email, THREEDS_CARDS.challenge);
    expect(pay.status, JSON.stringify(pay.body)).toBe(200);
    expect(pay.body).toMatchObject({ success: true, data: { order_number: orderNumber, payment_status: 'pending_redirect', redirect_required: true } });
    expect(redirectUrl).toMatch(new RegExp(`^${sandbox.url}/3ds/authenticate/pay_`));

    // Nothing advances before Capture: no upsell, no completion.
    expect((await browser.post('/demo/api/upsell', { order_number: orderNumber })).status).toBe(409);
    expect((await browser.post('/demo/api/complete', { order_number: orderNumber })).status).toBe(409);

    // The sandbox got what the demo sent: the 3-D Secure URLs back to this funnel, the risk session.
    const sent = (await ledger()).payments.find((p: { id: string }) => redirectUrl.endsWith(`/${p.id}`));
    expect(sent).toMatchObject({ status: 'requires_action', amount: 4395, currency: 'USD' });

    // "Authenticate" sends the browser back to /demo/return with the gateway's payment id.
    const back = await hostedPage(redirectUrl, 'success');
    expect(`${back.origin}${back.pathname}`).toBe(`${demoUrl}/demo/return`);
    expect(back.searchParams.get('order_number')).toBe(orderNumber);
    const paymentId = back.searchParams.get('payment_id');
    expect(paymentId).toBe(sent.id);
    const page = await browser.get(`${back.pathname}${back.search}`, { accept: 'text/html' });
    expect(page.status).toBe(200);
    expect(page.text).toContain('data-page="return"');

    // What that page does: Capture (200 whether it or the gateway's webhook got there first).
    const capture = await browser.post('/demo/api/capture', { order_number: orderNumber, payment_id: paymentId });
    expect(capture.status, JSON.stringify(capture.body)).toBe(200);
    expect(capture.body).toMatchObject({ success: true, data: { order_number: orderNumber, payment_status: 'completed', status: 'completed' } });
    expect(capture.body.message).toMatch(/^Payment (already )?captured\.$/);

    // The one-click upsell on the card the 3-D Secure payment saved (merchant-initiated, no 3DS) …
    const upsell = await browser.post('/demo/api/upsell', { order_number: orderNumber });
    expect(upsell.status, JSON.stringify(upsell.body)).toBe(200);
    expect(upsell.body.data.total).toBe(4395 + 900);
    // … and Complete Order, which Capture already did: 200, nothing done twice.
    const complete = await browser.post('/demo/api/complete', { order_number: orderNumber });
    expect(complete.status, JSON.stringify(complete.body)).toBe(200);
    expect(complete.body).toMatchObject({ success: true, data: { order_number: orderNumber, status: 'completed', payment_status: 'completed' } });
    expect((await browser.post('/demo/api/capture', { order_number: orderNumber })).body.message).toBe('Payment already captured.');

    const merchant = new ApiClient(app.url, seed.token);
    const order = (await merchant.get(`/v1/orders/${orderNumber}`)).body.data;
    expect(order).toMatchObject({ status: 'completed', payment_status: 'completed', is_test: true });
    expect(order.lines).toHaveLength(2);
    expect(order.transactions.map((t: { gateway_id: string }) => t.gateway_id)).toEqual([threeds.id, threeds.id]);
    expect(order.events.filter((e: { type: string }) => e.type === 'order.completed')).toHaveLength(1);
    const mail = await merchant.get(`/v1/mail?order_number=${orderNumber}`);
    expect(mail.body.data).toEqual([expect.objectContaining({ kind: 'purchase_confirmation', to: email })]);
    // The sandbox's signed PAYMENT_SUCCEEDED webhook reached the app (and changed nothing more).
    await expect
      .poll(async () => (await ledger()).events.find((e: { type: string; payment_id: string }) => e.type === 'PAYMENT_SUCCEEDED' && e.payment_id === paymentId)?.attempts.at(-1)?.status)
      .toBe(200);
  });

  it('3-D Secure under review: capture answers 202 and nothing advances until the gateway approves', async () => {
    await configureSandboxAccount({ review_ms: null });
    try {
      const { orderNumber, redirectUrl, pay } = await leadAndPayThreeDs('ada.review@example.com', THREEDS_CARDS.challengeThenReview);
      expect(pay.body.data.redirect_required, JSON.stringify(pay.body)).toBe(true);
      const back = await hostedPage(redirectUrl, 'success');
      expect(back.pathname).toBe('/demo/return');
      const paymentId = back.searchParams.get('payment_id')!;
      const capture = await browser.post('/demo/api/capture', { order_number: orderNumber, payment_id: paymentId });
      expect(capture.status, JSON.stringify(capture.body)).toBe(202);
      expect(capture.body).toMatchObject({ success: true, data: { payment_status: 'pending_external_confirmation' } });
      expect((await browser.post('/demo/api/upsell', { order_number: orderNumber })).status).toBe(409);
      expect((await browser.post('/demo/api/capture', { order_number: orderNumber })).status).toBe(202);

      // The bank approves: its webhook completes the order; Capture then answers 200.
      const resolved = await fetch(`${sandbox.url}/3ds/sandbox/payments/${paymentId}/resolve`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ result: 'succeeded' }),
      });
      expect(resolved.status).toBe(200);
      await expect.poll(async () => (await browser.post('/demo/api/capture', { order_number: orderNumber })).status).toBe(200);
      const done = await browser.post('/demo/api/capture', { order_number: orderNumber });
      expect(done.body).toMatchObject({ message: 'Payment already captured.', data: { status: 'completed', payment_status: 'completed' } });
    } finally {
      await configureSandboxAccount({ review_ms: 10_000 });
    }
  });

  it('3-D Secure failed or abandoned: back on the cancel URL, Capture answers 422; a frictionless card needs no redirect', async () => {
    for (const result of ['fail', 'abandon'] as const) {
      const { orderNumber, redirectUrl } = await leadAndPayThreeDs(`ada.${result}@example.com`, THREEDS_CARDS.challenge);
      const back = await hostedPage(redirectUrl, result);
      expect(`${back.origin}${back.pathname}`).toBe(`${demoUrl}/demo`);
      expect(back.searchParams.get('cancelled')).toBe('1');
      expect(back.searchParams.get('order_number')).toBe(orderNumber);
      expect((await browser.get(`${back.pathname}${back.search}`, { accept: 'text/html' })).status).toBe(200);
      const capture = await browser.post('/demo/api/capture', { order_number: orderNumber, payment_id: back.searchParams.get('payment_id') });
      expect(capture.body.success).toBe(false);
      if (result === 'abandon') {
        // Nothing decided: the payment still waits for the hosted page, the order for its payment.
        expect(capture.status, JSON.stringify(capture.body)).toBe(422);
        expect(capture.body).toMatchObject({ error: { code: 'payment_not_completed' }, data: { status: 'pending', payment_status: 'pending_redirect' } });
      } else {
        // Declined by Capture (422), or already by the gateway's PAYMENT_FAILED webhook (then nothing is left to capture: 404).
        expect([422, 404], JSON.stringify(capture.body)).toContain(capture.status);
        await expect.poll(async () => (await new ApiClient(app.url, seed.token).get(`/v1/orders/${orderNumber}`)).body.data.status).toBe('declined');
      }
    }

    const { pay } = await leadAndPayThreeDs('ada.frictionless@example.com', THREEDS_CARDS.frictionless);
    expect(pay.status, JSON.stringify(pay.body)).toBe(200);
    expect(pay.body.data).toMatchObject({ payment_status: 'completed', redirect_required: false });

    const declined = await leadAndPayThreeDs('ada.3ds-declined@example.com', THREEDS_CARDS.insufficientFunds);
    expect(declined.pay.status).toBe(402);
    expect(declined.pay.body.error).toMatchObject({ code: 'payment_declined' });
  });

  it('seeds an extpay connection (Sandbox) on the sandbox and registers its company, key, webhook URL and secret there', async () => {
    expect(seed.extpay_connection_id).toMatch(/^xc_/);
    expect(options.extpay).toEqual({ connectionId: seed.extpay_connection_id, embedScriptUrl: `${sandbox.url}/extpay/embed.js` });
    const merchant = new ApiClient(app.url, seed.token);
    const conn = await merchant.get(`/v1/extpay-connections/${seed.extpay_connection_id}`);
    expect(conn.status, JSON.stringify(conn.body)).toBe(200);
    expect(conn.body.data).toMatchObject({
      type: 'extpay',
      environment: 'sandbox',
      test_mode: true,
      status: 'active',
      company_id: extpay.companyId,
      base_url: sandboxApiBaseUrl(sandbox.url, 'sandbox'),
      webhook_secret_configured: true,
    });
    expect(extpay.companyId).toMatch(/^biz_[A-Za-z0-9]+$/);
    expect(extpay.webhookSecret).toMatch(/^ws_[A-Za-z0-9]{40}$/);
    expect(conn.text).not.toContain(extpay.apiKey);
    expect(conn.text).not.toContain(extpay.webhookSecret);
    // The sandbox knows the company: webhooks go to the API's /webhooks/extpay, signed with the secret.
    const company = (await extpayLedger()).company;
    expect(company).toMatchObject({ company_id: extpay.companyId, webhook_url: extpayWebhookUrl(app.ctx.config), webhook_secret_set: true, api_keys: [{ key_suffix: extpay.apiKey.slice(-4) }] });
    expect(company.webhook_url).toBe(`http://${app.ctx.config.host}:${app.ctx.config.port}/webhooks/extpay`);
    // … and its key: the connection test authenticates and may create checkouts.
    const test = await merchant.post(`/v1/extpay-connections/${seed.extpay_connection_id}/test`);
    expect(test.body.data, JSON.stringify(test.body)).toMatchObject({ result: 'connected' });
    // A second registration (every start does one) changes nothing.
    expect(await configureExtpaySandboxCompany(app.ctx, seed.team_id, extpay.id)).toBe(true);
    expect((await extpayLedger()).company).toEqual(company);
  });

  it('PUBLIC_BASE_URL names the webhook address; an unreachable sandbox gives a warning without key or secret', async () => {
    expect(extpayWebhookUrl({ publicBaseUrl: 'https://shop.example/', host: '0.0.0.0', port: 3000 })).toBe('https://shop.example/webhooks/extpay');
    expect(extpayWebhookUrl({ publicBaseUrl: undefined, host: '127.0.0.1', port: 3000 })).toBe('http://127.0.0.1:3000/webhooks/extpay');
    const team = await app.newTeam('Unreachable sandbox');
    const down = await team.api.post('/v1/extpay-connections', {
      name: 'down',
      api_key: 'apik_down_0123456789abcdef',
      company_id: 'biz_down',
      environment: 'Sandbox',
      webhook_secret: 'ws_down_secret_0123456789',
      base_url: sandboxApiBaseUrl('http://127.0.0.1:9', 'sandbox'),
    });
    expect(down.status, down.text).toBe(201);
    const warnings: string[] = [];
    const ok = await configureExtpaySandboxCompany(app.ctx, team.teamId, down.body.data.id, { warn: (obj, msg) => warnings.push(`${msg} ${JSON.stringify(obj)}`) });
    expect(ok).toBe(false);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('http://127.0.0.1:9/extpay/sandbox/sandbox/companies');
    expect(warnings[0]).not.toContain('apik_down_0123456789abcdef');
    expect(warnings[0]).not.toContain('ws_down_secret_0123456789');
  });

  it('offers "Pay with extpay (embedded checkout)": the embed loader, its mount point and the provider\'s test cards', async () => {
    const checkout = await browser.get('/demo', { accept: 'text/html' });
    expect(checkout.text).toContain('<input type="radio" name="method" value="extpay">');
    expect(checkout.text).toContain('Pay with extpay (embedded checkout)');
    expect(checkout.text).toContain(`id="extpay-checkout" class="embed" data-embed-src="${sandbox.url}/extpay/embed.js"`);
    for (const number of Object.values(EXTPAY_CARDS)) expect(checkout.text).toContain(`<code>${number.replace(/(\d{4})(?=\d)/g, '$1 ')}</code>`);
    expect(checkout.text).not.toContain(options.token);
    expect(checkout.text).not.toContain(extpay.apiKey);
    const config = await browser.get('/demo/api/config');
    expect(config.body.data.extpay_embed_script_url).toBe(`${sandbox.url}/extpay/embed.js`);
    expect(config.body.data.extpay_test_cards.map((c: { number: string }) => c.number)).toEqual(Object.values(EXTPAY_CARDS));
    // The loader the page mounts is there, with Whop's attribute names.
    const loader = await fetch(`${sandbox.url}/extpay/embed.js`);
    expect(loader.status).toBe(200);
    expect(await loader.text()).toContain('whopCheckoutOnComplete');
  });

  it('extpay: Create Order (checkout object) → the provider\'s page → /demo/return → Capture 200 completed → upsell → thank-you read', async () => {
    const email = 'ada.extpay@example.com';
    const created = await extpayOrder(email);
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const d = created.body.data;
    const orderNumber = d.order_number as string;
    expect(d).toMatchObject({ payment_status: 'pending_redirect', redirect_required: true, total: 4395, customer: { email } });
    expect(d.checkout).toMatchObject({ provider: 'extpay', environment: 'sandbox', setup_future_usage: 'off_session', prefill: { email, name: 'Ada Lovelace' } });
    expect(d.checkout.session_id).toMatch(/^ch_/);
    expect(d.checkout.purchase_url).toBe(`${sandbox.url}/extpay/sandbox/checkout/${d.checkout.plan_id}?session=${d.checkout.session_id}`);
    expect(d.redirect_url).toBe(d.checkout.purchase_url);
    // One order per click: the same attempt replays the first answer (the backend's Idempotency-Key).
    expect((await extpayOrder(email)).text).toBe(created.text);
    // Create Order, not a lead + Process Payment; pinned to the demo connection.
    const merchant = new ApiClient(app.url, seed.token);
    const pending = (await merchant.get(`/v1/orders/${orderNumber}`)).body.data;
    expect(pending).toMatchObject({ status: 'pending', payment_status: 'pending_redirect' });
    expect(pending.transactions).toEqual([expect.objectContaining({ status: 'pending', connection_id: extpay.id })]);
    expect(pending.billing_address).toMatchObject({ line1: '1 Main St', country: 'US' });
    // Nothing advances before Capture.
    expect((await browser.post('/demo/api/upsell', { order_number: orderNumber })).status).toBe(409);
    expect((await browser.post('/demo/api/complete', { order_number: orderNumber })).status).toBe(409);

    // Paid on the provider's hosted page, which sends the browser back to the funnel's return URL.
    const paid = await payOnHostedPage(d.checkout.purchase_url, EXTPAY_CARDS.paid);
    expect(paid.status).toBe(303);
    expect(`${paid.location!.origin}${paid.location!.pathname}`).toBe(`${demoUrl}/demo/return`);
    expect(paid.location!.searchParams.get('method')).toBe('extpay');
    const receipt = paid.location!.searchParams.get('payment_id');
    expect(receipt).toMatch(/^pay_/);
    const page = await browser.get(`${paid.location!.pathname}${paid.location!.search}`, { accept: 'text/html' });
    expect(page.status).toBe(200);
    expect(page.text).toContain('data-page="return"');

    // What that page (or the embed's on-complete) does: Capture with the receipt id.
    const capture = await browser.post('/demo/api/capture', { order_number: orderNumber, payment_id: receipt });
    expect(capture.status, JSON.stringify(capture.body)).toBe(200);
    expect(capture.body).toMatchObject({ success: true, data: { order_number: orderNumber, payment_status: 'completed', status: 'completed' } });
    expect(capture.body.message).toMatch(/^Payment (already )?captured\.$/);
    const settled = (await extpayLedger()).payments.find((p: { id: string }) => p.id === receipt);
    expect(settled).toMatchObject({ status: 'paid', total: 43.95 });

    // The one-click upsell: whatever the API answers on an extpay order (202 accepted, 402
    // declined) is what the page gets; a repeat of the API call replays it.
    const upsell = await browser.post('/demo/api/upsell', { order_number: orderNumber });
    expect([202, 402], JSON.stringify(upsell.body)).toContain(upsell.status);
    const direct = await merchant.post('/checkout/orders/upsell', { order_number: orderNumber, upsell_id: options.upsells[0], quantity: 1 });
    expect([direct.status, direct.text]).toEqual([upsell.status, upsell.text]);
    if (upsell.status === 202) expect(upsell.body).toMatchObject({ success: true, data: { payment_status: 'pending_external_confirmation' } });

    const complete = await browser.post('/demo/api/complete', { order_number: orderNumber });
    expect(complete.status, JSON.stringify(complete.body)).toBe(200);
    // The thank-you page reads the order as it stands, and only what it shows.
    const shown = await browser.get(`/demo/api/orders/${orderNumber}`);
    expect(shown.status, JSON.stringify(shown.body)).toBe(200);
    expect(Object.keys(shown.body.data).sort()).toEqual(['currency', 'customer', 'discount_total', 'is_test', 'lines', 'order_number', 'payment_status', 'shipping_total', 'status', 'subtotal', 'total', 'upsells_pending']);
    expect(shown.body.data).toMatchObject({ order_number: orderNumber, status: 'completed', payment_status: 'completed', customer: { email }, lines: [{ name: 'Glow Serum, one bottle', quantity: 1 }] });
    expect(shown.text).not.toContain('1 Main St');
    // An accepted upsell waits for the provider's payment.succeeded (this test app receives no webhooks).
    expect(shown.body.data.upsells_pending).toBe(upsell.status === 202 ? 1 : 0);
    const order = (await merchant.get(`/v1/orders/${orderNumber}`)).body.data;
    expect(order.events.filter((e: { type: string }) => e.type === 'order.completed')).toHaveLength(1);
    expect((await browser.get('/demo/api/orders/ord_doesnotexist')).status).toBe(404);
    expect((await browser.get('/demo/api/orders/..%2Fv1%2Forders')).status).toBe(422);
  });

  it('extpay, money held (pending card): Capture answers 202 pending_external_confirmation and the funnel goes on; settled later, 200', async () => {
    const created = await extpayOrder('ada.extpay-held@example.com');
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const orderNumber = created.body.data.order_number as string;
    // The embed's return URL: the page adds the order number to the one Create Order got.
    const returnUrl = `${demoUrl}/demo/return?method=extpay&order_number=${orderNumber}`;
    const held = await payOnHostedPage(created.body.data.checkout.purchase_url, EXTPAY_CARDS.pending, returnUrl);
    expect(held.status).toBe(303);
    expect(held.location!.searchParams.get('order_number')).toBe(orderNumber);
    const receipt = held.location!.searchParams.get('payment_id')!;
    const capture = await browser.post('/demo/api/capture', { order_number: orderNumber, payment_id: receipt });
    expect(capture.status, JSON.stringify(capture.body)).toBe(202);
    expect(capture.body).toMatchObject({ success: true, data: { order_number: orderNumber, payment_status: 'pending_external_confirmation' } });
    expect((await browser.get(`/demo/api/orders/${orderNumber}`)).body.data).toMatchObject({ payment_status: 'pending_external_confirmation' });
    // Safe to retry: still 202, nothing charged twice.
    expect((await browser.post('/demo/api/capture', { order_number: orderNumber, payment_id: receipt })).status).toBe(202);

    // The provider settles: Capture (or its webhook) completes the order.
    const settle = await fetch(`${sandbox.url}/extpay/sandbox/sandbox/payments/${receipt}/settle`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(settle.status).toBe(200);
    const done = await browser.post('/demo/api/capture', { order_number: orderNumber, payment_id: receipt });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect((await browser.get(`/demo/api/orders/${orderNumber}`)).body.data).toMatchObject({ status: 'completed', payment_status: 'completed' });
    expect((await extpayLedger()).payments.filter((p: { id: string }) => p.id === receipt)).toHaveLength(1);
  });

  it('extpay declined on the provider\'s page: Capture answers 422 (back to the checkout); bad input never reaches the API', async () => {
    const created = await extpayOrder('ada.extpay-declined@example.com');
    const orderNumber = created.body.data.order_number as string;
    const declined = await payOnHostedPage(created.body.data.checkout.purchase_url, EXTPAY_CARDS.failed);
    expect(declined.status).toBe(402);
    expect(declined.location).toBeNull();
    const capture = await browser.post('/demo/api/capture', { order_number: orderNumber });
    expect(capture.status, JSON.stringify(capture.body)).toBe(422);
    expect(capture.body).toMatchObject({ success: false });
    expect(capture.body.message).toMatch(/payment capture failed/i);

    // No card fields, ever: the card goes to the provider only.
    const card = await browser.post('/demo/api/extpay-order', { attempt_id: 'attempt-card-1', email: 'x@example.com', card_number: EXTPAY_CARDS.paid });
    expect(card.status).toBe(422);
    expect(card.body.error.fields).toEqual([{ path: 'card_number', message: 'is not a field you can set here' }]);
    expect((await browser.post('/demo/api/extpay-order', { email: 'x@example.com' })).status).toBe(422);
    expect((await browser.post('/demo/api/extpay-order', { attempt_id: 'attempt-bad-email', email: 'nope' })).status).toBe(422);
    const merchant = new ApiClient(app.url, seed.token);
    expect((await merchant.get('/v1/orders?customer_email=x%40example.com')).body.data).toEqual([]);
  });

  it('refuses bad input before calling the API (422), and cannot be pointed at another campaign', async () => {
    const bad = await browser.post('/demo/api/lead', { email: 'not-an-email' });
    expect(bad.status).toBe(422);
    const extra = await browser.post('/demo/api/lead', { email: 'x@example.com', campaign_id: 'cmp_other' });
    expect(extra.status).toBe(422);
    expect(extra.body.error.fields).toEqual([{ path: 'campaign_id', message: 'is not a field you can set here' }]);
  });

  it('later starts: reads data/demo.json and replaces the previous demo-funnel token', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkstand-demo-'));
    try {
      const { token: _t, ...ids } = seed;
      fs.writeFileSync(path.join(dir, 'demo.json'), JSON.stringify(ids));
      await configureSandboxAccount({ webhook_url: null });
      // The sandbox forgets its companies when it stops.
      const reset = await fetch(`${sandbox.url}/extpay/sandbox/sandbox/reset`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ company_id: extpay.companyId }) });
      expect(reset.status).toBe(200);
      expect((await extpayLedger()).company).toBeNull();
      const later = await demoFunnelOptions({ ...app.ctx, config: { ...app.ctx.config, dataDir: dir } });
      expect(later).toMatchObject({
        campaignId: seed.campaign_id,
        offers: [seed.offers.serum],
        upsells: [seed.upsells[1]!.upsell_id, seed.upsells[0]!.upsell_id],
        threeDsGatewayId: seed.threeds_gateway_id,
        extpay: { connectionId: seed.extpay_connection_id, embedScriptUrl: `${sandbox.url}/extpay/embed.js` },
      });
      // The sandbox forgets its accounts when it stops: a later start tells it again.
      expect((await ledger()).account).toMatchObject({ webhook_url: threeds.webhookUrl, webhook_secret_set: true });
      expect((await extpayLedger()).company).toMatchObject({ company_id: extpay.companyId, webhook_url: extpayWebhookUrl(app.ctx.config), webhook_secret_set: true });
      const test = await new ApiClient(app.url, seed.token).post(`/v1/extpay-connections/${extpay.id}/test`);
      expect(test.body.data).toMatchObject({ result: 'connected' });
      expect(later!.token).not.toBe(options.token);
      const tokens = (await app.ctx.services.teams.listTokens(seed.team_id)).filter((t) => t.name === DEMO_TOKEN_NAME);
      expect(tokens.filter((t) => !t.revoked_at)).toHaveLength(1);
      expect((await new ApiClient(app.url, options.token).get('/v1/orders')).status).toBe(401);
      expect((await new ApiClient(app.url, later!.token).get('/v1/orders')).status).toBe(200);

      expect(await demoFunnelOptions({ ...app.ctx, config: { ...app.ctx.config, dataDir: path.join(dir, 'none') } })).toBeUndefined();

      // A demo.json from before the extpay connection: no extpay on the checkout page.
      const { extpay_connection_id: _x, ...beforeExtpay } = ids;
      fs.writeFileSync(path.join(dir, 'demo.json'), JSON.stringify(beforeExtpay));
      const noExtpay = await demoFunnelOptions({ ...app.ctx, config: { ...app.ctx.config, dataDir: dir } });
      expect(noExtpay).toMatchObject({ campaignId: seed.campaign_id, threeDsGatewayId: seed.threeds_gateway_id, extpay: undefined });

      // A demo.json from before the 3-D Secure gateway: the card gateway only.
      const { threeds_gateway_id: _g, ...older } = beforeExtpay;
      fs.writeFileSync(path.join(dir, 'demo.json'), JSON.stringify(older));
      const old = await demoFunnelOptions({ ...app.ctx, config: { ...app.ctx.config, dataDir: dir } });
      expect(old).toMatchObject({ campaignId: seed.campaign_id, threeDsGatewayId: undefined, extpay: undefined });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
