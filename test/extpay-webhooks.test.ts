import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { payOnHostedPage } from './support/extpay.ts';
import { sandboxApiBaseUrl } from '../src/providers/extpay/types.ts';
import { EXTPAY_CARDS } from '../src/sandbox/extpay-provider.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { type ApiResponse, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

/**
 * The inbound extpay (Whop) webhook receiver, over HTTP (spec 5.4-5.5, 6.1): Standard Webhooks
 * headers, Whop's `ws_` rule (the secret's bytes as given are the HMAC key) and the standard
 * `whsec_` base64 key, every rejection leaving nothing behind, redelivery, and the Capture/webhook
 * race. The sandbox companies have no webhook_url: every delivery here is one this test makes, signed
 * with the `standardwebhooks` package (not the application's own signing helper).
 */

interface Party {
  team: TestTeam;
  funnel: Funnel;
  companyId: string;
  apiKey: string;
  connectionId: string;
  secret: string | null;
}

let app: TestApp;
let sandbox: { url: string; close(): Promise<void> };
/** Team A, company biz_whwsa, sandbox secret `ws_…` (Whop's raw-bytes rule). */
let wsParty: Party;
/** Team B, company biz_whwhsecb, production-style secret `whsec_<base64>`. */
let whsecParty: Party;
/** Team A again, company biz_whnosecretc, no webhook secret saved. */
let noSecretParty: Party;

const WS_SECRET = `ws_${randomBytes(16).toString('hex')}`;
const WHSEC_SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const TOLERANCE_BREACH_S = 6 * 60;
let seq = 0;

const now = () => Math.floor(Date.now() / 1000);
const msgId = (tag: string) => `msg_${tag}_${process.pid}_${++seq}_${randomBytes(4).toString('hex')}`;

async function sandboxCompany(companyId: string, apiKey: string) {
  const r = await fetch(`${sandbox.url}/extpay/sandbox/sandbox/companies`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    // No webhook_url: the sandbox delivers nothing, so this test makes every delivery itself.
    body: JSON.stringify({ company_id: companyId, api_keys: [{ key: apiKey }] }),
  });
  expect(r.status, await r.text()).toBeLessThan(300);
}

async function party(team: TestTeam, funnel: Funnel, companyId: string, apiKey: string, secret: string | null): Promise<Party> {
  await sandboxCompany(companyId, apiKey);
  const c = await team.api.post('/v1/extpay-connections', {
    name: `Whop ${companyId}`,
    api_key: apiKey,
    company_id: companyId,
    environment: 'Sandbox',
    ...(secret ? { webhook_secret: secret } : {}),
    base_url: sandboxApiBaseUrl(sandbox.url, 'sandbox'),
  });
  expect(c.status, c.text).toBe(201);
  expect(c.body.data.webhook_secret_configured).toBe(secret !== null);
  return { team, funnel, companyId, apiKey, connectionId: c.body.data.id, secret };
}

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  app = await startTestApp();
  const teamA = await app.newTeam('Webhooks A');
  const teamB = await app.newTeam('Webhooks B');
  const funnelA = await seedFunnel(app, teamA.teamId);
  const funnelB = await seedFunnel(app, teamB.teamId);
  wsParty = await party(teamA, funnelA, 'biz_whwsa', 'key_wh_ws_a', WS_SECRET);
  whsecParty = await party(teamB, funnelB, 'biz_whwhsecb', 'key_wh_whsec_b', WHSEC_SECRET);
  noSecretParty = await party(teamA, funnelA, 'biz_whnosecretc', 'key_wh_nosecret_c', null);
});
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});

