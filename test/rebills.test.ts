/**
 * Card subscriptions that bill: the rebill queue, dunning and Rebill Now, over HTTP against the
 * NMI sandbox, with the billing clock moved forward instead of sleeping. The team's time zone is
 * UTC and the rebill hour the default 03:00.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/app/clock.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';
import { type LossyProxy, startLossyProxy } from './support/lossy-proxy.ts';

let app: TestApp;
let team: TestTeam;
let funnel: Funnel;
let sandbox: { url: string; close(): Promise<void> };
let proxy: LossyProxy;
let monthly: string;
let physicalMonthly: string;
let keySeq = 0;
const clock = new ManualClock();
const CARD = { card_number: '4111111111111111', card_exp: '12/39', card_cvv: '123' };
const day = 86_400_000;

interface LedgerEntry {
  transactionid: string;
  type: string;
  status: string;
  response_code: string;
  amount_minor?: number;
  customer_vault_id?: string | null;
  orderid?: string;
}

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  proxy = await startLossyProxy(sandbox.url);
  clock.set(new Date('2027-01-31T15:00:00Z'));
  app = await startTestApp({}, { clock });
  team = await app.newTeam();
  funnel = await seedFunnel(app, team.teamId);
  const product = (await team.api.get('/v1/products?limit=1')).body.data[0].id;
  const offer = (body: Record<string, unknown>) => team.api.post('/v1/offers', { campaign_id: funnel.campaignId, product_id: product, billing: 'recurring', interval_unit: 'month', interval_count: 1, ...body });
  const m = await offer({ name: 'Club monthly', price: 2900, recurring_price: 2900, fulfillment_type: 'digital' });
  expect(m.status, m.text).toBe(201);
  monthly = m.body.data.id;
  const p = await offer({ name: 'Serum monthly', price: 3900, shipping: 495, recurring_price: 3500, recurring_shipping: 495, fulfillment_type: 'physical' });
  expect(p.status, p.text).toBe(201);
  physicalMonthly = p.body.data.id;
});
// Each test's subscriptions end with it, so the clock moving on in later tests bills only theirs.
afterEach(async () => {
  await app.store.run((db) => db.updateTable('subscriptions').set({ status: 'cancelled', next_billing_at: null, retry_at: null }).where('team_id', '=', team.teamId).execute());
});
afterAll(async () => {
  await proxy?.close();
  await app?.close();
  await sandbox?.close();
});

/** A fresh sandbox account as the campaign's gateway (its ledger is this test's alone); `viaProxy`: reached through the lossy proxy. */
async function useGateway(viaProxy = false): Promise<string> {
  const key = `key_rebill_${process.pid}_${++keySeq}`;
  const g = await team.api.post('/v1/gateways', { name: `rebill gw ${keySeq}`, kind: 'nmi', base_url: viaProxy ? proxy.url : sandbox.url, credentials: { security_key: key }, test_mode: true });
  expect(g.status, g.text).toBe(201);
  expect((await team.api.patch(`/v1/campaigns/${funnel.campaignId}`, { gateway_id: g.body.data.id })).status).toBe(200);
  return key;
}

