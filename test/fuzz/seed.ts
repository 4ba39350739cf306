import { sandboxApiBaseUrl } from '../../src/providers/extpay/types.ts';
import { SANDBOX_CARDS } from '../../src/sandbox/cards.ts';
import type { ApiClient, ApiResponse } from '../support/harness.ts';

const EXTPAY_COMPANY = 'biz_fuzz';
const EXTPAY_KEY = 'key_fuzz_full';

async function created(what: string, res: Promise<ApiResponse>): Promise<any> {
  const r = await res;
  if (r.status !== 201 && r.status !== 200) throw new Error(`fuzz seed: ${what} answered ${r.status}: ${r.text}`);
  return r.body.data;
}

/**
 * One of each object the API can act on, made through the API against the provider sandbox:
 * a gateway and a router, a catalog, an extpay connection, a lead, a paid order with a trial
 * subscription, a note, a webhook endpoint, a BIN entry and a test card. The fuzzer then sends
 * its cases at these ids (and at random ones).
 */
export async function seedTeam(api: ApiClient, sandboxUrl: string): Promise<void> {
  const gateway = await created('gateway', api.post('/v1/gateways', { name: 'Fuzz NMI', kind: 'nmi', base_url: sandboxUrl, credentials: { security_key: 'key_fuzz' }, test_mode: true }));
  await created('router', api.post('/v1/payment-orchestrators', { name: 'Fuzz router', strategy: 'priority', max_attempts: 2, members: [{ gateway_id: gateway.id, priority: 1 }] }));
  const campaign = await created('campaign', api.post('/v1/campaigns', { name: 'Fuzz funnel', currency: 'USD', gateway_id: gateway.id }));
  const product = await created('product', api.post('/v1/products', { name: 'Serum', sku: 'FUZZ-1' }));
  const base = { campaign_id: campaign.id, product_id: product.id, fulfillment_type: 'physical' };
  const offer = await created('offer', api.post('/v1/offers', { ...base, name: 'One', price: 4900, shipping: 495, billing: 'one_time' }));
  const trial = await created(
    'trial offer',
    api.post('/v1/offers', { ...base, name: 'Trial', price: 0, billing: 'trial', trial_days: 14, interval_unit: 'month', interval_count: 1, recurring_price: 2900 }),
  );
  const upOffer = await created('upsell offer', api.post('/v1/offers', { ...base, name: 'Up', price: 1000, billing: 'one_time', fulfillment_type: 'digital' }));
  await created('upsell', api.post('/v1/upsells', { campaign_id: campaign.id, offer_id: upOffer.id, step: 1, name: 'Up' }));
  await created('coupon', api.post('/v1/coupons', { code: 'FUZZ10', percent_off: 10 }));

  await fetch(`${sandboxUrl}/extpay/sandbox/sandbox/companies`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ company_id: EXTPAY_COMPANY, api_keys: [{ key: EXTPAY_KEY }] }),
  });
  await created(
    'extpay connection',
    api.post('/v1/extpay-connections', { name: 'Fuzz extpay', api_key: EXTPAY_KEY, company_id: EXTPAY_COMPANY, environment: 'Sandbox', webhook_secret: 'ws_fuzz', base_url: sandboxApiBaseUrl(sandboxUrl, 'sandbox') }),
  );

  const customer = { email: 'fuzz.seed@example.com', first_name: 'Ada', last_name: 'Lovelace' };
  await created('lead', api.post('/checkout/leads', { campaign_id: campaign.id, customer: { ...customer, email: 'fuzz.lead@example.com' }, products: [{ offer_id: offer.id }] }));
  const payment = { card_number: SANDBOX_CARDS.approve, card_exp: '12/39', card_cvv: '123' };
  const order = await created(
    'order',
    api.post('/checkout/orders', { campaign_id: campaign.id, currency: 'USD', customer, products: [{ offer_id: offer.id }, { offer_id: trial.id }], payment }),
  );
  await created('completion', api.post('/checkout/orders/complete', { order_number: order.order_number }));
  await created('second order', api.post('/checkout/orders', { campaign_id: campaign.id, currency: 'USD', customer, products: [{ offer_id: offer.id }], payment }));
  const customerNumber = order.customer?.customer_number ?? order.customer_number;
  if (customerNumber) await created('note', api.post(`/v1/customers/${customerNumber}/notes`, { body: 'seeded' }));
  await created('webhook endpoint', api.post('/v1/webhook-endpoints', { url: `${sandboxUrl}/hook`, event_types: ['order.completed'] }));
  await created('BIN entry', api.post('/v1/bin-blacklist', { prefix: '400000', reason: 'fuzz' }));
  // For the token routes to rotate and revoke: the fuzzer's own token is kept out of their reach.
  await created('spare API token', api.post('/v1/api-tokens', { name: 'fuzz spare', role: 'account_manager' }));
  await created('test card', api.post('/v1/test-cards', { card_number: '4242424242424242', label: 'fuzz' }));
}

/** Values more likely to get past validation, offered beside generated ones, by field name. */
export function fieldHints(sandboxUrl: string) {
  return {
    currency: ['USD'],
    email: ['fuzz.a@example.com', 'fuzz.b@example.com', 'fuzz.seed@example.com'],
    card_number: [SANDBOX_CARDS.approve, SANDBOX_CARDS.doNotHonor, SANDBOX_CARDS.insufficientFunds, '4242424242424242'],
    card_exp: ['12/39'],
    card_cvv: ['123'],
    base_url: [sandboxUrl, sandboxApiBaseUrl(sandboxUrl, 'sandbox')],
    url: [`${sandboxUrl}/hook`],
    api_key: [EXTPAY_KEY],
    company_id: [EXTPAY_COMPANY],
    environment: ['Sandbox'],
    event_types: [['order.completed']],
    method: ['card'],
    code: ['FUZZ10'],
    coupon_code: ['FUZZ10'],
  };
}
