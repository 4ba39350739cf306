import { diagnoseThreeDs } from './doctor.ts';
import type { GatewayAccount } from '../card-gateway.ts';
import type { CardProvider, ChargeOutcome, ReversalOutcome } from '../provider.ts';
import type { ThreeDsGatewayAdapter, ThreeDsPaymentResult, ThreeDsRefundResult } from './types.ts';

/** Transport trouble: the gateway may have taken the payment, so the outcome is unknown. */
const UNKNOWN = new Set(['network_error', 'timeout', 'bad_response', 'gateway_error', 'in_progress']);

export function threeDsChargeOutcome(r: ThreeDsPaymentResult): ChargeOutcome {
  switch (r.kind) {
    case 'approved':
      return { kind: 'approved', providerRef: r.paymentId, authCode: null, code: 'succeeded', text: 'Approved', vaultRef: r.paymentMethod ?? null };
    case 'declined':
      // A 3-D Secure decline is the issuer's or the authentication's answer: it never cascades.
      return { kind: 'declined', providerRef: r.paymentId, code: r.code, text: r.message, retryable: false, hard: r.hard };
    case 'redirect':
      return { kind: 'redirect', providerRef: r.paymentId, url: r.url, code: 'requires_action', text: 'Customer authentication (3-D Secure) required' };
    case 'pending':
      return { kind: 'pending', providerRef: r.paymentId, code: 'processing', text: 'Under review' };
    case 'error':
      if (UNKNOWN.has(r.code)) return { kind: 'unknown', providerRef: null, code: r.code, text: r.message };
      // The gateway refused the request itself (4xx): nothing was charged; another gateway may take the card.
      return { kind: 'declined', providerRef: null, code: r.gatewayCode ?? r.code, text: r.message, retryable: true };
  }
}

function refundOutcome(r: ThreeDsRefundResult): ReversalOutcome {
  if (r.kind === 'refunded' || r.kind === 'refund_pending') return { kind: 'approved', providerRef: r.refundId, code: 'succeeded', text: r.kind === 'refunded' ? 'Refunded' : 'Refund pending' };
  if (r.kind === 'refund_failed') return { kind: 'declined', providerRef: r.refundId, code: 'refused', text: r.message };
  if (UNKNOWN.has(r.code)) return { kind: 'unknown', providerRef: null, code: r.code, text: r.message };
  return { kind: 'declined', providerRef: null, code: 'refused', text: r.message };
}

/**
 * The card gateway that demands 3-D Secure: a customer-present charge may answer with a redirect
 * to its hosted page; merchant-initiated charges on a saved card name the authenticated payment
 * and never redirect. Lost answers are found again by our reference.
 */
export function threeDsProvider(adapter: ThreeDsGatewayAdapter): CardProvider {
  const acc = (a: GatewayAccount): GatewayAccount => ({ ...a, descriptor: null });
  return {
    kind: 'threeds',
    capabilities: { syncCard: true, redirect: true, externalCheckout: false },
    diagnose: (account, ctx) => diagnoseThreeDs(account, ctx),
    async charge(account, req) {
      const r = await adapter.createPayment(acc(account), {
        amount: req.amount,
        currency: req.currency,
        attemptId: req.attemptId,
        ...(req.card ? { card: req.card } : { paymentMethod: req.saved!.vaultRef }),
        customer: req.payer,
        riskSessionId: req.redirect?.riskSessionId ?? null,
        returnUrl: req.redirect?.returnUrl ?? null,
        cancelUrl: req.redirect?.cancelUrl ?? null,
        savePaymentMethod: req.saveCard,
        merchantInitiated: req.saved?.originalRef ? { originalPaymentId: req.saved.originalRef } : null,
      });
      return threeDsChargeOutcome(r);
    },
    async verify(account, req) {
      // A zero-amount setup: customer-initiated like a first payment (3-D Secure, its redirect), saving the card.
      const r = await adapter.createPayment(acc(account), {
        amount: 0,
        currency: req.currency,
        attemptId: req.attemptId,
        card: req.card,
        customer: req.payer,
        riskSessionId: req.redirect?.riskSessionId ?? null,
        returnUrl: req.redirect?.returnUrl ?? null,
        cancelUrl: req.redirect?.cancelUrl ?? null,
        savePaymentMethod: true,
        merchantInitiated: null,
      });
      return threeDsChargeOutcome(r);
    },
    async retrieve(account, providerRef) {
      return threeDsChargeOutcome(await adapter.retrievePayment(acc(account), providerRef));
    },
    async confirm(account, payment) {
      if (payment.receipt && payment.receipt !== payment.providerRef) return { kind: 'foreign' };
      if (!payment.providerRef) return { kind: 'not_found' };
      const r = threeDsChargeOutcome(await adapter.retrievePayment(acc(account), payment.providerRef));
      switch (r.kind) {
        case 'approved':
          return { kind: 'approved', providerRef: r.providerRef, vaultRef: r.vaultRef, payer: null };
        case 'pending':
          return { kind: 'pending', providerRef: r.providerRef };
        case 'redirect':
          return { kind: 'redirect' };
        case 'declined':
          return { kind: 'declined', providerRef: r.providerRef, code: r.code, text: r.text };
        case 'unknown':
          return { kind: 'unknown', text: r.text };
      }
    },
    async findCharge(account, attempt) {
      const attemptId = attempt.id;
      const r = await adapter.findPaymentByReference(acc(account), attemptId);
      if (r.kind === 'not_found') return r;
      return threeDsChargeOutcome(r);
    },
    async refund(account, req) {
      return refundOutcome(await adapter.refund(acc(account), { paymentId: req.chargeRef, amount: req.amount, attemptId: req.attemptId }));
    },
    async void(account, req) {
      const r = await adapter.cancel(acc(account), { paymentId: req.chargeRef, attemptId: req.attemptId });
      if (r.kind === 'canceled') return { kind: 'approved', providerRef: r.paymentId, code: 'succeeded', text: 'Canceled' };
      if (UNKNOWN.has(r.code)) return { kind: 'unknown', providerRef: null, code: r.code, text: r.message };
      return { kind: 'declined', providerRef: null, code: 'refused', text: r.message };
    },
    async findReversal(account, req) {
      if (req.type === 'void') {
        const r = await adapter.retrievePayment(acc(account), req.chargeRef);
        if (r.kind === 'error') return { kind: 'unknown', providerRef: null, code: r.code, text: r.message };
        return r.payment.status === 'canceled' ? { kind: 'approved', providerRef: r.paymentId, code: 'succeeded', text: 'Canceled' } : { kind: 'not_found' };
      }
      const r = await adapter.findRefundByReference(acc(account), req.attemptId);
      if (r.kind === 'not_found') return r;
      return refundOutcome(r);
    },
  };
}
