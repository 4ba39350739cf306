/**
 * What an affiliate-scoped caller (an Affiliate role member or token, an Affiliate Provider) sees
 * of an order. Spec 5.6 gives them dashboards and reports for their affiliate ids, not the
 * merchant's customers: the order's number, status, dates, totals, lines and affiliate block, with
 * no customer, contact data, addresses, transactions, disputes or timeline.
 *
 * And only a conversion that counted for them: an order whose first payment was approved, not
 * throttled and not a test order. A lead is never shown, so an order cannot be seen as a lead and
 * then vanish when its conversion is throttled (which would tell the affiliate it was throttled).
 */
import { z } from 'zod';
import { Timestamp } from '../../app/schemas.ts';
import type { Row } from '../../db/schema.ts';
import { OrderLine } from './responses.ts';
import type { OrderView } from './views.ts';

/** The first payment was approved (a void of it later leaves it a conversion, with its reversal). */
export const CONVERTED_PAYMENT_STATUSES = ['completed', 'voided'] as const;

/** Whether an affiliate-scoped caller with these affiliate ids may see this order at all. */
export function visibleToAffiliates(order: Row<'orders'>, scope: readonly string[]): boolean {
  return (
    order.affiliate_id !== null &&
    scope.includes(order.affiliate_id) &&
    !order.is_throttle &&
    !order.is_test &&
    (CONVERTED_PAYMENT_STATUSES as readonly (string | null)[]).includes(order.payment_status)
  );
}

export function affiliateOrderView(o: OrderView) {
  return {
    object: o.object,
    order_number: o.order_number,
    status: o.status,
    payment_status: o.payment_status,
    campaign_id: o.campaign_id,
    currency: o.currency,
    lines: o.lines,
    subtotal: o.subtotal,
    shipping_total: o.shipping_total,
    discount_total: o.discount_total,
    total: o.total,
    refunded_total: o.refunded_total,
    completed_at: o.completed_at,
    rebill_of: o.rebill_of,
    is_test: o.is_test,
    affiliate: o.affiliate,
    created_at: o.created_at,
    updated_at: o.updated_at,
  };
}

export const AffiliateOrder = z
  .object({
    object: z.literal('order'),
    order_number: z.string().describe('`ord_…`'),
    status: z.string(),
    payment_status: z.string().nullable(),
    campaign_id: z.string(),
    currency: z.string(),
    lines: z.array(OrderLine),
    subtotal: z.number().int(),
    shipping_total: z.number().int(),
    discount_total: z.number().int(),
    total: z.number().int(),
    refunded_total: z.number().int(),
    completed_at: Timestamp.nullable(),
    rebill_of: z.string().nullable(),
    is_test: z.boolean(),
    affiliate: z
      .object({
        affiliate_id: z.string(),
        click_id: z.string().nullable(),
        sub1: z.string().nullable(),
        sub2: z.string().nullable(),
        sub3: z.string().nullable(),
        sub4: z.string().nullable(),
        sub5: z.string().nullable(),
      })
      .nullable(),
    created_at: Timestamp.nullable(),
    updated_at: Timestamp.nullable(),
  })
  .meta({
    id: 'AffiliateOrder',
    description:
      'An order as an affiliate-scoped caller (Affiliate role, Affiliate Provider) sees it: only converted orders of its affiliate ids that are neither throttled nor test orders, without the customer, contact data, addresses, transactions, disputes or timeline.',
  });
