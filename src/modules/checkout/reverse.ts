import { ApiError, notFound } from '../../app/errors.ts';
import type { Row } from '../../db/schema.ts';
import { transactionView } from '../ledger/service.ts';
import type { ReversalOutcome } from '../../providers/provider.ts';
import type { RefundBody, VoidBody } from '../orders/schemas.ts';
import type { OrderStatus } from '../orders/states.ts';
import { UseCase } from './use-case.ts';

/** Refunds and voids, in atomic phases: the reversal row is committed in flight before the provider hears of it. */
export class ReverseUseCase extends UseCase {
  /** Refunds all or part of an approved charge through its gateway; never more than was captured. */
  async refund(teamId: string, orderNumber: string, body: RefundBody) {
    return this.reverse(teamId, orderNumber, 'refund', { transactionId: body.transaction_id, amount: body.amount }, body.reason);
  }

  /** Voids an approved charge that has no refunds (before settlement). */
  async void(teamId: string, orderNumber: string, body: VoidBody) {
    return this.reverse(teamId, orderNumber, 'void', { transactionId: body.transaction_id }, body.reason);
  }

  async reverse(teamId: string, orderNumber: string, kind: 'refund' | 'void', target: { transactionId?: string | undefined; amount?: number | undefined }, reason?: string) {
    const { sale, reversal } = await this.store.transaction(async (trx) => {
      const order = await this.orders.rows.findOrder(trx, teamId, orderNumber, { forUpdate: true });
      if (!order) throw notFound('Order');
      return this.ledger.beginReversal(trx, teamId, order.id, kind, target);
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
      const order = (await this.orders.rows.findOrder(trx, teamId, reversal.order_id, { forUpdate: true }))!;
      const { row: done, settledMeanwhile } = await this.ledger.finishReversal(trx, teamId, reversal, result);
      const approved = done.status === 'approved';
      let updated = order;
      if (settledMeanwhile) {
        // The provider's refund event settled it first (and moved the totals): nothing more to count.
      } else if (approved && sale.status === 'pending') {
        // A held extpay payment voided before it settled: no money moved. The first payment's void
        // cancels the order; a held upsell's void only ends that charge (its line was never added).
        await this.ledger.external.settleExternalSale(trx, teamId, sale.id, { status: 'declined', paymentRef: sale.provider_ref, code: 'voided', message: 'Voided before the provider settled it' });
        if (!sale.upsell_id) updated = await this.orders.move(trx, order, { status: 'cancelled', payment_status: 'voided' }, null);
      } else if (approved) {
        const refundedTotal = order.refunded_total + done.amount;
        const fully = refundedTotal >= order.total;
        const target: OrderStatus | undefined = fully ? (kind === 'void' ? 'cancelled' : 'refunded') : undefined;
        updated = await this.orders.move(trx, order, target ? { status: target } : {}, null, { refunded_total: refundedTotal });
        await this.affiliates.recordActivity(trx, updated, kind, { transactionId: done.id, amount: done.amount, chargeId: sale.id });
      }
      await this.orders.recordEvents(trx, teamId, order.id, [
        { type: approved ? `${kind}.created` : `${kind}.failed`, data: { transaction: done.id, charge: sale.id, amount: done.amount, reason: reason ?? null } },
      ]);
      const view = await this.orders.view(trx, teamId, updated);
      if (approved) {
        await this.events.emit(trx, teamId, kind === 'refund' ? 'refund.created' : 'charge.voided', {
          orderId: order.id,
          object: { ...transactionView(done), reason: reason ?? null, order: view },
        });
      }
      return { approved, transaction: transactionView(done), order: view };
    }, { outcome: true });
    this.events.nudge();
    return reversed;
  }
}
