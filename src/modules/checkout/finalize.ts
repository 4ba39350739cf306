import { ApiError, notFound } from '../../app/errors.ts';
import { readTogether, sendWithNext, type Tx } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import { type ExternalBilling, subscriptionView } from '../subscriptions/service.ts';
import type { ExtpayMembership } from '../../providers/extpay/types.ts';
import { membershipState } from '../../providers/extpay/status.ts';
import { type FirstPaymentOutcome } from '../payments/service.ts';
import { type OrderView } from '../orders/views.ts';
import { ORDER } from '../orders/states.ts';
import { UseCase } from './use-case.ts';
import { convertAffiliateOrder } from './affiliate-conversion.ts';


/**
 * The one finalize path: Capture, the providers' webhooks, the watchdog and the recovery run all
 * settle a first payment and complete an order here, under the order's row lock, exactly once.
 */
export class FinalizeUseCase extends UseCase {
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
      const order = (await this.orders.rows.findOrder(trx, teamId, orderId, { forUpdate: true }))!;
      if (guard && !(await guard(trx))) return { already: true, view: await this.orders.view(trx, teamId, order) };
      if (order.payment_status === 'completed') return { already: true, view: await this.orders.view(trx, teamId, order) };
      const settled = await this.ledger.settlePending(trx, teamId, txnId, order.customer_id, outcome);
      if (!settled) return { already: true, view: await this.orders.view(trx, teamId, order) };
      if (!outcome.approved) {
        const declined = await this.orders.move(trx, order, { status: 'declined', payment_status: 'declined' }, { type: 'payment.declined', data: { transactions: [txnId], from_status: order.status, to_status: 'declined' } });
        // What the attempt held goes back: its gateway volume and the coupon's use.
        await this.payments.first.releaseVolume(trx, settled.transaction);
        if (order.coupon_id) await this.catalog.releaseCoupon(trx, teamId, order.coupon_id, order.id);
        const view = await this.orders.view(trx, teamId, declined);
        await this.events.emit(trx, teamId, 'order.declined', { orderId: order.id, object: view });
        return { already: false, view };
      }
      const paid = await this.orders.move(
        trx,
        order,
        { status: 'processing', payment_status: 'completed' },
        { type: 'payment.captured', data: { transaction: txnId, from_status: order.status } },
        { payment_method_id: settled.paymentMethod?.id ?? null },
      );
      const t = settled.transaction;
      const converted = await convertAffiliateOrder({ affiliates: this.affiliates, orders: this.orders }, trx, paid, { transactionId: t.id, amount: t.amount });
      const external: ExternalBilling | undefined =
        t.connection_id && outcome.approved && outcome.external
          ? {
              connectionId: t.connection_id,
              membershipRef: membership?.id ?? outcome.external.membershipRef,
              status: membership ? membershipState(membership) : null,
              nextBillingAt: membership?.renewalPeriodEnd ? new Date(membership.renewalPeriodEnd) : null,
            }
          : undefined;
      const done = await this.finalizeCompletion(trx, teamId, converted, external);
      return { already: false, view: done.order };
    });
    if (!r.already) this.events.nudge();
    return r;
  }

  async markUnderReview(teamId: string, orderId: string, txnId: string, guard?: (trx: Tx) => Promise<boolean>, paymentRef?: string): Promise<OrderView> {
    return this.store.transaction(async (trx) => {
      const order = (await this.orders.rows.findOrder(trx, teamId, orderId, { forUpdate: true }))!;
      if (guard && !(await guard(trx))) return this.orders.view(trx, teamId, order);
      if (paymentRef) await this.ledger.notePaymentRef(trx, teamId, txnId, paymentRef);
      if (order.payment_status !== 'pending_redirect') return this.orders.view(trx, teamId, order);
      const updated = await this.orders.move(
        trx,
        order,
        { status: 'pending_external_confirmation', payment_status: 'pending_external_confirmation' },
        { type: 'payment.under_review', data: { transaction: txnId } },
      );
      return this.orders.view(trx, teamId, updated);
    });
  }

  /**
   * Complete Order: moves a paid order to completed exactly once and, in the same
   * transaction, creates its fulfillment, subscriptions and coupon redemption and queues the
   * order.completed event (order webhooks and the purchase e-mail). A second call changes
   * nothing and answers the same. A payment still pending_redirect completes nothing.
   */
  async completeOrder(teamId: string, orderNumber: string): Promise<{ order: OrderView; alreadyCompleted: boolean }> {
    const done = await this.store.transaction(async (trx) => {
      // The order under its lock, its lines and its customer in one round trip (the customer by the
      // order's id, read as locked).
      const [[order], lines, [customer]] = await readTogether(trx, [
        this.orders.rows.lockOrderQuery(trx, teamId, orderNumber),
        this.orders.rows.linesQuery(trx, teamId, [orderNumber]),
        this.customers.findOfQuery(trx, teamId, this.orders.rows.customerIdOfOrder, orderNumber),
      ] as const);
      if (!order) throw notFound('Order');
      return this.finalizeCompletion(trx, teamId, order, undefined, { lines, customer });
    });
    if (!done.alreadyCompleted) this.events.nudge();
    return done;
  }

  /** The one completion path, under the order's row lock; later payment confirmations call it too. */
  async finalizeCompletion(
    trx: Tx,
    teamId: string,
    order: Row<'orders'>,
    external?: ExternalBilling,
    /** The order's lines and customer, when the caller read them under the order's lock. */
    asLocked?: { lines: Row<'order_lines'>[]; customer: Row<'customers'> | undefined },
  ): Promise<{ order: OrderView; alreadyCompleted: boolean }> {
    if (order.status === 'completed') return { order: await this.orders.view(trx, teamId, order, asLocked?.lines, asLocked?.customer), alreadyCompleted: true };
    if (order.payment_status === 'pending_redirect') {
      throw new ApiError('order_not_completable', `Order ${order.id} is waiting for the customer's redirect (pending_redirect); capture the payment before completing it.`);
    }
    if (order.status !== 'processing') {
      throw new ApiError('order_not_completable', `Order ${order.id} is ${order.status}; only a paid order can be completed.`);
    }
    ORDER.assertMove(order.status, 'completed');
    const now = this.subscriptions.now();
    // What the completion creates first; the move to completed then writes its timeline row naming them, in one statement.
    // The customer (for the answer and the event), unless the caller read it with the lock, goes
    // with the next statement: the read of the lines, or the statement the writes below ride in.
    const customerRead = asLocked ? Promise.resolve([asLocked.customer]) : sendWithNext(trx, this.customers.findManyQuery(trx, teamId, [order.customer_id]));
    const lines = asLocked?.lines ?? (await this.orders.rows.linesOf(trx, teamId, [order.id]));
    // The first completion, under the lock: the fulfillment's insert rides with the move's statement.
    const fulfillmentId = await this.fulfillments.createForFirstCompletion(trx, teamId, order.id, lines);
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
    const updated = await this.orders.move(
      trx,
      order,
      { status: 'completed' },
      { type: 'order.completed', data: { fulfillment_id: fulfillmentId, subscriptions: subscriptions.map((x) => x.id), coupon_id: order.coupon_id } },
      { completed_at: now },
    );
    // Completion adds no line: the lines read above are the order's.
    const [customer] = await customerRead;
    const view = await this.orders.view(trx, teamId, updated, lines, customer);
    await this.events.emit(trx, teamId, 'order.completed', { orderId: order.id, object: view });
    for (const sub of subscriptions) {
      await this.events.emit(trx, teamId, 'subscription.created', { orderId: order.id, object: subscriptionView(sub) });
    }
    return { order: view, alreadyCompleted: false };
  }
}
