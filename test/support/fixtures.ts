import type { TestApp } from './harness.ts';

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

/** A Luhn-valid card that no sandbox lists; used where the number must not leak. */
export const CANARY_PAN = '4000056655665556';
export const CARD = { card_number: '4111111111111111', card_exp: '12/39', card_cvv: '123' };

let seq = 0;
export function email(tag = 'c'): string {
  return `${tag}.${process.pid}.${Date.now()}.${++seq}@example.com`;
}
