/**
 * Local management of card subscriptions (issue 14, part 5), over HTTP: Cancel now or at period
 * end, Pause → Restart and Reactivate (the next billing date kept or re-anchored), PATCH of the
 * next billing date, quantity and offer, and the fields the subscription shows. The billing clock
 * is a ManualClock set per test; the rebill hour is the default 03:00.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/app/clock.ts';
import { newId } from '../src/app/ids.ts';
import { dueAt } from '../src/modules/subscriptions/schedule.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

let app: TestApp;
let team: TestTeam;
let other: TestTeam;
let funnel: Funnel;
let sandbox: { url: string; close(): Promise<void> };
const clock = new ManualClock();
const CARD = { card_number: '4111111111111111', card_exp: '12/39', card_cvv: '123' };
const HOUR = 3;
const offers = {} as Record<'monthly' | 'weekly' | 'inactive' | 'elsewhere' | 'foreign', string>;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  clock.set(new Date('2027-01-10T15:00:00Z'));
  app = await startTestApp({}, { clock });
  team = await app.newTeam();
  other = await app.newTeam('Other');
  funnel = await seedFunnel(app, team.teamId);
  const product = (await team.api.get('/v1/products?limit=1')).body.data[0].id;
  const offer = async (api: TestTeam['api'], body: Record<string, unknown>) => {
    const r = await api.post('/v1/offers', { product_id: product, billing: 'recurring', fulfillment_type: 'physical', price: 3900, ...body });
    expect(r.status, r.text).toBe(201);
    return r.body.data.id as string;
  };
  const main = { campaign_id: funnel.campaignId };
  offers.monthly = await offer(team.api, { ...main, name: 'Serum monthly', interval_unit: 'month', interval_count: 1, recurring_price: 3500, recurring_shipping: 495 });
  offers.weekly = await offer(team.api, { ...main, name: 'Serum weekly', interval_unit: 'week', interval_count: 1, recurring_price: 1500, recurring_shipping: 300 });
  offers.inactive = await offer(team.api, { ...main, name: 'Old plan', interval_unit: 'month', interval_count: 2, recurring_price: 1000 });
  expect((await team.api.patch(`/v1/offers/${offers.inactive}`, { is_active: false })).status).toBe(200);
  offers.elsewhere = await offer(team.api, { campaign_id: funnel.otherCampaignId, name: 'Other monthly', interval_unit: 'month', interval_count: 1, recurring_price: 100 });
  const foreignFunnel = await seedFunnel(app, other.teamId);
  const foreignProduct = (await other.api.get('/v1/products?limit=1')).body.data[0].id;
  const f = await other.api.post('/v1/offers', {
    campaign_id: foreignFunnel.campaignId,
    product_id: foreignProduct,
    name: 'Theirs',
    price: 100,
    billing: 'recurring',
    interval_unit: 'month',
    interval_count: 1,
    recurring_price: 100,
    fulfillment_type: 'digital',
  });
  expect(f.status, f.text).toBe(201);
  offers.foreign = f.body.data.id;
  const g = await team.api.post('/v1/gateways', { name: 'manage gw', kind: 'nmi', base_url: sandbox.url, credentials: { security_key: `key_manage_${process.pid}` }, test_mode: true });
  expect(g.status, g.text).toBe(201);
  expect((await team.api.patch(`/v1/campaigns/${funnel.campaignId}`, { gateway_id: g.body.data.id })).status).toBe(200);
});
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});

interface SubscriptionBody {
  id: string;
  order_number: string;
  status: string;
  next_billing_at: string | null;
  [k: string]: unknown;
}

/** A completed card order (saved card) of `quantity` × `offerId`, and its subscription. */
async function subscribe(offerId = offers.monthly, quantity = 1): Promise<SubscriptionBody> {
  const r = await team.api.post('/checkout/orders', {
    campaign_id: funnel.campaignId,
    currency: 'USD',
    customer: { email: email('manage'), first_name: 'Ada', last_name: 'Lovelace' },
    products: [{ offer_id: offerId, quantity }],
    payment: CARD,
  });
  expect(r.status, r.text).toBe(200);
  const on = r.body.data.order_number as string;
  expect((await team.api.post('/checkout/orders/complete', { order_number: on })).status).toBe(200);
  const subs = (await team.api.get(`/v1/subscriptions?order_number=${on}`)).body.data;
  expect(subs).toHaveLength(1);
  expect(subs[0]).toMatchObject({ externally_managed: false, status: 'active' });
  return subs[0];
}

