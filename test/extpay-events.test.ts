import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signExtpayWebhook } from '../src/providers/extpay/webhook.ts';
import { sandboxApiBaseUrl } from '../src/providers/extpay/types.ts';
import { EXTPAY_CARDS } from '../src/sandbox/extpay-provider.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { CARD, email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { payOnHostedPage } from './support/extpay.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

/**
 * extpay after the checkout, end to end: the provider sandbox delivers its signed webhooks to the
 * running app over HTTP (spec 6.1), and each of the eleven kinds has its effect.
 */
let app: TestApp;
let team: TestTeam;
let funnel: Funnel;
let sandbox: { url: string; close(): Promise<void> };
let connectionId: string;
const COMPANY = 'biz_eventstest';
const KEY = 'key_events_full';
const SECRET = 'ws_events_secret_1';
let api: string;
let control: string;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  app = await startTestApp();
  team = await app.newTeam();
  funnel = await seedFunnel(app, team.teamId);
  api = sandboxApiBaseUrl(sandbox.url, 'sandbox');
  control = `${sandbox.url}/extpay/sandbox/sandbox`;
  const company = await post(`${control}/companies`, {
    company_id: COMPANY,
    api_keys: [{ key: KEY }],
    webhook_url: `${app.url}/webhooks/extpay`,
    webhook_secret: SECRET,
    webhook_retry_delays_ms: [0, 300, 1000, 2000],
    refunds: 'manual',
    charge_settle_ms: 50,
  });
  expect(company.status).toBe(200);
  const c = await team.api.post('/v1/extpay-connections', { name: 'Whop sandbox', api_key: KEY, company_id: COMPANY, environment: 'Sandbox', webhook_secret: SECRET, base_url: api });
  expect(c.status, c.text).toBe(201);
  connectionId = c.body.data.id;
}, 60_000);
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});

async function post(url: string, body: unknown) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
}

async function provider(path: string, init: { method?: string; body?: unknown } = {}) {
  const res = await fetch(`${api}${path}`, {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  return (await res.json()) as any;
}

async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  let v = await read();
  while (!ok(v)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 100));
    v = await read();
  }
  return v;
}

function createOrder(products = [{ offer_id: funnel.offers.serum, quantity: 1 }]) {
  return team.api.post('/checkout/orders', {
    campaign_id: funnel.campaignId,
    currency: 'USD',
    customer: { email: email('ev'), first_name: 'Ada', last_name: 'Lovelace' },
    shipping_address: { line1: '1 Main St', city: 'Springfield', postal_code: '12345', country: 'US' },
    products,
    payment: { method: 'extpay', return_url: 'https://shop.example/thanks' },
  });
}

