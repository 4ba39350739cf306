import type { Row } from '../../db/schema.ts';
import { EXTPAY_REFUND_STATES } from '../../providers/extpay/status.ts';
import type { ExtpayConnection, ExtpayPaymentOutcome, ExtpayProviderAdapter } from '../../providers/extpay/types.ts';
import type { ChargeOutcome, Found, ReversalOutcome } from '../../providers/provider.ts';
import { EXTPAY_REFUND_REQUESTED } from '../ledger/views.ts';

/** Transport failures after which the provider may have acted (charged, refunded): the outcome is unknown, not a refusal. */
export const EXTPAY_MAY_HAVE_ACTED: ReadonlySet<string> = new Set(['network_error', 'timeout', 'bad_response', 'provider_error']);

/** How far before an attempt's row the provider's object may be dated (clock skew between us and it). */
const SKEW_MS = 60_000;

function chargeOf(o: ExtpayPaymentOutcome): ChargeOutcome {
  if (o.kind === 'approved') return { kind: 'approved', providerRef: o.paymentId, authCode: null, code: 'paid', text: 'Paid at the external checkout provider', vaultRef: null };
  if (o.kind === 'pending') return { kind: 'pending', providerRef: o.paymentId, code: 'pending', text: 'Accepted by the provider; waiting for its confirmation' };
  return { kind: 'declined', providerRef: o.paymentId, code: o.code, text: o.message, retryable: false };
}

/**
 * What the external checkout provider did with one of our attempts whose answer was lost, asked
 * by our attempt id. A checkout whose answer was lost never reached the customer, so nobody can
 * have paid it: not found. An upsell charge is found by the attempt id it carries; a refund among
 * the sale's refunds since the attempt began; a void on the sale itself.
 */
export async function findExtpayAttempt(
  extpay: ExtpayProviderAdapter,
  conn: ExtpayConnection,
  t: Row<'transactions'>,
  ctx: { parent?: Row<'transactions'> | undefined; memberRef?: string | null },
): Promise<Found<ChargeOutcome | ReversalOutcome>> {
  const since = new Date(t.created_at.getTime() - SKEW_MS).toISOString();
  const unknown = (text: string) => ({ kind: 'unknown' as const, providerRef: null, code: 'lookup_failed', text });
  if (t.type === 'sale') {
    if (!t.upsell_id) return { kind: 'not_found' };
    const r = await extpay.findPaymentByAttempt(conn, { attemptId: t.id, memberId: ctx.memberRef ?? null, createdAfter: since });
    if (r.kind === 'not_found') return r;
    if (r.kind === 'found') return chargeOf(r.outcome.kind === 'error' ? { kind: 'pending', paymentId: r.payment.id, payment: r.payment } : r.outcome);
    return unknown(r.message);
  }
  const chargeRef = ctx.parent?.provider_ref;
  if (!chargeRef) return { kind: 'not_found' };
  if (t.type === 'void') {
    const r = await extpay.retrievePayment(conn, chargeRef);
    if (r.kind === 'error') return unknown(r.message);
    return r.payment.status === 'void' ? { kind: 'approved', providerRef: r.paymentId, code: 'voided', text: 'Voided at the provider' } : { kind: 'not_found' };
  }
  const r = await extpay.findRefundByAttempt(conn, { paymentId: chargeRef, createdAfter: since });
  if (r.kind === 'not_found') return r;
  if (r.kind === 'error') return unknown(r.message);
  if (EXTPAY_REFUND_STATES[r.refund.status] === 'failed') return { kind: 'declined', providerRef: r.refund.id, code: 'refund_failed', text: 'The provider could not complete the refund' };
  // As when the provider accepts a refund request: provisional until refund.created carries what settled.
  return { kind: 'approved', providerRef: r.refund.id, code: EXTPAY_REFUND_REQUESTED, text: 'Refund requested at the provider; the amount is provisional until it settles' };
}
