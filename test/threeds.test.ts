import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signThreeDsWebhook } from '../src/providers/threeds/webhook.ts';
import { THREEDS_CARDS } from '../src/sandbox/threeds-gateway.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { email, seedFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

/** The race below on a loaded machine (two cores shared with other suites): generous, and the heavy form longer. */
const RACE_TIMEOUT_MS = process.env.STRESS === '1' ? 900_000 : 600_000;

let app: TestApp;
let team: TestTeam;
let sandbox: { url: string; close(): Promise<void> };
let seq = 0;
const SECRET = 'whsec_3ds_test_secret';
const URLS = { return_url: 'https://shop.example/3ds/return', cancel_url: 'https://shop.example/3ds/cancel' };

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  app = await startTestApp();
  team = await app.newTeam();
});
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});

async function gateway(opts: { webhookSecret?: string | null; sandboxWebhooks?: boolean } = {}) {
  const apiKey = `sk_test_${process.pid}_${++seq}`;
  const secret = opts.webhookSecret === undefined ? SECRET : opts.webhookSecret;
  const r = await team.api.post('/v1/gateways', {
    name: `3ds ${seq}`,
    kind: 'threeds',
    base_url: `${sandbox.url}/3ds`,
    credentials: { api_key: apiKey, risk_sdk_key: 'pk_test_risk', ...(secret ? { webhook_secret: secret } : {}) },
  });
  expect(r.status, r.text).toBe(201);
  expect(r.body.data).toMatchObject({ kind: 'threeds', test_mode: true, risk_sdk_key: 'pk_test_risk', webhook_secret_configured: Boolean(secret) });
  expect(r.body.data.webhook_url).toMatch(new RegExp(`/webhooks/gateways/${r.body.data.id}$`));
  const id = r.body.data.id as string;
  await fetch(`${sandbox.url}/3ds/sandbox/accounts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ api_key: apiKey, webhook_url: opts.sandboxWebhooks ? `${app.url}/webhooks/gateways/${id}` : null, webhook_secret: secret, webhook_retry_delays_ms: [0, 200, 500] }),
  });
  return { id, apiKey };
}

async function campaignOn(opts: { gateway_id?: string; payment_orchestrator_id?: string }) {
  const f = await seedFunnel(app, team.teamId);
  await app.ctx.services.catalog.updateCampaign(team.teamId, f.campaignId, opts);
  return f;
}

const card = (number: string, extra: Record<string, unknown> = {}) => ({ card_number: number, card_exp: '12/39', card_cvv: '123', risk_session_id: `rs_${++seq}`, ...URLS, ...extra });

function order(f: { campaignId: string; offers: { serum: string; trial: string } }, payment: Record<string, unknown>, customer: Record<string, unknown> = { first_name: 'Ada', last_name: 'Lovelace' }, extra: Record<string, unknown> = {}) {
  return team.api.post('/checkout/orders', {
    campaign_id: f.campaignId,
    currency: 'USD',
    customer: { email: email('3ds'), ...customer },
    products: [
      { offer_id: f.offers.serum, quantity: 1 },
      { offer_id: f.offers.trial, quantity: 1 },
    ],
    payment,
    ...extra,
  });
}

async function ledger(apiKey: string) {
  return (await (await fetch(`${sandbox.url}/3ds/sandbox/ledger?api_key=${apiKey}`)).json()) as { payments: Array<{ id: string; status: string; merchant_initiated?: boolean; original_payment_id?: string | null }> };
}

async function effects(orderId: string) {
  return app.store.run(async (db) => ({
    completed: (await db.selectFrom('events').select('id').where('order_id', '=', orderId).where('type', '=', 'order.completed').execute()).length,
    fulfillments: (await db.selectFrom('fulfillments').select('id').where('order_id', '=', orderId).execute()).length,
    subscriptions: (await db.selectFrom('subscriptions').select('id').where('order_id', '=', orderId).execute()).length,
  }));
}

async function authenticate(redirectUrl: string, result: 'success' | 'fail' | 'abandon') {
  const u = new URL(redirectUrl);
  u.pathname += '/complete';
  u.searchParams.set('result', result);
  return fetch(u, { redirect: 'manual' });
}

function signedDelivery(gatewayId: string, event: { id: string; type: string; payment: Record<string, unknown> }, secret = SECRET, at?: number) {
  const body = JSON.stringify({ id: event.id, type: event.type, created: Math.floor(Date.now() / 1000), data: { payment: event.payment } });
  return app.anonymous.request('POST', `/webhooks/gateways/${gatewayId}`, body, { 'content-type': 'application/json', 'x-gateway-signature': signThreeDsWebhook(secret, body, at) });
}

async function paymentWire(apiKey: string, id: string) {
  const r = await fetch(`${sandbox.url}/3ds/v1/payments/${id}`, { headers: { authorization: `Bearer ${apiKey}` } });
  return (await r.json()) as Record<string, unknown>;
}

describe('the 3-D Secure card gateway', () => {
  it('refuses a directly routed payment without return_url and cancel_url (422 naming both) before any gateway call', async () => {
    const g = await gateway();
    const f = await campaignOn({ gateway_id: g.id });
    const r = await order(f, { card_number: THREEDS_CARDS.challenge, card_exp: '12/39', card_cvv: '123', risk_session_id: 'rs' });
    expect(r.status).toBe(422);
    expect(r.body.message).toMatch(/requires 3D Secure/);
    expect(r.body.message).toMatch(/return_url/);
    expect(r.body.message).toMatch(/cancel_url/);
    expect(r.body.error.fields.map((x: { path: string }) => x.path).sort()).toEqual(['payment.cancel_url', 'payment.return_url']);
    const explicit = await order(await campaignOn({}), { card_number: THREEDS_CARDS.challenge, card_exp: '12/39', card_cvv: '123', return_url: URLS.return_url }, undefined, { gateway_id: g.id });
    expect(explicit.status).toBe(422);
    expect(explicit.body.error.fields.map((x: { path: string }) => x.path)).toEqual(['payment.cancel_url']);
    expect((await ledger(g.apiKey)).payments).toHaveLength(0);
  });

  it('through a router there is no pre-check: the gateway declines saying 3DS is required', async () => {
    const g = await gateway();
    const router = await team.api.post('/v1/payment-orchestrators', { name: 'r', members: [{ gateway_id: g.id }] });
    const f = await campaignOn({ payment_orchestrator_id: router.body.data.id });
    const r = await order(f, { card_number: THREEDS_CARDS.challenge, card_exp: '12/39', card_cvv: '123', risk_session_id: 'rs' });
    expect(r.status).toBe(402);
    expect(r.body.message).toMatch(/3D Secure is required/);
  });

  it('declines without a risk session, and without first name, last name and email', async () => {
    const g = await gateway();
    const f = await campaignOn({ gateway_id: g.id });
    const noRisk = await order(f, { card_number: THREEDS_CARDS.challenge, card_exp: '12/39', card_cvv: '123', ...URLS });
    expect(noRisk.status).toBe(402);
    expect(noRisk.body.message).toMatch(/risk session/i);
    const noNames = await order(f, card(THREEDS_CARDS.challenge), {});
    expect(noNames.status).toBe(402);
    expect(noNames.body.message).toMatch(/billing email, first name and last name must be present/);
  });

  it('approves a frictionless card at once', async () => {
    const g = await gateway();
    const f = await campaignOn({ gateway_id: g.id });
    const r = await order(f, card(THREEDS_CARDS.frictionless));
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ payment_status: 'completed', redirect_required: false });
  });

  it('redirects, fires nothing while pending_redirect, then Capture completes once and a repeat charges nothing', async () => {
    const g = await gateway();
    const f = await campaignOn({ gateway_id: g.id });
    const r = await order(f, card(THREEDS_CARDS.challenge));
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ success: true, data: { payment_status: 'pending_redirect', redirect_required: true } });
    expect(r.body.message).toMatch(/redirect is required/);
    const on = r.body.data.order_number;
    expect(r.body.data.redirect_url).toMatch(/\/3ds\/authenticate\//);
    expect((await team.api.post('/checkout/orders/complete', { order_number: on })).status).toBe(409);
    expect((await team.api.post('/checkout/orders/upsell', { order_number: on, upsell_id: f.upsellId, quantity: 1 })).status).toBe(409);
    expect(await effects(on)).toEqual({ completed: 0, fulfillments: 0, subscriptions: 0 });

    const back = await authenticate(r.body.data.redirect_url, 'success');
    expect(back.status).toBe(302);
    expect(back.headers.get('location')).toMatch(/^https:\/\/shop\.example\/3ds\/return/);

    const cap = await team.api.post('/checkout/orders/capture', { order_number: on });
    expect(cap.status, cap.text).toBe(200);
    expect(cap.body).toMatchObject({ success: true, data: { status: 'completed', payment_status: 'completed' } });
    const again = await team.api.post('/checkout/orders/capture', { order_number: on });
    expect(again.status).toBe(200);
    expect(again.body.message).toBe('Payment already captured.');
    expect(await effects(on)).toEqual({ completed: 1, fulfillments: 1, subscriptions: 1 });
    expect((await ledger(g.apiKey)).payments.filter((p) => p.status === 'succeeded')).toHaveLength(1);

    // The upsell goes on the saved card, merchant-initiated and chained to the authenticated payment: no redirect.
    const up = await team.api.post('/checkout/orders/upsell', { order_number: on, upsell_id: f.upsellId, quantity: 1 });
    expect(up.status, up.text).toBe(200);
    expect(up.body.data.redirect_required).toBeUndefined();
    const payments = (await ledger(g.apiKey)).payments;
    expect(payments).toHaveLength(2);
    const upsellPayment = await paymentWire(g.apiKey, payments[1]!.id);
    expect(upsellPayment).toMatchObject({ status: 'succeeded', merchant_initiated: true, original_payment_id: payments[0]!.id });

    // Capture completed the order before the upsells: a physical one still joins its fulfillment.
    const physical = await app.ctx.services.catalog.createUpsell(team.teamId, { campaign_id: f.campaignId, offer_id: f.offers.serum, step: 2, name: 'Second bottle' });
    expect((await team.api.post('/checkout/orders/upsell', { order_number: on, upsell_id: physical.id, quantity: 1 })).status).toBe(200);
    const ful = (await team.api.get(`/v1/fulfillments?order_number=${on}`)).body.data;
    expect(ful).toHaveLength(1);
    expect(ful[0].lines.map((l: { name: string }) => l.name)).toEqual(['Serum x1', 'Club trial', 'Serum x1']);
  });

  it('a failed or abandoned authentication is "payment was not completed" (422)', async () => {
    const g = await gateway();
    const f = await campaignOn({ gateway_id: g.id });
    for (const result of ['fail', 'abandon'] as const) {
      const r = await order(f, card(THREEDS_CARDS.challenge));
      const back = await authenticate(r.body.data.redirect_url, result);
      expect(back.headers.get('location')).toMatch(/^https:\/\/shop\.example\/3ds\/cancel/);
      const cap = await team.api.post('/checkout/orders/capture', { order_number: r.body.data.order_number });
      expect(cap.status, result).toBe(422);
      expect(cap.body).toMatchObject({ success: false });
      expect(cap.body.message).toMatch(/payment was not completed/);
      expect(await effects(r.body.data.order_number)).toEqual({ completed: 0, fulfillments: 0, subscriptions: 0 });
    }
    expect((await team.api.post('/checkout/orders/capture', { order_number: 'ord_nope' })).status).toBe(404);
    const lead = await team.api.post('/checkout/leads', { campaign_id: f.campaignId, customer: { email: email() } });
    const none = await team.api.post('/checkout/orders/capture', { order_number: lead.body.data.order_number });
    expect(none.status).toBe(404);
    expect(none.body.message).toMatch(/No capturable transaction found for this order/);
  });

  it('under review: Capture answers 202, the gateway webhook completes the order later', async () => {
    const g = await gateway({ sandboxWebhooks: true });
    const f = await campaignOn({ gateway_id: g.id });
    const r = await order(f, card(THREEDS_CARDS.challengeThenReview));
    await authenticate(r.body.data.redirect_url, 'success');
    const cap = await team.api.post('/checkout/orders/capture', { order_number: r.body.data.order_number });
    expect(cap.status, cap.text).toBe(202);
    expect(cap.body).toMatchObject({ success: true, data: { payment_status: 'pending_external_confirmation' } });
    const paymentId = (await ledger(g.apiKey)).payments[0]!.id;
    await fetch(`${sandbox.url}/3ds/sandbox/payments/${paymentId}/resolve`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ result: 'succeeded' }) });
    let status = '';
    for (let i = 0; i < 50 && status !== 'completed'; i++) {
      await new Promise((res) => setTimeout(res, 100));
      status = (await team.api.get(`/v1/orders/${r.body.data.order_number}`)).body.data.status;
    }
    expect(status).toBe('completed');
    expect(await effects(r.body.data.order_number)).toEqual({ completed: 1, fulfillments: 1, subscriptions: 1 });
  });

  it('inbound webhook: 403 without a secret, rejected when tampered or stale, deduplicated by event id', async () => {
    const noSecret = await gateway({ webhookSecret: null });
    const refused = await signedDelivery(noSecret.id, { id: 'evt_x', type: 'PAYMENT_SUCCEEDED', payment: {} });
    expect(refused.status).toBe(403);
    expect(refused.body.success).toBe(false);

    const g = await gateway();
    const f = await campaignOn({ gateway_id: g.id });
    const r = await order(f, card(THREEDS_CARDS.challenge));
    const on = r.body.data.order_number;
    await authenticate(r.body.data.redirect_url, 'success');
    const payment = await paymentWire(g.apiKey, (await ledger(g.apiKey)).payments[0]!.id);
    const event = { id: `evt_${on}`, type: 'PAYMENT_SUCCEEDED', payment };

    const wrong = await signedDelivery(g.id, event, 'not-the-secret');
    expect(wrong.status).toBe(400);
    const stale = await signedDelivery(g.id, event, SECRET, Math.floor(Date.now() / 1000) - 6 * 60);
    expect(stale.status).toBe(400);
    const body = JSON.stringify({ id: event.id, type: event.type, created: 1, data: { payment } });
    const tampered = await app.anonymous.request('POST', `/webhooks/gateways/${g.id}`, body.replace('succeeded', 'succeeded '), {
      'content-type': 'application/json',
      'x-gateway-signature': signThreeDsWebhook(SECRET, body),
    });
    expect(tampered.status).toBe(400);
    expect((await app.anonymous.request('POST', `/webhooks/gateways/${g.id}`, body, { 'content-type': 'application/json' })).status).toBe(400);
    expect(await effects(on)).toEqual({ completed: 0, fulfillments: 0, subscriptions: 0 });

    const ok = await signedDelivery(g.id, event);
    expect(ok.status, ok.text).toBe(200);
    expect(await effects(on)).toEqual({ completed: 1, fulfillments: 1, subscriptions: 1 });
    const redelivered = await signedDelivery(g.id, event);
    expect(redelivered.status).toBe(200);
    expect(redelivered.body.data.result).toBe('duplicate');
    expect((await team.api.post('/checkout/orders/capture', { order_number: on })).body.message).toBe('Payment already captured.');
    expect(await effects(on)).toEqual({ completed: 1, fulfillments: 1, subscriptions: 1 });
  });

  it('the watchdog settles a redirected payment that neither Capture nor a webhook reached', async () => {
    const g = await gateway();
    const f = await campaignOn({ gateway_id: g.id });
    const approved = await order(f, card(THREEDS_CARDS.challenge));
    await authenticate(approved.body.data.redirect_url, 'success');
    const failed = await order(f, card(THREEDS_CARDS.challenge));
    await authenticate(failed.body.data.redirect_url, 'fail');
    const waiting = await order(f, card(THREEDS_CARDS.challenge));
    const tally = await app.ctx.services.checkout.reconcile.reconcilePendingPayments(0, 1000);
    expect(tally.completed).toBeGreaterThanOrEqual(1);
    expect(tally.declined).toBeGreaterThanOrEqual(1);
    const statusOf = async (on: string) => (await team.api.get(`/v1/orders/${on}`)).body.data;
    expect(await statusOf(approved.body.data.order_number)).toMatchObject({ status: 'completed', payment_status: 'completed' });
    expect(await statusOf(failed.body.data.order_number)).toMatchObject({ status: 'declined', payment_status: 'declined' });
    expect(await statusOf(waiting.body.data.order_number)).toMatchObject({ payment_status: 'pending_redirect' });
    expect(await effects(approved.body.data.order_number)).toEqual({ completed: 1, fulfillments: 1, subscriptions: 1 });
  });

  it('race: Capture ×5 and the webhook ×3 at once on each of many orders complete each exactly once', async () => {
    // Every order races on its own: 20 orders (160 racing calls) show the race on any machine; the
    // heavy form (200 orders, 1600 calls) runs in CI's PostgreSQL pass (STRESS=1, .ci/run).
    const orders = Number(process.env.THREEDS_RACE_ORDERS ?? (process.env.STRESS === '1' ? 200 : 20));
    const g = await gateway();
    const f = await campaignOn({ gateway_id: g.id });
    const prepared: Array<{ on: string; payment: Record<string, unknown> }> = [];
    for (let i = 0; i < orders; i += 20) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(20, orders - i) }, async () => {
          const r = await order(f, card(THREEDS_CARDS.challenge));
          expect(r.status, r.text).toBe(200);
          await authenticate(r.body.data.redirect_url, 'success');
          return r.body.data.order_number as string;
        }),
      );
      for (const on of batch) prepared.push({ on, payment: {} });
    }
    const payments = (await ledger(g.apiKey)).payments;
    const detail = await Promise.all(payments.map((p) => paymentWire(g.apiKey, p.id)));
    const byReference = new Map(detail.map((p) => [p.id as string, p]));
    // Match each order to its payment through our transaction rows.
    const txns = await app.store.run((db) => db.selectFrom('transactions').select(['order_id', 'provider_ref']).where('gateway_id', '=', g.id).execute());
    for (const p of prepared) p.payment = byReference.get(txns.find((t) => t.order_id === p.on)!.provider_ref!)!;

    // Each order's 8 calls race each other at once; orders go in waves of 25 (200 calls in flight)
    // so the test machine's sockets, not the service, are never the limit.
    const results: Awaited<ReturnType<typeof signedDelivery>>[] = [];
    for (let i = 0; i < prepared.length; i += 25) {
      const wave = prepared.slice(i, i + 25).flatMap(({ on, payment }) => [
        ...Array.from({ length: 5 }, () => team.api.post('/checkout/orders/capture', { order_number: on })),
        ...Array.from({ length: 3 }, () => signedDelivery(g.id, { id: `evt_race_${on}`, type: 'PAYMENT_SUCCEEDED', payment })),
      ]);
      results.push(...(await Promise.all(wave)));
    }
    expect(results.filter((x) => x.status >= 500).map((x) => x.text)).toEqual([]);
    expect(results.filter((x) => x.status !== 200).map((x) => `${x.status} ${x.text.slice(0, 200)}`)).toEqual([]);
    const counts = await app.store.run(async (db) => {
      const ids = prepared.map((p) => p.on);
      const one = async (t: 'fulfillments' | 'subscriptions') => db.selectFrom(t).select(['order_id']).where('order_id', 'in', ids).execute();
      return {
        completed: await db.selectFrom('events').select('order_id').where('order_id', 'in', ids).where('type', '=', 'order.completed').execute(),
        fulfillments: await one('fulfillments'),
        subscriptions: await one('subscriptions'),
        orders: await db.selectFrom('orders').select('status').where('id', 'in', ids).execute(),
      };
    });
    expect(counts.completed).toHaveLength(orders);
    expect(new Set(counts.completed.map((c) => c.order_id)).size).toBe(orders);
    expect(counts.fulfillments).toHaveLength(orders);
    expect(counts.subscriptions).toHaveLength(orders);
    expect(counts.orders.every((o) => o.status === 'completed')).toBe(true);
  }, RACE_TIMEOUT_MS);
});

describe('Capture after a failed authentication', () => {
  // Spec §4.2 (3DS table): a failed authentication is 422 "The payment was not completed.", whether
  // Capture reaches the order before or after the gateway's PAYMENT_FAILED webhook declined it.

  /** Polls `check` until it answers something, or fails naming `what` after `timeoutMs`. */
  async function eventually<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const found = await check();
      if (found !== undefined) return found;
      if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** A challenge payment whose customer pressed "Fail" on the hosted 3DS page. */
  async function failedAuthentication(opts: { sandboxWebhooks: boolean }) {
    const g = await gateway(opts);
    const f = await campaignOn({ gateway_id: g.id });
    const r = await order(f, card(THREEDS_CARDS.challenge));
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.payment_status).toBe('pending_redirect');
    const back = await authenticate(r.body.data.redirect_url, 'fail');
    expect(back.headers.get('location')).toMatch(/^https:\/\/shop\.example\/3ds\/cancel/);
    return { g, on: r.body.data.order_number as string };
  }

  /** What a decline leaves on the order: its state, its transactions and its order.declined events. */
  async function footprint(on: string) {
    const o = (await team.api.get(`/v1/orders/${on}`)).body.data;
    const txns = (await team.api.get(`/v1/transactions?order_number=${on}&limit=100`)).body.data;
    const declined = (await team.api.get(`/v1/events?type=order.declined&order_number=${on}&limit=100`)).body.data;
    return {
      status: o.status,
      payment_status: o.payment_status,
      transactions: txns.map((t: { id: string; status: string }) => `${t.id}:${t.status}`),
      order_declined_events: declined.length,
      effects: await effects(on),
    };
  }
  const DECLINED = { status: 'declined', payment_status: 'declined', order_declined_events: 1, effects: { completed: 0, fulfillments: 0, subscriptions: 0 } };

  function expectNotCompleted(cap: Awaited<ReturnType<typeof team.api.post>>) {
    expect(cap.status, cap.text).toBe(422);
    expect(cap.body).toMatchObject({ success: false, message: 'The payment was not completed.', error: { code: 'payment_not_completed' } });
  }

  /** The order stays payable: Process Payment again (frictionless card) is not refused and pays it. */
  async function expectPayableAgain(on: string) {
    const again = await team.api.post('/checkout/orders/payment', { order_number: on, payment: card(THREEDS_CARDS.frictionless) });
    expect(again.status, again.text).not.toBe(409);
    expect(again.status, again.text).toBe(200);
    expect(again.body.data).toMatchObject({ payment_status: 'completed', redirect_required: false });
  }

  it('the customer returns first: Capture is 422, then the PAYMENT_FAILED webhook changes nothing more', async () => {
    // The sandbox records the gateway's event but has nowhere to send it yet.
    const { g, on } = await failedAuthentication({ sandboxWebhooks: false });
    expectNotCompleted(await team.api.post('/checkout/orders/capture', { order_number: on }));
    const before = await footprint(on);
    expect(before).toMatchObject(DECLINED);

    // Now the gateway delivers its PAYMENT_FAILED, signed, through its own sender.
    const { events } = (await (await fetch(`${sandbox.url}/3ds/sandbox/ledger?api_key=${g.apiKey}`)).json()) as { events: Array<{ id: string; type: string }> };
    const failed = events.find((e) => e.type === 'PAYMENT_FAILED');
    expect(failed, 'the sandbox recorded PAYMENT_FAILED').toBeDefined();
    await fetch(`${sandbox.url}/3ds/sandbox/accounts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ api_key: g.apiKey, webhook_url: `${app.url}/webhooks/gateways/${g.id}` }),
    });
    const delivered = await fetch(`${sandbox.url}/3ds/sandbox/events/${failed!.id}/redeliver`, { method: 'POST' });
    expect(delivered.status).toBe(200);
    expect(((await delivered.json()) as { attempt: { status: number } }).attempt.status).toBe(200);
    expect(await footprint(on)).toEqual(before);

    // Capture again: still the same answer.
    expectNotCompleted(await team.api.post('/checkout/orders/capture', { order_number: on }));
    expect(await footprint(on)).toEqual(before);
    await expectPayableAgain(on);
  });

  it('the PAYMENT_FAILED webhook arrives first: Capture is still 422 "The payment was not completed.", not 404', async () => {
    const { on } = await failedAuthentication({ sandboxWebhooks: true });
    await eventually(async () => ((await team.api.get(`/v1/orders/${on}`)).body.data.status === 'declined' ? true : undefined), 'the webhook to decline the order');
    const before = await footprint(on);
    expect(before).toMatchObject(DECLINED);

    expectNotCompleted(await team.api.post('/checkout/orders/capture', { order_number: on }));
    expect(await footprint(on)).toEqual(before);
    await expectPayableAgain(on);
  });
});