/** A delivery as the provider makes it: Standard Webhooks headers signed with the connection's secret. */
async function deliver(type: string, data: unknown, id = `msg_${randomUUID().replace(/-/g, '')}`) {
  const body = JSON.stringify({ id, api_version: 'v1', timestamp: new Date().toISOString(), type, company_id: COMPANY, data });
  const ts = Math.floor(Date.now() / 1000);
  const res = await fetch(`${app.url}/webhooks/extpay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': signExtpayWebhook(SECRET, id, ts, body) },
    body,
  });
  return { status: res.status, body: (await res.json()) as any };
}

/** Pays on the sandbox's hosted page; answers the receipt id ('' when the page kept the customer). */
async function buy(purchaseUrl: string, card: string, saveForLater = true): Promise<string> {
  return (await payOnHostedPage(purchaseUrl, card, { saveForLater })) ?? '';
}

const order = (n: string) => team.api.get(`/v1/orders/${n}`).then((r) => r.body.data);
const count = (n: string, type: string) =>
  app.store.run(async (db) => (await db.selectFrom('events').select('id').where('order_id', '=', n).where('type', '=', type).execute()).length);
const subsOf = (n: string) => app.store.run((db) => db.selectFrom('subscriptions').selectAll().where('order_id', '=', n).execute());
const inbound = (type: string) =>
  app.store.run(async (db) => (await db.selectFrom('inbound_webhooks').select('id').where('source', '=', `extpay:${connectionId}`).where('type', '=', type).execute()).length);

/** A paid, completed extpay order (trial cart: a membership bills it). */
async function completedOrder(products = [{ offer_id: funnel.offers.serum, quantity: 1 }, { offer_id: funnel.offers.trial, quantity: 1 }], card: string = EXTPAY_CARDS.paid, save = true) {
  const r = await createOrder(products);
  expect(r.status, r.text).toBe(200);
  const n = r.body.data.order_number as string;
  const receipt = await buy(r.body.data.checkout.purchase_url, card, save);
  await until(`order ${n} completed by the webhook`, () => order(n), (o) => o.status === 'completed');
  return { n, receipt };
}

describe('payment events', () => {
  it('payment.succeeded completes the order without Capture, exactly once; Capture afterwards is a no-op', async () => {
    const { n, receipt } = await completedOrder();
    const o = await order(n);
    expect(o.payment_status).toBe('completed');
    expect(await count(n, 'order.completed')).toBe(1);
    const sale = o.transactions.find((t: any) => t.type === 'sale');
    expect(sale).toMatchObject({ status: 'approved', provider_ref: receipt, connection_id: connectionId });
    const cap = await team.api.post('/checkout/orders/capture', { order_number: n, payment_id: receipt });
    expect(cap.status).toBe(200);
    expect(cap.body.message).toBe('Payment already captured.');
    expect(await count(n, 'order.completed')).toBe(1);
    const [sub] = await subsOf(n);
    expect(sub).toMatchObject({ externally_managed: true, status: 'trialing', connection_id: connectionId });
    expect(sub!.membership_ref).toMatch(/^mem_/);
  });

  it('payment.failed declines the order', async () => {
    const r = await createOrder();
    const n = r.body.data.order_number;
    await buy(r.body.data.checkout.purchase_url, EXTPAY_CARDS.failed);
    const o = await until('declined', () => order(n), (x) => x.status === 'declined');
    expect(o.payment_status).toBe('declined');
    expect(await count(n, 'order.declined')).toBe(1);
    expect(await count(n, 'order.completed')).toBe(0);
  });

  it("payment.created is the only signal of the provider's own fraud denial: the order declines", async () => {
    const r = await createOrder();
    const n = r.body.data.order_number;
    await buy(r.body.data.checkout.purchase_url, EXTPAY_CARDS.fraudDenied);
    const o = await until('declined by payment.created', () => order(n), (x) => x.status === 'declined');
    expect(o.transactions[0]).toMatchObject({ status: 'declined' });
    expect(o.transactions[0].response_text).toMatch(/fraud/i);
    expect(await inbound('payment.succeeded')).toBeGreaterThan(0); // other orders' events arrived, this one had none
  });

  it('a held payment: Capture answers 202, then payment.succeeded (after the provider settles) completes the order', async () => {
    const r = await createOrder();
    const n = r.body.data.order_number;
    const receipt = await buy(r.body.data.checkout.purchase_url, EXTPAY_CARDS.pending);
    const cap = await team.api.post('/checkout/orders/capture', { order_number: n, payment_id: receipt });
    expect(cap.status, cap.text).toBe(202);
    expect(cap.body.data.payment_status).toBe('pending_external_confirmation');
    expect((await order(n)).status).toBe('pending_external_confirmation');
    expect((await post(`${control}/payments/${receipt}/settle`, {})).status).toBe(200);
    await until('completed after settlement', () => order(n), (o) => o.status === 'completed');
    expect(await count(n, 'order.completed')).toBe(1);
  });

  it('setup_intent.succeeded records the payment method the provider saved', async () => {
    const { n } = await completedOrder([{ offer_id: funnel.offers.serum, quantity: 1 }]);
    const methods = await until(
      'saved payment method',
      () => app.store.run((db) => db.selectFrom('payment_methods').selectAll().where('team_id', '=', team.teamId).where('connection_id', '=', connectionId).execute()),
      (rows) => rows.some((m) => m.vault_ref?.startsWith('payt_')),
    );
    const o = await app.store.run((db) => db.selectFrom('orders').select('payment_method_id').where('id', '=', n).executeTakeFirstOrThrow());
    const mine = methods.find((m) => m.id === o.payment_method_id)!;
    expect(mine.vault_ref).toMatch(/^payt_/);
    expect(mine.member_ref).toBeTruthy();
    expect(await inbound('setup_intent.succeeded')).toBeGreaterThan(0);
  });
});

describe('upsells on an extpay order (spec 4.3)', () => {
  it('202 pending_external_confirmation; the line and total are added only when payment.succeeded arrives', async () => {
    const { n } = await completedOrder([{ offer_id: funnel.offers.serum, quantity: 1 }]);
    const before = await order(n);
    const r = await team.api.post('/checkout/orders/upsell', { order_number: n, upsell_id: funnel.upsellId, quantity: 1 });
    expect(r.status, r.text).toBe(202);
    expect(r.body).toMatchObject({ success: true, data: { payment_status: 'pending_external_confirmation' } });
    expect(r.body.data.lines).toHaveLength(before.lines.length);
    const after = await until('upsell line', () => order(n), (o) => o.lines.length === before.lines.length + 1);
    expect(after.total).toBe(before.total + 900);
    expect(after.lines.at(-1)).toMatchObject({ upsell_id: funnel.upsellId });
    expect(after.transactions.find((t: any) => t.upsell_id)).toMatchObject({ status: 'approved', amount: 900 });
    expect(await count(n, 'order.upsell_added')).toBe(1);
    // The fulfillment of the completed order is unchanged for a digital line; a repeat answers the settled state.
    const again = await team.api.post('/checkout/orders/upsell', { order_number: n, upsell_id: funnel.upsellId, quantity: 1 });
    expect(again.status).toBe(200);
    expect(await count(n, 'order.upsell_added')).toBe(1);
  });

  it('402 when the provider declines the off-session charge; nothing is added', async () => {
    const { n } = await completedOrder([{ offer_id: funnel.offers.serum, quantity: 1 }], EXTPAY_CARDS.offSessionDecline);
    const before = await order(n);
    const r = await team.api.post('/checkout/orders/upsell', { order_number: n, upsell_id: funnel.upsellId, quantity: 1 });
    expect(r.status, r.text).toBe(402);
    expect(r.body.success).toBe(false);
    expect((await order(n)).lines).toHaveLength(before.lines.length);
    expect(await count(n, 'order.upsell_declined')).toBe(1);
  });

  it('422 when card fields are sent: a new card cannot be charged on an extpay order', async () => {
    const { n } = await completedOrder([{ offer_id: funnel.offers.serum, quantity: 1 }]);
    const r = await team.api.post('/checkout/orders/upsell', { order_number: n, upsell_id: funnel.upsellId, quantity: 1, payment: { method: 'extpay', ...CARD } });
    expect(r.status).toBe(422);
    expect(JSON.stringify(r.body)).not.toContain(CARD.card_number);
    const txns = await app.store.run((db) => db.selectFrom('transactions').select('id').where('order_id', '=', n).where('upsell_id', 'is not', null).execute());
    expect(txns).toHaveLength(0);
  });

  it('"no saved payment method found" when the checkout was not set up for future use', async () => {
    const { n } = await completedOrder([{ offer_id: funnel.offers.serum, quantity: 1 }], EXTPAY_CARDS.paid, false);
    const r = await team.api.post('/checkout/orders/upsell', { order_number: n, upsell_id: funnel.upsellId, quantity: 1 });
    expect(r.status, r.text).toBe(422);
    expect(r.body.message).toMatch(/no saved payment method found/i);
    // Nothing was claimed: the client may retry once a method is saved.
    const claims = await app.store.run((db) => db.selectFrom('order_upsells').select('id').where('order_id', '=', n).execute());
    expect(claims).toHaveLength(0);
  });
});

describe('membership events and renewals', () => {
  it('membership.cancel_at_period_end_changed and membership.deactivated mirror the provider onto the subscription', async () => {
    const { n } = await completedOrder();
    const [sub] = await subsOf(n);
    await provider(`/memberships/${sub!.membership_ref}/cancel`, { method: 'POST', body: { cancellation_mode: 'at_period_end' } });
    await until('cancel at period end mirrored', () => subsOf(n), (s) => s[0]!.status === 'cancel_at_period_end');
    await provider(`/memberships/${sub!.membership_ref}/cancel`, { method: 'POST', body: { cancellation_mode: 'immediate' } });
    await until('cancelled mirrored', () => subsOf(n), (s) => s[0]!.status === 'cancelled');
    expect(await count(n, 'subscription.updated')).toBeGreaterThanOrEqual(2);
  });

  it('membership.activated recovers a subscription that lost its membership reference and mirrors its state', async () => {
    const { n } = await completedOrder();
    const [sub] = await subsOf(n);
    const ref = sub!.membership_ref!;
    await app.store.run((db) => db.updateTable('subscriptions').set({ membership_ref: null, status: 'pending', next_billing_at: null }).where('id', '=', sub!.id).execute());
    // The provider sends the activation again (a new delivery of the current membership).
    const m = await provider(`/memberships/${ref}`);
    expect((await deliver('membership.activated', m)).status).toBe(200);
    const [after] = await subsOf(n);
    expect(after).toMatchObject({ membership_ref: ref, status: 'trialing' });
    expect(after!.next_billing_at!.toISOString()).toBe(new Date(m.renewal_period_end).toISOString());
  });

  it('a renewal (payment.succeeded, subscription_cycle) is recorded as a new rebill order with its own transaction and fulfillment', async () => {
    const { n } = await completedOrder();
    const [sub] = await subsOf(n);
    const renewed = await post(`${control}/memberships/${sub!.membership_ref}/renew`, {});
    expect(renewed.status).toBe(200);
    const paymentId = renewed.body.payment.id;
    const rebill = await until(
      'rebill order',
      () => app.store.run((db) => db.selectFrom('orders').selectAll().where('rebill_of', '=', n).execute()),
      (rows) => rows.length === 1,
    );
    const r = await order(rebill[0]!.id);
    expect(r).toMatchObject({ status: 'completed', payment_status: 'completed', rebill_of: n, subscription_id: sub!.id, total: 2900 });
    expect(r.transactions).toHaveLength(1);
    expect(r.transactions[0]).toMatchObject({ type: 'sale', status: 'approved', amount: 2900, provider_ref: paymentId });
    const ful = await app.store.run((db) => db.selectFrom('fulfillments').select('id').where('order_id', '=', r.order_number).execute());
    expect(ful).toHaveLength(1);
    const [after] = await subsOf(n);
    expect(after!.status).toBe('active');
    expect(after!.next_billing_at!.toISOString()).toBe(new Date(renewed.body.membership.renewal_period_end).toISOString());
    expect(await count(r.order_number, 'order.completed')).toBe(1);
    const listed = await team.api.get(`/v1/orders?rebill_of=${n}`);
    expect(listed.body.data.map((o: any) => o.order_number)).toEqual([r.order_number]);
  });

  it('a renewal for a subscription that lost its membership reference recovers it through the order the payment names', async () => {
    const { n } = await completedOrder();
    const [sub] = await subsOf(n);
    await app.store.run((db) => db.updateTable('subscriptions').set({ membership_ref: null }).where('id', '=', sub!.id).execute());
    expect((await post(`${control}/memberships/${sub!.membership_ref}/renew`, {})).status).toBe(200);
    await until('rebill order', () => app.store.run((db) => db.selectFrom('orders').select('id').where('rebill_of', '=', n).execute()), (rows) => rows.length === 1);
    expect((await subsOf(n))[0]!.membership_ref).toBe(sub!.membership_ref);
  });

  it('a failed renewal (payment.failed) makes the subscription Past Due', async () => {
    const { n } = await completedOrder();
    const [sub] = await subsOf(n);
    expect((await post(`${control}/memberships/${sub!.membership_ref}/fail_renewal`, {})).status).toBe(200);
    await until('past due', () => subsOf(n), (s) => s[0]!.status === 'past_due');
    const rebills = await app.store.run((db) => db.selectFrom('orders').select('id').where('rebill_of', '=', n).execute());
    expect(rebills).toHaveLength(0);
  });
});

describe('refunds, voids, disputes (spec 4.5)', () => {
  it('a refund is provisional until refund.created carries the settled amount; refund.updated can undo it', async () => {
    const { n, receipt } = await completedOrder([{ offer_id: funnel.offers.serum, quantity: 1 }]);
    const r = await team.api.post(`/v1/orders/${n}/refunds`, { amount: 2000, reason: 'damaged' });
    expect(r.status, r.text).toBe(201);
    expect(r.body.data.refund).toMatchObject({ status: 'approved', amount: 2000, provisional: true });
    expect(r.body.data.order.refunded_total).toBe(2000);
    const ledger = await fetch(`${control}/ledger?company_id=${COMPANY}`).then((x) => x.json());
    const refund = ledger.refunds.find((x: any) => x.payment?.id === receipt);
    expect(refund).toBeTruthy();
    expect((await post(`${control}/refunds/${refund.id}/settle`, { amount: 15 })).status).toBe(200);
    const settled = await until('settled refund', () => order(n), (o) => o.transactions.some((t: any) => t.type === 'refund' && !t.provisional));
    expect(settled.transactions.find((t: any) => t.type === 'refund')).toMatchObject({ amount: 1500, requested_amount: 2000, provisional: false, provider_ref: refund.id });
    expect(settled.refunded_total).toBe(1500);
    expect((await post(`${control}/refunds/${refund.id}/settle`, { status: 'failed' })).status).toBe(200);
    const undone = await until('failed refund', () => order(n), (o) => o.refunded_total === 0);
    expect(undone.transactions.find((t: any) => t.type === 'refund').status).toBe('declined');
    expect(await inbound('refund.updated')).toBeGreaterThan(0);
  });

  it('a provider that settles refunds at once (its refund.created arriving before its answer to our request) counts each refund once', async () => {
    await post(`${control}/companies`, { company_id: 'biz_autorefund', api_keys: [{ key: 'key_auto_full' }], webhook_url: `${app.url}/webhooks/extpay`, webhook_secret: 'ws_auto', refunds: 'auto' });
    // The provider's answer to a refund request is held back 700 ms: its webhook (sent at once) arrives first.
    const proxy = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        const body = Buffer.concat(chunks);
        const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'content-length', 'connection'].includes(k))) as Record<string, string>;
        const upstream = await fetch(`${sandbox.url}${req.url}`, { method: req.method!, headers, ...(body.length ? { body } : {}) });
        const text = await upstream.text();
        if (/\/refund$/.test(req.url!)) await new Promise((r) => setTimeout(r, 700));
        res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' }).end(text);
      });
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
    const proxied = sandboxApiBaseUrl(`http://127.0.0.1:${(proxy.address() as { port: number }).port}`, 'sandbox');
    const c = await team.api.post('/v1/extpay-connections', { name: 'auto refunds', api_key: 'key_auto_full', company_id: 'biz_autorefund', environment: 'Sandbox', webhook_secret: 'ws_auto', base_url: proxied });
    const orders: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await team.api.post('/checkout/orders', {
        campaign_id: funnel.campaignId,
        currency: 'USD',
        customer: { email: email('ar') },
        products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
        payment: { method: 'extpay', return_url: 'https://shop.example/thanks', external_payment_id: c.body.data.id },
      });
      const receipt = await buy(r.body.data.checkout.purchase_url, EXTPAY_CARDS.paid);
      expect((await team.api.post('/checkout/orders/capture', { order_number: r.body.data.order_number, payment_id: receipt })).status).toBe(200);
      orders.push(r.body.data.order_number);
    }
    const answers = await Promise.all(orders.map((n) => team.api.post(`/v1/orders/${n}/refunds`, { amount: 1000 })));
    expect(answers.map((a) => a.status)).toEqual([201, 201, 201, 201]);
    for (const n of orders) {
      const o = await until('refund settled', () => order(n), (x) => x.transactions.some((t: any) => t.type === 'refund' && !t.provisional));
      expect(o.refunded_total).toBe(1000);
      expect(o.transactions.filter((t: any) => t.type === 'refund')).toHaveLength(1);
      expect(o.transactions.find((t: any) => t.type === 'refund')).toMatchObject({ status: 'approved', amount: 1000 });
      expect(o.events.filter((e: any) => e.type === 'refund.settled')).toHaveLength(1);
    }
    proxy.close();
  });

  it('a void goes through the provider: a held payment is voided and the order cancelled', async () => {
    const r = await createOrder();
    const n = r.body.data.order_number;
    const receipt = await buy(r.body.data.checkout.purchase_url, EXTPAY_CARDS.pending);
    expect((await team.api.post('/checkout/orders/capture', { order_number: n, payment_id: receipt })).status).toBe(202);
    const v = await team.api.post(`/v1/orders/${n}/void`, { reason: 'customer changed their mind' });
    expect(v.status, v.text).toBe(201);
    expect(v.body.data.order).toMatchObject({ status: 'cancelled', payment_status: 'voided' });
    expect((await provider(`/payments/${receipt}`)).status).toBe('void');
    // A settled payment cannot be voided at the provider: its refusal surfaces and nothing changes.
    const { n: paid } = await completedOrder([{ offer_id: funnel.offers.serum, quantity: 1 }]);
    const refused = await team.api.post(`/v1/orders/${paid}/void`, {});
    expect(refused.status).toBe(422);
    expect(refused.body.message).toMatch(/cannot be voided/);
    expect((await order(paid)).status).toBe('completed');
  });

  it('disputes flag the order for QA with a system note; a chargeback is recorded once past the early warning and not won', async () => {
    const { n, receipt } = await completedOrder([{ offer_id: funnel.offers.serum, quantity: 1 }]);
    const opened = await post(`${control}/payments/${receipt}/disputes`, { status: 'warning_needs_response', reason: 'fraudulent' });
    expect(opened.status).toBe(200);
    const flagged = await until('QA flag', () => order(n), (o) => o.needs_qa === true);
    expect(flagged.qa_reason).toMatch(/warning needs response/);
    expect(flagged.qa_reason).toMatch(/fraudulent/);
    expect(flagged.transactions.filter((t: any) => t.type === 'chargeback')).toHaveLength(0);
    const notes = await team.api.get(`/v1/customers/${flagged.customer.customer_number}/notes`);
    expect(notes.body.data.some((x: any) => x.author === 'system' && /Dispute opened/.test(x.body))).toBe(true);

    await post(`${sandbox.url}/extpay/sandbox/sandbox/disputes/${opened.body.id}`, { status: 'needs_response' });
    const charged = await until('chargeback', () => order(n), (o) => o.transactions.some((t: any) => t.type === 'chargeback'));
    expect(charged.transactions.filter((t: any) => t.type === 'chargeback')).toHaveLength(1);
    expect(charged.disputes[0]).toMatchObject({ status: 'needs_response', reason: 'fraudulent' });
    await post(`${sandbox.url}/extpay/sandbox/sandbox/disputes/${opened.body.id}`, { status: 'lost' });
    await until('lost mirrored', () => order(n), (o) => o.disputes[0].status === 'lost');
    expect((await order(n)).transactions.filter((t: any) => t.type === 'chargeback')).toHaveLength(1);
    expect(await count(n, 'order.disputed')).toBe(3);
    const flaggedList = await team.api.get('/v1/orders?needs_qa=true&limit=100');
    expect(flaggedList.body.data.map((o: any) => o.order_number)).toContain(n);
    expect(flaggedList.body.data.every((o: any) => o.needs_qa === true)).toBe(true);
    const chargebacks = await team.api.get(`/v1/transactions?type=chargeback&order_number=${n}`);
    expect(chargebacks.body.data).toHaveLength(1);
  });

  it('a dispute won without leaving the early warning records no chargeback', async () => {
    const { n, receipt } = await completedOrder([{ offer_id: funnel.offers.serum, quantity: 1 }]);
    const opened = await post(`${control}/payments/${receipt}/disputes`, { status: 'warning_needs_response', reason: 'product_not_received' });
    await post(`${sandbox.url}/extpay/sandbox/sandbox/disputes/${opened.body.id}`, { status: 'won' });
    await until('won mirrored', () => order(n), (o) => o.disputes[0]?.status === 'won');
    expect((await order(n)).transactions.filter((t: any) => t.type === 'chargeback')).toHaveLength(0);
  });
});

