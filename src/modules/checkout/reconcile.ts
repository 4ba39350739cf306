import type { Row } from '../../db/schema.ts';
import type { ChargeOutcome } from '../../providers/provider.ts';
import { UseCase } from './use-case.ts';
import type { Logger } from 'pino';
import { ATTEMPT_GRACE_MS, recoverUnknownAttempts, type RecoveryTally } from './recover.ts';

/** The stuck-payment watchdog and the recovery of attempts whose answer nobody recorded. */
export class ReconcileUseCase extends UseCase {
  /** Attempts whose provider answer was never recorded, older than `graceMs`: see recover.ts. */
  async recoverUnknownAttempts(graceMs: number = ATTEMPT_GRACE_MS, log?: Logger): Promise<RecoveryTally & { released_claims: number }> {
    const tally = await recoverUnknownAttempts({ store: this.store, payments: this.payments, ledger: this.ledger, uc: this.uc }, graceMs, log);
    const released = await this.store.run((db) => this.orders.rows.releaseOrphanUpsellClaims(db, new Date(Date.now() - graceMs)));
    return { ...tally, released_claims: released };
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
   * The stuck-payment watchdog: a first payment left pending (a redirect whose customer never came
   * back, a held payment, an external checkout) whose webhook never arrived is asked of its provider
   * and settled through the same finalize as Capture; an external upsell the provider accepted is
   * settled as its webhook would. Payments still waiting for the customer are left alone.
   */
  async reconcilePendingPayments(olderThanMs: number, limit = 50): Promise<{ checked: number; completed: number; declined: number; under_review: number }> {
    const stale = await this.ledger.listStalePending(new Date(Date.now() - olderThanMs), limit);
    const tally = { checked: 0, completed: 0, declined: 0, under_review: 0 };
    for (const txn of stale) {
      tally.checked++;
      const r = txn.upsell_id ? await this.settleUpsell(txn) : await this.settleFirstPayment(txn);
      if (r) tally[r]++;
    }
    return tally;
  }

  private async settleFirstPayment(txn: Row<'transactions'>): Promise<'completed' | 'declined' | 'under_review' | null> {
    const provider = await this.payments.providerOf(txn.team_id, txn);
    if (!provider) return null;
    const c = await provider.confirm({ orderId: txn.order_id, providerRef: txn.provider_ref, planRef: txn.plan_ref, receipt: txn.provider_ref ?? undefined });
    if (c.kind === 'approved') {
      const external = c.payer ? { paymentRef: c.providerRef, ...c.payer } : undefined;
      const membership = c.payer?.membershipRef ? await this.payments.membershipOf(txn.team_id, txn.connection_id!, c.payer.membershipRef) : undefined;
      const done = await this.uc.finalize.finalizeFirstPayment(txn.team_id, txn.order_id, txn.id, { approved: true, paymentMethod: c.vaultRef, ...(external ? { external } : {}) }, undefined, membership);
      return done.already ? null : 'completed';
    }
    if (c.kind === 'declined') {
      const done = await this.uc.finalize.finalizeFirstPayment(txn.team_id, txn.order_id, txn.id, { approved: false, code: c.code, message: c.text, ...(c.providerRef ? { paymentRef: c.providerRef } : {}) });
      return done.already ? null : 'declined';
    }
    if (c.kind === 'pending') {
      await this.uc.finalize.markUnderReview(txn.team_id, txn.order_id, txn.id, undefined, c.providerRef ?? undefined);
      return 'under_review';
    }
    return null;
  }

  /** An upsell charge the provider accepted and has not confirmed (the external provider's): settled as its webhook would. */
  private async settleUpsell(txn: Row<'transactions'>): Promise<'completed' | 'declined' | null> {
    const provider = await this.payments.providerOf(txn.team_id, txn);
    if (!provider || !txn.provider_ref) return null;
    const r = await provider.retrieve(txn.provider_ref);
    if (r.kind !== 'approved' && r.kind !== 'declined') return null;
    const outcome =
      r.kind === 'approved' ? { approved: true as const, paymentRef: r.providerRef } : { approved: false as const, paymentRef: r.providerRef ?? txn.provider_ref, code: r.code, message: r.text };
    const done = await this.uc.upsellSettlement.confirmHeldUpsell(txn.team_id, txn, outcome, async () => true);
    return done ? (outcome.approved ? 'completed' : 'declined') : null;
  }
}
