import { ApiError, invalid } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import { type Executor, type Store, type Tx } from '../../db/database.ts';
import { isGuardRefusal } from '../../db/helpers.ts';
import type { Page } from '../../db/pagination.ts';
import type { Address, NewRow, Row, RowPatch } from '../../db/schema.ts';
import type { AffiliateBlock, AffiliateScope, AffiliatesService } from '../affiliates/service.ts';
import type { CatalogService } from '../catalog/service.ts';
import { type CustomersService, normalizeEmail } from '../customers/service.ts';
import type { LedgerService } from '../ledger/service.ts';
import * as repo from './repo.ts';
import { createLead, type LeadDeps } from './leads.ts';
import { getOrder, type ListOrdersQuery, listOrders, type OrderReadDeps } from './reads.ts';
import { transition } from '../../app/state-machine.ts';
import { orderPaymentState } from '../payments/states.ts';
import { ORDER, ORDER_PAYMENT, ORDER_UPSELL, type OrderStatus, type OrderUpsellStatus, type PaymentStatus } from './states.ts';
import { type LineViewSource, type OrderEvent, orderView, type OrderView } from './views.ts';
import type { CreateLeadBody } from './schemas.ts';

export { lineView, type OrderEvent, orderView, type OrderView, type PaymentResult, type CaptureResult } from './views.ts';
export type { ListOrdersQuery } from './reads.ts';


import { discountOf, draftLine, type LineDraft, sameAddress, totalsOf } from './pricing.ts';

const ORDER_ROWS = {
  findOrder: repo.findOrder,
  lockOrderWithNext: repo.lockOrderWithNext,
  lockOrderQuery: repo.lockOrderQuery,
  customerIdOfOrder: repo.customerIdOfOrder,
  paymentMethodIdOfOrder: repo.paymentMethodIdOfOrder,
  updateOrder: repo.updateOrder,
  insertOrder: repo.insertOrder,
  insertLines: repo.insertLines,
  linesOf: repo.linesOf,
  linesQuery: repo.linesQuery,
  findOrderUpsell: repo.findOrderUpsell,
  orderUpsellQuery: repo.orderUpsellQuery,
  insertOrderUpsell: repo.insertOrderUpsell,
  finishOrderUpsell: repo.finishOrderUpsell,
  deleteOrderUpsell: repo.deleteOrderUpsell,
  findOrderUpsellByTransaction: repo.findOrderUpsellByTransaction,
  releaseOrphanUpsellClaims: repo.releaseOrphanUpsellClaims,
  findRebillOrder: repo.findRebillOrder,
} as const;

export class OrdersService {
  constructor(
    private readonly store: Store,
    private readonly catalog: CatalogService,
    private readonly customers: CustomersService,
    private readonly ledger: LedgerService,
    private readonly affiliates: AffiliatesService,
  ) {
    this.leadDeps = {
      store,
      catalog,
      customers,
      affiliates,
      priceLines: (db, t, c, p) => this.priceLines(db, t, c, p),
      usableCoupon: (db, t, code, o) => this.usableCoupon(db, t, code, o),
      updateLead: async (trx, t, order, b) => {
        const { order: updated } = await this.applyUpdates(trx, t, order, b, {}, (changed) => ({ type: 'lead.updated', data: { changed } }));
        return this.view(trx, t, updated);
      },
    };
    this.readDeps = { store, customers, ledger, view: (db, t, o) => this.view(db, t, o), views: (db, t, o) => this.views(db, t, o) };
  }

  /** What Create Lead (leads.ts) and the reads (reads.ts) need of this service: built once, not per request. */
  private readonly leadDeps: LeadDeps;
  private readonly readDeps: OrderReadDeps;

  /** The affiliates module reads orders through these two (its OrderReader). */
  findOrder(db: Executor, teamId: string, id: string): Promise<Row<'orders'> | undefined> {
    return repo.findOrder(db, teamId, id);
  }

  countAttributedLeads(db: Executor, teamId: string, f: Parameters<typeof repo.countAttributedLeads>[2]) {
    return repo.countAttributedLeads(db, teamId, f);
  }

  /** The order's affiliate columns from a request's affiliate block (first touch wins unless the team says last touch). */
  attribution(db: Executor, teamId: string, current: Row<'orders'> | null, block: AffiliateBlock | undefined) {
    return this.affiliates.attribution(db, teamId, current, block);
  }

