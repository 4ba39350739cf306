import { newId } from '../../app/ids.ts';
import type { Executor, Tx } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import type { ExtpayDispute, ExtpayPayment, ExtpayRefund, ExtpaySetupIntent } from '../../providers/extpay/types.ts';
import { disputeIsChargeback, EXTPAY_REFUND_STATES } from '../../providers/extpay/status.ts';
import * as repo from './repo.ts';
import { moveTransaction } from './moves.ts';
import { transition } from '../../app/state-machine.ts';
import { DISPUTE } from '../payments/states.ts';

/** The external checkout provider's records in the ledger: its sales, upsells, renewals, refunds, disputes and saved methods. */
export class ExtpayLedger {
  // ---- extpay after the checkout: upsells, renewals, refunds, disputes, saved methods ----
  /** The sale a provider payment id names on one connection (first payment once known, upsell, renewal). */
  findExternalSale(db: Executor, teamId: string, connectionId: string, paymentRef: string, opts: { forUpdate?: boolean } = {}) {
    return repo.findExternalSale(db, teamId, connectionId, paymentRef, opts);
  }

  /**
   * The first payment a provider payment settles: named by the checkout's metadata (our attempt id,
   * copied by the provider onto the payment), else by the checkout's plan (unique to one checkout).
   */
  async findFirstPaymentFor(db: Executor, teamId: string, connectionId: string, p: { metadata: Record<string, unknown>; planId: string | null }) {
    const attempt = typeof p.metadata.attempt_id === 'string' ? p.metadata.attempt_id : null;
    if (attempt) {
      const t = await repo.findTransaction(db, teamId, attempt);
      if (t && t.connection_id === connectionId && t.type === 'sale' && !t.upsell_id) return t;
    }
    if (p.planId) {
      const t = await repo.findPendingByPlan(db, teamId, connectionId, p.planId);
      if (t && !t.upsell_id) return t;
    }
    return undefined;
  }

  /** Whether an upsell charge was sent on this connection and its payment id is not recorded yet. */
  hasUpsellInFlight(db: Executor, teamId: string, connectionId: string) {
    return repo.hasUpsellInFlight(db, teamId, connectionId);
  }

  /** Opens an extpay upsell charge: recorded pending before the provider is called, so its webhook can never find nothing. */
  async beginExternalUpsell(trx: Tx, req: { teamId: string; orderId: string; amount: number; currency: string; method: Row<'payment_methods'>; upsellId: string }) {
    const m = req.method;
    return repo.insertTransaction(trx, {
      id: newId('transaction'),
      team_id: req.teamId,
      order_id: req.orderId,
      type: 'sale',
      status: 'pending',
      amount: req.amount,
      currency: req.currency,
      connection_id: m.connection_id,
      payment_method_id: m.id,
      upsell_id: req.upsellId,
      // Phase 1: in flight until the provider's answer is recorded (the recovery run asks it otherwise).
      step: `upsell:${req.upsellId}`,
      in_flight: true,
      card_brand: m.brand,
      card_last4: m.last4 || null,
      response_code: 'charging',
      response_text: 'Charging the payment method saved at the provider',
      is_test: m.is_test,
    });
  }

  /** Moves a pending extpay sale on, under the caller's lock; null when it was already settled. */
  async settleExternalSale(
    trx: Tx,
    teamId: string,
    txnId: string,
    outcome: { status: 'pending'; paymentRef: string } | { status: 'approved'; paymentRef: string } | { status: 'declined'; paymentRef: string | null; code: string; message: string },
  ): Promise<Row<'transactions'> | null> {
    const txn = await repo.findTransaction(trx, teamId, txnId, { forUpdate: true });
    if (!txn || txn.status !== 'pending') return null;
    if (outcome.status === 'pending') {
      return moveTransaction(trx, txn, { in_flight: false, provider_ref: outcome.paymentRef, response_code: 'pending', response_text: 'Accepted by the provider; waiting for its confirmation' });
    }
    if (outcome.status === 'approved') {
      return moveTransaction(trx, txn, { status: 'approved', in_flight: false, provider_ref: outcome.paymentRef, response_code: 'paid', response_text: 'Paid at the external checkout provider' });
    }
    return moveTransaction(trx, txn, {
      status: 'declined',
      in_flight: false,
      ...(outcome.paymentRef ? { provider_ref: outcome.paymentRef } : {}),
      response_code: outcome.code,
      response_text: outcome.message,
    });
  }

  /** A renewal the provider charged (spec 4.5): the rebill order's own, already approved, sale. */
  recordRenewalSale(trx: Tx, teamId: string, orderId: string, connectionId: string, p: ExtpayPayment, isTest: boolean) {
    return repo.insertTransaction(trx, {
      id: newId('transaction'),
      team_id: teamId,
      order_id: orderId,
      type: 'sale',
      status: 'approved',
      amount: p.amount,
      currency: p.currency.toUpperCase(),
      connection_id: connectionId,
      provider_ref: p.id,
      plan_ref: p.planId,
      card_brand: p.cardBrand,
      card_last4: p.cardLast4,
      response_code: 'paid',
      response_text: 'Renewal paid at the external checkout provider',
      is_test: isTest,
    });
  }

