import { ApiError, invalid, notFound } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import { readTogether, type Tx } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import { cardOf, type FirstChargeRequest, type PaymentsService, type RouteRequest } from '../payments/service.ts';
import { orderView, type PaymentResult } from '../orders/views.ts';
import type { CreateOrderBody, ProcessPaymentBody } from '../orders/schemas.ts';
import { ORDER, PAYABLE } from '../orders/states.ts';
import { discountOf, totalsOf } from '../orders/pricing.ts';
import { UseCase } from './use-case.ts';

/**
 * Create Order and Process / Reprocess Payment: the claim of the order and phase 1 of its first
 * payment in one transaction, then the card's phases (CardFirstPayment) or the external checkout.
 */
export class PayUseCase extends UseCase {
  /** Create Order: an order and its first payment in one call, for funnels that made no lead. */
  async createOrder(teamId: string, body: CreateOrderBody): Promise<PaymentResult> {
    const claimed = await this.store.transaction(async (trx) => {
      const campaign = await this.catalog.findCampaign(trx, teamId, body.campaign_id);
      if (!campaign) throw notFound('Campaign');
      if (body.currency !== campaign.currency) throw invalid('currency', `must be the campaign's currency, ${campaign.currency}`);
      const drafts = await this.orders.priceLines(trx, teamId, campaign.id, body.products);
      const route = await this.payments.preflight(trx, teamId, body.payment, { gatewayId: body.gateway_id, paymentOrchestratorId: body.payment_orchestrator_id, campaign });
      const coupon = body.coupon_code ? await this.orders.usableCoupon(trx, teamId, body.coupon_code, { campaign_id: campaign.id, currency: campaign.currency }) : null;
      const attributed = await this.orders.attribution(trx, teamId, null, body.affiliate);
      const customer = await this.customers.upsertByEmail(trx, teamId, { ...body.customer, phone: body.phone });
      const orderId = newId('order');
      const order = await this.orders.rows.insertOrder(trx, {
        id: orderId,
        team_id: teamId,
        campaign_id: campaign.id,
        customer_id: customer.id,
        status: 'pending',
        currency: campaign.currency,
        phone: body.phone ?? null,
        shipping_address: body.shipping_address ? JSON.stringify(body.shipping_address) : null,
        billing_address: body.billing ? JSON.stringify(body.billing) : null,
        ip_address: body.customer.ip_address ?? null,
        is_throttle: body.is_throttle === true,
        coupon_id: coupon?.id ?? null,
        ...attributed,
        ...totalsOf(drafts, coupon ? discountOf(coupon, drafts) : 0),
      });
      const lines = await this.orders.insertLinesWithEvents(
        trx,
        teamId,
        orderId,
        drafts.map((d) => ({ ...d, order_id: orderId })),
        [{ type: 'order.created', data: { customer_number: customer.id, total: order.total } }],
      );
      return this.openPayment(trx, order, customer, route, body.payment, lines, false);
    });
    return this.runPayment(teamId, claimed, body.payment);
  }

  /** Phase 1 of a first payment, in the transaction that claims the order (see CardFirstPayment). */
  async openPayment(
    trx: Tx,
    order: Row<'orders'>,
    customer: Row<'customers'>,
    route: RouteRequest,
    payment: ProcessPaymentBody['payment'],
    lines: Row<'order_lines'>[],
    /** Whether an earlier attempt may still be in flight: only an order that was `pending` can have one. */
    wasPending: boolean,
  ) {
    if (payment.method === 'extpay') {
      await this.uc.card.claim(trx, order, wasPending);
      const checkout = await this.payments.openCheckout(trx, { teamId: order.team_id, orderId: order.id, amount: order.total, currency: order.currency, externalPaymentId: payment.external_payment_id });
      return { order, customer, lines, route, card: null, checkout };
    }
    const req = this.chargeRequest(order, customer, route, payment);
    return { order, customer, lines, route, card: { req, step: await this.uc.card.open(trx, order, req, wasPending) }, checkout: null };
  }