async function row(id: string) {
  return app.store.run((db) => db.selectFrom('subscriptions').selectAll().where('id', '=', id).executeTakeFirstOrThrow());
}

async function setRow(id: string, patch: Record<string, unknown>) {
  await app.store.run((db) => db.updateTable('subscriptions').set(patch).where('id', '=', id).execute());
}

async function setTimeZone(timeZone: string) {
  const r = await team.api.patch('/v1/team', { time_zone: timeZone });
  expect(r.status, r.text).toBe(200);
}

async function updatedEvents(orderId: string) {
  return app.store.run(async (db) => {
    const rows = await db.selectFrom('events').select('payload').where('order_id', '=', orderId).where('type', '=', 'subscription.updated').orderBy('seq').execute();
    return rows.map((r) => (typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload).object as SubscriptionBody);
  });
}

async function statusChanges(orderId: string) {
  const rows = await app.store.run((db) =>
    db.selectFrom('order_events').select('data').where('order_id', '=', orderId).where('type', '=', 'subscription.status_changed').orderBy('created_at').execute(),
  );
  return rows.map((r) => {
    const d = (typeof r.data === 'string' ? JSON.parse(r.data) : r.data) as { from_status: string; to_status: string };
    return `${d.from_status}→${d.to_status}`;
  });
}

async function rebillOrders(subscriptionId: string) {
  return app.store.run((db) => db.selectFrom('orders').select(['id', 'rebill_cycle']).where('subscription_id', '=', subscriptionId).execute());
}

const runRebills = () => app.ctx.services.checkout.rebill.runDue();

/** Cycle `n` of the stored schedule, in the team's zone at the rebill hour. */
async function cycleDue(id: string, n: number, timeZone = 'UTC'): Promise<string> {
  return dueAt(await row(id), n, timeZone, HOUR).toISOString();
}

describe('the subscription shows what integrators need', () => {
  it('quantity, cycle, the saved card (brand, last 4, expiry: nothing more), dunning and end fields, in retrieve and list', async () => {
    clock.set(new Date('2027-01-10T15:00:00Z'));
    const s = await subscribe(offers.monthly, 2);
    const stored = await row(s.id);
    expect(stored.payment_method_id).toMatch(/^pm_/);
    const method = await app.store.run((db) => db.selectFrom('payment_methods').selectAll().where('id', '=', stored.payment_method_id!).executeTakeFirstOrThrow());
    const got = (await team.api.get(`/v1/subscriptions/${s.id}`)).body.data;
    expect(got).toMatchObject({
      quantity: 2,
      recurring_price: 2 * 3500 + 495,
      cycle: 0,
      retry_count: 0,
      retry_at: null,
      ended_at: null,
      end_reason: null,
      next_billing_at: stored.next_billing_at!.toISOString(),
    });
    expect(got.payment_method).toEqual({ brand: method.brand, last4: '1111', exp: '12/39' });
    expect(s.payment_method).toEqual(got.payment_method);
    expect(JSON.stringify(got)).not.toContain(method.bin);
    expect(JSON.stringify(got)).not.toContain(stored.payment_method_id);
  });
});

