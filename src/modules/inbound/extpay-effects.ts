import type { Tx } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import type { ExtpayDispute, ExtpayRefund, ExtpaySetupIntent } from '../../providers/extpay/types.ts';
import { disputeView, transactionView } from '../ledger/service.ts';
import { type OrderEvent } from '../orders/views.ts';
import { canMove, type OrderStatus } from '../orders/states.ts';
import { UseCase } from '../checkout/use-case.ts';

/** What the external checkout provider's refund, dispute and setup-intent events do to an order. */
export class ExtpayEffects extends UseCase {
  /**
   * One inbound event's effect on one order: under the order's row lock, after the event's
   * deduplication row (`guard`) in the same transaction; a seen event does nothing.
   */
  async onceUnderOrderLock(teamId: string, orderId: string, guard: (trx: Tx) => Promise<boolean>, effect: (trx: Tx, order: Row<'orders'>) => Promise<void>): Promise<'processed' | 'duplicate'> {
    const r = await this.store.transaction(async (trx) => {
      const order = (await this.orders.rows.findOrder(trx, teamId, orderId, { forUpdate: true }))!;
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
      const res = await this.ledger.external.settleExternalRefund(trx, teamId, sale, refund);
      if (res.change === 'unchanged' || !res.transaction) return;
      let updated = order;
      if (res.delta !== 0) {
        const refundedTotal = Math.max(0, order.refunded_total + res.delta);
        const fully = refundedTotal >= order.total && order.total > 0;
        // A refund made at the provider may reach an order that cannot be `refunded` (cancelled): only the total moves then.
        const target: OrderStatus | undefined = fully && canMove(order.status as OrderStatus, 'refunded') ? 'refunded' : undefined;
        updated = await this.orders.move(trx, order, target ? { status: target } : {}, null, { refunded_total: refundedTotal });
      }
      if (res.delta > 0) await this.affiliates.recordActivity(trx, updated, 'refund', { transactionId: res.transaction.id, amount: res.transaction.amount, chargeId: sale.id });
      await this.orders.recordEvents(trx, teamId, order.id, [
        {
          type: `refund.${res.change}`,
          data: { transaction: res.transaction.id, charge: sale.id, refund_id: refund.id, amount: res.transaction.amount, requested_amount: res.transaction.requested_amount },
        },
      ]);
      if (res.change === 'recorded') {
        const view = await this.orders.view(trx, teamId, updated);
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
      const before = (await this.ledger.listOrderDisputes(trx, teamId, order.id)).find((x) => x.provider_ref === d.id);
      const rec = await this.ledger.external.recordExternalDispute(trx, teamId, sale, d);
      const reason = d.reason ?? 'no reason given';
      const qa = `Dispute ${d.id}: ${d.status.replace(/_/g, ' ')} (${reason})`;
      const updated = await this.orders.rows.updateOrder(trx, teamId, order.id, { needs_qa: true, qa_reason: qa });
      const events: OrderEvent[] = [];
      if (rec.opened || before?.status !== d.status) {
        await this.customers.addSystemNote(
          trx,
          teamId,
          order.customer_id,
          `${rec.opened ? 'Dispute opened' : 'Dispute updated'} on order ${order.id}: ${d.status.replace(/_/g, ' ')}, reason ${reason}, amount ${d.amount} ${sale.currency}.`,
          order.id,
        );
        events.push({
          type: rec.opened ? 'dispute.created' : 'dispute.updated',
          data: { dispute: rec.dispute.id, provider_ref: d.id, status: d.status, reason: d.reason, amount: d.amount, ...(rec.offTable ? { off_table: true } : {}) },
        });
      }
      if (rec.chargeback) await this.affiliates.recordActivity(trx, updated, 'chargeback', { transactionId: rec.chargeback.id, amount: rec.chargeback.amount, chargeId: sale.id });
      if (rec.chargeback) events.push({ type: 'chargeback.recorded', data: { transaction: rec.chargeback.id, charge: sale.id, amount: rec.chargeback.amount, dispute: rec.dispute.id } });
      if (events.length === 0) return;
      await this.orders.recordEvents(trx, teamId, order.id, events);
      const view = await this.orders.view(trx, teamId, updated);
      await this.events.emit(trx, teamId, 'order.disputed', { orderId: order.id, object: { ...view, dispute: disputeView(rec.dispute) } });
    });
  }

  /** setup_intent.succeeded (spec 6.1): the payment method the provider saved for the order's customer. */
  async saveExternalMethod(teamId: string, checkout: Row<'transactions'>, s: ExtpaySetupIntent, guard: (trx: Tx) => Promise<boolean>): Promise<'processed' | 'duplicate'> {
    return this.onceUnderOrderLock(teamId, checkout.order_id, guard, async (trx, order) => {
      const method = await this.ledger.external.saveExternalMethod(trx, teamId, order.customer_id, checkout, s, order.is_test);
      if (!order.payment_method_id && order.payment_status === 'completed') await this.orders.rows.updateOrder(trx, teamId, order.id, { payment_method_id: method.id });
      await this.orders.recordEvents(trx, teamId, order.id, [{ type: 'payment_method.saved', data: { payment_method: method.id, brand: method.brand, last4: method.last4 } }]);
    });
  }
}