describe('the stuck-payment watchdog (worker schedule)', () => {
  it('settles extpay payments whose webhooks never came: a paid checkout completes, an accepted upsell gets its line', async () => {
    // A second company that sends no webhooks at all.
    await post(`${control}/companies`, { company_id: 'biz_silent', api_keys: [{ key: 'key_silent_full' }], charge_settle_ms: 0 });
    const c = await team.api.post('/v1/extpay-connections', { name: 'silent', api_key: 'key_silent_full', company_id: 'biz_silent', environment: 'Sandbox', webhook_secret: 'ws_silent', base_url: api });
    const r = await team.api.post('/checkout/orders', {
      campaign_id: funnel.campaignId,
      currency: 'USD',
      customer: { email: email('wd') },
      products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
      payment: { method: 'extpay', return_url: 'https://shop.example/thanks', external_payment_id: c.body.data.id },
    });
    const n = r.body.data.order_number;
    await buy(r.body.data.checkout.purchase_url, EXTPAY_CARDS.paid);
    await new Promise((res) => setTimeout(res, 300));
    expect((await order(n)).payment_status).toBe('pending_redirect');
    const first = await app.ctx.services.checkout.reconcile.reconcilePendingPayments(0, 1000);
    expect(first.completed).toBeGreaterThanOrEqual(1);
    expect(await order(n)).toMatchObject({ status: 'completed', payment_status: 'completed' });
    expect(await count(n, 'order.completed')).toBe(1);

    const up = await team.api.post('/checkout/orders/upsell', { order_number: n, upsell_id: funnel.upsellId, quantity: 1 });
    expect(up.status, up.text).toBe(202);
    await new Promise((res) => setTimeout(res, 300));
    expect((await order(n)).lines).toHaveLength(1);
    await app.ctx.services.checkout.reconcile.reconcilePendingPayments(0, 1000);
    expect((await order(n)).lines).toHaveLength(2);
    expect(await count(n, 'order.upsell_added')).toBe(1);
    // Running it again changes nothing.
    expect((await order(n)).transactions.map((t: any) => t.status)).toEqual(['approved', 'approved']);
    await app.ctx.services.checkout.reconcile.reconcilePendingPayments(0, 1000);
    expect(await count(n, 'order.completed')).toBe(1);
    expect(await count(n, 'order.upsell_added')).toBe(1);
  });
});