  /**
   * refund.created / refund.updated (spec 4.5): the provisional refund recorded at request time
   * takes the settled amount (or fails); a refund made at the provider directly is recorded as
   * new. Returns how much the order's refunded total moves, under the caller's order lock.
   */
  async settleExternalRefund(
    trx: Tx,
    teamId: string,
    sale: Row<'transactions'>,
    r: ExtpayRefund,
  ): Promise<{ delta: number; transaction: Row<'transactions'> | null; change: 'settled' | 'failed' | 'pending' | 'recorded' | 'unchanged' }> {
    const state = EXTPAY_REFUND_STATES[r.status];
    const txn = await repo.findRefundToSettle(trx, teamId, sale.id, r.id);
    if (!txn) {
      if (state !== 'settled') return { delta: 0, transaction: null, change: 'unchanged' };
      const t = await repo.insertTransaction(trx, {
        id: newId('transaction'),
        team_id: teamId,
        order_id: sale.order_id,
        parent_id: sale.id,
        type: 'refund',
        status: 'approved',
        amount: r.amount,
        currency: sale.currency,
        connection_id: sale.connection_id,
        provider_ref: r.id,
        response_code: 'settled',
        response_text: 'Refunded at the provider',
        card_brand: sale.card_brand,
        card_last4: sale.card_last4,
        is_test: sale.is_test,
      });
      return { delta: r.amount, transaction: t, change: 'recorded' };
    }
    if (state === 'pending') {
      if (txn.provider_ref === r.id) return { delta: 0, transaction: txn, change: 'unchanged' };
      return { delta: 0, transaction: await moveTransaction(trx, txn, { provider_ref: r.id }), change: 'pending' };
    }
    if (state === 'failed') {
      if (txn.status === 'declined') return { delta: 0, transaction: txn, change: 'unchanged' };
      const t = await moveTransaction(trx, txn, { status: 'declined', in_flight: false, provisional: false, provider_ref: r.id, response_code: 'refund_failed', response_text: 'The provider could not complete the refund' });
      return { delta: txn.status === 'approved' ? -txn.amount : 0, transaction: t, change: 'failed' };
    }
    if (!txn.provisional && txn.amount === r.amount && txn.status === 'approved') return { delta: 0, transaction: txn, change: 'unchanged' };
    const before = txn.status === 'approved' ? txn.amount : 0;
    const t = await moveTransaction(trx, txn, {
      status: 'approved',
      in_flight: false,
      amount: r.amount,
      requested_amount: txn.requested_amount ?? txn.amount,
      provisional: false,
      provider_ref: r.id,
      response_code: 'settled',
      response_text: r.amount < (txn.requested_amount ?? txn.amount) ? `Settled for ${r.amount} of ${txn.requested_amount ?? txn.amount} requested` : 'Settled',
    });
    return { delta: r.amount - before, transaction: t, change: 'settled' };
  }

  /**
   * dispute.created / dispute.updated (spec 4.5): the dispute's state on the order, and once it is
   * past the early warning and not won, one chargeback transaction against the charge.
   */
  async recordExternalDispute(
    trx: Tx,
    teamId: string,
    sale: Row<'transactions'>,
    d: ExtpayDispute,
  ): Promise<{ dispute: Row<'disputes'>; opened: boolean; chargeback: Row<'transactions'> | null; offTable: boolean }> {
    let row = await repo.findDispute(trx, teamId, d.id);
    let offTable = false;
    const opened = !row;
    if (!row) {
      row = await repo.insertDispute(trx, {
        id: newId('dispute'),
        team_id: teamId,
        order_id: sale.order_id,
        transaction_id: sale.id,
        provider_ref: d.id,
        status: d.status,
        reason: d.reason,
        amount: d.amount,
        currency: sale.currency,
      });
    } else if (row.status !== d.status || row.reason !== d.reason) {
      // The provider's dispute state is the truth: a move the DISPUTE table does not list is still
      // applied (refusing it would fail the webhook forever) and said so to the caller (offTable).
      const current: Row<'disputes'> = row;
      offTable = current.status !== d.status && !DISPUTE.canMove(current.status, d.status);
      row = await transition(trx, offTable ? [] : DISPUTE.move(current.status, d.status), {
        write: (t) => repo.updateDispute(t, teamId, current.id, { status: d.status, reason: d.reason ?? current.reason }),
        event: null,
      });
    }
    let chargeback: Row<'transactions'> | null = null;
    if (disputeIsChargeback(d) && !row.chargeback_id) {
      chargeback = await repo.insertTransaction(trx, {
        id: newId('transaction'),
        team_id: teamId,
        order_id: sale.order_id,
        parent_id: sale.id,
        type: 'chargeback',
        status: 'approved',
        amount: d.amount,
        currency: sale.currency,
        connection_id: sale.connection_id,
        provider_ref: d.id,
        response_code: d.status,
        response_text: `Chargeback: ${d.reason ?? 'no reason given'}`,
        card_brand: sale.card_brand,
        card_last4: sale.card_last4,
        is_test: sale.is_test,
      });
      row = await repo.updateDispute(trx, teamId, row.id, { chargeback_id: chargeback.id });
    }
    return { dispute: row, opened, chargeback, offTable };
  }

  /** setup_intent.succeeded (spec 6.1): the provider saved the customer's payment method for off-session charges. */
  saveExternalMethod(trx: Tx, teamId: string, customerId: string, checkout: Row<'transactions'>, s: ExtpaySetupIntent, isTest: boolean) {
    return repo.upsertExtpayMethod(trx, {
      id: newId('paymentMethod'),
      team_id: teamId,
      customer_id: customerId,
      connection_id: checkout.connection_id!,
      member_ref: s.memberId,
      vault_ref: s.paymentMethodId,
      original_ref: checkout.checkout_ref!,
      brand: s.cardBrand ?? 'unknown',
      bin: '',
      last4: s.cardLast4 ?? '',
      exp: '',
      is_test: isTest,
    });
  }
}