  chargeRequest(order: Row<'orders'>, customer: Row<'customers'>, route: RouteRequest, payment: ProcessPaymentBody['payment']): FirstChargeRequest {
    return {
      teamId: order.team_id,
      orderId: order.id,
      customerId: customer.id,
      amount: order.total,
      currency: order.currency,
      card: cardOf(payment)!,
      route,
      payer: { email: customer.email, first_name: customer.first_name, last_name: customer.last_name },
      ipAddress: order.ip_address,
      billing: order.billing_address,
      redirect: { returnUrl: payment.return_url, cancelUrl: payment.cancel_url, riskSessionId: payment.risk_session_id },
    };
  }

  async runPayment(teamId: string, claimed: Awaited<ReturnType<PayUseCase['openPayment']>>, payment: ProcessPaymentBody['payment']): Promise<PaymentResult> {
    if (claimed.checkout) return this.payOnProviderCheckout(teamId, claimed.order, claimed.customer, payment, claimed.lines, claimed.checkout);
    if (!claimed.card) throw new Error('a first payment is either a card or an external checkout');
    return this.uc.card.run(claimed.order, claimed.customer, claimed.lines, claimed.card.req, claimed.card.step);
  }

  /**
   * Process Payment pays a lead or a declined order; Reprocess Payment only a declined one.
   * The first payment's attempt row is written in the same transaction that checks the order is
   * payable, so a concurrent or later attempt while it is in flight gets 409, never a second charge.
   */
  async processPayment(teamId: string, body: ProcessPaymentBody, mode: 'process' | 'reprocess' = 'process'): Promise<PaymentResult> {
    const claimed = await this.store.transaction(async (trx) => {
      // The order under its lock, its lines and its customer in one round trip (the customer by the
      // order's id, read as locked).
      const [[locked], linesAsLocked, [customerAsLocked]] = await readTogether(trx, [
        this.orders.rows.lockOrderQuery(trx, teamId, body.order_number),
        this.orders.rows.linesQuery(trx, teamId, [body.order_number]),
        this.customers.findOfQuery(trx, teamId, this.orders.rows.customerIdOfOrder, body.order_number),
      ] as const);
      if (!locked) throw notFound('Order');
      const allowed: readonly string[] = mode === 'reprocess' ? ['declined'] : PAYABLE;
      if (!allowed.includes(locked.status)) {
        throw new ApiError('order_not_payable', `Order ${locked.id} is ${locked.status}; ${mode === 'reprocess' ? 'only a declined order can be reprocessed' : 'it cannot be paid again'}.`);
      }
      if (body.campaign_id && body.campaign_id !== locked.campaign_id) throw invalid('campaign_id', 'does not match the order');
      if (body.currency && body.currency !== locked.currency) throw invalid('currency', `must be the order's currency, ${locked.currency}`);
      const campaign = await this.catalog.findCampaign(trx, teamId, locked.campaign_id);
      const route = await this.payments.preflight(trx, teamId, body.payment, { gatewayId: body.gateway_id, paymentOrchestratorId: body.payment_orchestrator_id, campaign: campaign! });
      if (locked.status !== 'pending') ORDER.assertMove(locked.status, 'pending');
      // One UPDATE: the client's changes, the move to pending and (extpay) the payment claim together.
      // Deferred (applyUpdates): it rides in the transaction's next statement that names neither of
      // its tables (the attempt row's INSERT, or the read below).
      const { order } = await this.orders.applyUpdates(trx, teamId, locked, body, { status: 'pending' }, (changed) => ({
        type: mode === 'reprocess' ? 'payment.reprocess_requested' : 'payment.requested',
        data: { changed, from_status: locked.status },
      }));
      // A payment that changes neither the cart nor the customer (the funnel's): the lines and the
      // customer read with the lock. Otherwise the lines and the customer as the update left them,
      // in one round trip.
      const asLocked = body.products === undefined && body.customer === undefined;
      const [lines, [customer]] = asLocked
        ? [linesAsLocked, [customerAsLocked]]
        : await readTogether(trx, [this.orders.rows.linesQuery(trx, teamId, [order.id]), this.customers.findManyQuery(trx, teamId, [order.customer_id])] as const);
      if (lines.length === 0) throw invalid('products', 'the order has no products; send products with the payment');
      return this.openPayment(trx, order, customer!, route, body.payment, lines, locked.status === 'pending');
    });
    return this.runPayment(teamId, claimed, body.payment);
  }

