import type { ThreeDsGatewayAdapter, ThreeDsPaymentResult } from '../../providers/threeds/types.ts';
import type { ThreeDsGatewayPort, ThreeDsOutcome } from './outcomes.ts';

function normalise(r: ThreeDsPaymentResult): ThreeDsOutcome {
  switch (r.kind) {
    case 'approved':
      return { kind: 'approved', paymentId: r.paymentId, paymentMethod: r.paymentMethod ?? null };
    case 'declined':
      return { kind: 'declined', paymentId: r.paymentId, code: r.code, message: r.message };
    case 'redirect':
      return { kind: 'redirect', paymentId: r.paymentId, url: r.url };
    case 'pending':
      return { kind: 'pending', paymentId: r.paymentId };
    case 'error':
      return { kind: 'error', paymentId: null, code: r.code, message: r.message };
  }
}

/** The 3-D Secure adapter, seen through the port the payment core uses. */
export function threeDsPort(adapter: ThreeDsGatewayAdapter): ThreeDsGatewayPort {
  return {
    async createPayment(account, req) {
      return normalise(
        await adapter.createPayment(
          { ...account, descriptor: null },
          {
            amount: req.amount,
            currency: req.currency,
            attemptId: req.reference,
            ...(req.card ? { card: req.card } : {}),
            ...(req.paymentMethod ? { paymentMethod: req.paymentMethod } : {}),
            customer: req.customer,
            riskSessionId: req.riskSessionId ?? null,
            returnUrl: req.returnUrl ?? null,
            cancelUrl: req.cancelUrl ?? null,
            savePaymentMethod: req.savePaymentMethod,
            merchantInitiated: req.merchantInitiated && req.originalPaymentId ? { originalPaymentId: req.originalPaymentId } : null,
          },
        ),
      );
    },
    async retrievePayment(account, paymentId) {
      return normalise(await adapter.retrievePayment({ ...account, descriptor: null }, paymentId));
    },
    async refund(account, req) {
      const r = await adapter.refund({ ...account, descriptor: null }, { paymentId: req.paymentId, amount: req.amount, attemptId: req.reference });
      if (r.kind === 'refunded' || r.kind === 'refund_pending') return { ok: true, id: r.refundId, message: r.kind === 'refunded' ? 'Refunded' : 'Refund pending' };
      return { ok: false, id: r.kind === 'refund_failed' ? r.refundId : null, message: r.message };
    },
    async cancel(account, req) {
      const r = await adapter.cancel({ ...account, descriptor: null }, { paymentId: req.paymentId, attemptId: req.reference });
      return r.kind === 'canceled' ? { ok: true, id: r.paymentId, message: 'Canceled' } : { ok: false, id: null, message: r.message };
    },
  };
}