  /** The order rows the checkout use cases, inbound events and renewals may read and write (always under the order's row lock). */
  readonly rows = ORDER_ROWS;

  /** A coupon a client may apply to this order now; field errors name `coupon_code`. */
  async usableCoupon(db: Executor, teamId: string, code: string, order: { campaign_id: string; currency: string }): Promise<Row<'coupons'>> {
    const c = await this.catalog.findCouponByCode(db, teamId, code);
    if (!c) throw invalid('coupon_code', 'no such coupon');
    if (!c.is_active) throw invalid('coupon_code', 'this coupon is not active');
    if (c.expires_at && c.expires_at <= new Date()) throw invalid('coupon_code', 'this coupon has expired');
    if (c.campaign_id && c.campaign_id !== order.campaign_id) throw invalid('coupon_code', 'this coupon is not valid for this campaign');
    if (c.amount_off && c.currency !== order.currency) throw invalid('coupon_code', `this coupon is in ${c.currency}, the order in ${order.currency}`);
    if (c.max_redemptions !== null && c.times_redeemed >= c.max_redemptions) throw invalid('coupon_code', 'this coupon has been used up');
    return c;
  }

  async retotal(trx: Tx, teamId: string, orderId: string, couponId: string | null) {
    return (await this.linesAndTotals(trx, teamId, orderId, couponId)).totals;
  }

  /** The order's lines and the totals they make (with its coupon): one read of the lines for both. */
  async linesAndTotals(trx: Tx, teamId: string, orderId: string, couponId: string | null) {
    return this.totalsOf(trx, teamId, await repo.linesOf(trx, teamId, [orderId]), couponId);
  }

  /**
   * Adds a line to the order, then reads all its lines and the totals they make: the insert and the
   * read are sent together (one round trip on PostgreSQL; the read, after the insert on the same
   * connection, sees the new line).
   */
  async addLineAndTotals(trx: Tx, teamId: string, orderId: string, couponId: string | null, line: NewRow<'order_lines'>) {
    const { added, lines } = await repo.addLineReadingLines(trx, teamId, { ...line, order_id: orderId });
    return { added, ...(await this.totalsOf(trx, teamId, lines, couponId)) };
  }

  /**
   * addLineAndTotals in two halves, for a caller that adds the line before it knows it may keep it:
   * the line's insert (and the read of all the lines) goes with the transaction's next statement;
   * `totals` prices the lines it answers, `drop` takes the line back (see repo.addLineReadingLinesWithNext).
   */
  addLineWithNext(trx: Tx, teamId: string, orderId: string, line: NewRow<'order_lines'>) {
    const added = repo.addLineReadingLinesWithNext(trx, teamId, { ...line, order_id: orderId });
    return {
      totals: async (couponId: string | null) => {
        const now = await added;
        return { added: now.added, ...(await this.totalsOf(trx, teamId, now.lines, couponId)) };
      },
      drop: async () => {
        await added;
        await repo.dropLine(trx, teamId, line.id!);
      },
    };
  }

  /**
   * addLineAndTotals and updateWithEvents for a caller that holds the order and its lines as its
   * earlier phase read them under the order's lock (`held`, `lines`), in no round trip of their own:
   * the line's insert and the order's UPDATE go with the transaction's next statement or its COMMIT,
   * the totals priced from those lines, and the UPDATE checks the order is still as that phase left
   * it (HeldOrderOptions.unchangedSinceEarlierPhase: every change of an order's lines writes the
   * order's row too), failing the transaction with SQLSTATE CS409 otherwise. Not for an order with a
   * coupon (its discount is priced with the coupon's row, read by the ordinary way).
   */
  async addLineAtCommit(trx: Tx, held: Row<'orders'>, lines: readonly LineViewSource[], line: NewRow<'order_lines'>, events: OrderEvent[]) {
    if (held.coupon_id) throw new Error('addLineAtCommit: an order with a coupon is retotalled with its coupon (addLineAndTotals)');
    await repo.insertLineAtCommit(trx, line);
    const all = [...lines, line as LineViewSource];
    const updated = await repo.updateHeldOrder(trx, held, totalsOf(all), this.timelineRows(held.team_id, held.id, events), { unchangedSinceEarlierPhase: true });
    return { updated, lines: all };
  }

