import { newId } from '../../app/ids.ts';
import type { Tx } from '../../db/database.ts';
import type { ExtpayMembership, ExtpayPayment } from '../../providers/extpay/types.ts';
import { membershipState } from '../../providers/extpay/status.ts';
import { orderView } from '../orders/views.ts';
import { draftLine, totalsOf } from '../orders/pricing.ts';
import { UseCase } from '../checkout/use-case.ts';

/** Renewals the external provider bills: rebill orders, failed renewals, membership state. */
export class Renewals extends UseCase {
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
      if (subs.length === 0 || (await this.ledger.external.findExternalSale(trx, teamId, connectionId, p.id))) return 'ignored' as const;
      const parent = (await this.orders.rows.findOrder(trx, teamId, subs[0]!.order_id, { forUpdate: true }))!;
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
      const order = await this.orders.rows.insertOrder(trx, {
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
      const lines = await this.orders.rows.insertLines(
        trx,
        drafts.map((d) => ({ ...d, order_id: orderId })),
      );
      const sale = await this.ledger.external.recordRenewalSale(trx, teamId, orderId, connectionId, p, parent.is_test);
      const fulfillment = await this.fulfillments.createForOrder(trx, teamId, orderId, lines);
      if (membership) await this.subscriptions.mirrorMembership(trx, teamId, membership);
      await this.orders.recordEvents(trx, teamId, orderId, [
        { type: 'order.created', data: { rebill_of: parent.id, subscription_id: subs[0]!.id, total: order.total } },
        { type: 'payment.captured', data: { transaction: sale.id, payment_id: p.id } },
        { type: 'order.completed', data: { fulfillment_id: fulfillment?.id ?? null, subscriptions: [] } },
      ]);
      await this.orders.recordEvents(trx, teamId, parent.id, [{ type: 'subscription.renewed', data: { rebill_order: orderId, transaction: sale.id, payment_id: p.id } }]);
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
      await this.orders.recordEvents(trx, teamId, subs[0]!.order_id, [
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
        await this.orders.recordEvents(trx, teamId, sub.order_id, [{ type: 'subscription.synced', data: { subscription_id: sub.id, status: sub.status, membership: m.id } }]);
      }
      return 'processed' as const;
    });
    this.events.nudge();
    return r;
  }
}
