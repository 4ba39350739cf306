import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

let app: TestApp;
let team: TestTeam;
let funnel: Funnel;
const TEST_PAN = '4242424242424242';
const card = { card_number: TEST_PAN, card_exp: '12/39', card_cvv: '123' };

beforeAll(async () => {
  app = await startTestApp();
  team = await app.newTeam();
  funnel = await seedFunnel(app, team.teamId);
  // A listed test card approves without a gateway: completion is what is under test here.
  expect((await team.api.post('/v1/test-cards', { card_number: TEST_PAN })).status).toBe(201);
  // An endpoint subscribed to completions (a public address literal: registration needs no DNS).
  expect((await team.api.post('/v1/webhook-endpoints', { url: 'https://93.184.215.14/hooks', event_types: ['order.completed'] })).status).toBe(201);
});
afterAll(async () => app?.close());

async function paidOrder(products = [{ offer_id: funnel.offers.serum, quantity: 2 }, { offer_id: funnel.offers.trial, quantity: 1 }], extra: Record<string, unknown> = {}) {
  const r = await team.api.post('/checkout/orders', { campaign_id: funnel.campaignId, currency: 'USD', customer: { email: email('done') }, products, payment: card, ...extra });
  expect(r.status, r.text).toBe(200);
  return r.body.data.order_number as string;
}

async function counts(orderId: string) {
  return app.store.run(async (db) => {
    const n = async (q: Promise<unknown[]>) => (await q).length;
    return {
      completedEvents: await n(db.selectFrom('events').select('id').where('order_id', '=', orderId).where('type', '=', 'order.completed').execute()),
      subscriptionEvents: await n(db.selectFrom('events').select('id').where('order_id', '=', orderId).where('type', '=', 'subscription.created').execute()),
      fulfillments: await n(db.selectFrom('fulfillments').select('id').where('order_id', '=', orderId).execute()),
      subscriptions: await n(db.selectFrom('subscriptions').select('id').where('order_id', '=', orderId).execute()),
      redemptions: await n(db.selectFrom('coupon_redemptions').select('id').where('order_id', '=', orderId).execute()),
      mail: await n(db.selectFrom('mail_messages').select('id').where('order_id', '=', orderId).execute()),
      deliveries: await n(
        db
          .selectFrom('webhook_deliveries')
          .innerJoin('events', 'events.id', 'webhook_deliveries.event_id')
          .select('webhook_deliveries.id')
          .where('events.order_id', '=', orderId)
          .where('events.type', '=', 'order.completed')
          .execute(),
      ),
    };
  });
}

/** The data of the order's `order.completed` timeline rows (GET /v1/orders/:n's events). */
async function completedTimelineRows(orderNumber: string) {
  const r = await team.api.get(`/v1/orders/${orderNumber}`);
  expect(r.status, r.text).toBe(200);
  return (r.body.data.events as Array<{ type: string; data: Record<string, unknown> }>).filter((e) => e.type === 'order.completed').map((e) => e.data);
}