/** An extpay order (physical one-time offer + trial) pinned to the party's connection, paid on the hosted page. */
async function paidOrder(p: Party): Promise<{ on: string; receipt: string }> {
  const r = await p.team.api.post('/checkout/orders', {
    campaign_id: p.funnel.campaignId,
    currency: 'USD',
    customer: { email: email('whk'), first_name: 'Ada', last_name: 'Lovelace' },
    products: [
      { offer_id: p.funnel.offers.serum, quantity: 1 },
      { offer_id: p.funnel.offers.trial, quantity: 1 },
    ],
    payment: { method: 'extpay', return_url: 'https://shop.example/thanks', external_payment_id: p.connectionId },
  });
  expect(r.status, r.text).toBe(200);
  expect(r.body.data.payment_status).toBe('pending_redirect');
  const receipt = await payOnHostedPage(r.body.data.checkout.purchase_url, EXTPAY_CARDS.paid);
  expect(receipt).toMatch(/^pay_/);
  return { on: r.body.data.order_number as string, receipt: receipt! };
}

/** The provider's own payment object (Whop JSON), as its API answers it. */
async function providerPayment(p: Party, receipt: string): Promise<Record<string, unknown>> {
  const r = await fetch(`${sandboxApiBaseUrl(sandbox.url, 'sandbox')}/payments/${receipt}`, { headers: { authorization: `Bearer ${p.apiKey}` } });
  expect(r.status).toBe(200);
  const payment = (await r.json()) as Record<string, unknown>;
  expect(payment).toMatchObject({ id: receipt, status: 'paid' });
  return payment;
}

/** A Whop delivery body: the v1 envelope around the payment. */

function envelope(id: string, companyId: string, payment: Record<string, unknown>, type = 'payment.succeeded'): string {
  return JSON.stringify({ id, api_version: 'v1', timestamp: new Date().toISOString(), type, company_id: companyId, data: payment });
}

/**
 * `v1,<base64>` by the `standardwebhooks` package: `raw` keys with the string's UTF-8 bytes as given
 * (Whop's rule), `standard` with the `whsec_` base64 decoding.
 */
function sign(secret: string, mode: 'raw' | 'standard', id: string, ts: number, body: string): string {
  const wh = mode === 'raw' ? new Webhook(new Uint8Array(Buffer.from(secret, 'utf8')), { format: 'raw' }) : new Webhook(secret);
  return wh.sign(id, new Date(ts * 1000), body);
}

