import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxApiBaseUrl } from '../src/providers/extpay/types.ts';
import { EXTPAY_CARDS } from '../src/sandbox/extpay-provider.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { payOnHostedPage } from './support/extpay.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

let app: TestApp;
let team: TestTeam;
let funnel: Funnel;
let sandbox: { url: string; close(): Promise<void> };
let connectionId: string;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  app = await startTestApp();
  team = await app.newTeam();
  funnel = await seedFunnel(app, team.teamId);
  await fetch(`${sandbox.url}/extpay/sandbox/sandbox/companies`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ company_id: 'biz_extpaytest', api_keys: [{ key: 'key_extpay_full' }] }),
  });
  const c = await team.api.post('/v1/extpay-connections', {
    name: 'Whop sandbox',
    api_key: 'key_extpay_full',
    company_id: 'biz_extpaytest',
    environment: 'Sandbox',
    webhook_secret: 'ws_extpay_test',
    base_url: sandboxApiBaseUrl(sandbox.url, 'sandbox'),
  });
  expect(c.status, c.text).toBe(201);
  connectionId = c.body.data.id;
});
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});


function createOrder(products = [{ offer_id: funnel.offers.serum, quantity: 1 }], payment: Record<string, unknown> = {}) {
  return team.api.post('/checkout/orders', {
    campaign_id: funnel.campaignId,
    currency: 'USD',
    customer: { email: email('ext'), first_name: 'Ada', last_name: 'Lovelace' },
    products,
    payment: { method: 'extpay', return_url: 'https://shop.example/thanks', ...payment },
  });
}

async function effects(on: string) {
  return app.store.run(async (db) => ({
    completed: (await db.selectFrom('events').select('id').where('order_id', '=', on).where('type', '=', 'order.completed').execute()).length,
    fulfillments: (await db.selectFrom('fulfillments').select('id').where('order_id', '=', on).execute()).length,
    subscriptions: await db.selectFrom('subscriptions').select(['externally_managed', 'membership_ref', 'next_billing_at', 'status', 'connection_id']).where('order_id', '=', on).execute(),
  }));
}

