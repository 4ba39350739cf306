import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sandboxApiBaseUrl } from '../src/providers/extpay/types.ts';
import { SANDBOX_CARDS } from '../src/sandbox/cards.ts';
import { EXTPAY_CARDS } from '../src/sandbox/extpay-provider.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { THREEDS_CARDS } from '../src/sandbox/threeds-gateway.ts';
import { payOnHostedPage } from './support/extpay.ts';
import { email } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';
import { type LossyProxy, startLossyProxy } from './support/lossy-proxy.ts';

/**
 * "Money never moves without a record" (README, Decisions; ARCHITECTURE, Atomic phases for money):
 * the provider's answer to a money-moving call is lost on the wire (a loopback proxy between the app
 * and the provider sandbox forwards the request and then hangs up, or hangs up without forwarding),
 * the request answers 502 payment_outcome_unknown with its attempt in flight, a second charge of the
 * same step is 409 while it is, and the recovery run asks the provider by our attempt id and
 * finalizes the attempt as the request would have. Each test ends with the sandbox's ledger and ours
 * agreeing.
 */
let app: TestApp;
let team: TestTeam;
let sandbox: { url: string; close(): Promise<void> };
let proxy: LossyProxy;
let seq = 0;

/** The money-moving requests, by provider (their lookups are never dropped). */
const NMI_TRANSACT = /^\/api\/transact\.php$/;
const THREEDS_PAYMENTS = /^\/3ds\/v1\/payments$/;
const EXTPAY = '/extpay/sandbox/api/v1';
const EXTPAY_CHARGE = new RegExp(`^${EXTPAY}/payments$`);
const EXTPAY_REFUND = new RegExp(`^${EXTPAY}/payments/[^/]+/refund$`);
const EXTPAY_CHECKOUT = new RegExp(`^${EXTPAY}/checkout_configurations$`);

const CARD = { card_number: SANDBOX_CARDS.approve, card_exp: '12/39', card_cvv: '123' };
const URLS = { return_url: 'https://shop.example/3ds/return', cancel_url: 'https://shop.example/3ds/cancel' };

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, slowMs: 200 });
  proxy = await startLossyProxy(sandbox.url);
  app = await startTestApp();
  team = await app.newTeam();
}, 60_000);
afterAll(async () => {
  await app?.close();
  await proxy?.close();
  await sandbox?.close();
});
beforeEach(() => {
  proxy.disarm();
  proxy.requests.length = 0;
});
afterEach(async () => {
  // A test that failed half-way must not leave an attempt in flight for the next one's recovery run.
  proxy.disarm();
  proxy.release();
  await recover();
});

// ---- helpers ----

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  let v = await read();
  while (!ok(v)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await sleep(50);
    v = await read();
  }
  return v;
}

async function postJson(url: string, body: unknown) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
}

/** The recovery run, as the worker makes it, for every attempt in flight (no grace period). */
async function recover() {
  // The attempt rows must be older than "now" (strictly): a few milliseconds make sure of it.
  await sleep(10);
  return app.ctx.services.checkout.reconcile.recoverUnknownAttempts(0);
}

const txnRow = (id: string) => app.store.run((db) => db.selectFrom('transactions').selectAll().where('id', '=', id).executeTakeFirstOrThrow());
const orderTxns = (n: string) => app.store.run((db) => db.selectFrom('transactions').selectAll().where('order_id', '=', n).orderBy('created_at').execute());
const inFlight = (n: string) => app.store.run((db) => db.selectFrom('transactions').select(['id', 'type']).where('order_id', '=', n).where('in_flight', '=', true).execute());
const order = async (n: string) => {
  const r = await team.api.get(`/v1/orders/${n}`);
  expect(r.status, r.text).toBe(200);
  return r.body.data;
};
const eventCount = (n: string, type: string) =>
  app.store.run(async (db) => (await db.selectFrom('events').select('id').where('order_id', '=', n).where('type', '=', type).execute()).length);

/** The order's timeline rows of one type. */
const timelineCount = (n: string, type: string) =>
  app.store.run(async (db) => (await db.selectFrom('order_events').select('id').where('order_id', '=', n).where('type', '=', type).execute()).length);
/** Every request of one method and path the proxy saw since the test began. */
const seen = (method: string, path: RegExp) => proxy.requests.filter((r) => r.method === method && path.test(r.path));

function expectUnknown(r: { status: number; body: any; text: string }) {
  expect(r.status, r.text).toBe(502);
  expect(r.body.success).toBe(false);
  expect(r.body.error.code).toBe('payment_outcome_unknown');
}

/** Phase 1's attempt row, committed before the provider call and still unanswered. */
function expectInFlight(t: { in_flight: boolean; status: string; response_code: string | null }) {
  expect(t).toMatchObject({ in_flight: true, status: 'pending' });
  // Soft: a row written without its in_flight code is reported, and the rest of the test still runs.
  expect.soft(t.response_code, 'the attempt row names itself in flight (README: response_code in_flight)').toBe('in_flight');
}

// ---- NMI ----

interface NmiEntry {
  transactionid: string | null;
  type: string;
  status: string;
  amount_minor: number | null;
  orderid: string | null;
  customer_vault_id: string | null;
  parent_transactionid: string | null;
  refunded_minor?: number;
}

async function nmiGateway() {
  const key = `key_rec_${process.pid}_${++seq}`;
  const r = await team.api.post('/v1/gateways', { name: `nmi ${seq}`, kind: 'nmi', base_url: proxy.url, credentials: { security_key: key }, test_mode: true });
  expect(r.status, r.text).toBe(201);
  return { id: r.body.data.id as string, key };
}

async function nmiLedger(key: string): Promise<NmiEntry[]> {
  const r = await fetch(`${sandbox.url}/sandbox/nmi/ledger?security_key=${encodeURIComponent(key)}`);
  return ((await r.json()) as { transactions: NmiEntry[] }).transactions;
}
const approvedNmiSales = async (key: string) => (await nmiLedger(key)).filter((e) => e.type === 'sale' && e.status === 'approved');

