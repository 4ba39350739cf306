import type { Row } from '../../db/schema.ts';
import type { ChargeOutcome } from '../../providers/provider.ts';
import { paidExternally } from './finalize.ts';
import { UseCase } from './use-case.ts';
import type { Logger } from 'pino';
import { ATTEMPT_GRACE_MS, recoverUnknownAttempts, type RecoveryTally } from './recover.ts';

/** The stuck-payment watchdog and the recovery of attempts whose answer nobody recorded. */
export class ReconcileUseCase extends UseCase {
  /** Attempts whose provider answer was never recorded, older than `graceMs`: see recover.ts. */
  recoverUnknownAttempts(graceMs: number = ATTEMPT_GRACE_MS, log?: Logger): Promise<RecoveryTally> {
    return recoverUnknownAttempts({ store: this.store, payments: this.payments, ledger: this.ledger, uc: this.uc }, graceMs, log);
  }

  /** The recovery run found what the gateway did with a first-payment attempt whose answer was lost. */
  async recoverFirstPayment(attempt: Row<'transactions'>, outcome: Exclude<ChargeOutcome, { kind: 'unknown' }>): Promise<void> {
    const teamId = attempt.team_id;
    await this.store.transaction(async (trx) => {
      const current = (await this.orders.rows.findOrder(trx, teamId, attempt.order_id, { forUpdate: true }))!;
      const closed = await this.payments.closeAttempt(trx, teamId, current.customer_id, attempt, outcome);
      if (!closed) return;
      const [customer] = await this.customers.findMany(trx, teamId, [current.customer_id]);
      const lines = await this.orders.rows.linesOf(trx, teamId, [current.id]);
      await this.uc.card.settle(trx, current, customer!, lines, { kind: 'done', outcome, transactions: [closed.transaction], paymentMethod: closed.paymentMethod, isTest: attempt.is_test });
    });
    this.events.nudge();
  }

  /**
   * The stuck-payment watchdog: a redirected payment whose customer never came back, and whose
   * webhook never arrived, is re-checked with its gateway and settled through the same finalize
   * as Capture. Payments still waiting for the customer are left alone.
   */
  async reconcilePendingPayments(olderThanMs: number, limit = 50): Promise<{ checked: number; completed: number; declined: number; under_review: number }> {
    const stale = await this.ledger.listStalePending(new Date(Date.now() - olderThanMs), limit);
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
        const done = await this.uc.finalize.finalizeFirstPayment(txn.team_id, txn.order_id, txn.id, { approved: true, paymentMethod: r.vaultRef });
        if (!done.already) tally.completed++;
      } else if (r.kind === 'declined') {
        const done = await this.uc.finalize.finalizeFirstPayment(txn.team_id, txn.order_id, txn.id, { approved: false, code: r.code, message: r.text });
        if (!done.already) tally.declined++;
      } else if (r.kind === 'pending') {
        await this.uc.finalize.markUnderReview(txn.team_id, txn.order_id, txn.id);
        tally.under_review++;
      }
    }
    return tally;
  }

  /**
   * The watchdog for extpay: a checkout paid (or an upsell confirmed) at the provider whose
   * webhook never came is settled the way payment.succeeded would; a checkout nobody paid is left alone.
   */
  async reconcileExternal(txn: Row<'transactions'>): Promise<'completed' | 'declined' | 'under_review' | null> {
    const teamId = txn.team_id;
    const { result, belongs } = await this.payments.retrieveExternal(teamId, txn, txn.provider_ref ?? undefined);
    if (!result || result.kind === 'error' || (!belongs && !txn.upsell_id)) return null;
    if (txn.upsell_id) {
      if (result.kind === 'pending') return null;
      const outcome =
        result.kind === 'approved' ? { approved: true as const, paymentRef: result.paymentId } : { approved: false as const, paymentRef: result.paymentId, code: result.code, message: result.message };
      const done = await this.uc.upsell.settleExternalUpsell(teamId, txn, outcome, async () => true);
      return done ? (outcome.approved ? 'completed' : 'declined') : null;
    }
    if (result.kind === 'approved') {
      const membership = await this.payments.membershipOf(teamId, txn.connection_id!, result.payment.membershipId);
      const done = await this.uc.finalize.finalizeFirstPayment(teamId, txn.order_id, txn.id, paidExternally(result.payment), undefined, membership);
      return done.already ? null : 'completed';
    }
    if (result.kind === 'declined') {
      const done = await this.uc.finalize.finalizeFirstPayment(teamId, txn.order_id, txn.id, { approved: false, code: result.code, message: result.message, paymentRef: result.paymentId });
      return done.already ? null : 'declined';
    }
    await this.uc.finalize.markUnderReview(teamId, txn.order_id, txn.id, undefined, result.paymentId);
    return 'under_review';
  }
}