describe('extpay: Create Order and Capture (spec 4.1 rules 8-10, 4.2)', () => {
  it('answers pending_redirect with the checkout object of spec 2.4', async () => {
    const r = await createOrder();
    expect(r.status, r.text).toBe(200);
    const d = r.body.data;
    expect(d).toMatchObject({ payment_status: 'pending_redirect', redirect_required: true, is_test: true });
    expect(Object.keys(d.checkout).sort()).toEqual(['environment', 'plan_id', 'prefill', 'provider', 'purchase_url', 'session_id', 'setup_future_usage']);
    expect(d.checkout).toMatchObject({ provider: 'extpay', environment: 'sandbox', setup_future_usage: 'off_session', prefill: { name: 'Ada Lovelace' } });
    expect(d.checkout.prefill.email).toMatch(/@example\.com$/);
    expect(d.redirect_url).toBe(d.checkout.purchase_url);
    expect(d.checkout.session_id).toMatch(/^ch_/);
    expect((await team.api.post('/checkout/orders/complete', { order_number: d.order_number })).status).toBe(409);
    expect(await effects(d.order_number)).toMatchObject({ completed: 0, fulfillments: 0 });
  });

  it('a trial cart creates one renewal plan: trial days, recurring price × quantity + recurring shipping', async () => {
    const r = await createOrder([
      { offer_id: funnel.offers.serum, quantity: 1 },
      { offer_id: funnel.offers.trial, quantity: 2 },
    ]);
    const plan = await (await fetch(`${sandboxApiBaseUrl(sandbox.url, 'sandbox')}/plans/${r.body.data.checkout.plan_id}`, { headers: { authorization: 'Bearer key_extpay_full' } })).json();
    expect(plan).toMatchObject({ plan_type: 'renewal', trial_period_days: 14, billing_period: 30 });
    expect(Number(plan.renewal_price)).toBe(58); // 2 × 29.00, no recurring shipping
  });

  it('Capture with the receipt: 200 completed once, with an externally managed subscription', async () => {
    const r = await createOrder([
      { offer_id: funnel.offers.serum, quantity: 1 },
      { offer_id: funnel.offers.trial, quantity: 1 },
    ]);
    const on = r.body.data.order_number;
    const receipt = await payOnHostedPage(r.body.data.checkout.purchase_url, EXTPAY_CARDS.paid);
    expect(receipt).toMatch(/^pay_/);
    const cap = await team.api.post('/checkout/orders/capture', { order_number: on, payment_id: receipt });
    expect(cap.status, cap.text).toBe(200);
    expect(cap.body.data).toMatchObject({ status: 'completed', payment_status: 'completed' });
    const again = await team.api.post('/checkout/orders/capture', { order_number: on, payment_id: receipt });
    expect(again.status).toBe(200);
    expect(again.body.message).toBe('Payment already captured.');
    const e = await effects(on);
    expect(e.completed).toBe(1);
    expect(e.fulfillments).toBe(1);
    expect(e.subscriptions).toHaveLength(1);
    const sub = e.subscriptions[0]!;
    expect(sub).toMatchObject({ externally_managed: true, status: 'trialing', connection_id: connectionId });
    expect(sub.membership_ref).toMatch(/^mem_/);
    // Status and next billing date are the provider's membership's, not computed here (spec 2.9).
    const m = await (await fetch(`${sandboxApiBaseUrl(sandbox.url, 'sandbox')}/memberships/${sub.membership_ref}`, { headers: { authorization: 'Bearer key_extpay_full' } })).json();
    expect(m.status).toBe('trialing');
    expect(sub.next_billing_at!.toISOString()).toBe(new Date(m.renewal_period_end).toISOString());
  });

  it('Capture completes with the coupon: the checkout charges the discounted total and the redemption is recorded once', async () => {
    const coupon = await app.ctx.services.catalog.createCoupon(team.teamId, { code: 'EXT10', percent_off: 10 });
    const r = await team.api.post('/checkout/orders', {
      campaign_id: funnel.campaignId,
      currency: 'USD',
      customer: { email: email('cpn') },
      products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
      coupon_code: 'EXT10',
      payment: { method: 'extpay', return_url: 'https://shop.example/thanks' },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.total).toBe(3900 + 495 - 390);
    const receipt = await payOnHostedPage(r.body.data.checkout.purchase_url, EXTPAY_CARDS.paid);
    const paid = await (await fetch(`${sandboxApiBaseUrl(sandbox.url, 'sandbox')}/payments/${receipt}`, { headers: { authorization: 'Bearer key_extpay_full' } })).json();
    expect(Number(paid.total)).toBe(40.05);
    for (let i = 0; i < 2; i++) expect((await team.api.post('/checkout/orders/capture', { order_number: r.body.data.order_number, payment_id: receipt })).status).toBe(200);
    expect((await team.api.get(`/v1/coupons/${coupon.id}`)).body.data.times_redeemed).toBe(1);
  });

  it('Capture: 202 while the provider holds the money, 422 on failure or a foreign receipt, 404 with nothing to capture', async () => {
    const held = await createOrder();
    const heldReceipt = await payOnHostedPage(held.body.data.checkout.purchase_url, EXTPAY_CARDS.pending);
    const pending = await team.api.post('/checkout/orders/capture', { order_number: held.body.data.order_number, payment_id: heldReceipt });
    expect(pending.status, pending.text).toBe(202);
    expect(pending.body).toMatchObject({ success: true, data: { payment_status: 'pending_external_confirmation' } });

    const other = await createOrder();
    const foreign = await team.api.post('/checkout/orders/capture', { order_number: other.body.data.order_number, payment_id: heldReceipt });
    expect(foreign.status).toBe(422);
    expect(foreign.body.message).toMatch(/payment capture failed/i);

    const failing = await createOrder();
    await payOnHostedPage(failing.body.data.checkout.purchase_url, EXTPAY_CARDS.failed);
    const failed = await team.api.post('/checkout/orders/capture', { order_number: failing.body.data.order_number });
    expect(failed.status, failed.text).toBe(422);
    expect(failed.body.message).toMatch(/payment capture failed/i);

    const lead = await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email() } });
    const none = await team.api.post('/checkout/orders/capture', { order_number: lead.body.data.order_number });
    expect(none.status).toBe(404);
    expect(none.body.message).toBe('No capturable transaction found for this order.');
  });

  it('Process Payment pays a lead through the provider, and Reprocess opens a new checkout after a decline', async () => {
    const lead = await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email('lead') }, products: [{ offer_id: funnel.offers.serum, quantity: 1 }] });
    const on = lead.body.data.order_number;
    const paid = await team.api.post('/checkout/orders/payment', { order_number: on, payment: { method: 'extpay', return_url: 'https://shop.example/thanks' } });
    expect(paid.status, paid.text).toBe(200);
    expect(paid.body.data).toMatchObject({ order_number: on, payment_status: 'pending_redirect', redirect_required: true });
    const missing = await team.api.post('/checkout/orders/payment', { order_number: on, payment: { method: 'extpay' } });
    expect(missing.status).toBe(422);
    await payOnHostedPage(paid.body.data.checkout.purchase_url, EXTPAY_CARDS.failed);
    expect((await team.api.post('/checkout/orders/capture', { order_number: on })).status).toBe(422);
    const again = await team.api.post('/checkout/orders/reprocess', { order_number: on, payment: { method: 'extpay', return_url: 'https://shop.example/thanks' } });
    expect(again.status, again.text).toBe(200);
    expect(again.body.data.checkout.session_id).not.toBe(paid.body.data.checkout.session_id);
    const receipt = await payOnHostedPage(again.body.data.checkout.purchase_url, EXTPAY_CARDS.paid);
    const cap = await team.api.post('/checkout/orders/capture', { order_number: on, payment_id: receipt });
    expect(cap.status, cap.text).toBe(200);
    expect(cap.body.data).toMatchObject({ status: 'completed', payment_status: 'completed' });
  });

  it('pins a connection, and refuses a deleted or inactive pin', async () => {
    expect((await createOrder(undefined, { external_payment_id: connectionId })).status).toBe(200);
    const spare = (await team.api.post('/v1/extpay-connections', { name: 'spare', api_key: 'key_x_123456789', company_id: 'biz_spare', environment: 'Sandbox' })).body.data.id;
    await team.api.delete(`/v1/extpay-connections/${spare}`);
    const r = await createOrder(undefined, { external_payment_id: spare });
    expect(r.status).toBe(422);
    expect(r.body.message).toMatch(/provider is not configured for this team/);
  });
});