async function campaign(opts: { gateway_id?: string }) {
  const catalog = app.ctx.services.catalog;
  const c = await catalog.createCampaign(team.teamId, { name: `rec ${++seq}`, currency: 'USD', ...opts });
  const p = await catalog.createProduct(team.teamId, { name: 'p' });
  const offer = await catalog.createOffer(team.teamId, { campaign_id: c.id, product_id: p.id, name: 'o', price: 2500, shipping: 500, billing: 'one_time', fulfillment_type: 'physical' });
  const upOffer = await catalog.createOffer(team.teamId, { campaign_id: c.id, product_id: p.id, name: 'up', price: 1000, shipping: 0, billing: 'one_time', fulfillment_type: 'digital' });
  const upsell = await catalog.createUpsell(team.teamId, { campaign_id: c.id, offer_id: upOffer.id, step: 1, name: 'up' });
  // A second upsell, of a physical offer (a completed order's fulfillment takes its line late).
  const shipOffer = await catalog.createOffer(team.teamId, { campaign_id: c.id, product_id: p.id, name: 'ship', price: 700, shipping: 0, billing: 'one_time', fulfillment_type: 'physical' });
  const upsell2 = await catalog.createUpsell(team.teamId, { campaign_id: c.id, offer_id: shipOffer.id, step: 2, name: 'ship' });
  return { id: c.id, offer: offer.id, upsell: upsell.id, upsell2: upsell2.id };
}

async function lead(c: { id: string; offer: string }) {
  const r = await team.api.post('/checkout/leads', { campaign_id: c.id, customer: { email: email('rec'), first_name: 'Ada', last_name: 'Lovelace' }, products: [{ offer_id: c.offer, quantity: 1 }] });
  expect(r.status, r.text).toBe(201);
  return r.body.data.order_number as string;
}

const pay = (n: string, payment: Record<string, unknown> = CARD) => team.api.post('/checkout/orders/payment', { order_number: n, payment });
const upsell = (n: string, upsellId: string) => team.api.post('/checkout/orders/upsell', { order_number: n, upsell_id: upsellId, quantity: 1 });

/** An NMI gateway at the proxy and a campaign charging through it. */
async function nmiCampaign() {
  const g = await nmiGateway();
  return { g, c: await campaign({ gateway_id: g.id }) };
}

/**
 * Sends a request whose gateway call goes through while the proxy holds the gateway's answer until
 * `proxy.release()`: resolves once the answer is held, with the request still waiting (`pending`).
 */
async function answerHeldAtGateway<T>(send: () => Promise<T>): Promise<{ pending: Promise<T> }> {
  proxy.arm({ method: 'POST', path: NMI_TRANSACT, mode: 'forward-then-hold' });
  const pending = send();
  await proxy.held();
  return { pending };
}

async function paidNmiOrder(c: { id: string; offer: string }) {
  const n = await lead(c);
  const r = await pay(n);
  expect(r.status, r.text).toBe(200);
  return n;
}

/**
 * The gateway's ledger and ours agree: its approved sales are exactly our approved sales on that
 * gateway (by transaction id, our attempt id as its order id, and amount), its refunded amounts are
 * ours, and nothing of ours on that gateway is still in flight.
 */
async function expectNmiLedgerAgrees(g: { id: string; key: string }) {
  const ledger = await nmiLedger(g.key);
  const ours = await app.store.run((db) => db.selectFrom('transactions').selectAll().where('team_id', '=', team.teamId).where('gateway_id', '=', g.id).execute());
  expect(ours.filter((t) => t.in_flight)).toEqual([]);
  const theirSales = ledger.filter((e) => e.type === 'sale' && e.status === 'approved').map((e) => `${e.transactionid}:${e.orderid}:${e.amount_minor}`);
  const ourSales = ours.filter((t) => t.type === 'sale' && t.status === 'approved').map((t) => `${t.provider_ref}:${t.id}:${t.amount}`);
  expect(ourSales.sort()).toEqual(theirSales.sort());
  const theirRefunds = ledger.filter((e) => e.type === 'refund' && e.status === 'approved').map((e) => `${e.transactionid}:${e.orderid}:${e.amount_minor}`);
  const ourRefunds = ours.filter((t) => t.type === 'refund' && t.status === 'approved').map((t) => `${t.provider_ref}:${t.id}:${t.amount}`);
  expect(ourRefunds.sort()).toEqual(theirRefunds.sort());
  const refundedThere = ledger.reduce((s, e) => s + (e.refunded_minor ?? 0), 0);
  const orders = [...new Set(ours.map((t) => t.order_id))];
  const refundedHere = await app.store.run(async (db) => (await db.selectFrom('orders').select('refunded_total').where('id', 'in', orders).execute()).reduce((s, o) => s + o.refunded_total, 0));
  expect(refundedHere).toBe(refundedThere);
}