describe('Cancel on a card subscription', () => {
  it('now: cancelled, ended_at now, end_reason cancelled_by_merchant, no retry left, never billed again', async () => {
    clock.set(new Date('2027-03-10T15:00:00Z'));
    const s = await subscribe();
    // In dunning: a retry is scheduled.
    await setRow(s.id, { status: 'past_due', retry_count: 1, retry_at: new Date('2027-03-12T03:00:00Z') });
    const r = await team.api.post(`/v1/subscriptions/${s.id}/cancel`, {});
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ status: 'cancelled', end_reason: 'cancelled_by_merchant', retry_at: null, next_billing_at: null });
    expect(Math.abs(new Date(r.body.data.ended_at).getTime() - clock.now().getTime())).toBeLessThan(60_000);
    expect(await row(s.id)).toMatchObject({ status: 'cancelled', end_reason: 'cancelled_by_merchant', retry_at: null });
    expect(await statusChanges(s.order_number)).toEqual(['past_due→cancelled']);
    expect((await updatedEvents(s.order_number)).map((e) => [e.status, e.end_reason])).toEqual([['cancelled', 'cancelled_by_merchant']]);

    // Past the retry and the next cycle's day: nothing is charged.
    clock.set(new Date('2027-05-01T15:00:00Z'));
    await runRebills();
    expect(await rebillOrders(s.id)).toEqual([]);
  });

  it('at period end: keeps next_billing_at, not ended yet; Reactivate keeps the date still ahead', async () => {
    clock.set(new Date('2027-03-10T15:00:00Z'));
    const s = await subscribe();
    const r = await team.api.post(`/v1/subscriptions/${s.id}/cancel`, { at_period_end: true });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ status: 'cancel_at_period_end', next_billing_at: s.next_billing_at, ended_at: null, end_reason: null });
    expect((await row(s.id)).next_billing_at?.toISOString()).toBe(s.next_billing_at);

    const back = await team.api.post(`/v1/subscriptions/${s.id}/reactivate`);
    expect(back.body.data).toMatchObject({ status: 'active', next_billing_at: s.next_billing_at });
    expect(await statusChanges(s.order_number)).toEqual(['active→cancel_at_period_end', 'cancel_at_period_end→active']);
  });
});

describe('Pause and Restart', () => {
  it('restarted before the date: the paused period keeps its next billing date and schedule', async () => {
    clock.set(new Date('2027-06-10T15:00:00Z'));
    const s = await subscribe();
    const before = await row(s.id);
    const paused = await team.api.post(`/v1/subscriptions/${s.id}/pause`);
    expect(paused.body.data).toMatchObject({ status: 'paused', next_billing_at: null });
    clock.set(new Date('2027-06-25T15:00:00Z'));
    const r = await team.api.post(`/v1/subscriptions/${s.id}/resume`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ status: 'active', next_billing_at: s.next_billing_at });
    expect(await row(s.id)).toMatchObject({ next_billing_at: before.next_billing_at, billing_anchor: before.billing_anchor, anchor_cycle: before.anchor_cycle });
  });

  it('restarted after the date passed: the next cycle is due at the next rebill hour, the missed cycles are skipped', async () => {
    clock.set(new Date('2027-06-10T15:00:00Z'));
    const s = await subscribe();
    expect(s.next_billing_at).toBe('2027-07-10T03:00:00.000Z');
    expect((await team.api.post(`/v1/subscriptions/${s.id}/pause`)).status).toBe(200);
    // Paused through two cycle days; the queue does not bill it meanwhile.
    clock.set(new Date('2027-08-20T15:00:00Z'));
    await runRebills();
    expect(await rebillOrders(s.id)).toEqual([]);

    const r = await team.api.post(`/v1/subscriptions/${s.id}/resume`);
    expect(r.status, r.text).toBe(200);
    // 15:00 UTC is past today's 03:00: tomorrow's.
    expect(r.body.data).toMatchObject({ status: 'active', cycle: 0, next_billing_at: '2027-08-21T03:00:00.000Z' });
    expect(await row(s.id)).toMatchObject({ anchor_cycle: 1, billing_anchor: new Date('2027-08-21T03:00:00Z') });
    expect(await cycleDue(s.id, 2)).toBe('2027-09-21T03:00:00.000Z');
    // Nothing is billed after the fact.
    await runRebills();
    expect(await rebillOrders(s.id)).toEqual([]);
  });

  it("re-anchors at today's rebill hour when it is still ahead, in the team's time zone", async () => {
    await setTimeZone('Asia/Tokyo');
    try {
      clock.set(new Date('2027-06-10T15:00:00Z'));
      const s = await subscribe();
      expect((await team.api.post(`/v1/subscriptions/${s.id}/pause`)).status).toBe(200);
      // 2027-08-20 16:30 UTC is 01:30 on Aug 21 in Tokyo: 03:00 there is still ahead.
      clock.set(new Date('2027-08-20T16:30:00Z'));
      const r = await team.api.post(`/v1/subscriptions/${s.id}/resume`);
      expect(r.body.data.next_billing_at).toBe('2027-08-20T18:00:00.000Z');
    } finally {
      await setTimeZone('UTC');
    }
  });

  it('Reactivate of a cancelled subscription whose date passed: re-anchored, end cleared, dunning reset', async () => {
    clock.set(new Date('2027-06-10T15:00:00Z'));
    const s = await subscribe();
    await setRow(s.id, { status: 'past_due', retry_count: 2, retry_at: new Date('2027-07-13T03:00:00Z') });
    clock.set(new Date('2027-07-12T15:00:00Z'));
    expect((await team.api.post(`/v1/subscriptions/${s.id}/cancel`)).status).toBe(200);
    clock.set(new Date('2027-07-30T01:00:00Z'));
    const r = await team.api.post(`/v1/subscriptions/${s.id}/reactivate`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ status: 'active', ended_at: null, end_reason: null, retry_count: 0, retry_at: null, next_billing_at: '2027-07-30T03:00:00.000Z' });
    expect(await statusChanges(s.order_number)).toEqual(['past_due→cancelled', 'cancelled→active']);
  });
});