  private async totalsOf(trx: Tx, teamId: string, lines: Row<'order_lines'>[], couponId: string | null) {
    const coupon = couponId ? await this.catalog.findCoupon(trx, teamId, couponId) : undefined;
    return { lines, totals: totalsOf(lines, coupon ? discountOf(coupon, lines) : 0) };
  }

  /**
   * Prices the cart from the offers on our side: the client sends offer ids and quantities,
   * never prices. Every offer must be an active offer of the order's campaign.
   */
  async priceLines(db: Executor, teamId: string, campaignId: string, products: Array<{ offer_id: string; quantity: number }>): Promise<LineDraft[]> {
    const offers = new Map((await this.catalog.findOffers(db, teamId, products.map((p) => p.offer_id))).map((o) => [o.id, o]));
    return products.map((p, i) => {
      const offer = offers.get(p.offer_id);
      if (!offer || offer.campaign_id !== campaignId) throw invalid(`products.${i}.offer_id`, 'no such offer in this campaign');
      if (!offer.is_active) throw invalid(`products.${i}.offer_id`, 'this offer is not active');
      return draftLine(teamId, offer, p.quantity);
    });
  }

  async setLines(trx: Tx, teamId: string, orderId: string, drafts: LineDraft[], couponId: string | null) {
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

  /**
   * The one way an order's status or payment status changes: both moves checked against their
   * tables (ORDER, ORDER_PAYMENT), the row written with `patch`, and the timeline row recorded, in
   * the caller's transaction, which holds the order's row lock: `order` is the row as read under
   * that lock (or as a previous move or update answered it). The write goes with the transaction's
   * next statement or its COMMIT, and the answer is `order` with the change (repo.updateHeldOrder).
   * `opts.unchangedSinceEarlierPhase`: `order` is the row as the request's earlier transaction left
   * it, and the write checks it still is (repo.HeldOrderOptions).
   */
  async move(
    trx: Tx,
    order: Row<'orders'>,
    to: { status?: OrderStatus; payment_status?: PaymentStatus },
    event: OrderEvent | null,
    patch: repo.HeldOrderPatch = {},
    opts: repo.HeldOrderOptions = {},
  ): Promise<Row<'orders'>> {
    const moves = [
      ...(to.status ? [ORDER.move(order.status, to.status)] : []),
      ...(to.payment_status ? [ORDER_PAYMENT.move(orderPaymentState(order.payment_status), to.payment_status)] : []),
    ];
    // The timeline row is written by the row's own UPDATE (one statement), so transition() records none.
    const timeline = event ? this.timelineRows(order.team_id, order.id, [event]) : [];
    return transition(trx, moves, { write: (t) => repo.updateHeldOrder(t, order, { ...patch, ...to }, timeline, opts), event: null });
  }

  /**
   * Totals (or other columns) written with the timeline rows that explain them, in one statement,
   * on an order the caller's transaction holds under its row lock (as move()).
   */
  async updateWithEvents(trx: Tx, order: Row<'orders'>, patch: repo.HeldOrderPatch, events: OrderEvent[]): Promise<Row<'orders'>> {
    return repo.updateHeldOrder(trx, order, patch, this.timelineRows(order.team_id, order.id, events));
  }

  /** A new order's lines and its first timeline rows, in one statement (`withNext`: see repo.insertLinesWithEvents). */
  async insertLinesWithEvents(trx: Tx, teamId: string, orderId: string, lines: NewRow<'order_lines'>[], events: OrderEvent[], opts: { withNext?: boolean } = {}): Promise<Row<'order_lines'>[]> {
    return repo.insertLinesWithEvents(trx, lines, this.timelineRows(teamId, orderId, events), opts);
  }

  /**
   * An upsell claim's status change, checked against ORDER_UPSELL in the statement that writes it:
   * the row moves only from a status the table lets reach `to` (the claim is written under the
   * order's row lock, so no other writer races it); anything else is a conflict. The statement goes
   * with the transaction's next statement or its COMMIT (no round trip of its own): the conflict
   * then fails that statement or the COMMIT, and nothing of the transaction commits.
   */
  async moveUpsellClaim(trx: Tx, teamId: string, claimId: string, to: OrderUpsellStatus, patch: RowPatch<'order_upsells'> = {}): Promise<void> {
    const from = ORDER_UPSELL.states.filter((s) => ORDER_UPSELL.canMove(s, to));
    const message = `An upsell claim can only become ${to} from ${from.join(' or ')}.`;
    await repo.moveOrderUpsellWithNext(trx, teamId, claimId, from, { ...patch, status: to }, {
      message,
      mapError: (err) => (isGuardRefusal(err) ? new ApiError('conflict', message) : err),
    });
  }

  /** Records timeline rows in the caller's transaction; other modules use it for their order changes. */
  async recordEvents(trx: Tx, teamId: string, orderId: string, events: OrderEvent[]): Promise<void> {
    await repo.insertEvents(trx, this.timelineRows(teamId, orderId, events));
  }

  /** The API's view of an order; `lines` and the customer when the caller has just read them. */
  async view(db: Executor, teamId: string, order: Row<'orders'>, knownLines?: readonly LineViewSource[], knownCustomer?: Row<'customers'>): Promise<OrderView> {
    const customer = knownCustomer?.id === order.customer_id ? knownCustomer : (await this.customers.findMany(db, teamId, [order.customer_id]))[0];
    const lines = knownLines ?? (await repo.linesOf(db, teamId, [order.id]));
    return orderView(order, customer!, lines);
  }

  async views(db: Executor, teamId: string, orders: Row<'orders'>[]): Promise<OrderView[]> {
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

  /**
   * Applies the fields a lead or a payment may change on an existing order; returns what changed.
   * `order` is the row as this transaction read it under its lock (findOrder forUpdate, findOpenLead).
   */
  async applyUpdates(
    trx: Tx,
    teamId: string,
    order: Row<'orders'>,
    body: {
      customer?: { email?: string | undefined; first_name?: string | undefined; last_name?: string | undefined; ip_address?: string | undefined } | undefined;
      phone?: string | undefined;
      shipping_address?: Address | undefined;
      billing?: Address | undefined;
      products?: Array<{ offer_id: string; quantity: number }> | undefined;
      is_throttle?: boolean | undefined;
      coupon_code?: string | undefined;
      affiliate?: AffiliateBlock | undefined;
    },
    also: Parameters<typeof repo.updateOrder>[3] = {},
    /** The timeline row that records the update (written by the same statement), given what changed. */
    event?: (changed: string[]) => OrderEvent,
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
    if (body.customer?.ip_address !== undefined && body.customer.ip_address !== order.ip_address) {
      patch.ip_address = body.customer.ip_address;
      changed.push('customer.ip_address');
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
    const attributed = await this.affiliates.attribution(trx, teamId, order, body.affiliate);
    if (attributed.affiliate_id !== undefined) {
      Object.assign(patch, attributed);
      changed.push('affiliate');
    }
    const timeline = event ? this.timelineRows(teamId, order.id, [event(changed)]) : [];
    if (Object.keys(patch).length > 0) {
      // `order` was read under its lock in this transaction (every caller holds it): a patch of plain
      // values goes with the next statement, answered from that row (updateHeldOrder); an address
      // (a JSON column) is written and read back.
      if (repo.isHeldOrderPatch(patch)) return { order: await repo.updateHeldOrder(trx, order, patch, timeline), changed };
      return { order: await repo.updateOrderWithEvents(trx, teamId, order.id, patch, timeline), changed };
    }
    await repo.insertEvents(trx, timeline);
    return { order, changed };
  }

  /** Create Lead (leads.ts). */
  createLead(teamId: string, body: CreateLeadBody): Promise<{ created: boolean; order: OrderView }> {
    return createLead(this.leadDeps, teamId, body);
  }

  /** Get Order: the order with its lines, transactions, disputes and timeline (reads.ts). */
  get(teamId: string, orderNumber: string, scope: AffiliateScope = null) {
    return getOrder(this.readDeps, teamId, orderNumber, scope);
  }

  /** List Orders, filtered and searched, a page at a time (reads.ts). */
  list(teamId: string, q: ListOrdersQuery, scope: AffiliateScope = null): Promise<Page<OrderView>> {
    return listOrders(this.readDeps, teamId, q, scope);
  }

}
