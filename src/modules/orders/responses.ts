/** The answers of the order routes (routes.ts), as the views (views.ts) build them. */
import { z } from 'zod';
import { EnvelopeError } from '../../app/envelope.ts';
import { Timestamp } from '../../app/schemas.ts';
import { Customer } from '../customers/schemas.ts';
import { Dispute, Transaction } from '../ledger/schemas.ts';
import { ORDER_STATUSES, PAYMENT_STATUSES } from './states.ts';

const AddressOut = z
  .object({
    first_name: z.string().optional(),
    last_name: z.string().optional(),
    line1: z.string().optional(),
    line2: z.string().optional(),
    city: z.string().optional(),
    state: z.string().optional(),
    postal_code: z.string().optional(),
    country: z.string().optional(),
  })
  .meta({ id: 'AddressView' });

export const OrderLine = z
  .object({
    id: z.string(),
    offer_id: z.string(),
    product_id: z.string(),
    upsell_id: z.string().nullable(),
    name: z.string(),
    quantity: z.number().int(),
    unit_price: z.number().int(),
    shipping: z.number().int(),
    line_total: z.number().int(),
    billing_type: z.enum(['one_time', 'recurring', 'trial']),
    fulfillment_type: z.enum(['physical', 'digital']),
  })
  .meta({ id: 'OrderLine' });

const orderFields = {
  object: z.literal('order'),
  order_number: z.string().describe('`ord_…`'),
  status: z.string().describe(`One of ${ORDER_STATUSES.map((x) => `\`${x}\``).join(', ')}`),
  payment_status: z
    .string()
    .nullable()
    .describe(`One of ${PAYMENT_STATUSES.map((x) => `\`${x}\``).join(', ')}; null before the first payment`),
  campaign_id: z.string(),
  currency: z.string(),
  customer: Customer,
  phone: z.string().nullable(),
  shipping_address: AddressOut.nullable(),
  billing_address: AddressOut.nullable(),
  lines: z.array(OrderLine),
  subtotal: z.number().int(),
  shipping_total: z.number().int(),
  discount_total: z.number().int(),
  total: z.number().int(),
  refunded_total: z.number().int(),
  coupon_id: z.string().nullable(),
  completed_at: Timestamp.nullable(),
  rebill_of: z.string().nullable().describe('The order this one renews'),
  subscription_id: z.string().nullable(),
  needs_qa: z.boolean(),
  qa_reason: z.string().nullable(),
  is_test: z.boolean(),
  is_throttled: z.boolean(),
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
    .nullable()
    .optional()
    .describe('The affiliate the order is credited to, with its click id and sub ids; null for none'),
  created_at: Timestamp.nullable(),
  updated_at: Timestamp.nullable(),
};

export const Order = z.object(orderFields).meta({ id: 'Order' });

export const OrderDetail = z
  .object({
    ...orderFields,
    transactions: z.array(Transaction),
    disputes: z.array(Dispute),
    events: z
      .array(z.object({ id: z.string(), type: z.string(), data: z.record(z.string(), z.unknown()), created_at: Timestamp.nullable() }))
      .describe("The order's timeline, oldest first"),
  })
  .meta({ id: 'OrderDetail' });

const ExtpayCheckout = z
  .object({
    provider: z.literal('extpay'),
    session_id: z.string(),
    plan_id: z.string(),
    environment: z.enum(['sandbox', 'production']),
    setup_future_usage: z.literal('off_session'),
    purchase_url: z.string(),
    prefill: z.object({ email: z.string(), name: z.string() }),
  })
  .meta({ id: 'ExtpayCheckout' });

/** The order as a first payment answers it: Create Order, Process Payment, Reprocess. */
export const PaymentData = z
  .object({
    ...orderFields,
    redirect_required: z.boolean().describe('True: send the customer to `redirect_url` (3-D Secure, extpay), then call Capture'),
    redirect_url: z.string().optional(),
    checkout: ExtpayCheckout.optional().describe('extpay: what the embedded checkout needs'),
    transaction_id: z.string().nullable(),
    attempts: z.number().int().describe('Gateways tried (a payment router may try several)'),
  })
  .meta({ id: 'PaymentResult' });

const DeclineError = z.object({
  type: z.string().describe('`card_error` for a decline; `api_error` when the outcome is unknown'),
  code: z.string().describe('`payment_declined`, or `payment_outcome_unknown` (502)'),
  decline_code: z.string().nullable().describe("The gateway's reason, e.g. `do_not_honor`, `insufficient_funds`, `velocity_blocked`"),
});

export const PaymentAnswer = z.object({ success: z.literal(true), message: z.string(), data: PaymentData }).meta({ id: 'PaymentAnswer' });

/** 402: the payment was declined; the order stays payable. */
export const PaymentDeclined = z
  .object({ success: z.literal(false), message: z.string(), data: PaymentData, error: DeclineError })
  .meta({ id: 'PaymentDeclined', description: 'The payment was declined (402): `error.decline_code` says why' });

/** Capture and Complete answer the order. */
export const OrderAnswer = z.object({ success: z.boolean(), message: z.string(), data: Order });

/** Process Upsell: the order with the upsell's line, and the upsell's charge. */
export const UpsellData = z
  .object({
    ...orderFields,
    upsell_status: z
      .literal('pending_external_confirmation')
      .optional()
      .describe('202 (extpay): the provider accepted the charge; the line is added when it confirms'),
    upsell_id: z.string(),
    transaction_id: z.string(),
  })
  .meta({ id: 'UpsellResult' });
export const UpsellAnswer = z.object({ success: z.literal(true), message: z.string(), data: UpsellData });
export const UpsellDeclined = z
  .object({ success: z.literal(false), message: z.string(), data: UpsellData, error: DeclineError })
  .meta({ id: 'UpsellDeclined', description: 'The upsell was declined (402): offer the next one' });

export const RefundAnswer = z.object({ success: z.literal(true), message: z.string(), data: z.object({ refund: Transaction, order: Order }) });
export const VoidAnswer = z.object({ success: z.literal(true), message: z.string(), data: z.object({ void: Transaction, order: Order }) });

/** A 422 of the refund or void routes: the validation error, or the gateway's refusal with the refused transaction and the order. */
export const ReversalRefused = EnvelopeError;
