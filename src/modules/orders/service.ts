import { ApiError, invalid, notFound } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import { iso } from '../../app/schemas.ts';
import type { Executor, Store, Tx } from '../../db/database.ts';
import { cursorSeq, type Page, toPage } from '../../db/pagination.ts';
import type { Address, NewRow, Row } from '../../db/schema.ts';
import type { CatalogService } from '../catalog/service.ts';
import type { EventsService } from '../events/service.ts';
import type { FulfillmentsService } from '../fulfillments/service.ts';
import { type ExternalBilling, type SubscriptionsService, subscriptionView } from '../subscriptions/service.ts';
import { customerView, type CustomersService, normalizeEmail } from '../customers/service.ts';
import type { ExtpayDispute, ExtpayEmbedCheckout, ExtpayMembership, ExtpayPayment, ExtpayRefund, ExtpaySetupIntent } from '../../providers/extpay/types.ts';
import { membershipState } from '../../providers/extpay/status.ts';
import { cardOf, disputeView, type FirstChargeRequest, type FirstPaymentOutcome, type PaymentsService, type RouteRequest, transactionView } from '../payments/service.ts';
import * as repo from './repo.ts';
import { CardFirstPayment } from './first-payment.ts';
import type { ChargeOutcome, ReversalOutcome } from '../../providers/provider.ts';
import { type CaptureResult, type OrderEvent, orderView, type OrderView, type PaymentResult } from './views.ts';
import type { CreateLeadBody, CreateOrderBody, ProcessPaymentBody, RefundBody, UpsellBody, VoidBody } from './schemas.ts';
import { assertOrderMove, canMove, type OrderStatus, PAYABLE, UPSELLABLE } from './states.ts';

/** A payment claim older than this belongs to a crashed attempt and no longer blocks a new one. */
const PAYMENT_CLAIM_MS = 2 * 60_000;

type LineDraft = Omit<NewRow<'order_lines'>, 'order_id'>;

export { lineView, type OrderEvent, orderView, type OrderView, type PaymentResult, type CaptureResult } from './views.ts';

export interface ListOrdersQuery {
  limit: number;
  starting_after?: string | undefined;
  created_gte?: Date | undefined;
  created_lte?: Date | undefined;
  status?: string | undefined;
  payment_status?: string | undefined;
  campaign_id?: string | undefined;
  customer_email?: string | undefined;
  customer_number?: string | undefined;
  is_test?: boolean | undefined;
  needs_qa?: boolean | undefined;
  rebill_of?: string | undefined;
}

/** A coupon discounts the products of the first purchase (not shipping, not upsells), never below zero. */
function discountOf(coupon: Row<'coupons'>, lines: Array<{ line_total: number; upsell_id?: string | null | undefined }>): number {
  const base = lines.filter((l) => !l.upsell_id).reduce((s, l) => s + l.line_total, 0);
  if (coupon.percent_off) return Math.round((base * coupon.percent_off) / 100);
  return Math.min(coupon.amount_off ?? 0, base);
}

function totalsOf(lines: Array<{ line_total: number; shipping: number }>, discount = 0) {
  const subtotal = lines.reduce((s, l) => s + l.line_total, 0);
  const shipping_total = lines.reduce((s, l) => s + l.shipping, 0);
  return { subtotal, shipping_total, discount_total: discount, total: Math.max(0, subtotal + shipping_total - discount) };
}

