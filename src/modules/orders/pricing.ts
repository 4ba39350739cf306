import { newId } from '../../app/ids.ts';
import type { Address, NewRow, Row } from '../../db/schema.ts';

/** A cart line before it belongs to an order. */
/** A line as priced from its offer, before it is an order's (no `order_id`; an upsell's line names its upsell). */
export type LineDraft = Omit<NewRow<'order_lines'>, 'order_id' | 'upsell_id'> & { upsell_id: string | null };

/** A coupon discounts the products of the first purchase (not shipping, not upsells), never below zero. */
export function discountOf(coupon: Row<'coupons'>, lines: Array<{ line_total: number; upsell_id?: string | null | undefined }>): number {
  const base = lines.filter((l) => !l.upsell_id).reduce((s, l) => s + l.line_total, 0);
  if (coupon.percent_off) return Math.round((base * coupon.percent_off) / 100);
  return Math.min(coupon.amount_off ?? 0, base);
}

export function totalsOf(lines: Array<{ line_total: number; shipping: number }>, discount = 0) {
  const subtotal = lines.reduce((s, l) => s + l.line_total, 0);
  const shipping_total = lines.reduce((s, l) => s + l.shipping, 0);
  return { subtotal, shipping_total, discount_total: discount, total: Math.max(0, subtotal + shipping_total - discount) };
}

/** A cart line priced from the offer on our side. Shipping is charged once per line, whatever the quantity. */
export function draftLine(teamId: string, offer: Row<'offers'>, quantity: number): LineDraft {
  return {
    id: newId('orderLine'),
    team_id: teamId,
    offer_id: offer.id,
    product_id: offer.product_id,
    upsell_id: null,
    name: offer.name,
    quantity,
    unit_price: offer.price,
    shipping: offer.shipping,
    line_total: offer.price * quantity,
    billing_type: offer.billing_type,
    fulfillment_type: offer.fulfillment_type,
  };
}

export function sameAddress(a: Address | null, b: Address | undefined): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

