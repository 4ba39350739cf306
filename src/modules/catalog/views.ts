/** Catalog rows as the API shows them (never team_id or seq), and the list shapes of the catalog routes. */
import { iso, type ListQuery } from '../../app/schemas.ts';
import type { Row } from '../../db/schema.ts';
import { abandonmentView } from '../leads/settings.ts';
import type { Campaign, Coupon, Offer, Product, Upsell } from './schemas.ts';

export interface ListPage<T> {
  items: T[];
  has_more: boolean;
}

export type CampaignFilter = ListQuery & { campaign_id?: string | undefined };

// ---- the one place rows become what the API shows (never team_id or seq)

export function campaignView(r: Row<'campaigns'>): Campaign {
  return {
    object: 'campaign',
    id: r.id,
    name: r.name,
    currency: r.currency,
    gateway_id: r.gateway_id,
    payment_orchestrator_id: r.payment_orchestrator_id,
    is_active: r.is_active,
    abandonment: abandonmentView(r),
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
}

export function productView(r: Row<'products'>): Product {
  return {
    object: 'product',
    id: r.id,
    name: r.name,
    sku: r.sku,
    description: r.description,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
}

export function offerView(r: Row<'offers'>): Offer {
  return {
    object: 'offer',
    id: r.id,
    campaign_id: r.campaign_id,
    product_id: r.product_id,
    name: r.name,
    price: r.price,
    shipping: r.shipping,
    billing: r.billing_type,
    interval_unit: r.interval_unit,
    interval_count: r.interval_count,
    trial_days: r.trial_days,
    recurring_price: r.recurring_price,
    recurring_shipping: r.recurring_shipping,
    fulfillment_type: r.fulfillment_type,
    is_active: r.is_active,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
}

export function upsellView(r: Row<'upsells'>): Upsell {
  return {
    object: 'upsell',
    id: r.id,
    campaign_id: r.campaign_id,
    offer_id: r.offer_id,
    step: r.step,
    name: r.name,
    is_active: r.is_active,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
}

export function couponView(r: Row<'coupons'>): Coupon {
  return {
    object: 'coupon',
    id: r.id,
    code: r.code,
    campaign_id: r.campaign_id,
    percent_off: r.percent_off,
    amount_off: r.amount_off,
    currency: r.currency,
    max_redemptions: r.max_redemptions,
    times_redeemed: r.times_redeemed,
    expires_at: iso(r.expires_at),
    is_active: r.is_active,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
}
