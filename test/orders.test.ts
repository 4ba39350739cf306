import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CARD, email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

let app: TestApp;
let team: TestTeam;
let funnel: Funnel;

beforeAll(async () => {
  app = await startTestApp();
  team = await app.newTeam();
  funnel = await seedFunnel(app, team.teamId);
});
afterAll(async () => app?.close());

async function counts() {
  return app.store.run(async (db) => {
    const n = async (t: 'orders' | 'transactions' | 'customers' | 'order_events') =>
      Number((await db.selectFrom(t).select((eb) => eb.fn.countAll<number>().as('n')).where('team_id', '=', team.teamId).executeTakeFirstOrThrow()).n);
    return { orders: await n('orders'), transactions: await n('transactions'), customers: await n('customers'), events: await n('order_events') };
  });
}

function order(overrides: Record<string, unknown> = {}) {
  return {
    campaign_id: funnel.campaignId,
    currency: 'USD',
    customer: { email: email(), first_name: 'Ada', last_name: 'Lovelace' },
    products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
    billing: { line1: '1 Main St', city: 'Springfield', country: 'US' },
    payment: { method: 'card', ...CARD },
    ...overrides,
  };
}

describe('Create Order and Process Payment (foundation: no gateway is configured yet)', () => {
  it('creates the order with server-side totals and records the unroutable attempt as a declined transaction', async () => {
    const r = await team.api.post('/checkout/orders', order({ products: [{ offer_id: funnel.offers.serum, quantity: 3 }] }));
    expect(r.status).toBe(402);
    expect(r.body).toMatchObject({
      success: false,
      message: 'Payment declined: No payment gateway is configured for this campaign.',
      data: { status: 'declined', payment_status: 'declined', subtotal: 11700, shipping_total: 495, total: 12195, redirect_required: false },
      error: { type: 'card_error', code: 'payment_declined', decline_code: 'no_route' },
    });
    const detail = await team.api.get(`/v1/orders/${r.body.data.order_number}`);
    expect(detail.body.data.transactions).toHaveLength(1);
    expect(detail.body.data.transactions[0]).toMatchObject({
      status: 'declined',
      amount: 12195,
      response_code: 'no_route',
      card: { brand: 'visa', bin: '411111', last4: '1111', exp: '12/39' },
    });
    expect(detail.body.data.billing_address).toMatchObject({ line1: '1 Main St' });
  });

  it('keeps a declined order payable: Process Payment tries again and records a second attempt', async () => {
    const lead = await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email() }, products: [{ offer_id: funnel.offers.guide, quantity: 1 }] });
    const on = lead.body.data.order_number;
    const first = await team.api.post('/checkout/orders/payment', { order_number: on, payment: CARD });
    expect(first.status).toBe(402);
    const second = await team.api.post('/checkout/orders/payment', { order_number: on, payment: CARD, is_throttle: true });
    expect(second.status).toBe(402);
    expect(second.body.data.is_throttled).toBe(true);
    const txns = await team.api.get(`/v1/transactions?order_number=${on}`);
    expect(txns.body.data).toHaveLength(2);
  });

  it('refuses server-owned fields (mass assignment) and writes nothing', async () => {
    const before = await counts();
    for (const [field, value] of [
      ['payment_status', 'completed'],
      ['total', 1],
      ['subtotal', 1],
      ['is_test', true],
      ['is_throttled', true],
      ['status', 'completed'],
    ] as const) {
      const r = await team.api.post('/checkout/orders', order({ [field]: value }));
      expect(r.status, field).toBe(422);
      expect(r.body.error.fields).toContainEqual({ path: field, message: 'is not a field you can set here' });
    }
    const price = await team.api.post('/checkout/orders', order({ products: [{ offer_id: funnel.offers.serum, quantity: 1, price: 1 }] }));
    expect(price.status).toBe(422);
    expect(price.body.error.fields).toContainEqual({ path: 'products.0.price', message: 'is not a field you can set here' });
    expect(await counts()).toEqual(before);
  });

  it('validates the whole request of spec 2.1–2.2 with field paths, before writing anything', async () => {
    const before = await counts();
    const cases: Array<[Record<string, unknown>, string]> = [
      [order({ currency: 'EUR' }), 'currency'],
      [order({ currency: 'usd' }), 'currency'],
      [order({ customer: { email: 'not-an-email' } }), 'customer.email'],
      [order({ products: [] }), 'products'],
      [order({ products: [{ offer_id: funnel.offers.serum, quantity: 0 }] }), 'products.0.quantity'],
      [order({ products: [{ offer_id: funnel.offers.otherCampaign, quantity: 1 }] }), 'products.0.offer_id'],
      [order({ payment: { ...CARD, card_number: '4111111111111112' } }), 'payment.card_number'],
      [order({ payment: { ...CARD, card_exp: '13/30' } }), 'payment.card_exp'],
      [order({ payment: { ...CARD, card_exp: '01/20' } }), 'payment.card_exp'],
      [order({ payment: { ...CARD, card_cvv: '12' } }), 'payment.card_cvv'],
      [order({ payment: { method: 'card', card_exp: '12/30', card_cvv: '123' } }), 'payment.card_number'],
      [order({ payment: { method: 'extpay', ...CARD, return_url: 'https://shop.example/back' } }), 'payment.card_number'],
      [order({ payment: { method: 'extpay' } }), 'payment.return_url'],
      [order({ payment: { method: 'paypal' } }), 'payment.method'],
      [order({ gateway_id: 'gw_1', payment_orchestrator_id: 'po_1' }), 'payment_orchestrator_id'],
      [order({ payment: undefined }), 'payment'],
    ];
    for (const [body, path] of cases) {
      const r = await team.api.post('/checkout/orders', body);
      expect(r.status, path).toBe(422);
      expect(r.body.success).toBe(false);
      expect(r.body.error.fields.map((f: { path: string }) => f.path), JSON.stringify(r.body)).toContain(path);
    }
    expect(await counts()).toEqual(before);
  });

  it('extpay without a configured connection fails with the spec message and writes nothing', async () => {
    const before = await counts();
    const r = await team.api.post('/checkout/orders', order({ payment: { method: 'extpay', return_url: 'https://shop.example/thanks' } }));
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ success: false, error: { code: 'provider_not_configured' } });
    expect(r.body.message).toMatch(/provider is not configured for this team/);
    expect(await counts()).toEqual(before);
  });

  it('answers malformed JSON, wrong content type and oversize bodies with 4xx in the envelope', async () => {
    const bad = await team.api.request('POST', '/checkout/orders', '{"campaign_id": ', { 'content-type': 'application/json' });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ success: false, error: { code: 'malformed_json' } });
    const text = await team.api.request('POST', '/checkout/orders', 'hello', { 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    expect(text.body.error.code).toBe('unsupported_media_type');
    const huge = await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email() }, pad: 'x'.repeat(300_000) });
    expect(huge.status).toBe(413);
    expect(huge.body.error.code).toBe('body_too_large');
  });

  it('refuses to pay an order twice once paid, and Process Payment needs products', async () => {
    const lead = await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email() } });
    const r = await team.api.post('/checkout/orders/payment', { order_number: lead.body.data.order_number, payment: CARD });
    expect(r.status).toBe(422);
    expect(r.body.error.fields).toContainEqual({ path: 'products', message: 'the order has no products; send products with the payment' });
    // A paid order (status set as the payment core will) cannot be paid again.
    await app.store.run((db) => db.updateTable('orders').set({ status: 'processing', payment_status: 'completed' }).where('id', '=', lead.body.data.order_number).execute());
    const again = await team.api.post('/checkout/orders/payment', { order_number: lead.body.data.order_number, payment: CARD, products: [{ offer_id: funnel.offers.serum, quantity: 1 }] });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('order_not_payable');
  });
});