describe('Complete Order', () => {
  it('completes once: fulfillment for physical lines, a subscription for the trial, one order.completed event', async () => {
    const on = await paidOrder();
    const first = await team.api.post('/checkout/orders/complete', { order_number: on });
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ success: true, message: 'Order completed.', data: { status: 'completed', payment_status: 'completed' } });
    const second = await team.api.post('/checkout/orders/complete', { order_number: on });
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    const c = await counts(on);
    expect(c).toMatchObject({ completedEvents: 1, subscriptionEvents: 1, fulfillments: 1, subscriptions: 1, mail: 1, deliveries: 1 });

    const ful = (await team.api.get(`/v1/fulfillments?order_number=${on}`)).body.data;
    expect(ful[0].lines).toHaveLength(2); // serum and the physical trial product
    // The completion's timeline row names the fulfillment it created (its insert rides with the move).
    expect(await completedTimelineRows(on)).toEqual([expect.objectContaining({ fulfillment_id: ful[0].id })]);
    const sub = (await team.api.get(`/v1/subscriptions?order_number=${on}`)).body.data[0];
    expect(sub).toMatchObject({ status: 'trialing', recurring_price: 2900, interval_unit: 'month' });
    expect(new Date(sub.next_billing_at).getTime() - Date.now()).toBeGreaterThan(13 * 86400_000);
    const events = (await team.api.get(`/v1/events?order_number=${on}&type=order.completed`)).body.data;
    expect(events).toHaveLength(1);
    expect(events[0].data.object).toMatchObject({ order_number: on, status: 'completed' });
  });

  it('concurrent Complete Order calls complete the order exactly once', async () => {
    const on = await paidOrder();
    const rs = await Promise.all(Array.from({ length: 10 }, () => team.api.post('/checkout/orders/complete', { order_number: on })));
    expect(rs.every((r) => r.status === 200)).toBe(true);
    expect(await counts(on)).toMatchObject({ completedEvents: 1, fulfillments: 1, subscriptions: 1, mail: 1, deliveries: 1 });
  });

  it('a digital-only order has no fulfillment', async () => {
    const on = await paidOrder([{ offer_id: funnel.offers.guide, quantity: 1 }]);
    await team.api.post('/checkout/orders/complete', { order_number: on });
    expect(await counts(on)).toMatchObject({ completedEvents: 1, fulfillments: 0, subscriptions: 0 });
    expect(await completedTimelineRows(on)).toEqual([expect.objectContaining({ fulfillment_id: null })]);
  });

  it('refuses an unpaid order and fires nothing while the payment is pending_redirect', async () => {
    const lead = await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email() }, products: [{ offer_id: funnel.offers.serum, quantity: 1 }] });
    const unpaid = await team.api.post('/checkout/orders/complete', { order_number: lead.body.data.order_number });
    expect(unpaid.status).toBe(409);
    expect(unpaid.body.error.code).toBe('order_not_completable');

    // The redirect flows set this state; here it is set directly.
    const on = lead.body.data.order_number;
    await app.store.run((db) => db.updateTable('orders').set({ status: 'pending', payment_status: 'pending_redirect' }).where('id', '=', on).execute());
    const pending = await team.api.post('/checkout/orders/complete', { order_number: on });
    expect(pending.status).toBe(409);
    expect(pending.body.message).toMatch(/pending_redirect/);
    expect(await counts(on)).toMatchObject({ completedEvents: 0, fulfillments: 0, subscriptions: 0, mail: 0, deliveries: 0 });
    expect((await team.api.get(`/v1/events?order_number=${on}`)).body.data).toEqual([]);
    expect((await team.api.post('/checkout/orders/complete', { order_number: 'ord_missing' })).status).toBe(404);
  });

  it('applies a coupon to the first purchase and records its use once at completion', async () => {
    const coupon = await app.ctx.services.catalog.createCoupon(team.teamId, { code: 'SAVE10', percent_off: 10, max_redemptions: 2 });
    const on = await paidOrder([{ offer_id: funnel.offers.serum, quantity: 1 }], { coupon_code: 'save10' });
    const order = (await team.api.get(`/v1/orders/${on}`)).body.data;
    expect(order).toMatchObject({ subtotal: 3900, discount_total: 390, shipping_total: 495, total: 4005, coupon_id: coupon.id });
    await team.api.post('/checkout/orders/complete', { order_number: on });
    await team.api.post('/checkout/orders/complete', { order_number: on });
    expect(await counts(on)).toMatchObject({ redemptions: 1 });
    expect((await team.api.get(`/v1/coupons/${coupon.id}`)).body.data.times_redeemed).toBe(1);

    const second = await paidOrder([{ offer_id: funnel.offers.serum, quantity: 1 }], { coupon_code: 'SAVE10' });
    await team.api.post('/checkout/orders/complete', { order_number: second });
    const exhausted = await team.api.post('/checkout/orders', {
      campaign_id: funnel.campaignId,
      currency: 'USD',
      customer: { email: email() },
      products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
      payment: card,
      coupon_code: 'SAVE10',
    });
    expect(exhausted.status).toBe(422);
    expect(exhausted.body.error.fields[0]).toEqual({ path: 'coupon_code', message: 'this coupon has been used up' });
    const unknown = await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email() }, coupon_code: 'NOPE' });
    expect(unknown.status).toBe(422);
  });

  it('queues outbound events for declines, upsells and refunds in the same transaction', async () => {
    const on = await paidOrder([{ offer_id: funnel.offers.serum, quantity: 1 }]);
    const up = await team.api.post('/checkout/orders/upsell', { order_number: on, upsell_id: funnel.upsellId, quantity: 1 });
    expect(up.status).toBe(200);
    const refund = await team.api.post(`/v1/orders/${on}/refunds`, { amount: 100 });
    expect(refund.status).toBe(201);
    const types = (await team.api.get(`/v1/events?order_number=${on}`)).body.data.map((e: { type: string }) => e.type);
    expect(types).toEqual(['refund.created', 'order.upsell_added']);
    const declined = await team.api.post('/checkout/orders', {
      campaign_id: funnel.campaignId,
      currency: 'USD',
      customer: { email: email() },
      products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
      payment: { card_number: '4111111111111111', card_exp: '12/39', card_cvv: '123' },
    });
    expect(declined.status).toBe(402);
    const dTypes = (await team.api.get(`/v1/events?order_number=${declined.body.data.order_number}`)).body.data.map((e: { type: string }) => e.type);
    expect(dTypes).toEqual(['order.declined']);
    expect((await team.api.get('/v1/event-types')).body.data.map((t: { type: string }) => t.type)).toContain('order.completed');
  });
});