describe('deliveries out of order', () => {
  it('a late delivery of an older state (dispute, refund, membership) does not undo the newer one', async () => {
    const { n, receipt } = await completedOrder();
    // Dispute: opened, then won; the opening's delivery arrives again, late, as a new delivery.
    const opened = await post(`${control}/payments/${receipt}/disputes`, { status: 'warning_needs_response', reason: 'fraudulent' });
    const stale = opened.body;
    await post(`${sandbox.url}/extpay/sandbox/sandbox/disputes/${opened.body.id}`, { status: 'won' });
    await until('won mirrored', () => order(n), (o) => o.disputes[0]?.status === 'won');
    expect((await deliver('dispute.created', stale)).status).toBe(200);
    expect((await order(n)).disputes[0].status).toBe('won');

    // Refund: settled, then failed; the settlement's delivery arrives again, late.
    await team.api.post(`/v1/orders/${n}/refunds`, { amount: 1000 });
    const ledger = await fetch(`${control}/ledger?company_id=${COMPANY}`).then((x) => x.json());
    const refund = ledger.refunds.find((x: any) => x.payment?.id === receipt);
    const settled = (await post(`${control}/refunds/${refund.id}/settle`, { amount: 10 })).body;
    await until('settled', () => order(n), (o) => o.transactions.some((t: any) => t.type === 'refund' && !t.provisional));
    await post(`${control}/refunds/${refund.id}/settle`, { status: 'failed' });
    await until('failed', () => order(n), (o) => o.refunded_total === 0);
    expect((await deliver('refund.created', settled)).status).toBe(200);
    const after = await order(n);
    expect(after.refunded_total).toBe(0);
    expect(after.transactions.find((t: any) => t.type === 'refund').status).toBe('declined');

    // Membership: cancelled at the provider; an old "activated" copy arrives late.
    const [sub] = await subsOf(n);
    const activeCopy = await provider(`/memberships/${sub!.membership_ref}`);
    await provider(`/memberships/${sub!.membership_ref}/cancel`, { method: 'POST', body: { cancellation_mode: 'immediate' } });
    await until('cancelled', () => subsOf(n), (x) => x[0]!.status === 'cancelled');
    expect((await deliver('membership.activated', activeCopy)).status).toBe(200);
    expect((await subsOf(n))[0]!.status).toBe('cancelled');
  });
});