describe('card (NMI): a lost answer is recovered with the Query API by our attempt id', () => {
  it('first payment, answer lost after the gateway charged: 502, 409 while in flight, recovered as approved with the card saved', async () => {
    const { g, c } = await nmiCampaign();
    const n = await lead(c);

    proxy.arm({ method: 'POST', path: NMI_TRANSACT, mode: 'forward-then-drop' });
    const r = await pay(n);
    expectUnknown(r);
    expect(seen('POST', NMI_TRANSACT).map((x) => x.mode)).toEqual(['forward-then-drop']);
    const attemptId = r.body.data.transaction_id as string;
    expect(attemptId).toBeTruthy();
    expectInFlight(await txnRow(attemptId));
    expect(await inFlight(n)).toEqual([{ id: attemptId, type: 'sale' }]);
    // The gateway did charge, under our attempt id.
    const charged = await approvedNmiSales(g.key);
    expect(charged).toHaveLength(1);
    expect(charged[0]).toMatchObject({ orderid: attemptId, amount_minor: 3000 });
    expect(charged[0]!.customer_vault_id).toBeTruthy();
    expect((await order(n)).payment_status).not.toBe('completed');

    // While it is in flight, a second charge of the order is refused before any gateway call.
    const second = await pay(n);
    expect(second.status, second.text).toBe(409);
    expect(second.body.error.code).toBe('payment_in_progress');
    expect(await nmiLedger(g.key)).toHaveLength(1);

    const tally = await recover();
    expect(tally).toMatchObject({ checked: 1, approved: 1, declined: 0, not_found: 0, unresolved: 0 });
    // The recovery's question went through to the gateway: its Query API.
    expect(seen('POST', /^\/api\/query\.php$/).length).toBeGreaterThanOrEqual(1);

    const o = await order(n);
    expect(o).toMatchObject({ status: 'processing', payment_status: 'completed', total: 3000 });
    const t = await team.api.get(`/v1/transactions/${attemptId}`);
    expect(t.body.data).toMatchObject({ status: 'approved', provider_ref: charged[0]!.transactionid, amount: 3000, gateway_id: g.id, card: { last4: '1111' } });
    expect((await txnRow(attemptId)).in_flight).toBe(false);
    expect(await inFlight(n)).toEqual([]);
    // The card the gateway vaulted is saved on the order, as the request itself would have saved it.
    const pm = await app.store.run(async (db) => {
      const row = await db.selectFrom('orders').select('payment_method_id').where('id', '=', n).executeTakeFirstOrThrow();
      return row.payment_method_id ? db.selectFrom('payment_methods').selectAll().where('id', '=', row.payment_method_id).executeTakeFirst() : undefined;
    });
    expect(pm).toMatchObject({ gateway_id: g.id, vault_ref: charged[0]!.customer_vault_id, last4: '1111' });
    expect(await approvedNmiSales(g.key)).toHaveLength(1);
    // Paying again is refused: it is paid.
    expect((await pay(n)).status).toBe(409);
    expect(await approvedNmiSales(g.key)).toHaveLength(1);

    // A following upsell is charged on that saved card.
    const up = await upsell(n, c.upsell);
    expect(up.status, up.text).toBe(200);
    expect(up.body.data.lines).toHaveLength(2);
    const sales = await approvedNmiSales(g.key);
    expect(sales).toHaveLength(2);
    expect(sales[1]).toMatchObject({ customer_vault_id: charged[0]!.customer_vault_id, amount_minor: 1000 });
    await expectNmiLedgerAgrees(g);
  });

  it('first payment, request lost before the gateway saw it: 502, recovered as not_received, and the order can be paid again', async () => {
    const { g, c } = await nmiCampaign();
    const n = await lead(c);

    proxy.arm({ method: 'POST', path: NMI_TRANSACT, mode: 'drop' });
    const r = await pay(n);
    expectUnknown(r);
    expect(seen('POST', NMI_TRANSACT).map((x) => x.mode)).toEqual(['drop']);
    const attemptId = r.body.data.transaction_id as string;
    expectInFlight(await txnRow(attemptId));
    expect(await nmiLedger(g.key)).toHaveLength(0);

    const tally = await recover();
    expect(tally).toMatchObject({ checked: 1, approved: 0, declined: 0, not_found: 1, unresolved: 0 });
    expect(await txnRow(attemptId)).toMatchObject({ in_flight: false, status: 'declined', response_code: 'not_received' });
    expect(await order(n)).toMatchObject({ status: 'declined', payment_status: 'declined' });
    expect(await eventCount(n, 'order.declined')).toBe(1);

    const again = await pay(n);
    expect(again.status, again.text).toBe(200);
    expect(again.body.data).toMatchObject({ status: 'processing', payment_status: 'completed' });
    const sales = await approvedNmiSales(g.key);
    expect(sales).toHaveLength(1);
    expect(sales[0]!.orderid).toBe(again.body.data.transaction_id);
    expect((await orderTxns(n)).map((t) => `${t.status}:${t.response_code}`)).toEqual(['declined:not_received', 'approved:100']);
    await expectNmiLedgerAgrees(g);
  });

  it('upsell, answer lost after the gateway charged: 502, a repeat is 409, recovery adds the line and a repeat then answers the stored 200', async () => {
    const { g, c } = await nmiCampaign();
    const n = await paidNmiOrder(c);

    proxy.arm({ method: 'POST', path: NMI_TRANSACT, mode: 'forward-then-drop' });
    const up = await upsell(n, c.upsell);
    expectUnknown(up);
    const attemptId = up.body.data.transaction_id as string;
    const attempt = await txnRow(attemptId);
    expectInFlight(attempt);
    expect(attempt.upsell_id).toBe(c.upsell);
    expect(up.body.data.lines).toHaveLength(1);
    const sales = await approvedNmiSales(g.key);
    expect(sales).toHaveLength(2);
    expect(sales[1]).toMatchObject({ orderid: attemptId, amount_minor: 1000 });

    const repeat = await upsell(n, c.upsell);
    expect(repeat.status, repeat.text).toBe(409);
    expect(repeat.body.error.code).toBe('payment_in_progress');
    expect(await nmiLedger(g.key)).toHaveLength(2);
    expect((await order(n)).lines).toHaveLength(1);

    const tally = await recover();
    expect(tally).toMatchObject({ checked: 1, approved: 1, declined: 0, not_found: 0, unresolved: 0 });
    const o = await order(n);
    expect(o.lines).toHaveLength(2);
    expect(o.lines.at(-1)).toMatchObject({ upsell_id: c.upsell });
    expect(o.total).toBe(4000);
    expect(await txnRow(attemptId)).toMatchObject({ in_flight: false, status: 'approved', provider_ref: sales[1]!.transactionid });
    expect(await eventCount(n, 'order.upsell_added')).toBe(1);

    // The stored answer is the one a repeat gets; no new charge.
    const after = await upsell(n, c.upsell);
    expect(after.status, after.text).toBe(200);
    expect(after.body).toMatchObject({ success: true, message: 'Upsell added.', data: { upsell_id: c.upsell, transaction_id: attemptId, total: 4000 } });
    expect(after.body.data.lines).toHaveLength(2);
    expect((await upsell(n, c.upsell)).text).toBe(after.text);
    expect(await nmiLedger(g.key)).toHaveLength(2);
    expect(await eventCount(n, 'order.upsell_added')).toBe(1);
    await expectNmiLedgerAgrees(g);
  });

  it('upsell, recorded by the recovery run while the gateway\'s answer is still on its way: the request answers what recovery recorded, the line is added once', async () => {
    const { g, c } = await nmiCampaign();
    const n = await paidNmiOrder(c);

    // The gateway charges; its answer is held at the proxy until the recovery run has recorded the charge.
    const { pending } = await answerHeldAtGateway(() => upsell(n, c.upsell));
    const [attempt] = await inFlight(n);
    expect(attempt).toMatchObject({ type: 'sale' });
    expect(await recover()).toMatchObject({ checked: 1, approved: 1, declined: 0, not_found: 0, unresolved: 0 });
    expect((await order(n)).lines).toHaveLength(2);

    // The request's phase 3 sends the approved line, the order's totals and the claim's answer with
    // the attempt's UPDATE and the COMMIT, each checking itself: the attempt is recorded already, so
    // nothing of it commits; the ordinary way then finds the attempt recorded and answers the stored 200.
    proxy.release();
    const up = await pending;
    expect(up.status, up.text).toBe(200);
    expect(up.body).toMatchObject({ success: true, message: 'Upsell added.', data: { upsell_id: c.upsell, transaction_id: attempt!.id, total: 4000 } });
    expect(up.body.data.lines).toHaveLength(2);
    const o = await order(n);
    expect(o.lines).toHaveLength(2);
    expect(o.total).toBe(4000);
    expect(await eventCount(n, 'order.upsell_added')).toBe(1);
    expect((await upsell(n, c.upsell)).text).toBe(up.text);
    expect(await approvedNmiSales(g.key)).toHaveLength(2);
    await expectNmiLedgerAgrees(g);
  });

  it('upsell whose order took another upsell while the gateway\'s answer was on its way: the answer adds its line to both, totals from all three lines', async () => {
    const { g, c } = await nmiCampaign();
    const n = await paidNmiOrder(c);

    const { pending } = await answerHeldAtGateway(() => upsell(n, c.upsell));
    // The second upsell goes through meanwhile: the order's lines and totals are no longer as the
    // first upsell's phase 1 read them.
    const second = await upsell(n, c.upsell2);
    expect(second.status, second.text).toBe(200);
    expect(second.body.data).toMatchObject({ total: 3700 });

    proxy.release();
    const up = await pending;
    expect(up.status, up.text).toBe(200);
    expect(up.body).toMatchObject({ success: true, message: 'Upsell added.', data: { upsell_id: c.upsell, subtotal: 4200, shipping_total: 500, total: 4700 } });
    expect(up.body.data.lines.map((l: { upsell_id: string | null }) => l.upsell_id)).toEqual([null, c.upsell2, c.upsell]);
    const o = await order(n);
    expect(o).toMatchObject({ subtotal: 4200, shipping_total: 500, total: 4700 });
    expect(o.lines).toHaveLength(3);
    expect(await timelineCount(n, 'upsell.added')).toBe(2);
    expect(await eventCount(n, 'order.upsell_added')).toBe(2);
    expect((await upsell(n, c.upsell)).text).toBe(up.text);
    expect(await approvedNmiSales(g.key)).toHaveLength(3);
    await expectNmiLedgerAgrees(g);
  });

  it('upsell whose order was completed while the gateway\'s answer was on its way: the answer is given from the completed order, and its fulfillment takes the line', async () => {
    const { g, c } = await nmiCampaign();
    const n = await paidNmiOrder(c);

    const { pending } = await answerHeldAtGateway(() => upsell(n, c.upsell2));
    const done = await team.api.post('/checkout/orders/complete', { order_number: n });
    expect(done.status, done.text).toBe(200);

    proxy.release();
    const up = await pending;
    expect(up.status, up.text).toBe(200);
    expect(up.body).toMatchObject({ success: true, data: { upsell_id: c.upsell2, status: 'completed', total: 3700 } });
    expect(await order(n)).toMatchObject({ status: 'completed', total: 3700 });
    const ful = await team.api.get(`/v1/fulfillments?order_number=${n}`);
    expect(ful.status, ful.text).toBe(200);
    expect(ful.body.data).toHaveLength(1);
    expect(ful.body.data[0].lines.map((l: { name: string }) => l.name)).toEqual(['o', 'ship']);
    await expectNmiLedgerAgrees(g);
  });

  it('first payment, recorded by the recovery run while the gateway\'s answer is still on its way: the request answers what recovery recorded, the order moves once', async () => {
    const { g, c } = await nmiCampaign();
    const n = await lead(c);

    // The gateway charges; its answer is held at the proxy until the recovery run has recorded the charge.
    const { pending } = await answerHeldAtGateway(() => pay(n));
    const [attempt] = await inFlight(n);
    expect(attempt).toMatchObject({ type: 'sale' });
    expect(await recover()).toMatchObject({ checked: 1, approved: 1, declined: 0, not_found: 0, unresolved: 0 });
    expect((await order(n)).status).toBe('processing');

    // The request's phase 3 sends the attempt's UPDATE and the order's move in one write, each
    // checking itself: the attempt is recorded already, so nothing of it commits and the request
    // answers the ordinary way, from what the recovery run recorded.
    proxy.release();
    const r = await pending;
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ success: true, message: 'Payment approved.', data: { transaction_id: attempt!.id, attempts: 1 } });
    expect(await timelineCount(n, 'payment.approved')).toBe(1);
    expect(await txnRow(attempt!.id)).toMatchObject({ status: 'approved', in_flight: false });
    // One saved card, the one the recovery run saved and the order names: the request's is taken back.
    const o = await app.store.run((db) => db.selectFrom('orders').select(['customer_id', 'payment_method_id']).where('id', '=', n).executeTakeFirstOrThrow());
    const methods = await app.store.run((db) => db.selectFrom('payment_methods').select('id').where('customer_id', '=', o.customer_id).execute());
    expect(methods.map((m) => m.id)).toEqual([o.payment_method_id]);
    expect(await approvedNmiSales(g.key)).toHaveLength(1);
    await expectNmiLedgerAgrees(g);
  });

  it('first payment whose order changed while the gateway\'s answer was on its way: the answer is written and given from the order as it is then', async () => {
    const { g, c } = await nmiCampaign();
    const n = await lead(c);

    const { pending } = await answerHeldAtGateway(() => pay(n));
    // A teammate flags the order for QA meanwhile: the order is no longer as phase 1 left it.
    const flagged = await team.api.patch(`/v1/orders/${n}`, { needs_qa: true, qa_reason: 'checked by hand' });
    expect(flagged.status, flagged.text).toBe(200);

    proxy.release();
    const r = await pending;
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ success: true, message: 'Payment approved.', data: { status: 'processing', needs_qa: true, qa_reason: 'checked by hand', attempts: 1 } });
    const o = await order(n);
    expect(o).toMatchObject({ status: 'processing', needs_qa: true, qa_reason: 'checked by hand' });
    expect(await timelineCount(n, 'payment.approved')).toBe(1);
    expect(await timelineCount(n, 'qa.flagged')).toBe(1);
    expect(await approvedNmiSales(g.key)).toHaveLength(1);
    await expectNmiLedgerAgrees(g);
  });

  it('refund, answer lost after the gateway refunded: 502, recovery records it and moves refunded_total; the balance holds', async () => {
    const { g, c } = await nmiCampaign();
    const n = await paidNmiOrder(c);

    proxy.arm({ method: 'POST', path: NMI_TRANSACT, mode: 'forward-then-drop' });
    const rf = await team.api.post(`/v1/orders/${n}/refunds`, { amount: 2000, reason: 'damaged' });
    expectUnknown(rf);
    const [reversal] = (await orderTxns(n)).filter((t) => t.type === 'refund');
    expect(reversal).toBeTruthy();
    expectInFlight(reversal!);
    expect(reversal!.amount).toBe(2000);
    expect(rf.body.message).toContain(reversal!.id);
    const refunds = (await nmiLedger(g.key)).filter((e) => e.type === 'refund');
    expect(refunds).toHaveLength(1);
    expect(refunds[0]).toMatchObject({ status: 'approved', orderid: reversal!.id, amount_minor: 2000 });
    expect((await order(n)).refunded_total).toBe(0);
    // The refund in flight already counts against the balance.
    const meanwhile = await team.api.post(`/v1/orders/${n}/refunds`, { amount: 2000 });
    expect(meanwhile.status, meanwhile.text).toBe(422);
    expect((await nmiLedger(g.key)).filter((e) => e.type === 'refund')).toHaveLength(1);

    const tally = await recover();
    expect(tally).toMatchObject({ checked: 1, approved: 1, declined: 0, not_found: 0, unresolved: 0 });
    expect(await txnRow(reversal!.id)).toMatchObject({ in_flight: false, status: 'approved', provider_ref: refunds[0]!.transactionid, amount: 2000 });
    const o = await order(n);
    expect(o).toMatchObject({ refunded_total: 2000, status: 'processing' });
    expect(await eventCount(n, 'refund.created')).toBe(1);
    const sale = (await nmiLedger(g.key)).find((e) => e.type === 'sale')!;
    expect(sale.refunded_minor).toBe(o.refunded_total);

    // The same refund again would exceed the balance: refused, nothing sent.
    const again = await team.api.post(`/v1/orders/${n}/refunds`, { amount: 2000, reason: 'damaged' });
    expect(again.status, again.text).toBe(422);
    expect(again.body.error.fields[0].path).toBe('amount');
    expect((await nmiLedger(g.key)).filter((e) => e.type === 'refund')).toHaveLength(1);
    // What is left can still be refunded.
    const rest = await team.api.post(`/v1/orders/${n}/refunds`, {});
    expect(rest.status, rest.text).toBe(201);
    expect(rest.body.data.order).toMatchObject({ refunded_total: 3000, status: 'refunded' });
    await expectNmiLedgerAgrees(g);
  });
});

