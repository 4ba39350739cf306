import { ApiError, notFound } from '../../app/errors.ts';
import type { Row } from '../../db/schema.ts';
import { type CaptureResult } from '../orders/views.ts';
import { paidExternally } from './finalize.ts';
import { UseCase } from './use-case.ts';

/** Capture (spec 4.2): re-checks a redirected or external first payment with its provider and finalizes it. */
export class CaptureUseCase extends UseCase {
  /**
   * Capture (3-D Secure gateway): re-checks the pending first payment with the gateway and
   * finalizes it the same way the gateway's PAYMENT_SUCCEEDED webhook does. Safe to call again.
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
    if (txn.connection_id) return this.captureExternal(teamId, order, txn, body.payment_id);
    if (body.payment_id && body.payment_id !== txn.provider_ref) {
      throw new ApiError('capture_failed', 'Payment capture failed: the payment does not belong to this order.');
    }
    const r = await this.payments.retrieve(teamId, txn);
    switch (r.kind) {
      case 'approved': {
        const done = await this.uc.finalize.finalizeFirstPayment(teamId, order.id, txn.id, { approved: true, paymentMethod: r.vaultRef });
        return { outcome: 'captured', success: true, message: done.already ? 'Payment already captured.' : 'Payment captured.', data: done.view };
      }
      case 'declined': {
        const done = await this.uc.finalize.finalizeFirstPayment(teamId, order.id, txn.id, { approved: false, code: r.code, message: r.text });
        if (done.view.payment_status === 'completed') return { outcome: 'captured', success: true, message: 'Payment already captured.', data: done.view };
        return { outcome: 'not_completed', success: false, message: 'The payment was not completed.', data: done.view, error: { type: 'card_error', code: 'payment_not_completed' } };
      }
      case 'pending': {
        const view = await this.uc.finalize.markUnderReview(teamId, order.id, txn.id);
        return { outcome: 'under_review', success: true, message: 'The payment is under review; the order completes when the gateway confirms it.', data: view };
      }
      case 'redirect': {
        const view = await this.store.run((db) => this.orders.view(db, teamId, order));
        return { outcome: 'not_completed', success: false, message: 'The payment was not completed: the customer has not finished 3-D Secure.', data: view, error: { type: 'card_error', code: 'payment_not_completed' } };
      }
      case 'unknown':
        throw new ApiError('gateway_unavailable', `The gateway could not be asked about the payment: ${r.text}`);
    }
  }

  /** Capture for extpay (spec 4.2, provider table): confirms that exact receipt with the provider. */
  async captureExternal(teamId: string, order: Row<'orders'>, txn: Row<'transactions'>, receiptId: string | undefined): Promise<CaptureResult> {
    const { result, belongs } = await this.payments.retrieveExternal(teamId, txn, receiptId);
    if (result?.kind === 'error' && result.code !== 'not_found') throw new ApiError('gateway_unavailable', `The external checkout provider could not be asked: ${result.message}`);
    const failed = async (why: string): Promise<CaptureResult> => ({
      outcome: 'capture_failed',
      success: false,
      message: `Payment capture failed: ${why}`,
      data: await this.store.run((db) => this.orders.view(db, teamId, order)),
      error: { type: 'card_error', code: 'capture_failed' },
    });
    if (!result || result.kind === 'error') return failed(receiptId ? 'no such receipt.' : 'no payment has been made in the checkout yet.');
    if (!belongs) return failed('the receipt does not belong to this order.');
    if (result.kind === 'approved') {
      const membership = await this.payments.membershipOf(teamId, txn.connection_id!, result.payment.membershipId);
      const done = await this.uc.finalize.finalizeFirstPayment(teamId, order.id, txn.id, paidExternally(result.payment), undefined, membership);
      return { outcome: 'captured', success: true, message: done.already ? 'Payment already captured.' : 'Payment captured.', data: done.view };
    }
    if (result.kind === 'pending') {
      const view = await this.uc.finalize.markUnderReview(teamId, order.id, txn.id, undefined, result.paymentId);
      return { outcome: 'under_review', success: true, message: 'The provider has the payment but has not settled it yet; the order completes when it confirms.', data: view };
    }
    const done = await this.uc.finalize.finalizeFirstPayment(teamId, order.id, txn.id, { approved: false, code: result.code, message: result.message, paymentRef: result.paymentId });
    if (done.view.payment_status === 'completed') return { outcome: 'captured', success: true, message: 'Payment already captured.', data: done.view };
    return failed(result.message);
  }
}
