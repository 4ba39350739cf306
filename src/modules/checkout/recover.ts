import type { Logger } from 'pino';
import type { Store } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import type { ChargeOutcome, ReversalOutcome } from '../../providers/provider.ts';
import type { PaymentsService } from '../payments/service.ts';
import type { LedgerService } from '../ledger/service.ts';
import type { UseCases } from './use-case.ts';
import { FIRST_PAYMENT } from '../payments/first-payment.ts';
import { REBILL_STEP } from './rebill.ts';
import { NOT_RECEIVED } from '../payments/attempts.ts';

/** How long an attempt may stay unanswered before the provider is asked: longer than any provider call's timeout. */
export const ATTEMPT_GRACE_MS = 2 * 60_000;

export interface RecoveryTally {
  checked: number;
  approved: number;
  declined: number;
  not_found: number;
  /** Found held at the provider (pending): its webhook or the watchdog settles it. */
  pending: number;
  unresolved: number;
}

const NOT_RECEIVED_ANSWER = { code: NOT_RECEIVED, text: 'The provider has no record of this attempt: nothing was charged.' } as const;

/**
 * The recovery run for attempts whose answer nobody recorded (the process died between the
 * provider call and phase 3, or the provider did not answer). Each is asked of its provider by our
 * attempt id and finalized through the same phase 3 as the request's own; one the provider never
 * saw is failed and releases its step. One the provider cannot be asked about now stays in flight
 * (and keeps blocking a second charge) until the next run: a claim never expires into a new charge.
 */
export async function recoverUnknownAttempts(
  deps: { store: Store; payments: PaymentsService; ledger: LedgerService; uc: UseCases },
  graceMs: number = ATTEMPT_GRACE_MS,
  log?: Logger,
  limit = 200,
): Promise<RecoveryTally> {
  const tally: RecoveryTally = { checked: 0, approved: 0, declined: 0, not_found: 0, pending: 0, unresolved: 0 };
  const stale = await deps.ledger.listInFlight(new Date(Date.now() - graceMs), limit);
  for (const t of stale) {
    tally.checked++;
    try {
      const parent = t.parent_id ? await deps.store.run((db) => deps.ledger.findTransactionRow(db, t.team_id, t.parent_id!)) : undefined;
      const found = await deps.payments.findAttemptOutcome(t, parent);
      if (found.kind === 'unknown') {
        tally.unresolved++;
        continue;
      }
      if (found.kind === 'not_found') tally.not_found++;
      else if (found.kind === 'approved') tally.approved++;
      else if (found.kind === 'declined') tally.declined++;
      else tally.pending++;
      await apply(deps, t, parent, found);
    } catch (err) {
      tally.unresolved++;
      log?.error({ err, transaction_id: t.id }, 'recovery of an unanswered attempt failed');
    }
  }
  return tally;
}

async function apply(
  deps: { store: Store; ledger: LedgerService; uc: UseCases },
  t: Row<'transactions'>,
  parent: Row<'transactions'> | undefined,
  found: Exclude<ChargeOutcome | ReversalOutcome, { kind: 'unknown' }> | { kind: 'not_found' },
): Promise<void> {
  if (t.type === 'refund' || t.type === 'void') {
    const outcome: Exclude<ReversalOutcome, { kind: 'unknown' }> =
      found.kind === 'approved' ? found : found.kind === 'not_found' ? { kind: 'declined', providerRef: null, ...NOT_RECEIVED_ANSWER } : { kind: 'declined', providerRef: 'providerRef' in found ? found.providerRef : null, code: 'code' in found ? found.code : 'declined', text: 'text' in found ? found.text : 'Declined' };
    await deps.uc.reverse.settleReversal(t.team_id, parent!, t, outcome);
    return;
  }
  const outcome: Exclude<ChargeOutcome, { kind: 'unknown' }> = found.kind === 'not_found' ? { kind: 'declined', providerRef: null, retryable: false, ...NOT_RECEIVED_ANSWER } : (found as Exclude<ChargeOutcome, { kind: 'unknown' }>);
  if (t.step === REBILL_STEP) await deps.uc.rebill.recoverRebill(t, outcome);
  else if (t.upsell_id) await deps.uc.upsellSettlement.recoverUpsell(t, outcome);
  else if (t.type === 'verification' && t.step !== FIRST_PAYMENT) await recordCardCheck(deps, t, outcome);
  else await deps.uc.reconcile.recoverFirstPayment(t, outcome);
}

/**
 * A subscription's card replacement (subscriptions/payment-method.ts) whose answer was lost: the
 * gateway's answer is recorded and the attempt released. The subscription keeps its card — the
 * merchant was told the outcome is unknown and sends the new card again (a new verification).
 */
async function recordCardCheck(deps: { store: Store; ledger: LedgerService }, t: Row<'transactions'>, outcome: Exclude<ChargeOutcome, { kind: 'unknown' }>): Promise<void> {
  const status = outcome.kind === 'approved' ? 'approved' : 'declined';
  const code = outcome.kind === 'approved' || outcome.kind === 'declined' ? outcome.code : 'authentication_required';
  const text = outcome.kind === 'approved' ? `${outcome.text} (recorded by the recovery run; the subscription kept its card)` : outcome.text;
  await deps.store.transaction((trx) => deps.ledger.rows.closeAttempt(trx, t.team_id, t, { status, provider_ref: outcome.providerRef, response_code: code, response_text: text }), { outcome: true });
}