// ---- the 3-D Secure gateway ----

async function threeDsGateway() {
  const apiKey = `sk_test_rec_${process.pid}_${++seq}`;
  const r = await team.api.post('/v1/gateways', { name: `3ds ${seq}`, kind: 'threeds', base_url: `${proxy.url}/3ds`, credentials: { api_key: apiKey, risk_sdk_key: 'pk_test_risk' } });
  expect(r.status, r.text).toBe(201);
  const acct = await postJson(`${sandbox.url}/3ds/sandbox/accounts`, { api_key: apiKey, webhook_url: null });
  expect(acct.status).toBe(200);
  return { id: r.body.data.id as string, apiKey };
}

async function threeDsLedger(apiKey: string) {
  const r = await fetch(`${sandbox.url}/3ds/sandbox/ledger?api_key=${encodeURIComponent(apiKey)}`);
  return (await r.json()) as {
    payments: Array<{ id: string; status: string; amount: number; reference: string | null; amount_refunded: number; payment_method?: string; merchant_initiated?: boolean; original_payment_id?: string }>;
  };
}

const threeDsCard = (pan: string) => ({ card_number: pan, card_exp: '12/39', card_cvv: '123', risk_session_id: `rs_${++seq}`, ...URLS });

async function expectThreeDsLedgerAgrees(g: { id: string; apiKey: string }) {
  const { payments } = await threeDsLedger(g.apiKey);
  const ours = await app.store.run((db) => db.selectFrom('transactions').selectAll().where('team_id', '=', team.teamId).where('gateway_id', '=', g.id).execute());
  expect(ours.filter((t) => t.in_flight)).toEqual([]);
  const theirs = payments.filter((p) => p.status === 'succeeded').map((p) => `${p.id}:${p.reference}:${p.amount}`);
  const mine = ours.filter((t) => t.type === 'sale' && t.status === 'approved').map((t) => `${t.provider_ref}:${t.id}:${t.amount}`);
  expect(mine.sort()).toEqual(theirs.sort());
}