function headers(id: string, ts: number, signature: string): Record<string, string> {
  return { 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': signature };
}

function deliver(body: string, h: Record<string, string>): Promise<ApiResponse> {
  return app.anonymous.request('POST', '/webhooks/extpay', body, { 'content-type': 'application/json', ...h });
}

/** Everything a delivery could have changed about one order, plus the dedupe rows of one webhook-id. */
async function stateOf(orderId: string, webhookId: string) {
  return app.store.run(async (db) => {
    const order = await db.selectFrom('orders').select(['status', 'payment_status']).where('id', '=', orderId).executeTakeFirstOrThrow();
    const count = async (q: Promise<unknown[]>) => (await q).length;
    return {
      status: order.status,
      payment_status: order.payment_status,
      completed: await count(db.selectFrom('events').select('id').where('order_id', '=', orderId).where('type', '=', 'order.completed').execute()),
      events: await count(db.selectFrom('events').select('id').where('order_id', '=', orderId).execute()),
      captured: await count(db.selectFrom('order_events').select('id').where('order_id', '=', orderId).where('type', '=', 'payment.captured').execute()),
      fulfillments: await count(db.selectFrom('fulfillments').select('id').where('order_id', '=', orderId).execute()),
      subscriptions: await db.selectFrom('subscriptions').select(['externally_managed', 'membership_ref', 'connection_id']).where('order_id', '=', orderId).execute(),
      inbound: await db.selectFrom('inbound_webhooks').select(['source', 'event_id', 'type']).where('event_id', '=', webhookId).execute(),
    };
  });
}

/** A rejected delivery: the answer, and not a trace of it in the database. */
async function expectRejected(r: ApiResponse, status: number, message: RegExp, orderId: string, webhookId: string, pendingStatus: string) {
  expect(r.status, r.text).toBe(status);
  expect(r.body.success).toBe(false);
  expect(r.body.message).toMatch(message);
  expect(await stateOf(orderId, webhookId)).toEqual({
    status: pendingStatus,
    payment_status: 'pending_redirect',
    completed: 0,
    events: 0,
    captured: 0,
    fulfillments: 0,
    subscriptions: [],
    inbound: [],
  });
}

/** A processed first payment: completed once, with its fulfillment, its subscription and the dedupe row. */
async function expectCompletedOnce(p: Party, orderId: string, webhookId: string) {
  const s = await stateOf(orderId, webhookId);
  expect(s).toMatchObject({ status: 'completed', payment_status: 'completed', completed: 1, captured: 1, fulfillments: 1 });
  expect(s.subscriptions).toHaveLength(1);
  expect(s.subscriptions[0]).toMatchObject({ externally_managed: true, connection_id: p.connectionId });
  expect(s.subscriptions[0]!.membership_ref).toMatch(/^mem_/);
  expect(s.inbound).toEqual([{ source: `extpay:${p.connectionId}`, event_id: webhookId, type: 'payment.succeeded' }]);
  return s;
}

async function pendingStatusOf(orderId: string): Promise<string> {
  const o = await app.store.run((db) => db.selectFrom('orders').select(['status', 'payment_status']).where('id', '=', orderId).executeTakeFirstOrThrow());
  expect(o.payment_status).toBe('pending_redirect');
  expect(o.status).not.toBe('completed');
  return o.status;
}

describe('POST /webhooks/extpay: signatures (spec 5.4, 6.1)', () => {
  let order: { on: string; receipt: string };
  let payment: Record<string, unknown>;
  let deliveredId: string;

  it('ws_ secret: every rejection leaves no trace; then the secret’s raw bytes verify and complete the order', async () => {
    order = await paidOrder(wsParty);
    payment = await providerPayment(wsParty, order.receipt);
    const pending = await pendingStatusOf(order.on);
    const rejected = (r: ApiResponse, status: number, message: RegExp, id: string) => expectRejected(r, status, message, order.on, id, pending);

    // One byte of the body changed after signing (still valid JSON, and harmless if it were read).
    {
      const id = msgId('tampered');
      const body = envelope(id, wsParty.companyId, payment);
      const ts = now();
      const sig = sign(WS_SECRET, 'raw', id, ts, body);
      const tampered = body.replace('"api_version":"v1"', '"api_version":"v2"');
      expect(tampered).not.toBe(body);
      expect(tampered.length).toBe(body.length);
      await rejected(await deliver(tampered, headers(id, ts, sig)), 400, /signature mismatch/, id);
    }
    // Signed with a secret that is not the connection's.
    {
      const id = msgId('wrong');
      const body = envelope(id, wsParty.companyId, payment);
      const ts = now();
      await rejected(await deliver(body, headers(id, ts, sign(`ws_${randomBytes(16).toString('hex')}`, 'raw', id, ts, body))), 400, /signature mismatch/, id);
    }
    // Correctly signed, but 6 minutes old / 6 minutes ahead (tolerance is 5 minutes either way).
    for (const [tag, offset] of [
      ['stale', -TOLERANCE_BREACH_S],
      ['ahead', TOLERANCE_BREACH_S],
    ] as const) {
      const id = msgId(tag);
      const body = envelope(id, wsParty.companyId, payment);
      const ts = now() + offset;
      await rejected(await deliver(body, headers(id, ts, sign(WS_SECRET, 'raw', id, ts, body))), 400, /timestamp out of range/, id);
    }
    // Each of the three headers missing, the other two correct.
    for (const missing of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      const id = msgId(`no_${missing.slice(8)}`);
      const body = envelope(id, wsParty.companyId, payment);
      const ts = now();
      const h = headers(id, ts, sign(WS_SECRET, 'raw', id, ts, body));
      delete h[missing];
      await rejected(await deliver(body, h), 400, /missing headers/, id);
    }
    // Malformed headers: a timestamp that is not unix seconds, a signature of an unknown version.
    {
      const id = msgId('badts');
      const body = envelope(id, wsParty.companyId, payment);
      const ts = now();
      const h = { ...headers(id, ts, sign(WS_SECRET, 'raw', id, ts, body)), 'webhook-timestamp': new Date(ts * 1000).toISOString() };
      await rejected(await deliver(body, h), 400, /malformed headers/, id);
      const h2 = headers(id, ts, sign(WS_SECRET, 'raw', id, ts, body).replace(/^v1,/, 'v2,'));
      await rejected(await deliver(body, h2), 400, /malformed headers/, id);
    }
    // A company no connection has: 404, even though the signature is the ws_ connection's and the
    // payment is this order's.
    {
      const id = msgId('unknown');
      const body = envelope(id, 'biz_nobodyhere', payment);
      const ts = now();
      const r = await deliver(body, headers(id, ts, sign(WS_SECRET, 'raw', id, ts, body)));
      await rejected(r, 404, /No extpay connection matches/, id);
      expect(r.body.error.code).toBe('not_found');
    }

    // The real thing: the secret's bytes as given.
    deliveredId = msgId('ok');
    const body = envelope(deliveredId, wsParty.companyId, payment);
    const ts = now();
    const ok = await deliver(body, headers(deliveredId, ts, sign(WS_SECRET, 'raw', deliveredId, ts, body)));
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toMatchObject({ success: true, data: { result: 'processed' } });
    await expectCompletedOnce(wsParty, order.on, deliveredId);
    const view = await wsParty.team.api.get(`/v1/orders/${order.on}`);
    expect(view.body.data).toMatchObject({ status: 'completed', payment_status: 'completed' });
  });

  it('redelivery: the same webhook-id with a new timestamp and a fresh signature answers duplicate and changes nothing', async () => {
    const before = await stateOf(order.on, deliveredId);
    expect(before.completed).toBe(1);
    // A fresh envelope (its own timestamp); the webhook-id is the dedupe key.
    const body = envelope(deliveredId, wsParty.companyId, payment);
    const ts = now() - 90;
    const again = await deliver(body, headers(deliveredId, ts, sign(WS_SECRET, 'raw', deliveredId, ts, body)));
    expect(again.status, again.text).toBe(200);
    expect(again.body).toMatchObject({ success: true, data: { result: 'duplicate' } });
    expect(await stateOf(order.on, deliveredId)).toEqual(before);
    // Capture after the webhook: already captured, still nothing new.
    const cap = await wsParty.team.api.post('/checkout/orders/capture', { order_number: order.on, payment_id: order.receipt });
    expect(cap.status, cap.text).toBe(200);
    expect(cap.body.message).toBe('Payment already captured.');
    expect(await stateOf(order.on, deliveredId)).toEqual(before);
  });

  it('whsec_ secret (another team): the standard base64-decoded key verifies, and so do the string’s raw bytes', async () => {
    for (const mode of ['standard', 'raw'] as const) {
      const o = await paidOrder(whsecParty);
      const p = await providerPayment(whsecParty, o.receipt);
      const pending = await pendingStatusOf(o.on);

      // Signed with team A's secret, or with a key that is neither form of this one: refused.
      for (const [secret, how] of [
        [WS_SECRET, 'raw'],
        [`whsec_${randomBytes(32).toString('base64')}`, mode],
      ] as const) {
        const id = msgId(`whsec_wrong_${mode}`);
        const body = envelope(id, whsecParty.companyId, p);
        const ts = now();
        const sig = sign(secret, how, id, ts, body);
        await expectRejected(await deliver(body, headers(id, ts, sig)), 400, /signature mismatch/, o.on, id, pending);
      }

      const id = msgId(`whsec_${mode}`);
      const body = envelope(id, whsecParty.companyId, p);
      const ts = now();
      const sig = sign(WHSEC_SECRET, mode, id, ts, body);
      // The two forms really are different keys.
      expect(sig).not.toBe(sign(WHSEC_SECRET, mode === 'raw' ? 'standard' : 'raw', id, ts, body));
      const r = await deliver(body, headers(id, ts, sig));
      expect(r.status, r.text).toBe(200);
      expect(r.body).toMatchObject({ success: true, data: { result: 'processed' } });
      await expectCompletedOnce(whsecParty, o.on, id);
    }
  });

  it('a connection with no webhook secret: 403, nothing recorded', async () => {
    const o = await paidOrder(noSecretParty);
    const p = await providerPayment(noSecretParty, o.receipt);
    const pending = await pendingStatusOf(o.on);
    const id = msgId('nosecret');
    const body = envelope(id, noSecretParty.companyId, p);
    const ts = now();
    for (const secret of [WS_SECRET, 'ws_anything']) {
      const r = await deliver(body, headers(id, ts, sign(secret, 'raw', id, ts, body)));
      await expectRejected(r, 403, /No webhook secret is saved/, o.on, id, pending);
      expect(r.body.error.code).toBe('webhook_secret_missing');
    }
    // Its payment is still capturable the ordinary way: the refusal took nothing away.
    const cap = await noSecretParty.team.api.post('/checkout/orders/capture', { order_number: o.on, payment_id: o.receipt });
    expect(cap.status, cap.text).toBe(200);
    expect(cap.body.data.payment_status).toBe('completed');
  });
});

describe('POST /webhooks/extpay: the Capture / payment.succeeded race (spec 3.2, 6.1)', () => {
  it('Capture ×5, payment.succeeded ×3 (one webhook-id) and a redelivery with a new timestamp, at once on each of many orders: each completes exactly once, no 5xx', async () => {
    // Every order races on its own: 20 orders (180 racing calls) show the race on any machine; the
    // heavy form (200 orders, 1800 calls) runs in CI's PostgreSQL pass (STRESS=1, .ci/run).
    const orders = Number(process.env.EXTPAY_RACE_ORDERS ?? (process.env.STRESS === '1' ? 200 : 20));
    const t0 = performance.now();
    const prepared: Array<{ on: string; receipt: string; payment: Record<string, unknown> }> = [];
    for (let i = 0; i < orders; i += 20) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(20, orders - i) }, async () => {
          const o = await paidOrder(wsParty);
          return { ...o, payment: await providerPayment(wsParty, o.receipt) };
        }),
      );
      prepared.push(...batch);
    }
    const tPrepared = performance.now();
    const ids = prepared.map((p) => p.on);
    const pendingBefore = await app.store.run((db) => db.selectFrom('orders').select('payment_status').where('id', 'in', ids).execute());
    expect(pendingBefore.filter((o) => o.payment_status === 'pending_redirect')).toHaveLength(orders);

    type Call = { kind: 'capture' | 'webhook'; on: string; r: ApiResponse };
    const calls: Call[] = [];
    const webhookIds = new Map<string, string>();
    for (let i = 0; i < prepared.length; i += 25) {
      const wave = prepared.slice(i, i + 25).flatMap(({ on, receipt, payment }) => {
        const id = msgId(`race_${on}`);
        webhookIds.set(on, id);
        const body = envelope(id, wsParty.companyId, payment);
        const ts = now();
        const retryTs = ts - 45;
        const signed = sign(WS_SECRET, 'raw', id, ts, body);
        const redelivery = sign(WS_SECRET, 'raw', id, retryTs, body);
        expect(redelivery).not.toBe(signed);
        const tag = (kind: Call['kind'], p: Promise<ApiResponse>) => p.then((r) => ({ kind, on, r }));
        return [
          ...Array.from({ length: 5 }, () => tag('capture', wsParty.team.api.post('/checkout/orders/capture', { order_number: on, payment_id: receipt }))),
          ...Array.from({ length: 3 }, () => tag('webhook', deliver(body, headers(id, ts, signed)))),
          tag('webhook', deliver(body, headers(id, retryTs, redelivery))),
        ];
      });
      calls.push(...(await Promise.all(wave)));
    }
    const tRaced = performance.now();

    expect(calls).toHaveLength(orders * 9);
    expect(calls.filter((c) => c.r.status >= 500).map((c) => `${c.kind} ${c.r.status} ${c.r.text.slice(0, 200)}`)).toEqual([]);
    expect(calls.filter((c) => c.r.status !== 200).map((c) => `${c.kind} ${c.r.status} ${c.r.text.slice(0, 200)}`)).toEqual([]);
    for (const c of calls.filter((x) => x.kind === 'capture')) expect(c.r.body.data.payment_status, c.r.text).toBe('completed');
    // Per order: the webhook-id's four deliveries are processed once; the others are duplicates.
    const results = new Map<string, string[]>();
    for (const c of calls.filter((x) => x.kind === 'webhook')) results.set(c.on, [...(results.get(c.on) ?? []), c.r.body.data.result]);
    const unexpected = [...results].filter(([, rs]) => rs.sort().join(',') !== 'duplicate,duplicate,duplicate,processed');
    expect(unexpected).toEqual([]);
    // Per order: Capture answered "captured" once at most (the webhook may have won).
    const captureMessages = new Map<string, string[]>();
    for (const c of calls.filter((x) => x.kind === 'capture')) captureMessages.set(c.on, [...(captureMessages.get(c.on) ?? []), c.r.body.message]);
    expect([...captureMessages].filter(([, ms]) => ms.filter((m) => m === 'Payment captured.').length > 1)).toEqual([]);

    const rows = await app.store.run(async (db) => ({
      orders: await db.selectFrom('orders').select(['id', 'status', 'payment_status']).where('id', 'in', ids).execute(),
      completed: await db.selectFrom('events').select('order_id').where('order_id', 'in', ids).where('type', '=', 'order.completed').execute(),
      captured: await db.selectFrom('order_events').select('order_id').where('order_id', 'in', ids).where('type', '=', 'payment.captured').execute(),
      fulfillments: await db.selectFrom('fulfillments').select('order_id').where('order_id', 'in', ids).execute(),
      subscriptions: await db.selectFrom('subscriptions').select(['order_id', 'externally_managed', 'membership_ref', 'connection_id']).where('order_id', 'in', ids).execute(),
      inbound: await db.selectFrom('inbound_webhooks').select(['event_id', 'source']).where('event_id', 'in', [...webhookIds.values()]).execute(),
    }));
    const perOrder = (list: Array<{ order_id: string | null }>) => {
      const m = new Map<string, number>();
      for (const x of list) m.set(x.order_id!, (m.get(x.order_id!) ?? 0) + 1);
      return ids.filter((id) => m.get(id) !== 1);
    };
    expect(rows.orders.filter((o) => o.status !== 'completed' || o.payment_status !== 'completed')).toEqual([]);
    expect(rows.orders).toHaveLength(orders);
    expect(perOrder(rows.completed)).toEqual([]);
    expect(rows.completed).toHaveLength(orders);
    expect(perOrder(rows.captured)).toEqual([]);
    expect(perOrder(rows.fulfillments)).toEqual([]);
    expect(rows.fulfillments).toHaveLength(orders);
    expect(perOrder(rows.subscriptions)).toEqual([]);
    expect(rows.subscriptions).toHaveLength(orders);
    expect(rows.subscriptions.filter((s) => !s.externally_managed || !/^mem_/.test(s.membership_ref ?? '') || s.connection_id !== wsParty.connectionId)).toEqual([]);
    expect(rows.inbound).toHaveLength(orders);
    expect(rows.inbound.every((r) => r.source === `extpay:${wsParty.connectionId}`)).toBe(true);

    const tDone = performance.now();
    console.log(
      `[extpay race] ${orders} orders, ${calls.length} racing calls on ${process.env.TEST_DATABASE_URL ? 'PostgreSQL' : 'PGlite'}: ` +
        `prepare ${((tPrepared - t0) / 1000).toFixed(1)}s, race ${((tRaced - tPrepared) / 1000).toFixed(1)}s, checks ${((tDone - tRaced) / 1000).toFixed(1)}s, total ${((tDone - t0) / 1000).toFixed(1)}s`,
    );
  }, 900_000);
});
