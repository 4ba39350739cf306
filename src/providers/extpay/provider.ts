import type { ChargeOutcome, PaymentProvider, ReversalOutcome } from '../provider.ts';
import { diagnoseExtpay } from './doctor.ts';
import { EXTPAY_REFUND_STATES } from './status.ts';
import type { ExtpayConnection, ExtpayError, ExtpayPaymentResult, ExtpayProviderAdapter } from './types.ts';

/** The response code of a refund the provider accepted and has not settled: its amount is provisional until refund.created. */
export const EXTPAY_REFUND_REQUESTED = 'refund_requested';

/** Transport failures after which the provider may have acted (charged, refunded): the outcome is unknown, not a refusal. */
export const EXTPAY_MAY_HAVE_ACTED: ReadonlySet<string> = new Set(['network_error', 'timeout', 'bad_response', 'provider_error']);

/** How far before an attempt's row the provider's object may be dated (clock skew between us and it). */
const SKEW_MS = 60_000;

function refused(e: ExtpayError): { kind: 'unknown' | 'declined'; providerRef: null; code: string; text: string } {
  return { kind: EXTPAY_MAY_HAVE_ACTED.has(e.code) ? 'unknown' : 'declined', providerRef: null, code: e.providerCode ?? e.code, text: e.message };
}

function chargeOutcome(r: ExtpayPaymentResult): ChargeOutcome {
  if (r.kind === 'error') {
    const f = refused(r);
    return f.kind === 'unknown' ? { ...f, kind: 'unknown' } : { ...f, kind: 'declined', retryable: false };
  }
  if (r.kind === 'approved') return { kind: 'approved', providerRef: r.paymentId, authCode: null, code: 'paid', text: 'Paid at the external checkout provider', vaultRef: null };
  if (r.kind === 'pending') return { kind: 'pending', providerRef: r.paymentId, code: 'pending', text: 'Accepted by the provider; waiting for its confirmation' };
  return { kind: 'declined', providerRef: r.paymentId, code: r.code, text: r.message, retryable: false };
}

/**
 * The external checkout provider (Whop) as a payment provider: merchant of record, it takes the
 * first payment on its own checkout (capability externalCheckout) and confirms payments by webhook;
 * charges on a saved payment method, refunds and voids go through it like any provider's. An
 * account is a connection. Lost answers are found again by our attempt id (payments) or among the
 * sale's refunds since the attempt began (Whop's refunds carry no id of ours).
 */
export function extpayProvider(adapter: ExtpayProviderAdapter): PaymentProvider<ExtpayConnection> {
  return {
    kind: 'extpay',
    capabilities: { syncCard: false, redirect: true, externalCheckout: true },
    async charge(conn, req) {
      if (!req.saved?.memberRef) return { kind: 'declined', providerRef: null, code: 'no_saved_payment_method', text: 'No saved payment method to charge.', retryable: false };
      const r = await adapter.chargeSavedPaymentMethod(conn, {
        memberId: req.saved.memberRef,
        paymentMethodId: req.saved.vaultRef,
        currency: req.currency,
        amount: req.amount,
        title: req.description ?? null,
        idempotencyKey: req.attemptId,
      });
      return chargeOutcome(r);
    },
    async retrieve(conn, providerRef) {
      return chargeOutcome(await adapter.retrievePayment(conn, providerRef));
    },
    async confirm(conn, payment) {
      // The customer's receipt, else the newest payment made against the checkout's plan.
      let r: ExtpayPaymentResult | null;
      if (payment.receipt) {
        r = await adapter.retrievePayment(conn, payment.receipt);
      } else {
        const list = await adapter.listPayments(conn, { planIds: payment.planRef ? [payment.planRef] : [] });
        if (list.kind === 'error') return { kind: 'unknown', text: list.message };
        const newest = list.payments[0];
        r = newest ? await adapter.retrievePayment(conn, newest.id) : null;
      }
      if (!r || (r.kind === 'error' && r.code === 'not_found')) return { kind: 'not_found' };
      if (r.kind === 'error') return { kind: 'unknown', text: r.message };
      const p = r.payment;
      if (p.planId !== payment.planRef && p.metadata.order_number !== payment.orderId) return { kind: 'foreign' };
      if (r.kind === 'approved') {
        return { kind: 'approved', providerRef: p.id, vaultRef: null, payer: { memberRef: p.memberId, membershipRef: p.membershipId, cardBrand: p.cardBrand, cardLast4: p.cardLast4 } };
      }
      if (r.kind === 'pending') return { kind: 'pending', providerRef: r.paymentId };
      return { kind: 'declined', providerRef: r.paymentId, code: r.code, text: r.message };
    },
    async findCharge(conn, attempt) {
      const since = new Date(attempt.createdAt.getTime() - SKEW_MS).toISOString();
      const r = await adapter.findPaymentByAttempt(conn, { attemptId: attempt.id, memberId: attempt.memberRef ?? null, createdAfter: since });
      if (r.kind === 'not_found') return r;
      if (r.kind === 'found') return r.outcome.kind === 'error' ? { kind: 'pending', providerRef: r.payment.id, code: 'pending', text: 'Found at the provider' } : chargeOutcome(r.outcome);
      return { kind: 'unknown', providerRef: null, code: 'lookup_failed', text: r.message };
    },
    async refund(conn, req) {
      const r = await adapter.refundPayment(conn, { paymentId: req.chargeRef, ...(req.full ? {} : { amount: req.amount }), idempotencyKey: req.attemptId });
      // No refund id yet: refund.created names it, and settles the provisional row.
      if (r.kind === 'refund_requested') return { kind: 'approved', providerRef: null, code: EXTPAY_REFUND_REQUESTED, text: 'Refund requested at the provider; the amount is provisional until it settles' };
      return refused(r);
    },
    async void(conn, req) {
      const r = await adapter.voidPayment(conn, { paymentId: req.chargeRef, idempotencyKey: req.attemptId });
      if (r.kind === 'voided') return { kind: 'approved', providerRef: r.paymentId, code: 'voided', text: 'Voided at the provider' };
      return refused(r);
    },
    async findReversal(conn, req): Promise<ReversalOutcome | { kind: 'not_found' }> {
      if (req.type === 'void') {
        const r = await adapter.retrievePayment(conn, req.chargeRef);
        if (r.kind === 'error') return { kind: 'unknown', providerRef: null, code: 'lookup_failed', text: r.message };
        return r.payment.status === 'void' ? { kind: 'approved', providerRef: r.paymentId, code: 'voided', text: 'Voided at the provider' } : { kind: 'not_found' };
      }
      const r = await adapter.findRefundByAttempt(conn, { paymentId: req.chargeRef, createdAfter: new Date(req.since.getTime() - SKEW_MS).toISOString() });
      if (r.kind === 'not_found') return r;
      if (r.kind === 'error') return { kind: 'unknown', providerRef: null, code: 'lookup_failed', text: r.message };
      if (EXTPAY_REFUND_STATES[r.refund.status] === 'failed') return { kind: 'declined', providerRef: r.refund.id, code: 'refund_failed', text: 'The provider could not complete the refund' };
      // As when the provider accepts a refund request: provisional until refund.created carries what settled.
      return { kind: 'approved', providerRef: r.refund.id, code: EXTPAY_REFUND_REQUESTED, text: 'Refund requested at the provider; the amount is provisional until it settles' };
    },
    diagnose: (conn, ctx) => diagnoseExtpay(adapter, conn, ctx),
  };
}
