import { z } from 'zod';
import type { AppContext } from '../../app/context.ts';
import { EnvelopeError, Envelope, ListEnvelope, envelope } from '../../app/envelope.ts';
import { type Http, teamOf } from '../../app/http.ts';
import { BoolQuery, Id, ListQuery } from '../../app/schemas.ts';
import type { CaptureOutcome, PaymentOutcome, PaymentResult } from './views.ts';
import { OrderAnswer, OrderDetail, Order, PaymentAnswer, PaymentDeclined, RefundAnswer, UpsellAnswer, UpsellDeclined, VoidAnswer } from './responses.ts';
import { CreateLeadBody, CreateOrderBody, OrderParams, ProcessPaymentBody, RefundBody, UpsellBody, VoidBody } from './schemas.ts';
import { ORDER_STATUSES, PAYMENT_STATUSES } from './states.ts';
import { registerOrderDeskRoutes } from './manage-routes.ts';

const OrdersQuery = ListQuery.extend({
  q: z
    .string()
    .trim()
    .min(1)
    .max(200)
    .optional()
    .describe(
      'One search box: an order number or its beginning (`ord_…`); exactly 4 digits, the last 4 of a card the order was paid (or tried) with; ' +
        'anything else, a customer e-mail or a first or last name starting with it, case-insensitively (`ada lov` is a first name and the start of a last name). ' +
        'Combines with the other filters and the cursor.',
    ),
  status: z.enum(ORDER_STATUSES).optional(),
  payment_status: z.enum(PAYMENT_STATUSES).optional(),
  campaign_id: Id('cmp').optional(),
  customer_email: z.string().max(254).optional(),
  customer_number: Id('cus').optional(),
  is_test: BoolQuery,
  needs_qa: BoolQuery.describe('Orders flagged for review (a dispute)'),
  rebill_of: Id('ord').optional().describe('The rebill orders (renewals) of one order'),
  affiliate_id: z.string().max(64).optional().describe("One affiliate's orders (the order's `affiliate.affiliate_id`)"),
  is_throttled: BoolQuery.describe('Throttled orders (spec 2.3) or the others'),
}).strict();

const MERCHANT_ONLY = 'The merchant\'s view, with the customer: an affiliate-scoped caller (Affiliate role, Affiliate Provider) is refused (403) and reads GET /v1/affiliate-orders instead.';

/** Spec 4.1: a redirect is a 200 with `redirect_required`; a decline is 402 (as Stripe); an unknown outcome 502 (do not charge again). */
const PAYMENT_HTTP: Record<PaymentOutcome, 200 | 202 | 402 | 502> = { approved: 200, declined: 402, pending: 202, redirect: 200, unknown: 502 };
/** Spec 4.2's Capture table. */
const CAPTURE_HTTP: Record<CaptureOutcome, 200 | 202 | 422> = { captured: 200, under_review: 202, not_completed: 422, capture_failed: 422 };

/** The answers of a first payment (Create Order, Process Payment, Reprocess). */
const PAYMENT_RESPONSES = { 200: PaymentAnswer, 202: PaymentAnswer, 402: PaymentDeclined, 502: EnvelopeError };
const PAYMENT_ERRORS = ['not_found', 'order_not_payable', 'payment_in_progress', 'gateway_unavailable', 'payment_outcome_unknown', 'provider_not_configured', 'provider_rejected'] as const;

function paymentBody(r: PaymentResult) {
  return r.error ? { success: false as const, message: r.message, data: r.data, error: r.error } : { success: true as const, message: r.message, data: r.data };
}

