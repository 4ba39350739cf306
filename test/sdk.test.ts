/**
 * The typed client (packages/client, @checkstand/client) against the real server and the sandbox
 * over HTTP: the whole card funnel (lead → payment → upsell → complete → refund), a decline as an
 * outcome, typed errors, list iteration, automatic Idempotency-Keys, an extpay Capture answering 202
 * (not a decline) and 200, and webhook verification of a real delivery.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Checkstand, CheckstandError, verifyWebhook, WebhookVerificationError } from '@checkstand/client';
import { createLogger } from '../src/app/logger.ts';
import { sandboxApiBaseUrl } from '../src/providers/extpay/types.ts';
import { SANDBOX_CARDS } from '../src/sandbox/cards.ts';
import { EXTPAY_CARDS } from '../src/sandbox/extpay-provider.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { payOnHostedPage } from './support/extpay.ts';
import { CARD, email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';
import { nmiSandboxGateway } from './support/nmi.ts';

let app: TestApp;
let team: TestTeam;
let funnel: Funnel;
let sandbox: { url: string; close(): Promise<void> };
let cs: Checkstand;
/** Every request the client sent, as the server saw it (method, path, Idempotency-Key). */
const sent: { method: string; url: string; key: string | null }[] = [];

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  app = await startTestApp({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
  team = await app.newTeam();
  funnel = await seedFunnel(app, team.teamId);
  const gw = await nmiSandboxGateway(team, sandbox.url, { prefix: 'sdk' });
  expect((await team.api.patch(`/v1/campaigns/${funnel.campaignId}`, { gateway_id: gw.id })).status).toBe(200);
  cs = new Checkstand({
    baseUrl: app.url,
    token: team.token,
    fetch: async (req) => {
      sent.push({ method: req.method, url: new URL(req.url).pathname, key: req.headers.get('idempotency-key') });
      return fetch(req);
    },
  });
});
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});

describe('the card funnel through the SDK', () => {
  it('lead → payment → upsell → complete → refund, typed end to end', async () => {
    const lead = await cs.createLead({
      campaign_id: funnel.campaignId,
      customer: { email: email('sdk'), first_name: 'Ada', last_name: 'Lovelace' },
      products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
    });
    expect(lead.created).toBe(true);
    expect(lead.order).toMatchObject({ object: 'order', status: 'lead', total: 3900 + 495 });
    const orderNumber = lead.order.order_number;

    const paid = await cs.processPayment({ order_number: orderNumber, payment: { method: 'card', ...CARD } });
    expect(paid.outcome).toBe('approved');
    expect(paid.status).toBe(200);
    expect(paid.order).toMatchObject({ order_number: orderNumber, payment_status: 'completed', redirect_required: false });

    const up = await cs.upsell({ order_number: orderNumber, upsell_id: funnel.upsellId, quantity: 1 });
    expect(up.outcome).toBe('added');
    expect(up.order.lines.map((l) => l.upsell_id)).toContain(funnel.upsellId);

    const done = await cs.completeOrder(orderNumber);
    expect(done.status).toBe('completed');

    const detail = await cs.getOrder(orderNumber);
    const charges = detail.transactions.filter((t) => t.type === 'sale' && t.status === 'approved');
    expect(charges).toHaveLength(2);

    const first = charges.find((t) => t.upsell_id === null)!;
    const refund = await cs.refund(orderNumber, { transaction_id: first.id, amount: 500, reason: 'SDK test' });
    expect(refund.refund).toMatchObject({ type: 'refund', amount: 500, parent_id: first.id });
    expect(refund.order.refunded_total).toBe(500);

    // Money-moving POSTs carried an Idempotency-Key the caller did not give; Create Lead and reads did not.
    const keyOf = (path: string) => sent.find((s) => s.method === 'POST' && s.url === path)?.key ?? null;
    for (const path of ['/checkout/orders/payment', '/checkout/orders/upsell', '/checkout/orders/complete', `/v1/orders/${orderNumber}/refunds`]) {
      expect(keyOf(path), path).toMatch(/^[0-9a-f-]{36}$/);
    }
    expect(keyOf('/checkout/leads')).toBeNull();
    expect(new Set(sent.filter((s) => s.key).map((s) => s.key)).size).toBe(sent.filter((s) => s.key).length);
  });

  it('a decline is an outcome with its decline_code; an invalid request a CheckstandError with its fields', async () => {
    const r = await cs.createOrder({
      campaign_id: funnel.campaignId,
      currency: 'USD',
      customer: { email: email('sdk-decline') },
      products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
      payment: { method: 'card', ...CARD, card_number: SANDBOX_CARDS.doNotHonor },
    });
    expect(r.outcome).toBe('declined');
    if (r.outcome !== 'declined') return;
    expect(r.status).toBe(402);
    expect(r.declineCode).toBe('201');
    expect(r.order.status).toBe('declined');

    const err = await cs
      .createOrder({ campaign_id: funnel.campaignId, currency: 'USD', customer: { email: 'not-an-email' }, products: [{ offer_id: funnel.offers.serum, quantity: 1 }], payment: { method: 'card', ...CARD } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CheckstandError);
    expect(err).toMatchObject({ status: 422, code: 'validation_failed', type: 'invalid_request_error' });
    expect((err as CheckstandError).fields.map((f) => f.path)).toContain('customer.email');

    const missing = await cs.getOrder('ord_doesnotexist').catch((e: unknown) => e);
    expect(missing).toMatchObject({ status: 404, code: 'not_found' });
  });

  it('iterates a /v1 list page by page (limit, starting_after, has_more)', async () => {
    for (let i = 0; i < 5; i++) {
      await cs.createLead({ campaign_id: funnel.campaignId, customer: { email: email(`sdk-list-${i}`) }, products: [{ offer_id: funnel.offers.guide, quantity: 1 }] });
    }
    const before = sent.length;
    const leads = await cs.listAll('/v1/orders', { query: { status: 'lead', limit: 2 } });
    const pages = sent.slice(before).filter((s) => s.url === '/v1/orders').length;
    expect(leads.length).toBeGreaterThanOrEqual(5);
    expect(pages).toBe(Math.ceil(leads.length / 2) + (leads.length % 2 === 0 ? 1 : 0));
    expect(new Set(leads.map((o) => o.order_number)).size).toBe(leads.length);
    expect(leads.every((o) => o.status === 'lead')).toBe(true);
  });
});

describe('extpay Capture through the SDK: the HTTP status decides, 202 is not a decline', () => {
  it('202 while the provider holds the money, 200 once paid', async () => {
    await fetch(`${sandbox.url}/extpay/sandbox/sandbox/companies`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ company_id: 'biz_sdktest', api_keys: [{ key: 'key_sdk_full' }] }),
    });
    const conn = await cs.api.POST('/v1/extpay-connections', {
      body: { name: 'Whop sandbox', api_key: 'key_sdk_full', company_id: 'biz_sdktest', environment: 'Sandbox', webhook_secret: 'ws_sdk', base_url: sandboxApiBaseUrl(sandbox.url, 'sandbox') },
    });
    expect(conn.response.status, JSON.stringify(conn.error)).toBe(201);

    const order = () =>
      cs.createOrder({
        campaign_id: funnel.campaignId,
        currency: 'USD',
        customer: { email: email('sdk-ext'), first_name: 'Ada', last_name: 'Lovelace' },
        products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
        payment: { method: 'extpay', return_url: 'https://shop.example/thanks' },
      });

    const held = await order();
    expect(held.outcome).toBe('redirect');
    const heldReceipt = await payOnHostedPage(held.order.checkout!.purchase_url, EXTPAY_CARDS.pending);
    const pending = await cs.capture({ order_number: held.order.order_number, payment_id: heldReceipt! });
    expect(pending).toMatchObject({ outcome: 'pending_external_confirmation', status: 202, order: { payment_status: 'pending_external_confirmation' } });

    const paid = await order();
    const receipt = await payOnHostedPage(paid.order.checkout!.purchase_url, EXTPAY_CARDS.paid);
    const captured = await cs.capture({ order_number: paid.order.order_number, payment_id: receipt! });
    expect(captured).toMatchObject({ outcome: 'captured', status: 200, order: { status: 'completed' } });

    const failing = await order();
    await payOnHostedPage(failing.order.checkout!.purchase_url, EXTPAY_CARDS.failed);
    const failed = await cs.capture({ order_number: failing.order.order_number });
    expect(failed.outcome).toBe('not_completed');
    expect(failed.status).toBe(422);
  });
});