/** Every later charge on the account answers `code` (null: back to normal). */
async function force(key: string, code: string | null) {
  const r = await fetch(`${sandbox.url}/sandbox/nmi/accounts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ security_key: key, force_response_code: code }) });
  expect(r.status).toBe(200);
}

async function ledger(key: string): Promise<LedgerEntry[]> {
  const r = await fetch(`${sandbox.url}/sandbox/nmi/ledger?security_key=${key}`);
  return ((await r.json()) as { transactions: LedgerEntry[] }).transactions;
}

/** A completed card order of `offerId` and its subscription. */
async function subscribe(offerId: string, extra: { offer_id: string; quantity: number }[] = []) {
  const r = await team.api.post('/checkout/orders', {
    campaign_id: funnel.campaignId,
    currency: 'USD',
    customer: { email: email('rebill'), first_name: 'Ada', last_name: 'Lovelace' },
    products: [...extra, { offer_id: offerId, quantity: 1 }],
    payment: CARD,
  });
  expect(r.status, r.text).toBe(200);
  const on = r.body.data.order_number as string;
  expect((await team.api.post('/checkout/orders/complete', { order_number: on })).status).toBe(200);
  const subs = (await team.api.get(`/v1/subscriptions?order_number=${on}`)).body.data;
  expect(subs).toHaveLength(1);
  return subs[0] as { id: string; order_number: string; status: string; next_billing_at: string };
}

const run = () => app.ctx.services.checkout.rebill.runDue();

async function sub(id: string) {
  return app.store.run((db) => db.selectFrom('subscriptions').selectAll().where('id', '=', id).executeTakeFirstOrThrow());
}

async function rebillOrders(subscriptionId: string) {
  return app.store.run((db) =>
    db.selectFrom('orders').select(['id', 'status', 'payment_status', 'total', 'rebill_of', 'rebill_cycle']).where('subscription_id', '=', subscriptionId).orderBy('rebill_cycle').execute(),
  );
}

async function transactionsOf(orderId: string) {
  return app.store.run((db) => db.selectFrom('transactions').select(['id', 'type', 'status', 'amount', 'response_code', 'in_flight']).where('order_id', '=', orderId).orderBy('seq').execute());
}

async function eventTypes(since: Date) {
  const rows = await app.store.run((db) => db.selectFrom('events').select(['type']).where('team_id', '=', team.teamId).where('created_at', '>=', since).orderBy('seq').execute());
  return rows.map((r) => r.type);
}

describe('the rebill queue', () => {
  it('bills three monthly cycles on their days, clamping month ends (Jan 31 → Feb 28 → Mar 31 → Apr 30), each once', async () => {
    clock.set(new Date('2027-01-31T15:00:00Z'));
    const key = await useGateway();
    const s = await subscribe(physicalMonthly);
    expect(s.next_billing_at).toBe('2027-02-28T03:00:00.000Z');
    expect((await run()).charged).toBe(0);

    const expected = ['2027-02-28T03:00:00.000Z', '2027-03-31T03:00:00.000Z', '2027-04-30T03:00:00.000Z', '2027-05-31T03:00:00.000Z'];
    for (let cycle = 1; cycle <= 3; cycle++) {
      clock.set(new Date(new Date(expected[cycle - 1]!).getTime() - 60_000));
      expect((await run()).charged, `cycle ${cycle}: a minute early`).toBe(0);
      clock.set(new Date(new Date(expected[cycle - 1]!).getTime() + 60_000));
      const before = new Date();
      expect((await run()).charged, `cycle ${cycle}`).toBe(1);
      expect((await run()).charged, `cycle ${cycle} again`).toBe(0);
      const row = await sub(s.id);
      expect(row).toMatchObject({ status: 'active', cycle, retry_count: 0 });
      expect(row.next_billing_at?.toISOString()).toBe(expected[cycle]);
      const types = await eventTypes(before);
      expect(types).toEqual(expect.arrayContaining(['order.completed', 'subscription.renewed']));
    }
    const orders = await rebillOrders(s.id);
    expect(orders.map((o) => [o.rebill_cycle, o.status, o.payment_status, o.total, o.rebill_of])).toEqual([1, 2, 3].map((c) => [c, 'completed', 'completed', 3995, s.order_number]));
    for (const o of orders) {
      expect((await transactionsOf(o.id)).map((t) => [t.type, t.status, t.amount])).toEqual([['sale', 'approved', 3995]]);
      const f = await team.api.get(`/v1/fulfillments?order_number=${o.id}`);
      expect(f.body.data, 'a physical renewal ships').toHaveLength(1);
    }
    // The gateway charged the vaulted card three times after the first payment, never the card number.
    const sales = (await ledger(key)).filter((e) => e.type === 'sale' && e.status !== 'declined');
    expect(sales).toHaveLength(4);
    expect(sales.slice(1).every((e) => e.customer_vault_id)).toBe(true);
    const metrics = (await app.anonymous.get('/metrics')).text;
    expect(Number(/^checkstand_rebills_total\{outcome="charged"\} (\d+)/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(3);
    expect(sales.slice(1).map((e) => e.orderid).sort()).toEqual((await Promise.all(orders.map(async (o) => (await transactionsOf(o.id))[0]!.id))).sort());
  });

  it("a free 14-day trial ordered alone (the card verified and vaulted, not charged): its first rebill is on day 14, not before", async () => {
    clock.set(new Date('2027-03-01T10:00:00Z'));
    const key = await useGateway();
    const s = await subscribe(funnel.offers.trial);
    expect((await ledger(key)).map((e) => e.type)).toEqual(['validate']);
    expect(s).toMatchObject({ status: 'trialing', next_billing_at: '2027-03-15T03:00:00.000Z' });
    clock.set(new Date('2027-03-15T02:59:00Z'));
    await run();
    expect(await sub(s.id)).toMatchObject({ status: 'trialing', cycle: 0 });
    clock.set(new Date('2027-03-15T03:00:30Z'));
    await run();
    expect(await sub(s.id)).toMatchObject({ status: 'active', cycle: 1 });
    expect((await rebillOrders(s.id)).map((o) => [o.status, o.total])).toEqual([['completed', 2900]]);
  });

  it('skips externally managed subscriptions (their provider bills them)', async () => {
    clock.set(new Date('2027-06-01T10:00:00Z'));
    await useGateway();
    const s = await subscribe(monthly);
    await app.store.run((db) => db.updateTable('subscriptions').set({ externally_managed: true }).where('id', '=', s.id).execute());
    clock.set(new Date('2027-07-02T10:00:00Z'));
    await run();
    expect(await sub(s.id)).toMatchObject({ cycle: 0 });
    expect(await rebillOrders(s.id)).toEqual([]);
  });
});

describe('dunning', () => {
  it('a soft decline makes it past due and retries 1 and 3 days after the due day; a success recovers it on the same rebill order', async () => {
    clock.set(new Date('2027-08-01T12:00:00Z'));
    const key = await useGateway();
    const s = await subscribe(monthly);
    const due = new Date('2027-09-01T03:00:00Z');
    expect(s.next_billing_at).toBe(due.toISOString());
    await force(key, '202');
    clock.set(new Date(due.getTime() + 60_000));
    const since = new Date();
    expect((await run()).declined).toBe(1);
    let row = await sub(s.id);
    expect(row).toMatchObject({ status: 'past_due', retry_count: 1, cycle: 0 });
    expect(row.retry_at?.toISOString()).toBe(new Date(due.getTime() + day).toISOString());
    expect(await eventTypes(since)).toContain('subscription.past_due');

    clock.set(new Date(due.getTime() + day - 60_000));
    expect((await run()).due).toBe(0);
    clock.set(new Date(due.getTime() + day + 60_000));
    expect((await run()).declined).toBe(1);
    row = await sub(s.id);
    expect(row).toMatchObject({ status: 'past_due', retry_count: 2 });
    expect(row.retry_at?.toISOString()).toBe(new Date(due.getTime() + 3 * day).toISOString());

    await force(key, null);
    clock.set(new Date(due.getTime() + 3 * day + 60_000));
    const recovered = new Date();
    expect((await run()).charged).toBe(1);
    row = await sub(s.id);
    expect(row).toMatchObject({ status: 'active', retry_count: 0, retry_at: null, cycle: 1 });
    expect(row.next_billing_at?.toISOString()).toBe('2027-10-01T03:00:00.000Z');
    expect(await eventTypes(recovered)).toEqual(expect.arrayContaining(['subscription.recovered', 'subscription.renewed', 'order.completed']));
    const [order] = await rebillOrders(s.id);
    expect(order).toMatchObject({ status: 'completed', rebill_cycle: 1 });
    expect((await transactionsOf(order!.id)).map((t) => t.status)).toEqual(['declined', 'declined', 'approved']);
  });

  it('after the last retry fails the subscription is cancelled', async () => {
    clock.set(new Date('2027-10-05T12:00:00Z'));
    const key = await useGateway();
    const s = await subscribe(monthly);
    const due = new Date(s.next_billing_at).getTime();
    await force(key, '202');
    for (const [i, offset] of [0, 1, 3, 5, 7].entries()) {
      clock.set(new Date(due + offset * day + 60_000));
      const t = await run();
      expect(t.declined, `attempt ${i + 1}`).toBe(1);
    }
    const row = await sub(s.id);
    expect(row).toMatchObject({ status: 'cancelled', end_reason: 'payment_failed', retry_count: 5, retry_at: null, next_billing_at: null });
    clock.set(new Date(due + 40 * day));
    expect((await run()).due).toBe(0);
    const [order] = await rebillOrders(s.id);
    expect(order).toMatchObject({ status: 'declined' });
    expect(await transactionsOf(order!.id)).toHaveLength(5);
  });

  it('a hard decline (lost card) stops at once: cancelled, no retry', async () => {
    clock.set(new Date('2027-11-05T12:00:00Z'));
    const key = await useGateway();
    const s = await subscribe(monthly);
    await force(key, '251');
    clock.set(new Date(new Date(s.next_billing_at).getTime() + 60_000));
    const since = new Date();
    expect((await run()).declined).toBe(1);
    expect(await sub(s.id)).toMatchObject({ status: 'cancelled', end_reason: 'hard_decline', retry_at: null });
    expect(await eventTypes(since)).toEqual(expect.arrayContaining(['subscription.past_due', 'subscription.cancelled']));
    clock.set(new Date(new Date(s.next_billing_at).getTime() + 10 * day));
    expect((await run()).due).toBe(0);
  });
});

describe('Rebill Now', () => {
  it('charges the next cycle at once, keeps the schedule, and refuses a repeat of a paid cycle', async () => {
    clock.set(new Date('2028-01-10T12:00:00Z'));
    const key = await useGateway();
    const s = await subscribe(monthly);
    const r = await team.api.post(`/v1/subscriptions/${s.id}/rebill`, { cycle: 1 });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ cycle: 1, subscription: { id: s.id, status: 'active' } });
    expect(r.body.data.order_number).toMatch(/^ord_/);
    const row = await sub(s.id);
    expect(row.cycle).toBe(1);
    expect(row.next_billing_at?.toISOString()).toBe('2028-03-10T03:00:00.000Z');
    const again = await team.api.post(`/v1/subscriptions/${s.id}/rebill`, { cycle: 1 });
    expect(again.status).toBe(409);
    expect(again.body.message).toMatch(/already paid/);
    // The queue does not bill cycle 1 again on its day.
    clock.set(new Date('2028-02-10T04:00:00Z'));
    expect((await run()).due).toBe(0);
    expect((await ledger(key)).filter((e) => e.type === 'sale')).toHaveLength(2);
  });

  it("holds the subscription while the gateway is asked: the merchant's changes answer 409 until the answer is recorded", async () => {
    clock.set(new Date('2028-03-10T12:00:00Z'));
    await useGateway();
    const slow = '4000000000009995';
    const r = await team.api.post('/checkout/orders', {
      campaign_id: funnel.campaignId,
      currency: 'USD',
      customer: { email: email('rebill-slow') },
      products: [{ offer_id: monthly, quantity: 1 }],
      payment: { ...CARD, card_number: slow },
    });
    expect(r.status, r.text).toBe(200);
    expect((await team.api.post('/checkout/orders/complete', { order_number: r.body.data.order_number })).status).toBe(200);
    const s = (await team.api.get(`/v1/subscriptions?order_number=${r.body.data.order_number}`)).body.data[0];
    const rebill = team.api.post(`/v1/subscriptions/${s.id}/rebill`, {});
    // Wait for phase 1 (the attempt in flight), then try to cancel during the slow gateway call.
    for (let i = 0; i < 200 && (await rebillOrders(s.id)).length === 0; i++) await new Promise((res) => setTimeout(res, 10));
    const cancel = await team.api.post(`/v1/subscriptions/${s.id}/cancel`, {});
    expect(cancel.status, cancel.text).toBe(409);
    expect((await rebill).status).toBe(200);
    expect(await sub(s.id)).toMatchObject({ status: 'active', cycle: 1, billing_lease_until: null });
    expect((await team.api.post(`/v1/subscriptions/${s.id}/cancel`, {})).status).toBe(200);
  });

  it('a decline answers 402 with the decline code and starts dunning', async () => {
    clock.set(new Date('2028-04-10T12:00:00Z'));
    const key = await useGateway();
    const s = await subscribe(monthly);
    await force(key, '202');
    const r = await team.api.post(`/v1/subscriptions/${s.id}/rebill`, {});
    expect(r.status, r.text).toBe(402);
    expect(r.body).toMatchObject({ success: false, error: { code: 'payment_declined', decline_code: '202' }, data: { cycle: 1 } });
    expect(await sub(s.id)).toMatchObject({ status: 'past_due', retry_count: 1 });
  });

  it('another team gets 404; a cancelled subscription 409', async () => {
    clock.set(new Date('2028-05-10T12:00:00Z'));
    await useGateway();
    const s = await subscribe(monthly);
    const other = await app.newTeam('Other');
    expect((await other.api.post(`/v1/subscriptions/${s.id}/rebill`, {})).status).toBe(404);
    expect((await team.api.post(`/v1/subscriptions/${s.id}/cancel`, {})).status).toBe(200);
    const r = await team.api.post(`/v1/subscriptions/${s.id}/rebill`, {});
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('subscription_not_actionable');
  });
});

describe("the team's time zone", () => {
  it('bills at the rebill hour in the team zone (DST included); a change reschedules live subscriptions; an unknown zone is 422', async () => {
    clock.set(new Date('2027-02-20T15:00:00Z'));
    await useGateway();
    const s = await subscribe(monthly);
    expect(s.next_billing_at).toBe('2027-03-20T03:00:00.000Z');
    expect((await team.api.get('/v1/team')).body.data).toMatchObject({ object: 'team', id: team.teamId, time_zone: 'UTC' });
    const bad = await team.api.patch('/v1/team', { time_zone: 'Mars/Olympus_Mons' });
    expect(bad.status).toBe(422);
    expect(bad.body.error.fields).toEqual([expect.objectContaining({ path: 'time_zone' })]);
    try {
      const r = await team.api.patch('/v1/team', { time_zone: 'America/New_York' });
      expect(r.status, r.text).toBe(200);
      expect(r.body.data.time_zone).toBe('America/New_York');
      // 03:00 in New York on March 20, 2027 is daylight time (EDT, UTC−4).
      expect((await sub(s.id)).next_billing_at?.toISOString()).toBe('2027-03-20T07:00:00.000Z');
      clock.set(new Date('2027-03-20T06:59:00Z'));
      await run();
      expect((await sub(s.id)).cycle).toBe(0);
      clock.set(new Date('2027-03-20T07:01:00Z'));
      await run();
      const row = await sub(s.id);
      expect(row.cycle).toBe(1);
      expect(row.next_billing_at?.toISOString()).toBe('2027-04-20T07:00:00.000Z');
    } finally {
      expect((await team.api.patch('/v1/team', { time_zone: 'UTC' })).status).toBe(200);
    }
  });
});

describe('a rebill whose gateway answer is lost', () => {
  const TRANSACT = /^\/api\/transact\.php$/;
  const recover = async () => {
    await new Promise((r) => setTimeout(r, 10));
    return app.ctx.services.checkout.reconcile.recoverUnknownAttempts(0);
  };
  const approvedSales = async (key: string) => (await ledger(key)).filter((e) => e.type === 'sale' && e.status === 'approved');

  it('charged but unanswered: the cycle stays blocked (no second charge) until the recovery run records it', async () => {
    clock.set(new Date('2028-06-10T12:00:00Z'));
    const key = await useGateway(true);
    const s = await subscribe(monthly);
    proxy.arm({ method: 'POST', path: TRANSACT, mode: 'forward-then-drop' });
    clock.set(new Date(new Date(s.next_billing_at).getTime() + 60_000));
    expect((await run()).unknown).toBe(1);
    expect(await sub(s.id)).toMatchObject({ cycle: 0, status: 'active' });
    const [order] = await rebillOrders(s.id);
    expect((await transactionsOf(order!.id)).map((t) => t.in_flight)).toEqual([true]);
    // Another run, and Rebill Now, leave the attempt alone.
    expect((await run()).charged).toBe(0);
    const now = await team.api.post(`/v1/subscriptions/${s.id}/rebill`, {});
    expect(now.status).toBe(409);
    expect(now.body.error.code).toBe('payment_in_progress');
    expect(await approvedSales(key)).toHaveLength(2);
    const tally = await recover();
    expect(tally).toMatchObject({ approved: 1 });
    expect(await sub(s.id)).toMatchObject({ cycle: 1, status: 'active' });
    expect((await rebillOrders(s.id))[0]).toMatchObject({ status: 'completed' });
    expect(await approvedSales(key)).toHaveLength(2);
    expect((await run()).charged).toBe(0);
  });

  it('never received: no dunning, and the next run charges the cycle once', async () => {
    clock.set(new Date('2028-07-10T12:00:00Z'));
    const key = await useGateway(true);
    const s = await subscribe(monthly);
    proxy.arm({ method: 'POST', path: TRANSACT, mode: 'drop' });
    clock.set(new Date(new Date(s.next_billing_at).getTime() + 60_000));
    expect((await run()).unknown).toBe(1);
    expect(await recover()).toMatchObject({ not_found: 1 });
    expect(await sub(s.id)).toMatchObject({ cycle: 0, status: 'active', retry_count: 0 });
    expect((await run()).charged).toBe(1);
    expect(await sub(s.id)).toMatchObject({ cycle: 1, status: 'active' });
    expect(await approvedSales(key)).toHaveLength(2);
    const [order] = await rebillOrders(s.id);
    expect((await transactionsOf(order!.id)).map((t) => [t.status, t.response_code])).toEqual([
      ['declined', 'not_received'],
      ['approved', '100'],
    ]);
  });
});