describe('PATCH /v1/subscriptions/{id}', () => {
  it("next_billing_at: the day in the team's zone at the rebill hour; later cycles count from it (Jan 31 → Feb 28 → Mar 31 → Apr 30)", async () => {
    await setTimeZone('America/New_York');
    try {
      clock.set(new Date('2027-01-10T15:00:00Z'));
      const s = await subscribe();
      const r = await team.api.patch(`/v1/subscriptions/${s.id}`, { next_billing_at: '2027-01-31' });
      expect(r.status, r.text).toBe(200);
      expect(r.body).toMatchObject({ success: true, message: 'Subscription updated.' });
      // 03:00 EST.
      expect(r.body.data.next_billing_at).toBe('2027-01-31T08:00:00.000Z');
      expect(await row(s.id)).toMatchObject({ anchor_cycle: 1, cycle: 0 });
      const zone = 'America/New_York';
      expect([await cycleDue(s.id, 2, zone), await cycleDue(s.id, 3, zone), await cycleDue(s.id, 4, zone)]).toEqual([
        '2027-02-28T08:00:00.000Z',
        '2027-03-31T07:00:00.000Z', // EDT
        '2027-04-30T07:00:00.000Z',
      ]);
      expect((await updatedEvents(s.order_number)).map((e) => e.next_billing_at)).toEqual(['2027-01-31T08:00:00.000Z']);
      expect(await statusChanges(s.order_number)).toEqual([]);

      // A date-time counts by its day in the team's zone: Feb 1 02:00 UTC is Jan 31 21:00 in New York.
      const dt = await team.api.patch(`/v1/subscriptions/${s.id}`, { next_billing_at: '2027-02-01T02:00:00Z' });
      expect(dt.body.data.next_billing_at).toBe('2027-01-31T08:00:00.000Z');

      // The queue bills cycle 1 that day and moves on to the schedule's Feb 28.
      clock.set(new Date('2027-01-31T09:00:00Z'));
      await runRebills();
      expect((await rebillOrders(s.id)).map((o) => o.rebill_cycle)).toEqual([1]);
      expect((await team.api.get(`/v1/subscriptions/${s.id}`)).body.data).toMatchObject({ cycle: 1, next_billing_at: '2027-02-28T08:00:00.000Z' });
    } finally {
      await setTimeZone('UTC');
    }
  });

  it('quantity: the price becomes recurring price × quantity + recurring shipping; the date stays', async () => {
    clock.set(new Date('2027-09-10T15:00:00Z'));
    const s = await subscribe();
    const r = await team.api.patch(`/v1/subscriptions/${s.id}`, { quantity: 3 });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ quantity: 3, recurring_price: 3 * 3500 + 495, next_billing_at: s.next_billing_at, interval_unit: 'month' });
    expect((await updatedEvents(s.order_number)).map((e) => e.quantity)).toEqual([3]);

    // The same again changes nothing and announces nothing.
    expect((await team.api.patch(`/v1/subscriptions/${s.id}`, { quantity: 3 })).status).toBe(200);
    expect(await updatedEvents(s.order_number)).toHaveLength(1);
  });

  it("offer_id: the new offer's interval and price from the next cycle, which stays due when it was", async () => {
    clock.set(new Date('2027-09-10T15:00:00Z'));
    const s = await subscribe(offers.monthly, 2);
    const r = await team.api.patch(`/v1/subscriptions/${s.id}`, { offer_id: offers.weekly });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({
      offer_id: offers.weekly,
      interval_unit: 'week',
      interval_count: 1,
      quantity: 2,
      recurring_price: 2 * 1500 + 300,
      next_billing_at: s.next_billing_at,
    });
    expect(s.next_billing_at).toBe('2027-10-10T03:00:00.000Z');
    expect([await cycleDue(s.id, 1), await cycleDue(s.id, 2), await cycleDue(s.id, 3)]).toEqual([
      '2027-10-10T03:00:00.000Z',
      '2027-10-17T03:00:00.000Z',
      '2027-10-24T03:00:00.000Z',
    ]);

    // Together with a date and a quantity: anchored on the new day in the new interval.
    const both = await team.api.patch(`/v1/subscriptions/${s.id}`, { offer_id: offers.monthly, quantity: 1, next_billing_at: '2027-10-31' });
    expect(both.status, both.text).toBe(200);
    expect(both.body.data).toMatchObject({ interval_unit: 'month', recurring_price: 3500 + 495, next_billing_at: '2027-10-31T03:00:00.000Z' });
    expect(await cycleDue(s.id, 2)).toBe('2027-11-30T03:00:00.000Z');
  });

  it('past_due: a new date moves the retry of the unpaid cycle there and keeps the dunning count and status', async () => {
    clock.set(new Date('2027-11-20T15:00:00Z'));
    const s = await subscribe();
    await setRow(s.id, { status: 'past_due', retry_count: 1, retry_at: new Date('2027-12-21T03:00:00Z') });
    const r = await team.api.patch(`/v1/subscriptions/${s.id}`, { next_billing_at: '2028-01-05' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ status: 'past_due', retry_count: 1, retry_at: '2028-01-05T03:00:00.000Z', next_billing_at: '2028-01-05T03:00:00.000Z' });
    expect(await statusChanges(s.order_number)).toEqual([]);
  });

  it('a paused subscription takes a new date and keeps it when restarted before it', async () => {
    clock.set(new Date('2027-11-20T15:00:00Z'));
    const s = await subscribe();
    expect((await team.api.post(`/v1/subscriptions/${s.id}/pause`)).status).toBe(200);
    const r = await team.api.patch(`/v1/subscriptions/${s.id}`, { next_billing_at: '2028-02-29' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ status: 'paused', next_billing_at: null });
    clock.set(new Date('2028-01-15T15:00:00Z'));
    expect((await team.api.post(`/v1/subscriptions/${s.id}/resume`)).body.data.next_billing_at).toBe('2028-02-29T03:00:00.000Z');
  });

  it('refusals change nothing: past dates, bad values, offers it cannot move to, unknown fields (422 naming the field)', async () => {
    clock.set(new Date('2027-12-10T15:00:00Z'));
    const s = await subscribe();
    const before = await row(s.id);
    const refused = async (body: unknown, field: string, message?: RegExp) => {
      const r = await team.api.patch(`/v1/subscriptions/${s.id}`, body);
      expect(r.status, `${JSON.stringify(body)}: ${r.text}`).toBe(422);
      expect(r.body).toMatchObject({ success: false, error: { code: 'validation_failed' } });
      expect(r.body.error.fields.map((f: { path: string }) => f.path)).toContain(field);
      if (message) expect(r.body.message).toMatch(message);
    };
    await refused({ next_billing_at: '2027-12-09' }, 'next_billing_at', /must be in the future/);
    // Today, but 03:00 has passed.
    await refused({ next_billing_at: '2027-12-10' }, 'next_billing_at', /already past/);
    await refused({ next_billing_at: '2027-12-09T23:00:00Z' }, 'next_billing_at', /must be in the future/);
    await refused({ next_billing_at: '2028-02-30' }, 'next_billing_at');
    await refused({ next_billing_at: 'tomorrow' }, 'next_billing_at');
    await refused({ quantity: 0 }, 'quantity');
    await refused({ quantity: 101 }, 'quantity');
    await refused({ quantity: 1.5 }, 'quantity');
    await refused({ offer_id: funnel.offers.serum }, 'offer_id', /one-time offer/);
    await refused({ offer_id: offers.elsewhere }, 'offer_id', /another campaign/);
    await refused({ offer_id: offers.inactive }, 'offer_id', /not active/);
    await refused({ offer_id: offers.foreign }, 'offer_id', /no offer with this id/);
    await refused({ offer_id: newId('offer') }, 'offer_id', /no offer with this id/);
    await refused({ interval_unit: 'week' }, 'interval_unit');
    await refused({ recurring_price: 1 }, 'recurring_price');
    const empty = await team.api.patch(`/v1/subscriptions/${s.id}`, {});
    expect(empty.status).toBe(422);
    expect(empty.body.message).toMatch(/at least one of next_billing_at, quantity, offer_id/);

    // An offer of the same campaign in another currency than the subscription's.
    await setRow(s.id, { currency: 'EUR' });
    await refused({ offer_id: offers.weekly }, 'offer_id', /sells in USD, but the subscription bills in EUR/);
    await setRow(s.id, { currency: before.currency });

    expect(await row(s.id)).toEqual(before);
    expect(await updatedEvents(s.order_number)).toEqual([]);
  });

  it('refusals by state: another team 404, externally managed 409, ended 409, a rebill being charged 409', async () => {
    clock.set(new Date('2027-12-10T15:00:00Z'));
    const s = await subscribe();
    const before = await row(s.id);
    const foreign = await other.api.patch(`/v1/subscriptions/${s.id}`, { quantity: 2 });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toMatchObject({ success: false, data: null, error: { code: 'not_found' } });

    // A billing run holds its lease: cancel, pause and PATCH wait for it.
    await setRow(s.id, { billing_lease_until: new Date(clock.now().getTime() + 5 * 60_000) });
    for (const [method, path, body] of [
      ['PATCH', '', { quantity: 2 }],
      ['POST', '/cancel', {}],
      ['POST', '/pause', {}],
    ] as const) {
      const r = await team.api.request(method, `/v1/subscriptions/${s.id}${path}`, body);
      expect(r.status, `${method} ${path}: ${r.text}`).toBe(409);
      expect(r.body.error.code).toBe('payment_in_progress');
      expect(r.body.message).toMatch(/rebill of this subscription is being charged/);
    }
    await setRow(s.id, { billing_lease_until: null });
    expect(await row(s.id)).toEqual({ ...before, updated_at: expect.any(Date) });

    // Billed by an external provider: the provider holds the plan.
    const ext = newId('subscription');
    await app.store.run((db) =>
      db
        .insertInto('subscriptions')
        .values({
          id: ext,
          team_id: team.teamId,
          order_id: s.order_number,
          customer_id: before.customer_id,
          offer_id: offers.monthly,
          status: 'active',
          externally_managed: true,
          membership_ref: 'mem_manage',
          interval_unit: 'month',
          interval_count: 1,
          recurring_price: 3500,
          currency: 'USD',
        })
        .execute(),
    );
    const external = await team.api.patch(`/v1/subscriptions/${ext}`, { next_billing_at: '2028-01-31' });
    expect(external.status, external.text).toBe(409);
    expect(external.body).toMatchObject({ error: { code: 'subscription_externally_managed' } });
    expect(external.body.message).toMatch(/external provider, which holds its plan/);

    expect((await team.api.post(`/v1/subscriptions/${s.id}/cancel`)).status).toBe(200);
    const ended = await team.api.patch(`/v1/subscriptions/${s.id}`, { quantity: 2 });
    expect(ended.status).toBe(409);
    expect(ended.body).toMatchObject({ error: { code: 'subscription_not_actionable' }, data: { status: 'cancelled' } });
    expect(ended.body.message).toMatch(/reactivate it first/);
    expect((await row(s.id)).quantity).toBe(1);
  });
});

describe('OpenAPI', () => {
  it('documents PATCH /v1/subscriptions/{id} and the new subscription fields', async () => {
    const spec = (await app.anonymous.get('/openapi.json')).body;
    const op = spec.paths['/v1/subscriptions/{id}']?.patch;
    expect(op?.summary).toBeTruthy();
    expect(op?.description).toMatch(/subscription_externally_managed/);
    const schemas = spec.components.schemas;
    expect(Object.keys(schemas.UpdateSubscription.properties).sort()).toEqual(['next_billing_at', 'offer_id', 'quantity']);
    for (const field of ['quantity', 'cycle', 'payment_method', 'retry_count', 'retry_at', 'ended_at', 'end_reason', 'next_billing_at'])
      expect(schemas.Subscription.properties[field]?.description ?? schemas.Subscription.properties[field], field).toBeTruthy();
  });
});