describe('webhook verification helpers', () => {
  it('verify a real delivery with the endpoint secret; a tampered body or another secret fails', async () => {
    const received: { body: string; headers: http.IncomingHttpHeaders }[] = [];
    const rx = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push({ body, headers: req.headers });
        res.end('ok');
      });
    });
    await new Promise<void>((r) => rx.listen(0, '127.0.0.1', r));
    const port = (rx.address() as { port: number }).port;
    try {
      const ep = await cs.api.POST('/v1/webhook-endpoints', { body: { url: `http://127.0.0.1:${port}/hook`, event_types: ['order.completed'] } });
      expect(ep.response.status, JSON.stringify(ep.error)).toBe(201);
      const secret = ep.data!.data.secret;

      const lead = await cs.createLead({ campaign_id: funnel.campaignId, customer: { email: email('sdk-hook') }, products: [{ offer_id: funnel.offers.guide, quantity: 1 }] });
      await cs.processPayment({ order_number: lead.order.order_number, payment: { method: 'card', ...CARD } });
      await cs.completeOrder(lead.order.order_number);
      for (let i = 0; i < 100 && received.length === 0; i++) {
        for (const d of app.ctx.drainers) await d.drain(app.ctx, createLogger('silent'));
        if (received.length === 0) await new Promise((r) => setTimeout(r, 100));
      }
      expect(received).toHaveLength(1);
      const [delivery] = received;

      const event = verifyWebhook(secret, delivery!.body, delivery!.headers as Record<string, string>);
      expect(event).toMatchObject({ object: 'event', type: 'order.completed', data: { object: { order_number: lead.order.order_number } } });

      expect(() => verifyWebhook(secret, delivery!.body.replace('order.completed', 'order.refunded'), delivery!.headers as Record<string, string>)).toThrow(WebhookVerificationError);
      expect(() => verifyWebhook(`whsec_${Buffer.alloc(24, 1).toString('base64')}`, delivery!.body, delivery!.headers as Record<string, string>)).toThrow(WebhookVerificationError);
    } finally {
      await new Promise((r) => rx.close(r));
    }
  });
});
