import { ApiError, invalid, notFound } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import { iso } from '../../app/schemas.ts';
import type { Executor, Store, Tx } from '../../db/database.ts';
import { cursorSeq, type Page, toPage } from '../../db/pagination.ts';
import type { Address, NewRow, Row } from '../../db/schema.ts';
import type { CatalogService } from '../catalog/service.ts';
import { customerView, type CustomersService, normalizeEmail } from '../customers/service.ts';
import type { ChargeOutcome } from '../payments/outcomes.ts';
import { type ChargeRequest, type PaymentsService, transactionView } from '../payments/service.ts';
import * as repo from './repo.ts';
import type { CreateLeadBody, CreateOrderBody, PaymentInput, ProcessPaymentBody } from './schemas.ts';
import { assertOrderMove, type OrderStatus, PAYABLE } from './states.ts';

type LineDraft = Omit<NewRow<'order_lines'>, 'order_id'>;

export interface OrderEvent {
  type: string;
  data?: Record<string, unknown>;
}

export function lineView(l: Row<'order_lines'>) {
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

export function orderView(o: Row<'orders'>, customer: Row<'customers'>, lines: Row<'order_lines'>[]) {
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
    is_test: o.is_test,
    is_throttled: o.is_throttle,
    created_at: iso(o.created_at),
    updated_at: iso(o.updated_at),
  };
}
export type OrderView = ReturnType<typeof orderView>;

/** What Create Order and Process Payment answer: the HTTP status, the envelope, and for declines an error object. */
export interface PaymentResult {
  httpStatus: number;
  success: boolean;
  message: string;
  data: OrderView & { redirect_required: boolean; redirect_url?: string; transaction_id: string | null };
  error?: { type: string; code: string; decline_code: string | null };
}

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
}