describe('card (3-D Secure gateway): a lost answer is recovered by our reference', () => {
  it('frictionless first payment, answer lost after the gateway took it: recovery finds it by reference and the order is paid', async () => {
    const g = await threeDsGateway();
    const c = await campaign({ gateway_id: g.id });
    const n = await lead(c);

    proxy.arm({ method: 'POST', path: THREEDS_PAYMENTS, mode: 'forward-then-drop' });
    const r = await pay(n, threeDsCard(THREEDS_CARDS.frictionless));
    expectUnknown(r);
    expect(seen('POST', THREEDS_PAYMENTS).map((x) => x.mode)).toEqual(['forward-then-drop']);
    const attemptId = r.body.data.transaction_id as string;
    expectInFlight(await txnRow(attemptId));
    const { payments } = await threeDsLedger(g.apiKey);
    expect(payments).toHaveLength(1);
    expect(payments[0]).toMatchObject({ status: 'succeeded', reference: attemptId, amount: 3000 });

    const second = await pay(n, threeDsCard(THREEDS_CARDS.frictionless));
    expect(second.status, second.text).toBe(409);
    expect(second.body.error.code).toBe('payment_in_progress');
    expect((await threeDsLedger(g.apiKey)).payments).toHaveLength(1);

    const tally = await recover();
    expect(tally).toMatchObject({ checked: 1, approved: 1, declined: 0, not_found: 0, unresolved: 0 });
    expect(seen('GET', /^\/3ds\/v1\/payments$/).length).toBeGreaterThanOrEqual(1);
    expect(await order(n)).toMatchObject({ status: 'processing', payment_status: 'completed' });
    expect(await txnRow(attemptId)).toMatchObject({ in_flight: false, status: 'approved', provider_ref: payments[0]!.id });

    // The saved card works for a merchant-initiated upsell chained to the recovered payment.
    const up = await upsell(n, c.upsell);
    expect(up.status, up.text).toBe(200);
    const after = (await threeDsLedger(g.apiKey)).payments;
    expect(after).toHaveLength(2);
    expect(after[1]).toMatchObject({ status: 'succeeded', merchant_initiated: true, original_payment_id: payments[0]!.id, amount: 1000 });
    await expectThreeDsLedgerAgrees(g);
  });

  it('first payment never reaching the gateway: recovery fails it as not_received and the order is paid on the next try', async () => {
    const g = await threeDsGateway();
    const c = await campaign({ gateway_id: g.id });
    const n = await lead(c);

    proxy.arm({ method: 'POST', path: THREEDS_PAYMENTS, mode: 'drop' });
    const r = await pay(n, threeDsCard(THREEDS_CARDS.frictionless));
    expectUnknown(r);
    const attemptId = r.body.data.transaction_id as string;
    expect((await threeDsLedger(g.apiKey)).payments).toHaveLength(0);

    const tally = await recover();
    expect(tally).toMatchObject({ checked: 1, not_found: 1, unresolved: 0 });
    expect(await txnRow(attemptId)).toMatchObject({ in_flight: false, status: 'declined', response_code: 'not_received' });
    expect(await order(n)).toMatchObject({ status: 'declined', payment_status: 'declined' });

    const again = await pay(n, threeDsCard(THREEDS_CARDS.frictionless));
    expect(again.status, again.text).toBe(200);
    expect(again.body.data.payment_status).toBe('completed');
    await expectThreeDsLedgerAgrees(g);
  });
});

