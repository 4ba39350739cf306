import { ApiError, notFound } from '../../app/errors.ts';
import { type CaptureResult } from '../orders/views.ts';
import type { Confirmation } from '../../providers/provider.ts';
import { UseCase } from './use-case.ts';

/** Capture (spec 4.2): re-checks a redirected or external first payment with its provider and finalizes it. */
export class CaptureUseCase extends UseCase {
  /**
   * Capture: re-checks the pending first payment with its provider (the customer's receipt, for the
   * external checkout) and finalizes it the same way the provider's success webhook does. Safe to call again.
   */
  async capture(teamId: string, body: { order_number: string; payment_id?: string | undefined }): Promise<CaptureResult> {
    const { order, txn } = await this.store.run(async (db) => {
      const found = await this.orders.rows.findOrder(db, teamId, body.order_number);
      if (!found) throw notFound('Order');
      const pending = await this.ledger.findCapturable(db, teamId, found.id);
      // The webhook (or another Capture) may settle the payment between the two reads: read the
      // order again, so a payment settled meanwhile answers "already captured", not 404.
      return { order: pending ? found : ((await this.orders.rows.findOrder(db, teamId, found.id)) ?? found), txn: pending };
    });
    if (order.payment_status === 'completed') {
      const view = await this.store.run((db) => this.orders.view(db, teamId, order));
      return { outcome: 'captured', success: true, message: 'Payment already captured.', data: view };
    }
    if (!txn) {
      // The gateway's PAYMENT_FAILED may have declined the redirected payment before the customer came
      // back: the answer is the same 422 as when the customer returns first (spec 4.2), whichever won.
      if (order.payment_status === 'declined' && (await this.payments.lastFirstPaymentWasRedirected(teamId, order.id))) {
        const view = await this.store.run((db) => this.orders.view(db, teamId, order));
        return { outcome: 'not_completed', success: false, message: 'The payment was not completed.', data: view, error: { type: 'card_error', code: 'payment_not_completed' } };
      }
      throw new ApiError('no_capturable_transaction');
    }
    const provider = await this.payments.providerOf(teamId, txn);
    const words = CAPTURE_WORDS[provider?.capabilities.externalCheckout || txn.connection_id ? 'external' : 'card'];
    const c: Confirmation = provider
      ? await provider.confirm({ orderId: order.id, providerRef: txn.provider_ref, planRef: txn.plan_ref, receipt: body.payment_id })
      : txn.connection_id
        ? { kind: 'not_found' }
        : { kind: 'unknown', text: 'the gateway of this payment no longer exists' };
    const view = () => this.store.run((db) => this.orders.view(db, teamId, order));
    const failed = async (message: string, data?: CaptureResult['data']): Promise<CaptureResult> => ({
      outcome: words.failure,
      success: false,
      message,
      data: data ?? (await view()),
      error: { type: 'card_error', code: words.failure === 'capture_failed' ? 'capture_failed' : 'payment_not_completed' },
    });
    switch (c.kind) {
      case 'approved': {
        const external = c.payer ? { paymentRef: c.providerRef, ...c.payer } : undefined;
        const membership = c.payer?.membershipRef ? await this.payments.membershipOf(teamId, txn.connection_id!, c.payer.membershipRef) : undefined;
        const done = await this.uc.finalize.finalizeFirstPayment(teamId, order.id, txn.id, { approved: true, paymentMethod: c.vaultRef, ...(external ? { external } : {}) }, undefined, membership);
        return { outcome: 'captured', success: true, message: done.already ? 'Payment already captured.' : 'Payment captured.', data: done.view };
      }
      case 'declined': {
        const done = await this.uc.finalize.finalizeFirstPayment(teamId, order.id, txn.id, { approved: false, code: c.code, message: c.text, ...(c.providerRef ? { paymentRef: c.providerRef } : {}) });
        if (done.view.payment_status === 'completed') return { outcome: 'captured', success: true, message: 'Payment already captured.', data: done.view };
        return failed(words.declined(c.text), done.view);
      }
      case 'pending': {
        const data = await this.uc.finalize.markUnderReview(teamId, order.id, txn.id, undefined, c.providerRef ?? undefined);
        return { outcome: 'under_review', success: true, message: words.underReview, data };
      }
      case 'redirect':
        return failed('The payment was not completed: the customer has not finished 3-D Secure.');
      case 'not_found':
        return failed(`Payment capture failed: ${body.payment_id ? 'no such receipt.' : 'no payment has been made in the checkout yet.'}`);
      case 'foreign':
        if (words.failure === 'not_completed') throw new ApiError('capture_failed', 'Payment capture failed: the payment does not belong to this order.');
        return failed('Payment capture failed: the receipt does not belong to this order.');
      case 'unknown':
        throw new ApiError('gateway_unavailable', words.unreachable(c.text));
    }
  }
}

/**
 * Spec 4.2 gives Capture its answers per provider: a card gateway's failed authentication is "not
 * completed", the external provider's failed payment a "capture failed" with its reason.
 */
const CAPTURE_WORDS = {
  card: {
    failure: 'not_completed',
    declined: () => 'The payment was not completed.',
    underReview: 'The payment is under review; the order completes when the gateway confirms it.',
    unreachable: (why: string) => `The gateway could not be asked about the payment: ${why}`,
  },
  external: {
    failure: 'capture_failed',
    declined: (why: string) => `Payment capture failed: ${why}`,
    underReview: 'The provider has the payment but has not settled it yet; the order completes when it confirms.',
    unreachable: (why: string) => `The external checkout provider could not be asked: ${why}`,
  },
} as const satisfies Record<string, { failure: CaptureResult['outcome']; declined(why: string): string; underReview: string; unreachable(why: string): string }>;