/** A cart line priced from the offer on our side. Shipping is charged once per line, whatever the quantity. */
function draftLine(teamId: string, offer: Row<'offers'>, quantity: number): LineDraft {
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

/** An extpay payment the provider reports paid, as the first-payment settlement takes it. */
export function paidExternally(p: ExtpayPayment): FirstPaymentOutcome {
  return {
    approved: true,
    paymentMethod: null,
    external: { paymentRef: p.id, memberRef: p.memberId, membershipRef: p.membershipId, cardBrand: p.cardBrand, cardLast4: p.cardLast4 },
  };
}

function sameAddress(a: Address | null, b: Address | undefined): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

export class OrdersService {
  constructor(
    private readonly store: Store,
    private readonly catalog: CatalogService,
    private readonly customers: CustomersService,
    private readonly payments: PaymentsService,
    private readonly fulfillments: FulfillmentsService,
    private readonly subscriptions: SubscriptionsService,
    private readonly events: EventsService,
  ) {
    this.card = new CardFirstPayment({ store, payments, catalog, events, recordEvents: (trx, teamId, orderId, evs) => this.recordEvents(trx, teamId, orderId, evs) });
  }

  private readonly card: CardFirstPayment;

  /** A coupon a client may apply to this order now; field errors name `coupon_code`. */
  private async usableCoupon(db: Executor, teamId: string, code: string, order: { campaign_id: string; currency: string }): Promise<Row<'coupons'>> {
    const c = await this.catalog.findCouponByCode(db, teamId, code);
    if (!c) throw invalid('coupon_code', 'no such coupon');
    if (!c.is_active) throw invalid('coupon_code', 'this coupon is not active');
    if (c.expires_at && c.expires_at <= new Date()) throw invalid('coupon_code', 'this coupon has expired');
    if (c.campaign_id && c.campaign_id !== order.campaign_id) throw invalid('coupon_code', 'this coupon is not valid for this campaign');
    if (c.amount_off && c.currency !== order.currency) throw invalid('coupon_code', `this coupon is in ${c.currency}, the order in ${order.currency}`);
    if (c.max_redemptions !== null && c.times_redeemed >= c.max_redemptions) throw invalid('coupon_code', 'this coupon has been used up');
    return c;
  }

  private async retotal(trx: Tx, teamId: string, orderId: string, couponId: string | null) {
    const all = await repo.linesOf(trx, teamId, [orderId]);
    const coupon = couponId ? await this.catalog.findCoupon(trx, teamId, couponId) : undefined;
    return totalsOf(all, coupon ? discountOf(coupon, all) : 0);
  }

  /**
   * Prices the cart from the offers on our side: the client sends offer ids and quantities,
   * never prices. Every offer must be an active offer of the order's campaign.
   */
  private async priceLines(db: Executor, teamId: string, campaignId: string, products: Array<{ offer_id: string; quantity: number }>): Promise<LineDraft[]> {
    const offers = new Map((await this.catalog.findOffers(db, teamId, products.map((p) => p.offer_id))).map((o) => [o.id, o]));
    return products.map((p, i) => {
      const offer = offers.get(p.offer_id);
      if (!offer || offer.campaign_id !== campaignId) throw invalid(`products.${i}.offer_id`, 'no such offer in this campaign');
      if (!offer.is_active) throw invalid(`products.${i}.offer_id`, 'this offer is not active');
      return draftLine(teamId, offer, p.quantity);
    });
  }

  private async setLines(trx: Tx, teamId: string, orderId: string, drafts: LineDraft[], couponId: string | null) {
    await repo.replaceLines(
      trx,
      teamId,
      orderId,
      drafts.map((d) => ({ ...d, order_id: orderId })),
    );
    return this.retotal(trx, teamId, orderId, couponId);
  }

  private timelineRows(teamId: string, orderId: string, events: OrderEvent[]): NewRow<'order_events'>[] {
    return events.map((e) => ({ id: newId('orderEvent'), team_id: teamId, order_id: orderId, type: e.type, data: JSON.stringify(e.data ?? {}) }));
  }

  /** Records timeline rows in the caller's transaction; other modules use it for their order changes. */
  async recordEvents(trx: Tx, teamId: string, orderId: string, events: OrderEvent[]): Promise<void> {
    await repo.insertEvents(trx, this.timelineRows(teamId, orderId, events));
  }

  private async view(db: Executor, teamId: string, order: Row<'orders'>): Promise<OrderView> {
    const [customer] = await this.customers.findMany(db, teamId, [order.customer_id]);
    const lines = await repo.linesOf(db, teamId, [order.id]);
    return orderView(order, customer!, lines);
  }

  private async views(db: Executor, teamId: string, orders: Row<'orders'>[]): Promise<OrderView[]> {
    const customers = new Map((await this.customers.findMany(db, teamId, [...new Set(orders.map((o) => o.customer_id))])).map((c) => [c.id, c]));
    const lines = await repo.linesOf(
      db,
      teamId,
      orders.map((o) => o.id),
    );
    return orders.map((o) =>
      orderView(
        o,
        customers.get(o.customer_id)!,
        lines.filter((l) => l.order_id === o.id),
      ),
    );
  }

  /** Applies the fields a lead or a payment may change on an existing order; returns what changed. */
  private async applyUpdates(
    trx: Tx,
    teamId: string,
    order: Row<'orders'>,
    body: {
      customer?: { email?: string | undefined; first_name?: string | undefined; last_name?: string | undefined } | undefined;
      phone?: string | undefined;
      shipping_address?: Address | undefined;
      billing?: Address | undefined;
      products?: Array<{ offer_id: string; quantity: number }> | undefined;
      is_throttle?: boolean | undefined;
      coupon_code?: string | undefined;
    },
    also: Parameters<typeof repo.updateOrder>[3] = {},
  ): Promise<{ order: Row<'orders'>; changed: string[] }> {
    const changed: string[] = [];
    const patch: Parameters<typeof repo.updateOrder>[3] = { ...also };
    if (body.customer) {
      const [current] = await this.customers.findMany(trx, teamId, [order.customer_id]);
      if (body.customer.email && normalizeEmail(body.customer.email) !== current!.email) {
        throw invalid('customer.email', 'cannot change on an existing order; create a new lead for another email');
      }
      const names: { first_name?: string; last_name?: string } = {};
      if (body.customer.first_name !== undefined && body.customer.first_name !== current!.first_name) names.first_name = body.customer.first_name;
      if (body.customer.last_name !== undefined && body.customer.last_name !== current!.last_name) names.last_name = body.customer.last_name;
      if (Object.keys(names).length > 0) {
        await this.customers.update(trx, teamId, current!.id, names);
        changed.push(...Object.keys(names).map((k) => `customer.${k}`));
      }
    }
    if (body.phone !== undefined && body.phone !== order.phone) {
      patch.phone = body.phone;
      changed.push('phone');
    }
    if (body.shipping_address !== undefined && !sameAddress(order.shipping_address, body.shipping_address)) {
      patch.shipping_address = JSON.stringify(body.shipping_address);
      changed.push('shipping_address');
    }
    if (body.billing !== undefined && !sameAddress(order.billing_address, body.billing)) {
      patch.billing_address = JSON.stringify(body.billing);
      changed.push('billing');
    }
    let couponId = order.coupon_id;
    if (body.coupon_code !== undefined) {
      couponId = (await this.usableCoupon(trx, teamId, body.coupon_code, order)).id;
      if (couponId !== order.coupon_id) {
        patch.coupon_id = couponId;
        changed.push('coupon_code');
      }
    }
    if (body.products) {
      const drafts = await this.priceLines(trx, teamId, order.campaign_id, body.products);
      Object.assign(patch, await this.setLines(trx, teamId, order.id, drafts, couponId));
      changed.push('products');
    } else if (couponId !== order.coupon_id) {
      Object.assign(patch, await this.retotal(trx, teamId, order.id, couponId));
    }
    // is_throttle true throttles; false or absent never un-throttles (spec 2.3).
    if (body.is_throttle === true && !order.is_throttle) {
      patch.is_throttle = true;
      changed.push('is_throttled');
    }
    const updated = Object.keys(patch).length > 0 ? await repo.updateOrder(trx, teamId, order.id, patch) : order;
    return { order: updated, changed };
  }

  /**
   * Create Lead: 201 with a new order number for a new email + campaign; 200 when the same
   * order number, or an open lead of the same email + campaign, is posted again.
   */
  async createLead(teamId: string, body: CreateLeadBody): Promise<{ created: boolean; order: OrderView }> {
    return this.store.transaction(async (trx) => {
      if (body.order_number) {
        const order = await repo.findOrder(trx, teamId, body.order_number, { forUpdate: true });
        if (!order) throw notFound('Order');
        if (order.status !== 'lead') throw new ApiError('order_not_a_lead', `Order ${order.id} is ${order.status}, no longer a lead.`);
        if (body.campaign_id && body.campaign_id !== order.campaign_id) throw invalid('campaign_id', 'does not match the order');
        return { created: false, order: await this.updateLead(trx, teamId, order, body) };
      }

      const campaign = await this.catalog.findCampaign(trx, teamId, body.campaign_id!);
      if (!campaign) throw notFound('Campaign');
      const drafts = body.products ? await this.priceLines(trx, teamId, campaign.id, body.products) : [];
      const coupon = body.coupon_code ? await this.usableCoupon(trx, teamId, body.coupon_code, { campaign_id: campaign.id, currency: campaign.currency }) : null;
      const customer = await this.customers.upsertByEmail(trx, teamId, {
        email: body.customer!.email!,
        first_name: body.customer?.first_name,
        last_name: body.customer?.last_name,
        phone: body.phone,
      });
      const orderId = newId('order');
      // A new order's totals and view come from the rows in hand: no re-reads on the hot path.
      const order = await repo.insertLeadIfAbsent(trx, {
        id: orderId,
        team_id: teamId,
        campaign_id: campaign.id,
        customer_id: customer.id,
        status: 'lead',
        currency: campaign.currency,
        phone: body.phone ?? null,
        shipping_address: body.shipping_address ? JSON.stringify(body.shipping_address) : null,
        is_throttle: body.is_throttle === true,
        coupon_id: coupon?.id ?? null,
        ...totalsOf(drafts, coupon ? discountOf(coupon, drafts) : 0),
      });
      if (!order) {
        const existing = await repo.findOpenLead(trx, teamId, campaign.id, customer.id);
        if (!existing) throw new ApiError('conflict', 'The lead changed while it was being updated; retry.');
        return { created: false, order: await this.updateLead(trx, teamId, existing, body) };
      }
      const lines = await repo.insertLines(
        trx,
        drafts.map((d) => ({ ...d, order_id: orderId })),
      );
      await this.recordEvents(trx, teamId, orderId, [
        { type: 'lead.created', data: { customer_number: customer.id, campaign_id: campaign.id, is_throttled: order.is_throttle } },
      ]);
      return { created: true, order: orderView(order, customer, lines) };
    });
  }

  private async updateLead(trx: Tx, teamId: string, order: Row<'orders'>, body: CreateLeadBody): Promise<OrderView> {
    const { order: updated, changed } = await this.applyUpdates(trx, teamId, order, body);
    await this.recordEvents(trx, teamId, order.id, [{ type: 'lead.updated', data: { changed } }]);
    return this.view(trx, teamId, updated);
  }

  /** Create Order: an order and its first payment in one call, for funnels that made no lead. */
  async createOrder(teamId: string, body: CreateOrderBody): Promise<PaymentResult> {
    const claimed = await this.store.transaction(async (trx) => {
      const campaign = await this.catalog.findCampaign(trx, teamId, body.campaign_id);
      if (!campaign) throw notFound('Campaign');
      if (body.currency !== campaign.currency) throw invalid('currency', `must be the campaign's currency, ${campaign.currency}`);
      const drafts = await this.priceLines(trx, teamId, campaign.id, body.products);
      const route = { gatewayId: body.gateway_id, paymentOrchestratorId: body.payment_orchestrator_id, campaign };
      await this.payments.preflight(trx, teamId, body.payment, route);
      const coupon = body.coupon_code ? await this.usableCoupon(trx, teamId, body.coupon_code, { campaign_id: campaign.id, currency: campaign.currency }) : null;
      const customer = await this.customers.upsertByEmail(trx, teamId, { ...body.customer, phone: body.phone });
      const orderId = newId('order');
      const order = await repo.insertOrder(trx, {
        id: orderId,
        team_id: teamId,
        campaign_id: campaign.id,
        customer_id: customer.id,
        status: 'pending',
        currency: campaign.currency,
        phone: body.phone ?? null,
        shipping_address: body.shipping_address ? JSON.stringify(body.shipping_address) : null,
        billing_address: body.billing ? JSON.stringify(body.billing) : null,
        is_throttle: body.is_throttle === true,
        payment_started_at: body.payment.method === 'extpay' ? new Date() : null,
        coupon_id: coupon?.id ?? null,
        ...totalsOf(drafts, coupon ? discountOf(coupon, drafts) : 0),
      });
      const lines = await repo.insertLines(
        trx,
        drafts.map((d) => ({ ...d, order_id: orderId })),
      );
      await this.recordEvents(trx, teamId, orderId, [{ type: 'order.created', data: { customer_number: customer.id, total: order.total } }]);
      return this.openPayment(trx, order, customer, route, body.payment, lines);
    });
    return this.runPayment(teamId, claimed, body.payment);
  }

  /** Phase 1 of a first payment, in the transaction that claims the order (see CardFirstPayment). */
  private async openPayment(trx: Tx, order: Row<'orders'>, customer: Row<'customers'>, route: RouteRequest, payment: ProcessPaymentBody['payment'], lines: Row<'order_lines'>[]) {
    if (payment.method === 'extpay') {
      await this.card.reserveCoupon(trx, order);
      return { order, customer, lines, route, card: null };
    }
    const req = this.chargeRequest(order, customer, route, payment);
    return { order, customer, lines, route, card: { req, step: await this.card.open(trx, order, req) } };
  }

  private chargeRequest(order: Row<'orders'>, customer: Row<'customers'>, route: RouteRequest, payment: ProcessPaymentBody['payment']): FirstChargeRequest {
    return {
      teamId: order.team_id,
      orderId: order.id,
      customerId: customer.id,
      amount: order.total,
      currency: order.currency,
      card: cardOf(payment)!,
      route,
      payer: { email: customer.email, first_name: customer.first_name, last_name: customer.last_name },
      billing: order.billing_address,
      redirect: { returnUrl: payment.return_url, cancelUrl: payment.cancel_url, riskSessionId: payment.risk_session_id },
    };
  }

  private async runPayment(teamId: string, claimed: Awaited<ReturnType<OrdersService['openPayment']>>, payment: ProcessPaymentBody['payment']): Promise<PaymentResult> {
    if (!claimed.card) return this.payExternally(teamId, claimed.order, claimed.customer, payment, claimed.lines);
    return this.card.run(claimed.order, claimed.customer, claimed.lines, claimed.card.req, claimed.card.step);
  }

  /**
   * Process Payment pays a lead or a declined order; Reprocess Payment only a declined one.
   * The order row is claimed (payment_started_at) in the same transaction that checks it is
   * payable, so concurrent attempts on one order get 409 instead of a second charge.
   */
  async processPayment(teamId: string, body: ProcessPaymentBody, mode: 'process' | 'reprocess' = 'process'): Promise<PaymentResult> {
    const claimed = await this.store.transaction(async (trx) => {
      const locked = await repo.findOrder(trx, teamId, body.order_number, { forUpdate: true });
      if (!locked) throw notFound('Order');
      const now = new Date();
      if (locked.payment_started_at && now.getTime() - locked.payment_started_at.getTime() < PAYMENT_CLAIM_MS) {
        throw new ApiError('payment_in_progress');
      }
      const allowed: readonly string[] = mode === 'reprocess' ? ['declined'] : PAYABLE;
      if (!allowed.includes(locked.status)) {
        throw new ApiError('order_not_payable', `Order ${locked.id} is ${locked.status}; ${mode === 'reprocess' ? 'only a declined order can be reprocessed' : 'it cannot be paid again'}.`);
      }
      if (body.campaign_id && body.campaign_id !== locked.campaign_id) throw invalid('campaign_id', 'does not match the order');
      if (body.currency && body.currency !== locked.currency) throw invalid('currency', `must be the order's currency, ${locked.currency}`);
      const campaign = await this.catalog.findCampaign(trx, teamId, locked.campaign_id);
      const route = { gatewayId: body.gateway_id, paymentOrchestratorId: body.payment_orchestrator_id, campaign: campaign! };
      await this.payments.preflight(trx, teamId, body.payment, route);
      if (locked.status !== 'pending') assertOrderMove(locked.status, 'pending');
      // One UPDATE: the client's changes, the move to pending and (extpay) the payment claim together.
      const { order, changed } = await this.applyUpdates(trx, teamId, locked, body, { status: 'pending', payment_started_at: body.payment.method === 'extpay' ? now : null });
      const lines = await repo.linesOf(trx, teamId, [order.id]);
      if (lines.length === 0) throw invalid('products', 'the order has no products; send products with the payment');
      await this.recordEvents(trx, teamId, order.id, [{ type: mode === 'reprocess' ? 'payment.reprocess_requested' : 'payment.requested', data: { changed, from_status: locked.status } }]);
      const [customer] = await this.customers.findMany(trx, teamId, [order.customer_id]);
      return this.openPayment(trx, order, customer!, route, body.payment, lines);
    });
    return this.runPayment(teamId, claimed, body.payment);
  }

  /**
   * extpay (spec 4.1 rules 8-10): the provider is merchant of record. We open its embedded
   * checkout and answer pending_redirect with the §2.4 `checkout` object; Capture or the
   * provider's webhook confirms later.
   */
  private async payExternally(
    teamId: string,
    order: Row<'orders'>,
    customer: Row<'customers'>,
    payment: ProcessPaymentBody['payment'],
    lines: Row<'order_lines'>[],
  ): Promise<PaymentResult> {
    let started: Awaited<ReturnType<PaymentsService['startCheckout']>>;
    try {
      const offers = new Map((await this.store.run((db) => this.catalog.findOffers(db, teamId, [...new Set(lines.map((l) => l.offer_id))]))).map((o) => [o.id, o]));
      started = await this.payments.startCheckout({
        teamId,
        orderId: order.id,
        amount: order.total,
        currency: order.currency,
        returnUrl: payment.return_url!,
        externalPaymentId: payment.external_payment_id,
        lines: lines.map((l) => ({ offer: offers.get(l.offer_id)!, quantity: l.quantity })),
        payer: { email: customer.email, first_name: customer.first_name, last_name: customer.last_name },
      });
    } catch (err) {
      await this.store.run((db) => repo.updateOrder(db, teamId, order.id, { payment_started_at: null }));
      throw err;
    }
    return this.store.transaction(async (trx) => {
      // A Sandbox connection is test mode (spec 2.7): its orders are test orders.
      const updated = await repo.updateOrder(trx, teamId, order.id, {
        payment_status: 'pending_redirect',
        payment_started_at: null,
        ...(started.transaction.is_test ? { is_test: true } : {}),
      });
      await this.recordEvents(trx, teamId, order.id, [{ type: 'payment.redirect', data: { transaction: started.transaction.id, provider: 'extpay', session_id: started.checkout.session_id } }]);
      const view = orderView(updated, customer, lines);
      return {
        httpStatus: 200,
        success: true,
        message: 'Customer redirect is required: complete the payment in the embedded checkout.',
        data: { ...view, redirect_required: true, redirect_url: started.checkout.purchase_url, checkout: started.checkout, transaction_id: started.transaction.id, attempts: 1 },
      };
    });
  }

  /**
   * Process Upsell: one click on the order's saved card. Each upsell is charged at most once
   * per order; a repeat gets the first answer back. The line and totals change only on approval.
   */
  async processUpsell(teamId: string, body: UpsellBody): Promise<{ httpStatus: number; body: string }> {
    const claim = await this.store.transaction(async (trx) => {
      const order = await repo.findOrder(trx, teamId, body.order_number, { forUpdate: true });
      if (!order) throw notFound('Order');
      const upsell = await this.catalog.findUpsell(trx, teamId, body.upsell_id);
      if (!upsell) throw notFound('Upsell');
      const previous = await repo.findOrderUpsell(trx, teamId, order.id, upsell.id);
      if (previous) return { replay: previous } as const;
      if (!UPSELLABLE.includes(order.status as OrderStatus)) {
        throw new ApiError('order_not_payable', `Order ${order.id} is ${order.status}; upsells need a paid order.`);
      }
      if (upsell.campaign_id !== order.campaign_id) throw invalid('upsell_id', "is not an upsell of this order's campaign");
      if (!upsell.is_active) throw invalid('upsell_id', 'this upsell is not active');
      const method = order.payment_method_id ? await this.payments.findPaymentMethod(trx, teamId, order.payment_method_id) : undefined;
      if (!method) throw new ApiError('no_saved_payment_method');
      const drafts = await this.priceLines(trx, teamId, order.campaign_id, [{ offer_id: upsell.offer_id, quantity: body.quantity }]);
      const line = { ...drafts[0]!, upsell_id: upsell.id };
      const claimId = newId('orderUpsell');
      await repo.insertOrderUpsell(trx, { id: claimId, team_id: teamId, order_id: order.id, upsell_id: upsell.id, quantity: body.quantity, status: 'in_flight' });
      if (method.connection_id) return { order, method, line, claimId, step: null } as const;
      // Phase 1: the attempt commits with the claim, so a crash leaves a question for the gateway, never an unrecorded charge.
      const [customer] = await this.customers.findMany(trx, teamId, [order.customer_id]);
      const step = await this.payments.openUpsell(trx, {
        teamId,
        orderId: order.id,
        amount: line.line_total + line.shipping,
        currency: order.currency,
        method,
        upsellId: upsell.id,
        payer: { email: customer!.email, first_name: customer!.first_name, last_name: customer!.last_name },
      });
      const attemptId = step.kind === 'call' ? step.attempt.id : step.transaction.id;
      await repo.finishOrderUpsell(trx, teamId, claimId, { transaction_id: attemptId });
      return { order, method, line, claimId, step } as const;
    });
    if ('replay' in claim) {
      const r = claim.replay!;
      if (r.status === 'in_flight') throw new ApiError('payment_in_progress', 'This upsell is already being charged.');
      return { httpStatus: r.response_status!, body: r.response_body! };
    }

    const { order, method, line, claimId, step } = claim;
    if (!step) return this.upsellExternally(teamId, order, method, line, claimId);
    if (step.kind === 'done') return this.settleUpsell(teamId, order.id, line, claimId, step.transaction, step.outcome);
    // Phase 2: the attempt row is committed; the gateway is asked holding no lock.
    const outcome = await this.payments.sendCharge(step.gateway, step.request);
    if (outcome.kind === 'unknown') {
      const data = await this.store.run((db) => this.view(db, teamId, order));
      return {
        httpStatus: 502,
        body: JSON.stringify({
          success: false,
          message: 'The gateway did not answer, so whether the upsell was charged is not known yet; it is confirmed with the gateway within minutes. Do not charge it again.',
          data: { ...data, upsell_id: line.upsell_id, transaction_id: step.attempt.id },
          error: { type: 'api_error', code: 'payment_outcome_unknown' },
        }),
      };
    }
    return this.settleUpsell(teamId, order.id, line, claimId, step.attempt, outcome);
  }

  /**
   * Phase 3 of a card upsell (the request's own, or the recovery run's): the attempt takes the
   * gateway's answer and the order its line, in one transaction under the order's row lock. When
   * another path recorded it first, its stored answer is the answer.
   */
  private async settleUpsell(teamId: string, orderId: string, line: LineDraft, claimId: string, attempt: Row<'transactions'>, outcome: Exclude<ChargeOutcome, { kind: 'unknown' }>) {
    const answered = await this.store.transaction(async (trx) => {
      const current = (await repo.findOrder(trx, teamId, orderId, { forUpdate: true }))!;
      let txn = attempt;
      if (attempt.in_flight) {
        const closed = await this.payments.closeAttempt(trx, teamId, current.customer_id, attempt, outcome);
        if (!closed) {
          const stored = (await repo.findOrderUpsellByTransaction(trx, teamId, attempt.id))!;
          return { httpStatus: stored.response_status ?? 409, body: stored.response_body ?? '{}' };
        }
        txn = closed.transaction;
      }
      const approved = outcome.kind === 'approved';
      return this.applyUpsellOutcome(trx, teamId, current, line, txn, approved ? { approved: true } : { approved: false, reason: outcome.kind === 'declined' ? outcome.text : 'declined' }, claimId);
    });
    this.events.nudge();
    return answered;
  }

  /** The recovery run found what the gateway did with a first-payment attempt whose answer was lost. */
  async recoverFirstPayment(attempt: Row<'transactions'>, outcome: Exclude<ChargeOutcome, { kind: 'unknown' }>): Promise<void> {
    const teamId = attempt.team_id;
    await this.store.transaction(async (trx) => {
      const current = (await repo.findOrder(trx, teamId, attempt.order_id, { forUpdate: true }))!;
      const closed = await this.payments.closeAttempt(trx, teamId, current.customer_id, attempt, outcome);
      if (!closed) return;
      const [customer] = await this.customers.findMany(trx, teamId, [current.customer_id]);
      const lines = await repo.linesOf(trx, teamId, [current.id]);
      await this.card.settle(trx, current, customer!, lines, { kind: 'done', outcome, transactions: [closed.transaction], paymentMethod: closed.paymentMethod, isTest: attempt.is_test });
    });
    this.events.nudge();
  }

  /** The recovery run found what the gateway did with an upsell attempt whose answer was lost. */
  async recoverUpsell(attempt: Row<'transactions'>, outcome: Exclude<ChargeOutcome, { kind: 'unknown' }>): Promise<void> {
    const teamId = attempt.team_id;
    const claim = await this.store.run((db) => repo.findOrderUpsellByTransaction(db, teamId, attempt.id));
    if (!claim) {
      // The claim and the attempt commit together: an attempt without one is not an upsell of ours.
      await this.store.transaction((trx) => this.payments.closeAttempt(trx, teamId, '', attempt, outcome));
      return;
    }
    const line = await this.store.run(async (db) => {
      const upsell = (await this.catalog.findUpsell(db, teamId, claim.upsell_id))!;
      const [offer] = await this.catalog.findOffers(db, teamId, [upsell.offer_id]);
      return { ...draftLine(teamId, offer!, claim.quantity), upsell_id: claim.upsell_id };
    });
    await this.settleUpsell(teamId, attempt.order_id, line, claim.id, attempt, outcome);
  }

  /**
   * An upsell's charge ended, under the order's row lock: approved adds the line and totals (and,
   * on an order already completed, its fulfillment entry and subscription); either way the order
   * webhook fires and the stored answer becomes the one a repeat of the request gets.
   */
  private async applyUpsellOutcome(
    trx: Tx,
    teamId: string,
    current: Row<'orders'>,
    line: LineDraft,
    txn: Row<'transactions'>,
    outcome: { approved: true } | { approved: false; reason: string },
    claimId: string,
  ): Promise<{ httpStatus: number; body: string }> {
    const amount = line.line_total + line.shipping;
    let updated = current;
    if (outcome.approved) {
      const [added] = await repo.insertLines(trx, [{ ...line, order_id: current.id }]);
      updated = await repo.updateOrder(trx, teamId, current.id, await this.retotal(trx, teamId, current.id, current.coupon_id));
      if (current.status === 'completed') {
        // Completed before the upsell (Capture completes a redirected payment at once): the new
        // line still ships and, if it recurs and we bill it, still renews. An extpay upsell is a
        // one-time charge at the provider (one plan per checkout, spec 8): it starts no subscription.
        await this.fulfillments.addLateLine(trx, teamId, current.id, added!);
        if (!txn.connection_id) {
          const [offer] = await this.catalog.findOffers(trx, teamId, [added!.offer_id]);
          const subs = await this.subscriptions.createForOrder(trx, teamId, current, [{ offer: offer!, quantity: added!.quantity }]);
          for (const sub of subs) await this.events.emit(trx, teamId, 'subscription.created', { orderId: current.id, object: subscriptionView(sub) });
        }
      }
      await this.recordEvents(trx, teamId, current.id, [{ type: 'upsell.added', data: { upsell_id: line.upsell_id, transaction: txn.id, amount } }]);
    } else {
      await this.recordEvents(trx, teamId, current.id, [{ type: 'upsell.declined', data: { upsell_id: line.upsell_id, transaction: txn.id, amount } }]);
    }
    const view = await this.view(trx, teamId, updated);
    await this.events.emit(trx, teamId, outcome.approved ? 'order.upsell_added' : 'order.upsell_declined', {
      orderId: current.id,
      object: { ...view, upsell_id: line.upsell_id, transaction_id: txn.id },
    });
    const response = {
      success: outcome.approved,
      message: outcome.approved ? 'Upsell added.' : `Upsell declined: ${outcome.reason}`,
      data: { ...view, upsell_id: line.upsell_id, transaction_id: txn.id },
      ...(outcome.approved ? {} : { error: { type: 'card_error', code: 'payment_declined', decline_code: txn.response_code } }),
    };
    const httpStatus = outcome.approved ? 200 : 402;
    const text = JSON.stringify(response);
    await repo.finishOrderUpsell(trx, teamId, claimId, { status: outcome.approved ? 'approved' : 'declined', transaction_id: txn.id, response_status: httpStatus, response_body: text });
    return { httpStatus, body: text };
  }

  /**
   * Process Upsell on an extpay order (spec 4.3): the provider charges the payment method saved at
   * checkout. Accepted → 202 pending_external_confirmation, and the line and total are added only
   * when payment.succeeded arrives; declined → 402; nothing saved → "no saved payment method found".
   */
  private async upsellExternally(teamId: string, order: Row<'orders'>, method: Row<'payment_methods'>, line: LineDraft, claimId: string): Promise<{ httpStatus: number; body: string }> {
    const amount = line.line_total + line.shipping;
    let target: Awaited<ReturnType<PaymentsService['externalMethodToCharge']>>;
    try {
      target = await this.payments.externalMethodToCharge(teamId, order.id, method);
    } catch (err) {
      await this.store.run((db) => repo.deleteOrderUpsell(db, teamId, claimId));
      throw err;
    }
    if (!target) {
      await this.store.run((db) => repo.deleteOrderUpsell(db, teamId, claimId));
      throw new ApiError(
        'no_saved_payment_method',
        'No saved payment method found: the checkout was not set up for future use (setup_future_usage off_session), so the provider has nothing to charge.',
      );
    }
    const txn = await this.store.transaction(async (trx) => {
      const t = await this.payments.beginExternalUpsell(trx, { teamId, orderId: order.id, amount, currency: order.currency, method, upsellId: line.upsell_id! });
      await repo.finishOrderUpsell(trx, teamId, claimId, { transaction_id: t.id });
      return t;
    });
    const r = await this.payments.sendExternalUpsell(target.connection, txn, method.member_ref!, target.paymentMethodRef, line.name);
    if (r.kind === 'error') {
      await this.store.transaction(async (trx) => {
        await this.payments.settleExternalSale(trx, teamId, txn.id, { status: 'declined', paymentRef: null, code: r.providerCode ?? r.code, message: r.message });
        await repo.deleteOrderUpsell(trx, teamId, claimId);
      });
      throw new ApiError('gateway_unavailable', `The external checkout provider could not charge the saved payment method: ${r.message}`);
    }
    const answered = await this.store.transaction(async (trx) => {
      const current = (await repo.findOrder(trx, teamId, order.id, { forUpdate: true }))!;
      if (r.kind === 'declined') {
        const t = await this.payments.settleExternalSale(trx, teamId, txn.id, { status: 'declined', paymentRef: r.paymentId, code: r.code, message: r.message });
        return this.applyUpsellOutcome(trx, teamId, current, line, t ?? txn, { approved: false, reason: r.message }, claimId);
      }
      // Accepted (pending, or even paid at once): the provider's payment.succeeded adds the line (spec 4.3).
      await this.payments.settleExternalSale(trx, teamId, txn.id, { status: 'pending', paymentRef: r.paymentId });
      await this.recordEvents(trx, teamId, order.id, [{ type: 'upsell.pending', data: { upsell_id: line.upsell_id, transaction: txn.id, amount, payment_id: r.paymentId } }]);
      const view = await this.view(trx, teamId, current);
      const text = JSON.stringify({
        success: true,
        message: 'Upsell accepted: the provider confirms the charge shortly, and the line is added to the order then.',
        data: { ...view, payment_status: 'pending_external_confirmation', upsell_status: 'pending_external_confirmation', upsell_id: line.upsell_id, transaction_id: txn.id },
      });
      await repo.finishOrderUpsell(trx, teamId, claimId, { status: 'pending', response_status: 202, response_body: text });
      return { httpStatus: 202, body: text };
    });
    this.events.nudge();
    return answered;
  }

  /**
   * The provider confirmed (payment.succeeded) or refused (payment.failed / a fraud denial on
   * payment.created) an extpay upsell charge: the line is added now, or the upsell is declined.
   * `guard` is the webhook's deduplication row, in the same transaction. Null: nothing to do.
   */
  async settleExternalUpsell(
    teamId: string,
    txn: Row<'transactions'>,
    outcome: { approved: true; paymentRef: string } | { approved: false; paymentRef: string; code: string; message: string },
    guard: (trx: Tx) => Promise<boolean>,
  ): Promise<boolean> {
    const done = await this.store.transaction(async (trx) => {
      const current = (await repo.findOrder(trx, teamId, txn.order_id, { forUpdate: true }))!;
      if (!(await guard(trx))) return false;
      const claim = await repo.findOrderUpsellByTransaction(trx, teamId, txn.id);
      const settled = await this.payments.settleExternalSale(
        trx,
        teamId,
        txn.id,
        outcome.approved ? { status: 'approved', paymentRef: outcome.paymentRef } : { status: 'declined', paymentRef: outcome.paymentRef, code: outcome.code, message: outcome.message },
      );
      if (!settled || !claim) return false;
      const upsell = await this.catalog.findUpsell(trx, teamId, claim.upsell_id);
      const [offer] = await this.catalog.findOffers(trx, teamId, [upsell!.offer_id]);
      const line = { ...draftLine(teamId, offer!, claim.quantity), upsell_id: claim.upsell_id };
      await this.applyUpsellOutcome(trx, teamId, current, line, settled, outcome.approved ? { approved: true } : { approved: false, reason: outcome.message }, claim.id);
      return true;
    });
    if (done) this.events.nudge();
    return done;
  }

  /** Refunds all or part of an approved charge through its gateway; never more than was captured. */
  async refund(teamId: string, orderNumber: string, body: RefundBody) {
    return this.reverse(teamId, orderNumber, 'refund', { transactionId: body.transaction_id, amount: body.amount }, body.reason);
  }

  /** Voids an approved charge that has no refunds (before settlement). */
  async void(teamId: string, orderNumber: string, body: VoidBody) {
    return this.reverse(teamId, orderNumber, 'void', { transactionId: body.transaction_id }, body.reason);
  }

  private async reverse(teamId: string, orderNumber: string, kind: 'refund' | 'void', target: { transactionId?: string | undefined; amount?: number | undefined }, reason?: string) {
    const { sale, reversal } = await this.store.transaction(async (trx) => {
      const order = await repo.findOrder(trx, teamId, orderNumber, { forUpdate: true });
      if (!order) throw notFound('Order');
      return this.payments.beginReversal(trx, teamId, order.id, kind, target);
    });
    const result = await this.payments.sendReversal(teamId, sale, reversal);
    if (result.kind === 'unknown') {
      throw new ApiError('payment_outcome_unknown', `The provider did not answer, so whether the ${kind} went through is not known yet; it is confirmed with the provider within minutes (transaction ${reversal.id}). Do not send it again.`);
    }
    return this.settleReversal(teamId, sale, reversal, result, reason);
  }

  /** Phase 3 of a refund or void (the request's own, or the recovery run's): the answer and the order's totals together. */
  async settleReversal(teamId: string, sale: Row<'transactions'>, reversal: Row<'transactions'>, result: Exclude<ReversalOutcome, { kind: 'unknown' }>, reason?: string) {
    const kind = reversal.type as 'refund' | 'void';
    const reversed = await this.store.transaction(async (trx) => {
      const order = (await repo.findOrder(trx, teamId, reversal.order_id, { forUpdate: true }))!;
      const { row: done, settledMeanwhile } = await this.payments.finishReversal(trx, teamId, reversal, result);
      const approved = done.status === 'approved';
      let updated = order;
      if (settledMeanwhile) {
        // The provider's refund event settled it first (and moved the totals): nothing more to count.
      } else if (approved && sale.status === 'pending') {
        // A held extpay payment voided before it settled: no money moved, the order is cancelled.
        await this.payments.settleExternalSale(trx, teamId, sale.id, { status: 'declined', paymentRef: sale.provider_ref, code: 'voided', message: 'Voided before the provider settled it' });
        assertOrderMove(order.status, 'cancelled');
        updated = await repo.updateOrder(trx, teamId, order.id, { status: 'cancelled', payment_status: 'voided' });
      } else if (approved) {
        const refundedTotal = order.refunded_total + done.amount;
        const fully = refundedTotal >= order.total;
        const target: OrderStatus | null = fully ? (kind === 'void' ? 'cancelled' : 'refunded') : null;
        if (target && target !== order.status) assertOrderMove(order.status, target);
        updated = await repo.updateOrder(trx, teamId, order.id, { refunded_total: refundedTotal, ...(target ? { status: target } : {}) });
      }
      await this.recordEvents(trx, teamId, order.id, [
        { type: approved ? `${kind}.created` : `${kind}.failed`, data: { transaction: done.id, charge: sale.id, amount: done.amount, reason: reason ?? null } },
      ]);
      const view = await this.view(trx, teamId, updated);
      if (approved) {
        await this.events.emit(trx, teamId, kind === 'refund' ? 'refund.created' : 'charge.voided', {
          orderId: order.id,
          object: { ...transactionView(done), reason: reason ?? null, order: view },
        });
      }
      return { approved, transaction: transactionView(done), order: view };
    });
    this.events.nudge();
    return reversed;
  }

  /**
   * Capture (3-D Secure gateway): re-checks the pending first payment with the gateway and
   * finalizes it the same way the gateway's PAYMENT_SUCCEEDED webhook does. Safe to call again.
   */
  async capture(teamId: string, body: { order_number: string; payment_id?: string | undefined }): Promise<CaptureResult> {
    const { order, txn } = await this.store.run(async (db) => {
      const found = await repo.findOrder(db, teamId, body.order_number);
      if (!found) throw notFound('Order');
      const pending = await this.payments.findCapturable(db, teamId, found.id);
      // The webhook (or another Capture) may settle the payment between the two reads: read the
      // order again, so a payment settled meanwhile answers "already captured", not 404.
      return { order: pending ? found : ((await repo.findOrder(db, teamId, found.id)) ?? found), txn: pending };
    });
    if (order.payment_status === 'completed') {
      const view = await this.store.run((db) => this.view(db, teamId, order));
      return { httpStatus: 200, success: true, message: 'Payment already captured.', data: view };
    }
    if (!txn) {
      // The gateway's PAYMENT_FAILED may have declined the redirected payment before the customer came
      // back: the answer is the same 422 as when the customer returns first (spec 4.2), whichever won.
      if (order.payment_status === 'declined' && (await this.payments.lastFirstPaymentWasRedirected(teamId, order.id))) {
        const view = await this.store.run((db) => this.view(db, teamId, order));
        return { httpStatus: 422, success: false, message: 'The payment was not completed.', data: view, error: { type: 'card_error', code: 'payment_not_completed' } };
      }
      throw new ApiError('no_capturable_transaction');
    }
    if (txn.connection_id) return this.captureExternal(teamId, order, txn, body.payment_id);
    if (body.payment_id && body.payment_id !== txn.provider_ref) {
      throw new ApiError('capture_failed', 'Payment capture failed: the payment does not belong to this order.');
    }
    const r = await this.payments.retrieve(teamId, txn);
    switch (r.kind) {
      case 'approved': {
        const done = await this.finalizeFirstPayment(teamId, order.id, txn.id, { approved: true, paymentMethod: r.vaultRef });
        return { httpStatus: 200, success: true, message: done.already ? 'Payment already captured.' : 'Payment captured.', data: done.view };
      }
      case 'declined': {
        const done = await this.finalizeFirstPayment(teamId, order.id, txn.id, { approved: false, code: r.code, message: r.text });
        if (done.view.payment_status === 'completed') return { httpStatus: 200, success: true, message: 'Payment already captured.', data: done.view };
        return { httpStatus: 422, success: false, message: 'The payment was not completed.', data: done.view, error: { type: 'card_error', code: 'payment_not_completed' } };
      }
      case 'pending': {
        const view = await this.markUnderReview(teamId, order.id, txn.id);
        return { httpStatus: 202, success: true, message: 'The payment is under review; the order completes when the gateway confirms it.', data: view };
      }
      case 'redirect': {
        const view = await this.store.run((db) => this.view(db, teamId, order));
        return { httpStatus: 422, success: false, message: 'The payment was not completed: the customer has not finished 3-D Secure.', data: view, error: { type: 'card_error', code: 'payment_not_completed' } };
      }
      case 'unknown':
        throw new ApiError('gateway_unavailable', `The gateway could not be asked about the payment: ${r.text}`);
    }
  }

  /** Capture for extpay (spec 4.2, provider table): confirms that exact receipt with the provider. */
  private async captureExternal(teamId: string, order: Row<'orders'>, txn: Row<'transactions'>, receiptId: string | undefined): Promise<CaptureResult> {
    const { result, belongs } = await this.payments.retrieveExternal(teamId, txn, receiptId);
    if (result?.kind === 'error' && result.code !== 'not_found') throw new ApiError('gateway_unavailable', `The external checkout provider could not be asked: ${result.message}`);
    const failed = async (why: string): Promise<CaptureResult> => ({
      httpStatus: 422,
      success: false,
      message: `Payment capture failed: ${why}`,
      data: await this.store.run((db) => this.view(db, teamId, order)),
      error: { type: 'card_error', code: 'capture_failed' },
    });
    if (!result || result.kind === 'error') return failed(receiptId ? 'no such receipt.' : 'no payment has been made in the checkout yet.');
    if (!belongs) return failed('the receipt does not belong to this order.');
    if (result.kind === 'approved') {
      const membership = await this.payments.membershipOf(teamId, txn.connection_id!, result.payment.membershipId);
      const done = await this.finalizeFirstPayment(teamId, order.id, txn.id, paidExternally(result.payment), undefined, membership);
      return { httpStatus: 200, success: true, message: done.already ? 'Payment already captured.' : 'Payment captured.', data: done.view };
    }
    if (result.kind === 'pending') {
      const view = await this.markUnderReview(teamId, order.id, txn.id, undefined, result.paymentId);
      return { httpStatus: 202, success: true, message: 'The provider has the payment but has not settled it yet; the order completes when it confirms.', data: view };
    }
    const done = await this.finalizeFirstPayment(teamId, order.id, txn.id, { approved: false, code: result.code, message: result.message, paymentRef: result.paymentId });
    if (done.view.payment_status === 'completed') return { httpStatus: 200, success: true, message: 'Payment already captured.', data: done.view };
    return failed(result.message);
  }

  /**
   * The one path that settles a redirected first payment, under the order's row lock:
   * Capture and the gateway's webhook both call it, whichever comes first completes the order
   * (fulfillment, subscriptions, order.completed) and the other finds nothing left to do.
   * `guard` runs first in the same transaction (a webhook's deduplication row).
   */
  async finalizeFirstPayment(
    teamId: string,
    orderId: string,
    txnId: string,
    outcome: FirstPaymentOutcome,
    guard?: (trx: Tx) => Promise<boolean>,
    /** extpay: the membership as the provider reported it, mirrored onto the subscription. */
    membership?: ExtpayMembership | null,
  ): Promise<{ already: boolean; view: OrderView }> {
    const r = await this.store.transaction(async (trx) => {
      const order = (await repo.findOrder(trx, teamId, orderId, { forUpdate: true }))!;
      if (guard && !(await guard(trx))) return { already: true, view: await this.view(trx, teamId, order) };
      if (order.payment_status === 'completed') return { already: true, view: await this.view(trx, teamId, order) };
      const settled = await this.payments.settlePending(trx, teamId, txnId, order.customer_id, outcome);
      if (!settled) return { already: true, view: await this.view(trx, teamId, order) };
      if (!outcome.approved) {
        assertOrderMove(order.status, 'declined');
        const declined = await repo.updateOrder(trx, teamId, order.id, { status: 'declined', payment_status: 'declined', payment_started_at: null });
        await this.recordEvents(trx, teamId, order.id, [{ type: 'payment.declined', data: { transactions: [txnId], from_status: order.status, to_status: 'declined' } }]);
        const view = await this.view(trx, teamId, declined);
        await this.events.emit(trx, teamId, 'order.declined', { orderId: order.id, object: view });
        return { already: false, view };
      }
      assertOrderMove(order.status, 'processing');
      const paid = await repo.updateOrder(trx, teamId, order.id, {
        status: 'processing',
        payment_status: 'completed',
        payment_method_id: settled.paymentMethod?.id ?? null,
        payment_started_at: null,
      });
      await this.recordEvents(trx, teamId, order.id, [{ type: 'payment.captured', data: { transaction: txnId, from_status: order.status } }]);
      const t = settled.transaction;
      const external: ExternalBilling | undefined =
        t.connection_id && outcome.approved && outcome.external
          ? {
              connectionId: t.connection_id,
              membershipRef: membership?.id ?? outcome.external.membershipRef,
              status: membership ? membershipState(membership) : null,
              nextBillingAt: membership?.renewalPeriodEnd ? new Date(membership.renewalPeriodEnd) : null,
            }
          : undefined;
      const done = await this.finalizeCompletion(trx, teamId, paid, external);
      return { already: false, view: done.order };
    });
    if (!r.already) this.events.nudge();
    return r;
  }

  async markUnderReview(teamId: string, orderId: string, txnId: string, guard?: (trx: Tx) => Promise<boolean>, paymentRef?: string): Promise<OrderView> {
    return this.store.transaction(async (trx) => {
      const order = (await repo.findOrder(trx, teamId, orderId, { forUpdate: true }))!;
      if (guard && !(await guard(trx))) return this.view(trx, teamId, order);
      if (paymentRef) await this.payments.notePaymentRef(trx, teamId, txnId, paymentRef);
      if (order.payment_status !== 'pending_redirect') return this.view(trx, teamId, order);
      assertOrderMove(order.status, 'pending_external_confirmation');
      const updated = await repo.updateOrder(trx, teamId, order.id, { status: 'pending_external_confirmation', payment_status: 'pending_external_confirmation' });
      await this.recordEvents(trx, teamId, order.id, [{ type: 'payment.under_review', data: { transaction: txnId } }]);
      return this.view(trx, teamId, updated);
    });
  }

  /**
   * A verified gateway webhook (PAYMENT_SUCCEEDED / PAYMENT_FAILED / PAYMENT_UNDER_REVIEW):
   * deduplicated by event id in the same transaction as its effect, so a redelivery is a no-op
   * and a failed attempt leaves nothing behind for the gateway's retry.
   */
  async applyGatewayEvent(
    gateway: { id: string; team_id: string },
    event: { id: string; type: string; paymentId: string; paymentMethod: string | null; code?: string; message?: string },
    payload: Record<string, unknown>,
  ): Promise<'processed' | 'duplicate' | 'ignored'> {
    const teamId = gateway.team_id;
    let fresh = false;
    const guard = async (trx: Tx) => (fresh = await this.payments.recordInbound(trx, `gateway:${gateway.id}`, event.id, teamId, event.type, payload));
    const txn = await this.store.run((db) => this.payments.findByProviderRef(db, teamId, gateway.id, event.paymentId));
    if (!txn) {
      await this.store.transaction((trx) => guard(trx));
      return fresh ? 'ignored' : 'duplicate';
    }
    if (event.type === 'PAYMENT_SUCCEEDED') {
      await this.finalizeFirstPayment(teamId, txn.order_id, txn.id, { approved: true, paymentMethod: event.paymentMethod }, guard);
    } else if (event.type === 'PAYMENT_FAILED') {
      await this.finalizeFirstPayment(teamId, txn.order_id, txn.id, { approved: false, code: event.code ?? 'declined', message: event.message ?? 'The payment failed.' }, guard);
    } else if (event.type === 'PAYMENT_UNDER_REVIEW') {
      await this.markUnderReview(teamId, txn.order_id, txn.id, guard);
    } else {
      await this.store.transaction((trx) => guard(trx));
      return fresh ? 'ignored' : 'duplicate';
    }
    return fresh ? 'processed' : 'duplicate';
  }

  // ---- extpay events after the first payment (spec 4.5, 6.1) ----

  /**
   * A renewal the provider charged (payment.succeeded, billing reason subscription_cycle): a new
   * rebill order, completed, with its own transaction and fulfillment, naming the subscription and
   * the order that started it; the subscription mirrors the membership. Once per provider payment.
   */
  async recordRenewal(
    teamId: string,
    connectionId: string,
    p: ExtpayPayment,
    membership: ExtpayMembership | null,
    guard: (trx: Tx) => Promise<boolean>,
  ): Promise<'processed' | 'ignored' | 'duplicate'> {
    const r = await this.store.transaction(async (trx) => {
      let subs = await this.subscriptions.forMembership(trx, teamId, p.membershipId!);
      if (!(await guard(trx))) return 'duplicate' as const;
      const origin = typeof p.metadata.order_number === 'string' ? p.metadata.order_number : null;
      if (subs.length === 0 && membership && origin) {
        // The subscription missed its membership reference: the order the renewal names recovers it.
        await this.subscriptions.applyMembership(trx, teamId, membership, { orderId: origin });
        subs = await this.subscriptions.forMembership(trx, teamId, p.membershipId!);
      }
      if (subs.length === 0 || (await this.payments.findExternalSale(trx, teamId, connectionId, p.id))) return 'ignored' as const;
      const parent = (await repo.findOrder(trx, teamId, subs[0]!.order_id, { forUpdate: true }))!;
      const offers = new Map((await this.catalog.findOffers(trx, teamId, [...new Set(subs.map((x) => x.offer_id))])).map((o) => [o.id, o]));
      // The renewal price the provider charges is recurring price × quantity + recurring shipping (spec 4.1 rule 10).
      const drafts = subs.map((sub) => ({
        ...draftLine(teamId, offers.get(sub.offer_id)!, 1),
        name: `${offers.get(sub.offer_id)!.name} (renewal)`,
        unit_price: sub.recurring_price,
        shipping: 0,
        line_total: sub.recurring_price,
      }));
      const orderId = newId('order');
      const order = await repo.insertOrder(trx, {
        id: orderId,
        team_id: teamId,
        campaign_id: parent.campaign_id,
        customer_id: parent.customer_id,
        status: 'completed',
        payment_status: 'completed',
        currency: parent.currency,
        phone: parent.phone,
        shipping_address: parent.shipping_address ? JSON.stringify(parent.shipping_address) : null,
        billing_address: parent.billing_address ? JSON.stringify(parent.billing_address) : null,
        is_test: parent.is_test,
        subscription_id: subs[0]!.id,
        rebill_of: parent.id,
        completed_at: new Date(),
        ...totalsOf(drafts),
      });
      const lines = await repo.insertLines(
        trx,
        drafts.map((d) => ({ ...d, order_id: orderId })),
      );
      const sale = await this.payments.recordRenewalSale(trx, teamId, orderId, connectionId, p, parent.is_test);
      const fulfillment = await this.fulfillments.createForOrder(trx, teamId, orderId, lines);
      if (membership) await this.subscriptions.mirrorMembership(trx, teamId, membership);
      await this.recordEvents(trx, teamId, orderId, [
        { type: 'order.created', data: { rebill_of: parent.id, subscription_id: subs[0]!.id, total: order.total } },
        { type: 'payment.captured', data: { transaction: sale.id, payment_id: p.id } },
        { type: 'order.completed', data: { fulfillment_id: fulfillment?.id ?? null, subscriptions: [] } },
      ]);
      await this.recordEvents(trx, teamId, parent.id, [{ type: 'subscription.renewed', data: { rebill_order: orderId, transaction: sale.id, payment_id: p.id } }]);
      const view = orderView(order, (await this.customers.findMany(trx, teamId, [order.customer_id]))[0]!, lines);
      await this.events.emit(trx, teamId, 'order.completed', { orderId, object: view });
      await this.events.emit(trx, teamId, 'subscription.renewed', { orderId, object: view });
      return 'processed' as const;
    });
    if (r === 'processed') this.events.nudge();
    return r;
  }

  /** A failed renewal (payment.failed, subscription_cycle): the subscription mirrors the membership (Past Due; the provider retries). */
  async renewalFailed(teamId: string, p: ExtpayPayment, membership: ExtpayMembership, guard: (trx: Tx) => Promise<boolean>): Promise<'processed' | 'ignored' | 'duplicate'> {
    const r = await this.store.transaction(async (trx) => {
      const subs = await this.subscriptions.forMembership(trx, teamId, p.membershipId!);
      if (!(await guard(trx))) return 'duplicate' as const;
      if (subs.length === 0) return 'ignored' as const;
      await this.subscriptions.mirrorMembership(trx, teamId, membership);
      await this.recordEvents(trx, teamId, subs[0]!.order_id, [
        { type: 'subscription.renewal_failed', data: { payment_id: p.id, amount: p.amount, reason: p.failureMessage, subscription_status: membershipState(membership) } },
      ]);
      return 'processed' as const;
    });
    if (r === 'processed') this.events.nudge();
    return r;
  }

  /** membership.* (spec 6.1): state sync of the subscriptions the membership bills; a missed reference is recovered by the order it names. */
  async applyMembershipEvent(teamId: string, m: ExtpayMembership, guard: (trx: Tx) => Promise<boolean>): Promise<'processed' | 'duplicate'> {
    const orderId = typeof m.metadata.order_number === 'string' ? m.metadata.order_number : null;
    const r = await this.store.transaction(async (trx) => {
      if (!(await guard(trx))) return 'duplicate' as const;
      const changed = await this.subscriptions.mirrorMembership(trx, teamId, m, orderId ? { orderId } : undefined);
      for (const sub of changed) {
        await this.recordEvents(trx, teamId, sub.order_id, [{ type: 'subscription.synced', data: { subscription_id: sub.id, status: sub.status, membership: m.id } }]);
      }
      return 'processed' as const;
    });
    this.events.nudge();
    return r;
  }

  /**
   * One inbound event's effect on one order: under the order's row lock, after the event's
   * deduplication row (`guard`) in the same transaction; a seen event does nothing.
   */
  private async onceUnderOrderLock(teamId: string, orderId: string, guard: (trx: Tx) => Promise<boolean>, effect: (trx: Tx, order: Row<'orders'>) => Promise<void>): Promise<'processed' | 'duplicate'> {
    const r = await this.store.transaction(async (trx) => {
      const order = (await repo.findOrder(trx, teamId, orderId, { forUpdate: true }))!;
      if (!(await guard(trx))) return 'duplicate' as const;
      await effect(trx, order);
      return 'processed' as const;
    });
    if (r === 'processed') this.events.nudge();
    return r;
  }

  /**
   * refund.created / refund.updated (spec 4.5): the provisional refund takes the settled amount (the
   * order's refunded total follows), a failed one is undone, one made at the provider is recorded.
   */
  async applyExternalRefund(teamId: string, sale: Row<'transactions'>, refund: ExtpayRefund, guard: (trx: Tx) => Promise<boolean>): Promise<'processed' | 'duplicate'> {
    return this.onceUnderOrderLock(teamId, sale.order_id, guard, async (trx, order) => {
      const res = await this.payments.settleExternalRefund(trx, teamId, sale, refund);
      if (res.change === 'unchanged' || !res.transaction) return;
      let updated = order;
      if (res.delta !== 0) {
        const refundedTotal = Math.max(0, order.refunded_total + res.delta);
        const fully = refundedTotal >= order.total && order.total > 0;
        const target: OrderStatus | null = fully && canMove(order.status as OrderStatus, 'refunded') ? 'refunded' : null;
        updated = await repo.updateOrder(trx, teamId, order.id, { refunded_total: refundedTotal, ...(target ? { status: target } : {}) });
      }
      await this.recordEvents(trx, teamId, order.id, [
        {
          type: `refund.${res.change}`,
          data: { transaction: res.transaction.id, charge: sale.id, refund_id: refund.id, amount: res.transaction.amount, requested_amount: res.transaction.requested_amount },
        },
      ]);
      if (res.change === 'recorded') {
        const view = await this.view(trx, teamId, updated);
        await this.events.emit(trx, teamId, 'refund.created', { orderId: order.id, object: { ...transactionView(res.transaction), reason: null, order: view } });
      }
    });
  }

  /**
   * dispute.created / dispute.updated (spec 4.5): the order is flagged for QA with the dispute's
   * status and reason, a system note is added, and once the dispute is past the early warning
   * and not won a chargeback is recorded against the charge (once).
   */
  async applyExternalDispute(teamId: string, sale: Row<'transactions'>, d: ExtpayDispute, guard: (trx: Tx) => Promise<boolean>): Promise<'processed' | 'duplicate'> {
    return this.onceUnderOrderLock(teamId, sale.order_id, guard, async (trx, order) => {
      const before = (await this.payments.listOrderDisputes(trx, teamId, order.id)).find((x) => x.provider_ref === d.id);
      const rec = await this.payments.recordExternalDispute(trx, teamId, sale, d);
      const reason = d.reason ?? 'no reason given';
      const qa = `Dispute ${d.id}: ${d.status.replace(/_/g, ' ')} (${reason})`;
      const updated = await repo.updateOrder(trx, teamId, order.id, { needs_qa: true, qa_reason: qa });
      const events: OrderEvent[] = [];
      if (rec.opened || before?.status !== d.status) {
        await this.customers.addSystemNote(
          trx,
          teamId,
          order.customer_id,
          `${rec.opened ? 'Dispute opened' : 'Dispute updated'} on order ${order.id}: ${d.status.replace(/_/g, ' ')}, reason ${reason}, amount ${d.amount} ${sale.currency}.`,
        );
        events.push({ type: rec.opened ? 'dispute.created' : 'dispute.updated', data: { dispute: rec.dispute.id, provider_ref: d.id, status: d.status, reason: d.reason, amount: d.amount } });
      }
      if (rec.chargeback) events.push({ type: 'chargeback.recorded', data: { transaction: rec.chargeback.id, charge: sale.id, amount: rec.chargeback.amount, dispute: rec.dispute.id } });
      if (events.length === 0) return;
      await this.recordEvents(trx, teamId, order.id, events);
      const view = await this.view(trx, teamId, updated);
      await this.events.emit(trx, teamId, 'order.disputed', { orderId: order.id, object: { ...view, dispute: disputeView(rec.dispute) } });
    });
  }

  /** setup_intent.succeeded (spec 6.1): the payment method the provider saved for the order's customer. */
  async saveExternalMethod(teamId: string, checkout: Row<'transactions'>, s: ExtpaySetupIntent, guard: (trx: Tx) => Promise<boolean>): Promise<'processed' | 'duplicate'> {
    return this.onceUnderOrderLock(teamId, checkout.order_id, guard, async (trx, order) => {
      const method = await this.payments.saveExternalMethod(trx, teamId, order.customer_id, checkout, s, order.is_test);
      if (!order.payment_method_id && order.payment_status === 'completed') await repo.updateOrder(trx, teamId, order.id, { payment_method_id: method.id });
      await this.recordEvents(trx, teamId, order.id, [{ type: 'payment_method.saved', data: { payment_method: method.id, brand: method.brand, last4: method.last4 } }]);
    });
  }

  /**
   * The stuck-payment watchdog: a redirected payment whose customer never came back, and whose
   * webhook never arrived, is re-checked with its gateway and settled through the same finalize
   * as Capture. Payments still waiting for the customer are left alone.
   */
  async reconcilePendingPayments(olderThanMs: number, limit = 50): Promise<{ checked: number; completed: number; declined: number; under_review: number }> {
    const stale = await this.payments.listStalePending(new Date(Date.now() - olderThanMs), limit);
    const tally = { checked: 0, completed: 0, declined: 0, under_review: 0 };
    for (const txn of stale) {
      if (txn.connection_id) {
        tally.checked++;
        const r = await this.reconcileExternal(txn);
        if (r) tally[r]++;
        continue;
      }
      const r = await this.payments.retrieve(txn.team_id, txn);
      tally.checked++;
      if (r.kind === 'approved') {
        const done = await this.finalizeFirstPayment(txn.team_id, txn.order_id, txn.id, { approved: true, paymentMethod: r.vaultRef });
        if (!done.already) tally.completed++;
      } else if (r.kind === 'declined') {
        const done = await this.finalizeFirstPayment(txn.team_id, txn.order_id, txn.id, { approved: false, code: r.code, message: r.text });
        if (!done.already) tally.declined++;
      } else if (r.kind === 'pending') {
        await this.markUnderReview(txn.team_id, txn.order_id, txn.id);
        tally.under_review++;
      }
    }
    return tally;
  }

  /**
   * The watchdog for extpay: a checkout paid (or an upsell confirmed) at the provider whose
   * webhook never came is settled the way payment.succeeded would; a checkout nobody paid is left alone.
   */
  private async reconcileExternal(txn: Row<'transactions'>): Promise<'completed' | 'declined' | 'under_review' | null> {
    const teamId = txn.team_id;
    const { result, belongs } = await this.payments.retrieveExternal(teamId, txn, txn.provider_ref ?? undefined);
    if (!result || result.kind === 'error' || (!belongs && !txn.upsell_id)) return null;
    if (txn.upsell_id) {
      if (result.kind === 'pending') return null;
      const outcome =
        result.kind === 'approved' ? { approved: true as const, paymentRef: result.paymentId } : { approved: false as const, paymentRef: result.paymentId, code: result.code, message: result.message };
      const done = await this.settleExternalUpsell(teamId, txn, outcome, async () => true);
      return done ? (outcome.approved ? 'completed' : 'declined') : null;
    }
    if (result.kind === 'approved') {
      const membership = await this.payments.membershipOf(teamId, txn.connection_id!, result.payment.membershipId);
      const done = await this.finalizeFirstPayment(teamId, txn.order_id, txn.id, paidExternally(result.payment), undefined, membership);
      return done.already ? null : 'completed';
    }
    if (result.kind === 'declined') {
      const done = await this.finalizeFirstPayment(teamId, txn.order_id, txn.id, { approved: false, code: result.code, message: result.message, paymentRef: result.paymentId });
      return done.already ? null : 'declined';
    }
    await this.markUnderReview(teamId, txn.order_id, txn.id, undefined, result.paymentId);
    return 'under_review';
  }

  /**
   * Complete Order: moves a paid order to completed exactly once and, in the same
   * transaction, creates its fulfillment, subscriptions and coupon redemption and queues the
   * order.completed event (order webhooks and the purchase e-mail). A second call changes
   * nothing and answers the same. A payment still pending_redirect completes nothing.
   */
  async completeOrder(teamId: string, orderNumber: string): Promise<{ order: OrderView; alreadyCompleted: boolean }> {
    const done = await this.store.transaction(async (trx) => {
      const order = await repo.findOrder(trx, teamId, orderNumber, { forUpdate: true });
      if (!order) throw notFound('Order');
      return this.finalizeCompletion(trx, teamId, order);
    });
    if (!done.alreadyCompleted) this.events.nudge();
    return done;
  }

  /** The one completion path, under the order's row lock; later payment confirmations call it too. */
  async finalizeCompletion(trx: Tx, teamId: string, order: Row<'orders'>, external?: ExternalBilling): Promise<{ order: OrderView; alreadyCompleted: boolean }> {
    if (order.status === 'completed') return { order: await this.view(trx, teamId, order), alreadyCompleted: true };
    if (order.payment_status === 'pending_redirect') {
      throw new ApiError('order_not_completable', `Order ${order.id} is waiting for the customer's redirect (pending_redirect); capture the payment before completing it.`);
    }
    if (order.status !== 'processing') {
      throw new ApiError('order_not_completable', `Order ${order.id} is ${order.status}; only a paid order can be completed.`);
    }
    const now = new Date();
    const updated = await repo.updateOrder(trx, teamId, order.id, { status: 'completed', completed_at: now });
    const lines = await repo.linesOf(trx, teamId, [order.id]);
    const fulfillment = await this.fulfillments.createForOrder(trx, teamId, order.id, lines);
    const offers = new Map((await this.catalog.findOffers(trx, teamId, [...new Set(lines.map((l) => l.offer_id))])).map((o) => [o.id, o]));
    const subscriptions = await this.subscriptions.createForOrder(
      trx,
      teamId,
      order,
      lines.map((l) => ({ offer: offers.get(l.offer_id)!, quantity: l.quantity })),
      now,
      external,
    );
    if (order.coupon_id) await this.catalog.redeemCoupon(trx, teamId, order.coupon_id, order.id, order.discount_total);
    await this.recordEvents(trx, teamId, order.id, [
      {
        type: 'order.completed',
        data: { fulfillment_id: fulfillment?.id ?? null, subscriptions: subscriptions.map((x) => x.id), coupon_id: order.coupon_id },
      },
    ]);
    const view = await this.view(trx, teamId, updated);
    await this.events.emit(trx, teamId, 'order.completed', { orderId: order.id, object: view });
    for (const sub of subscriptions) {
      await this.events.emit(trx, teamId, 'subscription.created', { orderId: order.id, object: subscriptionView(sub) });
    }
    return { order: view, alreadyCompleted: false };
  }

  async get(teamId: string, orderNumber: string) {
    return this.store.run(async (db) => {
      const order = await repo.findOrder(db, teamId, orderNumber);
      if (!order) throw notFound('Order');
      const [view, events, transactions, disputes] = [
        await this.view(db, teamId, order),
        await repo.eventsOf(db, teamId, order.id),
        await this.payments.orderTransactions(db, teamId, order.id),
        await this.payments.listOrderDisputes(db, teamId, order.id),
      ];
      return {
        ...view,
        transactions: transactions.map(transactionView),
        disputes: disputes.map(disputeView),
        events: events.map((e) => ({ id: e.id, type: e.type, data: e.data, created_at: iso(e.created_at) })),
      };
    });
  }

  async list(teamId: string, q: ListOrdersQuery): Promise<Page<OrderView>> {
    return this.store.run(async (db) => {
      const afterSeq = await cursorSeq(db, 'orders', teamId, q.starting_after);
      if (afterSeq === undefined) throw invalid('starting_after', 'no such object');
      const rows = await repo.listOrders(db, teamId, {
        limit: q.limit,
        afterSeq,
        status: q.status,
        paymentStatus: q.payment_status,
        campaignId: q.campaign_id,
        customerEmail: q.customer_email ? normalizeEmail(q.customer_email) : undefined,
        customerId: q.customer_number,
        isTest: q.is_test,
        needsQa: q.needs_qa,
        rebillOf: q.rebill_of,
        createdGte: q.created_gte,
        createdLte: q.created_lte,
      });
      const page = toPage(rows, q.limit);
      return { items: await this.views(db, teamId, page.items), has_more: page.has_more };
    });
  }
}