describe('deliveries that are not ours', () => {
  it('a kind we do not act on, or a payment we do not know, answers 200 ignored; while an upsell charge is in flight, 409 (deliver again)', async () => {
    expect((await deliver('membership.experience_claimed', { id: 'x' })).body.data.result).toBe('ignored');
    const { n } = await completedOrder([{ offer_id: funnel.offers.serum, quantity: 1 }]);
    const paid = (await order(n)).transactions[0];
    const stranger = { ...(await provider(`/payments/${paid.provider_ref}`)), id: 'pay_notours123', metadata: {}, plan: { id: 'plan_notours' }, membership: null, billing_reason: 'one_time' };
    const ignored = await deliver('payment.succeeded', stranger);
    expect(ignored.status).toBe(200);
    expect(ignored.body.data.result).toBe('ignored');
    // An upsell charge sent and not yet recorded with its payment id (the moment between the provider's answer and our write).
    await app.store.run((db) =>
      db
        .insertInto('transactions')
        .values({ id: 'txn_inflightupsell0000001', team_id: team.teamId, order_id: n, type: 'sale', status: 'pending', amount: 900, currency: 'USD', connection_id: connectionId, upsell_id: funnel.upsellId })
        .execute(),
    );
    const early = await deliver('payment.succeeded', { ...stranger, id: 'pay_notours456' }, 'msg_earlydelivery1');
    expect(early.status).toBe(409);
    expect(early.body.error.code).toBe('webhook_not_ready');
    const seen = await app.store.run((db) => db.selectFrom('inbound_webhooks').select('id').where('event_id', '=', 'msg_earlydelivery1').execute());
    expect(seen).toHaveLength(0);
    await app.store.run((db) => db.deleteFrom('transactions').where('id', '=', 'txn_inflightupsell0000001').execute());
    expect((await deliver('payment.succeeded', { ...stranger, id: 'pay_notours456' }, 'msg_earlydelivery1')).body.data.result).toBe('ignored');
  });
});