// ---- extpay (Whop) ----

interface ExtpayCompany {
  companyId: string;
  key: string;
  connectionId: string;
  campaignId: string;
  offer: string;
  upsell: string;
}

/** A sandbox company delivering its webhooks to the app, and our connection to it through the proxy. */
async function extpayCompany(opts: { chargeSettleMs: number }): Promise<ExtpayCompany> {
  const companyId = `biz_rec${process.pid}x${++seq}`;
  const key = `key_rec_${process.pid}_${seq}`;
  const secret = `ws_rec_${seq}`;
  const company = await postJson(`${sandbox.url}/extpay/sandbox/sandbox/companies`, {
    company_id: companyId,
    api_keys: [{ key }],
    webhook_url: `${app.url}/webhooks/extpay`,
    webhook_secret: secret,
    webhook_retry_delays_ms: [0, 300, 1000, 2000],
    refunds: 'manual',
    charge_settle_ms: opts.chargeSettleMs,
  });
  expect(company.status, JSON.stringify(company.body)).toBe(200);
  const conn = await team.api.post('/v1/extpay-connections', {
    name: `whop ${seq}`,
    api_key: key,
    company_id: companyId,
    environment: 'Sandbox',
    webhook_secret: secret,
    base_url: sandboxApiBaseUrl(proxy.url, 'sandbox'),
  });
  expect(conn.status, conn.text).toBe(201);
  const c = await campaign({});
  return { companyId, key, connectionId: conn.body.data.id, campaignId: c.id, offer: c.offer, upsell: c.upsell };
}

async function extpayLedger(companyId: string) {
  const r = await fetch(`${sandbox.url}/extpay/sandbox/sandbox/ledger?company_id=${encodeURIComponent(companyId)}`);
  return (await r.json()) as {
    checkout_configurations: Array<{ id: string }>;
    payments: Array<{ id: string; status: string; total: number; refunded_amount: number; member: { id: string } | null }>;
    refunds: Array<{ id: string; status: string; amount: number; payment?: { id: string } | null }>;
    events: Array<{ id: string; type: string; subject: string; delivered: boolean; attempts: Array<{ status: number | null }> }>;
  };
}

const minor = (decimal: number | string) => Math.round(Number(decimal) * 100);

function extpayOrder(x: ExtpayCompany, customerEmail = email('recx')) {
  return team.api.post('/checkout/orders', {
    campaign_id: x.campaignId,
    currency: 'USD',
    customer: { email: customerEmail, first_name: 'Ada', last_name: 'Lovelace' },
    products: [{ offer_id: x.offer, quantity: 1 }],
    payment: { method: 'extpay', return_url: 'https://shop.example/thanks', external_payment_id: x.connectionId },
  });
}