export function registerOrderRoutes(app: Http, ctx: AppContext): void {
  const orders = ctx.services.orders;
  registerOrderDeskRoutes(app, ctx);
  const { pay, capture, finalize, upsell, reverse } = ctx.services.checkout;

  app.post(
    '/checkout/leads',
    {
      config: { permission: 'orders:create' },
      schema: {
        tags: ['checkout'],
        summary: 'Create Lead',
        description:
          'Records a lead as soon as the email is known. 201 with a new `order_number` for a new email + campaign; ' +
          '200 when the same `order_number`, or an open lead of the same email + campaign, is posted again (name, phone, ' +
          'shipping address and products are updated). `billing` is refused here.',
        body: CreateLeadBody,
        errors: ['order_not_a_lead', 'not_found'],
        response: { 200: Envelope(Order), 201: Envelope(Order) },
      },
    },
    async (req, reply) => {
      const r = await orders.createLead(teamOf(req), req.body);
      return reply.code(r.created ? 201 : 200).send(envelope(true, r.created ? 'Lead created.' : 'Lead updated.', r.order));
    },
  );

  app.post(
    '/checkout/orders',
    {
      config: { permission: 'orders:create' },
      schema: {
        tags: ['checkout'],
        summary: 'Create Order',
        description:
          'Creates the order and takes its first payment, for funnels that did not create a lead. Totals are computed from ' +
          'the offers. 200 approved; 402 declined (`success` false, `error.code` `payment_declined`; the order stays payable); ' +
          '502 `payment_outcome_unknown`: the gateway did not answer, the charge is confirmed with it within minutes (do not charge again); ' +
          '409 `payment_in_progress` while an earlier attempt on the order is still in flight.',
        body: CreateOrderBody,
        errors: PAYMENT_ERRORS,
        response: PAYMENT_RESPONSES,
      },
    },
    async (req, reply) => {
      const r = await pay.createOrder(teamOf(req), req.body);
      return reply.code(PAYMENT_HTTP[r.outcome]).send(paymentBody(r));
    },
  );

  app.post(
    '/checkout/orders/payment',
    {
      config: { permission: 'orders:create' },
      schema: {
        tags: ['checkout'],
        summary: 'Process Payment',
        description:
          'Pays an order created by Create Lead (or a declined order). Same answers as Create Order; 409 `order_not_payable` when the order is already paid, ' +
          '409 `payment_in_progress` while an attempt on it is in flight (its outcome not yet recorded: never a second charge).',
        body: ProcessPaymentBody,
        errors: PAYMENT_ERRORS,
        response: PAYMENT_RESPONSES,
      },
    },
    async (req, reply) => {
      const r = await pay.processPayment(teamOf(req), req.body);
      return reply.code(PAYMENT_HTTP[r.outcome]).send(paymentBody(r));
    },
  );

  app.post(
    '/checkout/orders/capture',
    {
      config: { permission: 'orders:create' },
      schema: {
        tags: ['checkout'],
        summary: 'Capture',
        description:
          "Re-checks a redirected first payment with the gateway (3-D Secure). 200 `success` true: approved and the order " +
          'completed (fulfillment, subscriptions, order webhooks); 202 `success` true, `payment_status` ' +
          '`pending_external_confirmation`: under review, do not advance; 422 `success` false: the payment was not completed ' +
          '(declined, failed or abandoned authentication); 404: no capturable transaction. Capture again after success answers ' +
          '200 "Payment already captured." with no second charge. Branch on the HTTP status or `data.payment_status`. ' +
          'extpay orders: send the embed\'s receipt id as `payment_id` (without it the newest payment of the checkout is used); ' +
          '200 completed (fulfillment, externally managed subscription, coupon use, order webhooks); 202 `pending_external_confirmation`: ' +
          'the provider holds the money, not a decline, advance (the provider\'s payment.succeeded completes the order; safe to retry); ' +
          '422 "Payment capture failed: …" on a failed payment or a receipt of another order; 404 nothing to capture.',
        body: z.object({ order_number: Id('ord'), payment_id: z.string().min(1).max(200).optional() }).strict(),
        errors: ['no_capturable_transaction', 'capture_failed', 'payment_not_completed', 'gateway_unavailable', 'payment_in_progress'],
        response: { 200: OrderAnswer, 202: OrderAnswer, 422: EnvelopeError },
      },
    },
    async (req, reply) => {
      const r = await capture.capture(teamOf(req), req.body);
      const status = CAPTURE_HTTP[r.outcome];
      if (status === 422) return reply.code(422).send({ success: false, message: r.message, data: r.data, error: r.error ?? { type: 'card_error', code: 'capture_failed' } });
      return reply.code(status).send(envelope(r.success, r.message, r.data));
    },
  );

  app.post(
    '/checkout/orders/complete',
    {
      config: { permission: 'orders:create' },
      schema: {
        tags: ['checkout'],
        summary: 'Complete Order',
        description:
          'Completes a paid order once: creates its fulfillment (physical lines) and subscriptions (recurring and trial lines), ' +
          'keeps the coupon use (reserved when the payment started), and queues the order.completed webhooks and the purchase e-mail at once. A second call changes ' +
          'nothing and answers the same. 409 `order_not_completable` for an unpaid order or a payment still `pending_redirect`.',
        body: OrderParams,
        errors: ['order_not_completable', 'not_found'],
        response: { 200: Envelope(Order) },
      },
    },
    async (req) => {
      const r = await finalize.completeOrder(teamOf(req), req.body.order_number);
      return envelope(true, 'Order completed.', r.order);
    },
  );

  app.post(
    '/checkout/orders/reprocess',
    {
      config: { permission: 'orders:create' },
      schema: {
        tags: ['checkout'],
        summary: 'Reprocess Payment',
        description: 'Pays a declined order again, with the same or a new card. Same answers as Process Payment; 409 unless the order is declined.',
        body: ProcessPaymentBody,
        errors: PAYMENT_ERRORS,
        response: PAYMENT_RESPONSES,
      },
    },
    async (req, reply) => {
      const r = await pay.processPayment(teamOf(req), req.body, 'reprocess');
      return reply.code(PAYMENT_HTTP[r.outcome]).send(paymentBody(r));
    },
  );

  app.post(
    '/checkout/orders/upsell',
    {
      config: { permission: 'orders:create' },
      schema: {
        tags: ['checkout'],
        summary: 'Process Upsell',
        description:
          "One click: charges the upsell's offer × quantity (plus its shipping) on the card saved with the first payment; no card fields. " +
          '200 added (line and totals updated); 402 declined (move the customer to the next offer). Each upsell is charged at most once ' +
          'per order: repeating it returns the first answer (409 while its charge is in flight; 502 `payment_outcome_unknown` when the ' +
          'provider did not answer: the charge is confirmed with it within minutes). extpay orders: the payment method saved by the checkout ' +
          '(`setup_future_usage` off_session) is charged by the provider: 202 `payment_status` `pending_external_confirmation` ' +
          '(accepted; the line and total are added when the provider confirms, and a repeat then answers 200), 402 declined by the ' +
          'provider, 422 card fields sent, 422 `no_saved_payment_method` when the checkout saved none.',
        body: UpsellBody,
        errors: ['not_found', 'payment_in_progress', 'order_not_payable', 'no_saved_payment_method', 'gateway_unavailable', 'payment_outcome_unknown', 'conflict'],
        response: { 200: UpsellAnswer, 202: UpsellAnswer, 402: UpsellDeclined, 502: EnvelopeError },
      },
    },
    async (req, reply) => {
      const r = await upsell.processUpsell(teamOf(req), req.body);
      // The stored answer, already JSON (a repeat answers it again byte for byte).
      return reply.code(r.httpStatus as 200).type('application/json; charset=utf-8').send(r.body as never);
    },
  );

  app.post(
    '/v1/orders/:order_number/refunds',
    {
      config: { permission: 'orders:refund', audit: 'order.refunded' },
      schema: {
        tags: ['records'],
        summary: 'Refund a charge of the order',
        description:
          'Full or partial, through the gateway that charged it; never more than the charge minus earlier refunds (422). 201 refunded; 422 `refund_declined` when the gateway refuses; ' +
          '502 `payment_outcome_unknown` when the gateway did not answer (the refund stays pending, counts against the balance, and is confirmed with the gateway within minutes). ' +
          'extpay: submitted to the provider; the refund is recorded with `provisional: true` until the provider\'s refund.created carries the settled amount.',
        params: OrderParams,
        body: RefundBody,
        errors: ['refund_declined', 'conflict', 'gateway_unavailable', 'payment_outcome_unknown', 'provider_rejected'],
        response: { 201: RefundAnswer, 422: EnvelopeError },
      },
    },
    async (req, reply) => {
      const r = await reverse.refund(teamOf(req), req.params.order_number, req.body);
      const data = { refund: r.transaction, order: r.order };
      if (r.approved) return reply.code(201).send({ success: true, message: 'Refund created.', data });
      return reply.code(422).send({ success: false, message: `The gateway refused the refund: ${r.transaction.response_text}`, data, error: { type: 'card_error', code: 'refund_declined' } });
    },
  );

  app.post(
    '/v1/orders/:order_number/void',
    {
      config: { permission: 'orders:void', audit: 'order.voided' },
      schema: {
        tags: ['records'],
        summary: 'Void a charge of the order',
        description:
          'Cancels an unsettled charge that has no refunds. 201 voided; 422 `void_declined` when the gateway refuses. ' +
          'extpay: processed by the provider; a payment whose money it holds (Capture answered 202) is voided and the order cancelled.',
        params: OrderParams,
        body: VoidBody,
        errors: ['void_declined', 'conflict', 'gateway_unavailable', 'payment_outcome_unknown', 'provider_rejected'],
        response: { 201: VoidAnswer, 422: EnvelopeError },
      },
    },
    async (req, reply) => {
      const r = await reverse.void(teamOf(req), req.params.order_number, req.body);
      const data = { void: r.transaction, order: r.order };
      if (r.approved) return reply.code(201).send({ success: true, message: 'Charge voided.', data });
      return reply.code(422).send({ success: false, message: `The gateway refused the void: ${r.transaction.response_text}`, data, error: { type: 'card_error', code: 'void_declined' } });
    },
  );

  app.get('/v1/orders', { config: { permission: 'orders:view' }, schema: { tags: ['records'], summary: 'List orders, newest first', description: MERCHANT_ONLY, querystring: OrdersQuery, response: { 200: ListEnvelope(Order) } } }, async (req) => {
    const page = await orders.list(teamOf(req), req.query);
    return { success: true as const, message: 'OK', data: page.items, has_more: page.has_more };
  });

  app.get(
    '/v1/orders/:order_number',
    { config: { permission: 'orders:view' }, schema: { tags: ['records'], summary: 'Retrieve an order with its lines, transactions and timeline', description: MERCHANT_ONLY, params: OrderParams, response: { 200: Envelope(OrderDetail) } } },
    async (req) => envelope(true, 'OK', await orders.get(teamOf(req), req.params.order_number)),
  );
}
