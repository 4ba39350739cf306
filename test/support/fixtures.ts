import { expect } from 'vitest';
import { SANDBOX_CARDS } from '../../src/sandbox/cards.ts';
import type { TestApp, TestTeam } from './harness.ts';

export interface Funnel {
  campaignId: string;
  otherCampaignId: string;
  offers: { serum: string; trial: string; guide: string; otherCampaign: string };
  upsellId: string;
}

/** A campaign with a physical one-time offer, a trial offer, a digital offer and an upsell; plus a second campaign. */
export async function seedFunnel(app: TestApp, teamId: string, currency = 'USD'): Promise<Funnel> {
  const catalog = app.ctx.services.catalog;
  const campaign = await catalog.createCampaign(teamId, { name: 'Main funnel', currency });
  const other = await catalog.createCampaign(teamId, { name: 'Other funnel', currency });
  const product = await catalog.createProduct(teamId, { name: 'Serum' });
  const serum = await catalog.createOffer(teamId, {
    campaign_id: campaign.id,
    product_id: product.id,
    name: 'Serum x1',
    price: 3900,
    shipping: 495,
    billing: 'one_time',
    fulfillment_type: 'physical',
  });
  const trial = await catalog.createOffer(teamId, {
    campaign_id: campaign.id,
    product_id: product.id,
    name: 'Club trial',
    price: 0,
    shipping: 0,
    billing: 'trial',
    trial_days: 14,
    interval_unit: 'month',
    interval_count: 1,
    recurring_price: 2900,
    recurring_shipping: 0,
    fulfillment_type: 'physical',
  });
  const guide = await catalog.createOffer(teamId, {
    campaign_id: campaign.id,
    product_id: product.id,
    name: 'Guide',
    price: 900,
    shipping: 0,
    billing: 'one_time',
    fulfillment_type: 'digital',
  });
  const otherOffer = await catalog.createOffer(teamId, {
    campaign_id: other.id,
    product_id: product.id,
    name: 'Serum elsewhere',
    price: 100,
    shipping: 0,
    billing: 'one_time',
    fulfillment_type: 'physical',
  });
  const upsell = await catalog.createUpsell(teamId, { campaign_id: campaign.id, offer_id: guide.id, step: 1, name: 'Guide upsell' });
  return {
    campaignId: campaign.id,
    otherCampaignId: other.id,
    offers: { serum: serum.id, trial: trial.id, guide: guide.id, otherCampaign: otherOffer.id },
    upsellId: upsell.id,
  };
}

/** The card funnel's configuration made through the API, its gateway the sandbox's NMI gateway. */
export interface ApiFunnel {
  gateway: string;
  campaign: string;
  product: string;
  offer: string;
  upsellOffer: string;
  upsell: string;
  /** A webhook endpoint for order.completed and order.upsell_added (nothing listens there). */
  endpoint: string;
}

/**
 * A gateway on the sandbox (its own security key), a campaign, a physical offer and a digital
 * upsell, and a webhook endpoint, each created with POST /v1/… (needs WEBHOOK_ALLOW_PRIVATE_TARGETS).
 */
export async function seedApiFunnel(team: TestTeam, sandboxUrl: string, securityKey: string): Promise<ApiFunnel> {
  const created = async (path: string, body: Record<string, unknown>) => {
    const r = await team.api.post(path, body);
    expect(r.status, `${path}: ${r.text}`).toBe(201);
    return r.body.data.id as string;
  };
  const gateway = await created('/v1/gateways', { name: 'gw', kind: 'nmi', base_url: sandboxUrl, credentials: { security_key: securityKey }, test_mode: true, is_active: true });
  const campaign = await created('/v1/campaigns', { name: 'c', currency: 'USD', gateway_id: gateway });
  const product = await created('/v1/products', { name: 'p' });
  const offer = await created('/v1/offers', { campaign_id: campaign, product_id: product, name: 'o', price: 2500, shipping: 500, billing: 'one_time', fulfillment_type: 'physical' });
  const upsellOffer = await created('/v1/offers', { campaign_id: campaign, product_id: product, name: 'u', price: 900, shipping: 0, billing: 'one_time', fulfillment_type: 'digital' });
  const upsell = await created('/v1/upsells', { campaign_id: campaign, offer_id: upsellOffer, step: 1, name: 'u' });
  const endpoint = await created('/v1/webhook-endpoints', { url: 'http://127.0.0.1:9/hooks', event_types: ['order.completed', 'order.upsell_added'] });
  return { gateway, campaign, product, offer, upsellOffer, upsell, endpoint };
}

/** One card funnel over HTTP: lead (201), payment with the sandbox's approving card, upsell, completion (200 each). Answers the order number. */
export async function runCardFunnel(team: TestTeam, f: ApiFunnel, tag: string): Promise<string> {
  const lead = await team.api.post('/checkout/leads', { campaign_id: f.campaign, customer: { email: email(tag) }, products: [{ offer_id: f.offer, quantity: 1 }] });
  expect(lead.status, lead.text).toBe(201);
  const orderNumber = lead.body.data.order_number as string;
  for (const [path, body] of [
    ['/checkout/orders/payment', { order_number: orderNumber, payment: { card_number: SANDBOX_CARDS.approve, card_exp: '12/39', card_cvv: '123' } }],
    ['/checkout/orders/upsell', { order_number: orderNumber, upsell_id: f.upsell, quantity: 1 }],
    ['/checkout/orders/complete', { order_number: orderNumber }],
  ] as const) {
    const r = await team.api.post(path, body);
    expect(r.status, `${path}: ${r.text}`).toBe(200);
  }
  return orderNumber;
}

/** A Luhn-valid card that no sandbox lists; used where the number must not leak. */
export const CANARY_PAN = '4000056655665556';
export const CARD = { card_number: '4111111111111111', card_exp: '12/39', card_cvv: '123' };

let seq = 0;
export function email(tag = 'c'): string {
  return `${tag}.${process.pid}.${Date.now()}.${++seq}@example.com`;
}
