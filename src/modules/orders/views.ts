import { iso } from '../../app/schemas.ts';
import type { Row } from '../../db/schema.ts';
import type { ExtpayEmbedCheckout } from '../../providers/extpay/types.ts';
import { customerView } from '../customers/service.ts';

export interface OrderEvent {
  type: string;
  data?: Record<string, unknown>;
}

/** What a line's view reads: a line's row, or a new line as priced (before the database adds its `seq` and `created_at`). */
export type LineViewSource = Pick<Row<'order_lines'>, 'id' | 'offer_id' | 'product_id' | 'upsell_id' | 'name' | 'quantity' | 'unit_price' | 'shipping' | 'line_total' | 'billing_type' | 'fulfillment_type'>;

export function lineView(l: LineViewSource) {
  return {
    id: l.id,
    offer_id: l.offer_id,
    product_id: l.product_id,
    upsell_id: l.upsell_id,
    name: l.name,
    quantity: l.quantity,
    unit_price: l.unit_price,
    shipping: l.shipping,
    line_total: l.line_total,
    billing_type: l.billing_type,
    fulfillment_type: l.fulfillment_type,
  };
}

export function orderView(o: Row<'orders'>, customer: Row<'customers'>, lines: readonly LineViewSource[]) {
  return {
    object: 'order' as const,
    order_number: o.id,
    status: o.status,
    payment_status: o.payment_status,
    campaign_id: o.campaign_id,
    currency: o.currency,
    customer: customerView(customer),
    phone: o.phone,
    shipping_address: o.shipping_address,
    billing_address: o.billing_address,
    lines: lines.map(lineView),
    subtotal: o.subtotal,
    shipping_total: o.shipping_total,
    discount_total: o.discount_total,
    total: o.total,
    refunded_total: o.refunded_total,
    coupon_id: o.coupon_id,
    completed_at: iso(o.completed_at),
    rebill_of: o.rebill_of,
    subscription_id: o.subscription_id,
    needs_qa: o.needs_qa,
    qa_reason: o.qa_reason,
    is_test: o.is_test,
    is_throttled: o.is_throttle,
    affiliate: o.affiliate_id
      ? { affiliate_id: o.affiliate_id, click_id: o.affiliate_click_id, sub1: o.affiliate_sub1, sub2: o.affiliate_sub2, sub3: o.affiliate_sub3, sub4: o.affiliate_sub4, sub5: o.affiliate_sub5 }
      : null,
    created_at: iso(o.created_at),
    updated_at: iso(o.updated_at),
  };
}
export type OrderView = ReturnType<typeof orderView>;

/** What Create Order and Process Payment answer: the HTTP status, the envelope, and for declines an error object. */
/** How a first payment's request ended; the route maps it to an HTTP status (PAYMENT_HTTP). */
export type PaymentOutcome = 'approved' | 'declined' | 'pending' | 'redirect' | 'unknown';
/** How a Capture ended; the route maps it to an HTTP status (CAPTURE_HTTP). */
export type CaptureOutcome = 'captured' | 'under_review' | 'not_completed' | 'capture_failed';

export interface PaymentResult {
  outcome: PaymentOutcome;
  success: boolean;
  message: string;
  data: OrderView & { redirect_required: boolean; redirect_url?: string; checkout?: ExtpayEmbedCheckout; transaction_id: string | null; attempts: number };
  error?: { type: string; code: string; decline_code: string | null };
}

export interface CaptureResult {
  outcome: CaptureOutcome;
  success: boolean;
  message: string;
  data: OrderView;
  error?: { type: string; code: string };
}