/** A paid extpay order (completed by the provider's webhook) with the payment method saved for upsells. */
async function paidExtpayOrder(x: ExtpayCompany) {
  const r = await extpayOrder(x);
  expect(r.status, r.text).toBe(200);
  const n = r.body.data.order_number as string;
  const receipt = await payOnHostedPage(r.body.data.checkout.purchase_url, EXTPAY_CARDS.paid, { saveForLater: true });
  expect(receipt).toMatch(/^pay_/);
  await until(`order ${n} completed by the webhook`, () => order(n), (o) => o.status === 'completed');
  return { n, receipt: receipt! };
}

/** The provider's paid payments are our approved sales on the connection, and its refunded amounts ours. */
async function expectExtpayLedgerAgrees(x: ExtpayCompany) {
  const ledger = await extpayLedger(x.companyId);
  // Every transaction of the orders paid through this connection (their refunds name the sale they reverse).
  const ours = await app.store.run(async (db) => {
    const orders = (await db.selectFrom('transactions').select('order_id').where('team_id', '=', team.teamId).where('connection_id', '=', x.connectionId).execute()).map((t) => t.order_id);
    return db.selectFrom('transactions').selectAll().where('team_id', '=', team.teamId).where('order_id', 'in', [...new Set(orders)]).execute();
  });
  expect(ours.filter((t) => t.in_flight)).toEqual([]);
  const theirs = ledger.payments.filter((p) => p.status === 'paid').map((p) => `${p.id}:${minor(p.total)}`);
  const mine = ours.filter((t) => t.type === 'sale' && t.status === 'approved').map((t) => `${t.provider_ref}:${t.amount}`);
  expect(mine.sort()).toEqual(theirs.sort());
  const refundedThere = ledger.payments.reduce((s, p) => s + minor(p.refunded_amount), 0);
  const refundedHere = ours.filter((t) => t.type === 'refund' && t.status === 'approved').reduce((s, t) => s + t.amount, 0);
  expect(refundedHere).toBe(refundedThere);
  const orders = [...new Set(ours.map((t) => t.order_id))];
  const totals = await app.store.run(async (db) => (await db.selectFrom('orders').select('refunded_total').where('id', 'in', orders).execute()).reduce((s, o) => s + o.refunded_total, 0));
  expect(totals).toBe(refundedThere);
}