  /**
   * extpay (spec 4.1 rules 8-10): the provider is merchant of record. Phase 1 (the attempt row) was
   * written with the claim; phase 2 opens the provider's embedded checkout; phase 3 records it and
   * answers pending_redirect with the §2.4 `checkout` object. Capture or the provider's webhook
   * confirms the payment later. A checkout that could not be opened leaves the order payable.
   */
  async payOnProviderCheckout(
    teamId: string,
    order: Row<'orders'>,
    customer: Row<'customers'>,
    payment: ProcessPaymentBody['payment'],
    lines: Row<'order_lines'>[],
    opened: Awaited<ReturnType<PaymentsService['openCheckout']>>,
  ): Promise<PaymentResult> {
    const offers = new Map((await this.store.run((db) => this.catalog.findOffers(db, teamId, [...new Set(lines.map((l) => l.offer_id))]))).map((o) => [o.id, o]));
    const sent = await this.payments.sendCheckout(opened, {
      returnUrl: payment.return_url!,
      lines: lines.map((l) => ({ offer: offers.get(l.offer_id)!, quantity: l.quantity })),
      payer: { email: customer.email, first_name: customer.first_name, last_name: customer.last_name },
    });
    const answer = await this.store.transaction(async (trx): Promise<PaymentResult | null> => {
      const current = (await this.orders.rows.findOrder(trx, teamId, order.id, { forUpdate: true }))!;
      if (sent.kind === 'failed') {
        // No checkout reached the customer, so nothing can be paid: the attempt fails and the order stays payable.
        const closed = await this.ledger.rows.closeAttempt(trx, teamId, opened.attempt, { status: 'declined', response_code: sent.code, response_text: sent.message });
        if (closed && current.coupon_id) await this.catalog.releaseCoupon(trx, teamId, current.coupon_id, current.id);
        await this.orders.recordEvents(trx, teamId, order.id, [{ type: 'payment.failed', data: { transaction: opened.attempt.id, provider: 'extpay', reason: sent.message } }]);
        return null;
      }
      const t = await this.ledger.rows.closeAttempt(trx, teamId, opened.attempt, {
        status: 'pending',
        // The payment id is learned at Capture or from the webhook; until then the plan names it.
        plan_ref: sent.planRef,
        checkout_ref: sent.checkoutRef,
        response_code: 'checkout_open',
        response_text: 'Waiting for the customer to pay in the embedded checkout',
      });
      if (!t) return null;
      // A Sandbox connection is test mode (spec 2.7): its orders are test orders.
      const updated = await this.orders.move(
        trx,
        current,
        { payment_status: 'pending_redirect' },
        { type: 'payment.redirect', data: { transaction: t.id, provider: 'extpay', session_id: sent.checkout.session_id } },
        t.is_test ? { is_test: true } : {},
      );
      const view = orderView(updated, customer, lines);
      return {
        outcome: 'redirect',
        success: true,
        message: 'Customer redirect is required: complete the payment in the embedded checkout.',
        data: { ...view, redirect_required: true, redirect_url: sent.checkout.purchase_url, checkout: sent.checkout, transaction_id: t.id, attempts: 1 },
      };
    }, { outcome: true });
    if (!answer) {
      const why = sent.kind === 'failed' ? sent.message : 'the attempt was settled by the recovery run meanwhile';
      throw new ApiError('gateway_unavailable', `The external checkout provider could not open a checkout: ${why}`);
    }
    return answer;
  }
}