function totalsOf(lines: Array<{ line_total: number; shipping: number }>, discount = 0) {
  const subtotal = lines.reduce((s, l) => s + l.line_total, 0);
  const shipping_total = lines.reduce((s, l) => s + l.shipping, 0);
  return { subtotal, shipping_total, discount_total: discount, total: Math.max(0, subtotal + shipping_total - discount) };
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
  ) {}

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
      return {
        id: newId('orderLine'),
        team_id: teamId,
        offer_id: offer.id,
        product_id: offer.product_id,
        upsell_id: null,
        name: offer.name,
        quantity: p.quantity,
        unit_price: offer.price,
        // Shipping is charged once per line, whatever the quantity.
        shipping: offer.shipping,
        line_total: offer.price * p.quantity,
        billing_type: offer.billing_type,
        fulfillment_type: offer.fulfillment_type,
      };
    });
  }

  private async setLines(trx: Tx, teamId: string, orderId: string, drafts: LineDraft[]) {
    await repo.replaceLines(
      trx,
      teamId,
      orderId,
      drafts.map((d) => ({ ...d, order_id: orderId })),
    );
    const all = await repo.linesOf(trx, teamId, [orderId]);
    return totalsOf(all);
  }

  private events(teamId: string, orderId: string, events: OrderEvent[]): NewRow<'order_events'>[] {
    return events.map((e) => ({ id: newId('orderEvent'), team_id: teamId, order_id: orderId, type: e.type, data: JSON.stringify(e.data ?? {}) }));
  }

  /** Records timeline rows in the caller's transaction; other modules use it for their order changes. */
  async recordEvents(trx: Tx, teamId: string, orderId: string, events: OrderEvent[]): Promise<void> {
    await repo.insertEvents(trx, this.events(teamId, orderId, events));
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
    },
  ): Promise<{ order: Row<'orders'>; changed: string[] }> {
    const changed: string[] = [];
    const patch: Parameters<typeof repo.updateOrder>[3] = {};
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
    if (body.products) {
      const drafts = await this.priceLines(trx, teamId, order.campaign_id, body.products);
      Object.assign(patch, await this.setLines(trx, teamId, order.id, drafts));
      changed.push('products');
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
      const customer = await this.customers.upsertByEmail(trx, teamId, {
        email: body.customer!.email!,
        first_name: body.customer?.first_name,
        last_name: body.customer?.last_name,
        phone: body.phone,
      });
      const orderId = newId('order');
      const inserted = await repo.insertLeadIfAbsent(trx, {
        id: orderId,
        team_id: teamId,
        campaign_id: campaign.id,
        customer_id: customer.id,
        status: 'lead',
        currency: campaign.currency,
        phone: body.phone ?? null,
        shipping_address: body.shipping_address ? JSON.stringify(body.shipping_address) : null,
        is_throttle: body.is_throttle === true,
      });
      if (!inserted) {
        const existing = await repo.findOpenLead(trx, teamId, campaign.id, customer.id);
        if (!existing) throw new ApiError('conflict', 'The lead changed while it was being updated; retry.');
        return { created: false, order: await this.updateLead(trx, teamId, existing, body) };
      }
      let order = inserted;
      if (drafts.length > 0) order = await repo.updateOrder(trx, teamId, orderId, await this.setLines(trx, teamId, orderId, drafts));
      await this.recordEvents(trx, teamId, orderId, [
        { type: 'lead.created', data: { customer_number: customer.id, campaign_id: campaign.id, is_throttled: order.is_throttle } },
      ]);
      return { created: true, order: await this.view(trx, teamId, order) };
    });
  }

  private async updateLead(trx: Tx, teamId: string, order: Row<'orders'>, body: CreateLeadBody): Promise<OrderView> {
    const { order: updated, changed } = await this.applyUpdates(trx, teamId, order, body);
    await this.recordEvents(trx, teamId, order.id, [{ type: 'lead.updated', data: { changed } }]);
    return this.view(trx, teamId, updated);
  }

  /** Create Order: an order and its first payment in one call, for funnels that made no lead. */
  async createOrder(teamId: string, body: CreateOrderBody): Promise<PaymentResult> {
    const { order, request } = await this.store.transaction(async (trx) => {
      const campaign = await this.catalog.findCampaign(trx, teamId, body.campaign_id);
      if (!campaign) throw notFound('Campaign');
      if (body.currency !== campaign.currency) throw invalid('currency', `must be the campaign's currency, ${campaign.currency}`);
      const drafts = await this.priceLines(trx, teamId, campaign.id, body.products);
      const route = { gatewayId: body.gateway_id, paymentOrchestratorId: body.payment_orchestrator_id, campaign };
      await this.payments.preflight(trx, teamId, body.payment, route);
      const customer = await this.customers.upsertByEmail(trx, teamId, { ...body.customer, phone: body.phone });
      const orderId = newId('order');
      await repo.insertOrder(trx, {
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
      });
      const order = await repo.updateOrder(trx, teamId, orderId, await this.setLines(trx, teamId, orderId, drafts));
      await this.recordEvents(trx, teamId, orderId, [{ type: 'order.created', data: { customer_number: customer.id, total: order.total } }]);
      return { order, request: this.chargeRequest(teamId, order, body.payment, route) };
    });
    return this.pay(teamId, order, request);
  }

  /** Process Payment: pays a lead (or a declined order) created earlier. */
  async processPayment(teamId: string, body: ProcessPaymentBody): Promise<PaymentResult> {
    const { order, request } = await this.store.transaction(async (trx) => {
      const locked = await repo.findOrder(trx, teamId, body.order_number, { forUpdate: true });
      if (!locked) throw notFound('Order');
      if (!PAYABLE.includes(locked.status as OrderStatus)) {
        throw new ApiError('order_not_payable', `Order ${locked.id} is ${locked.status} and cannot be paid again.`);
      }
      if (body.campaign_id && body.campaign_id !== locked.campaign_id) throw invalid('campaign_id', 'does not match the order');
      if (body.currency && body.currency !== locked.currency) throw invalid('currency', `must be the order's currency, ${locked.currency}`);
      const campaign = await this.catalog.findCampaign(trx, teamId, locked.campaign_id);
      const route = { gatewayId: body.gateway_id, paymentOrchestratorId: body.payment_orchestrator_id, campaign: campaign! };
      await this.payments.preflight(trx, teamId, body.payment, route);
      const { order: updated, changed } = await this.applyUpdates(trx, teamId, locked, body);
      if ((await repo.linesOf(trx, teamId, [updated.id])).length === 0) {
        throw invalid('products', 'the order has no products; send products with the payment');
      }
      let order = updated;
      if (order.status !== 'pending') {
        assertOrderMove(order.status, 'pending');
        order = await repo.updateOrder(trx, teamId, order.id, { status: 'pending' });
      }
      await this.recordEvents(trx, teamId, order.id, [{ type: 'payment.requested', data: { changed, from_status: locked.status } }]);
      return { order, request: this.chargeRequest(teamId, order, body.payment, route) };
    });
    return this.pay(teamId, order, request);
  }

  private chargeRequest(teamId: string, order: Row<'orders'>, payment: PaymentInput, route: ChargeRequest['route']): ChargeRequest {
    return { teamId, orderId: order.id, amount: order.total, currency: order.currency, payment, route };
  }

  /** Charges outside any transaction, then records the outcome under the order's row lock. */
  private async pay(teamId: string, order: Row<'orders'>, request: ChargeRequest): Promise<PaymentResult> {
    const outcome = await this.payments.charge(request);
    return this.store.transaction(async (trx) => {
      const current = (await repo.findOrder(trx, teamId, order.id, { forUpdate: true }))!;
      const txn = await this.payments.recordAttempt(trx, request, outcome);
      const next = this.afterOutcome(outcome);
      assertOrderMove(current.status, next.status);
      const updated = await repo.updateOrder(trx, teamId, order.id, { status: next.status, payment_status: next.payment_status });
      await this.recordEvents(trx, teamId, order.id, [
        {
          type: `payment.${outcome.kind}`,
          data: { transaction: transactionView(txn), from_status: current.status, to_status: next.status },
        },
      ]);
      const view = await this.view(trx, teamId, updated);
      return this.paymentResult(outcome, view, txn.id);
    });
  }

  private afterOutcome(outcome: ChargeOutcome): { status: OrderStatus; payment_status: string } {
    switch (outcome.kind) {
      case 'approved':
        return { status: 'processing', payment_status: 'completed' };
      case 'declined':
        return { status: 'declined', payment_status: 'declined' };
      case 'pending':
        return { status: 'pending_external_confirmation', payment_status: 'pending_external_confirmation' };
      case 'redirect':
        return { status: 'pending', payment_status: 'pending_redirect' };
    }
  }

  private paymentResult(outcome: ChargeOutcome, view: OrderView, transactionId: string): PaymentResult {
    const data = { ...view, redirect_required: false, transaction_id: transactionId };
    switch (outcome.kind) {
      case 'approved':
        return { httpStatus: 200, success: true, message: 'Payment approved.', data };
      case 'declined':
        return {
          httpStatus: 402,
          success: false,
          message: `Payment declined: ${outcome.reason}`,
          data,
          error: { type: 'card_error', code: 'payment_declined', decline_code: outcome.code ?? null },
        };
      case 'pending':
        return { httpStatus: 202, success: true, message: 'Payment is awaiting external confirmation.', data };
      case 'redirect':
        return {
          httpStatus: 200,
          success: true,
          message: 'Customer redirect is required to complete the payment.',
          data: { ...data, redirect_required: true, redirect_url: outcome.url },
        };
    }
  }

  async get(teamId: string, orderNumber: string) {
    return this.store.run(async (db) => {
      const order = await repo.findOrder(db, teamId, orderNumber);
      if (!order) throw notFound('Order');
      const [view, events, transactions] = [
        await this.view(db, teamId, order),
        await repo.eventsOf(db, teamId, order.id),
        await this.payments.orderTransactions(db, teamId, order.id),
      ];
      return {
        ...view,
        transactions: transactions.map(transactionView),
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
        createdGte: q.created_gte,
        createdLte: q.created_lte,
      });
      const page = toPage(rows, q.limit);
      return { items: await this.views(db, teamId, page.items), has_more: page.has_more };
    });
  }
}