describe('extpay: lost answers on the charge, the refund and the checkout', () => {
  it('upsell charge, answer lost after the provider took it (settled there): 502, 409 on a repeat, recovery finds it by attempt id and adds the line', async () => {
    const x = await extpayCompany({ chargeSettleMs: 0 });
    const { n, receipt } = await paidExtpayOrder(x);

    proxy.arm({ method: 'POST', path: EXTPAY_CHARGE, mode: 'forward-then-drop' });
    const up = await upsell(n, x.upsell);
    expectUnknown(up);
    expect(seen('POST', EXTPAY_CHARGE).map((r) => r.mode)).toEqual(['forward-then-drop']);
    const [attempt] = (await orderTxns(n)).filter((t) => t.upsell_id);
    expect(attempt).toMatchObject({ in_flight: true, status: 'pending', provider_ref: null, connection_id: x.connectionId, amount: 1000 });

    const repeat = await upsell(n, x.upsell);
    expect(repeat.status, repeat.text).toBe(409);
    expect(repeat.body.error.code).toBe('payment_in_progress');

    // What the provider did: one new payment, settled (charge_settle_ms 0), read from the sandbox.
    const charged = await until(
      'the upsell payment settled at the provider',
      async () => (await extpayLedger(x.companyId)).payments.filter((p) => p.id !== receipt),
      (ps) => ps.length === 1 && ps[0]!.status !== 'pending',
    );
    expect(charged[0]).toMatchObject({ status: 'paid', total: 10 });
    expect((await order(n)).lines).toHaveLength(1);

    const tally = await recover();
    expect(tally).toMatchObject({ checked: 1, approved: 1, declined: 0, not_found: 0, unresolved: 0 });
    const o = await order(n);
    expect(o.lines).toHaveLength(2);
    expect(o.lines.at(-1)).toMatchObject({ upsell_id: x.upsell });
    expect(await txnRow(attempt!.id)).toMatchObject({ in_flight: false, status: 'approved', provider_ref: charged[0]!.id });
    expect(await eventCount(n, 'order.upsell_added')).toBe(1);

    // The provider's payment.succeeded (refused with 409 webhook_not_ready while the charge was in
    // flight) is delivered again on its schedule, accepted, and changes nothing now.
    const succeeded = await until(
      'payment.succeeded of the upsell charge delivered',
      async () => (await extpayLedger(x.companyId)).events.find((e) => e.type === 'payment.succeeded' && e.subject === charged[0]!.id),
      (e) => e?.delivered === true,
    );
    expect(succeeded!.attempts.every((a) => a.status === 409 || (a.status !== null && a.status < 300))).toBe(true);
    expect(await eventCount(n, 'order.upsell_added')).toBe(1);
    expect((await order(n)).lines).toHaveLength(2);
    const after = await upsell(n, x.upsell);
    expect(after.status, after.text).toBe(200);
    expect((await extpayLedger(x.companyId)).payments).toHaveLength(2);
    await expectExtpayLedgerAgrees(x);
  });

  it('upsell charge, answer lost while the provider still holds it: recovery records it pending, and the provider’s webhook adds the line', async () => {
    const x = await extpayCompany({ chargeSettleMs: 600_000 });
    const { n, receipt } = await paidExtpayOrder(x);

    proxy.arm({ method: 'POST', path: EXTPAY_CHARGE, mode: 'forward-then-drop' });
    const up = await upsell(n, x.upsell);
    expectUnknown(up);
    const [attempt] = (await orderTxns(n)).filter((t) => t.upsell_id);
    expect(attempt).toMatchObject({ in_flight: true, status: 'pending', provider_ref: null });
    const [held] = (await extpayLedger(x.companyId)).payments.filter((p) => p.id !== receipt);
    expect(held).toMatchObject({ status: 'pending', total: 10 });

    const tally = await recover();
    expect(tally).toMatchObject({ checked: 1, approved: 0, not_found: 0, unresolved: 0 });
    // Recorded as the provider has it: pending, with its payment id, and no longer in flight.
    expect(await txnRow(attempt!.id)).toMatchObject({ in_flight: false, status: 'pending', provider_ref: held!.id });
    expect((await order(n)).lines).toHaveLength(1);
    // A repeat charges nothing new.
    const repeat = await upsell(n, x.upsell);
    expect([202, 409]).toContain(repeat.status);
    expect((await extpayLedger(x.companyId)).payments).toHaveLength(2);

    // The provider settles it: its payment.succeeded adds the line.
    expect((await postJson(`${sandbox.url}/extpay/sandbox/sandbox/payments/${held!.id}/settle`, {})).status).toBe(200);
    const o = await until('the upsell line added by payment.succeeded', () => order(n), (v) => v.lines.length === 2);
    expect(o.lines.at(-1)).toMatchObject({ upsell_id: x.upsell });
    expect(await txnRow(attempt!.id)).toMatchObject({ status: 'approved', provider_ref: held!.id });
    expect(await eventCount(n, 'order.upsell_added')).toBe(1);
    const after = await upsell(n, x.upsell);
    expect(after.status, after.text).toBe(200);
    await expectExtpayLedgerAgrees(x);
  });

  it('refund, answer lost after the provider took the request: recovery records it provisional, refund.created settles it', async () => {
    const x = await extpayCompany({ chargeSettleMs: 0 });
    const { n, receipt } = await paidExtpayOrder(x);

    proxy.arm({ method: 'POST', path: EXTPAY_REFUND, mode: 'forward-then-drop' });
    const rf = await team.api.post(`/v1/orders/${n}/refunds`, { amount: 2000, reason: 'damaged' });
    expectUnknown(rf);
    expect(seen('POST', EXTPAY_REFUND).map((r) => r.mode)).toEqual(['forward-then-drop']);
    const [reversal] = (await orderTxns(n)).filter((t) => t.type === 'refund');
    expectInFlight(reversal!);
    const requested = (await extpayLedger(x.companyId)).refunds;
    expect(requested).toHaveLength(1);
    expect(requested[0]).toMatchObject({ status: 'pending' });

    const tally = await recover();
    expect(tally).toMatchObject({ checked: 1, approved: 1, declined: 0, not_found: 0, unresolved: 0 });
    expect(await txnRow(reversal!.id)).toMatchObject({ in_flight: false, status: 'approved', provisional: true, amount: 2000, provider_ref: requested[0]!.id });
    expect((await order(n)).refunded_total).toBe(2000);

    // The provider settles less than was asked: refund.created carries what settled.
    expect((await postJson(`${sandbox.url}/extpay/sandbox/sandbox/refunds/${requested[0]!.id}/settle`, { amount: 15 })).status).toBe(200);
    const o = await until('the refund settled by refund.created', () => order(n), (v) => v.transactions.some((t: any) => t.type === 'refund' && !t.provisional));
    expect(o.transactions.find((t: any) => t.type === 'refund')).toMatchObject({ status: 'approved', amount: 1500, requested_amount: 2000, provisional: false, provider_ref: requested[0]!.id });
    expect(o.refunded_total).toBe(1500);
    const paid = (await extpayLedger(x.companyId)).payments.find((p) => p.id === receipt)!;
    expect(minor(paid.refunded_amount)).toBe(1500);
    await expectExtpayLedgerAgrees(x);
  });

  it.each(['drop', 'forward-then-drop'] as const)('checkout creation lost (%s): 502 gateway_unavailable, nothing left in flight, and the order stays payable', async (mode) => {
    const x = await extpayCompany({ chargeSettleMs: 0 });
    const customer = email('recco');
    const checkoutsBefore = (await extpayLedger(x.companyId)).checkout_configurations.length;

    proxy.arm({ method: 'POST', path: EXTPAY_CHECKOUT, mode });
    const r = await extpayOrder(x, customer);
    expect(r.status, r.text).toBe(502);
    expect(r.body.success).toBe(false);
    expect(r.body.error.code).toBe('gateway_unavailable');
    expect(seen('POST', EXTPAY_CHECKOUT).map((q) => q.mode)).toEqual([mode]);
    expect((await extpayLedger(x.companyId)).checkout_configurations).toHaveLength(checkoutsBefore + (mode === 'drop' ? 0 : 1));

    const n = await app.store.run(async (db) => {
      const c = await db.selectFrom('customers').select('id').where('team_id', '=', team.teamId).where('email', '=', customer).executeTakeFirstOrThrow();
      return (await db.selectFrom('orders').select('id').where('customer_id', '=', c.id).executeTakeFirstOrThrow()).id;
    });
    expect(await inFlight(n)).toEqual([]);
    const [failed] = await orderTxns(n);
    expect(failed).toMatchObject({ in_flight: false, status: 'declined', connection_id: x.connectionId });
    expect((await order(n)).status).toBe('pending');
    // Nothing for the recovery run to ask about.
    expect(await recover()).toMatchObject({ checked: 0 });

    // Paying again opens a checkout, and the customer can pay it.
    const again = await pay(n, { method: 'extpay', return_url: 'https://shop.example/thanks', external_payment_id: x.connectionId });
    expect(again.status, again.text).toBe(200);
    expect(again.body.data).toMatchObject({ payment_status: 'pending_redirect', redirect_required: true });
    const receipt = await payOnHostedPage(again.body.data.checkout.purchase_url, EXTPAY_CARDS.paid);
    expect(receipt).toMatch(/^pay_/);
    await until(`order ${n} completed`, () => order(n), (o) => o.status === 'completed');
    await expectExtpayLedgerAgrees(x);
  });
});
