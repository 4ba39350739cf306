import { ApiError, invalid, notFound } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import type { Executor, Store, Tx } from '../../db/database.ts';
import { listPage, type Page } from '../../db/pagination.ts';
import type { KeyedIdSubquery, Row } from '../../db/schema.ts';
import type { ReversalOutcome } from '../../providers/provider.ts';
import * as repo from './repo.ts';
import { closeAttempt, closeAttemptAtCommit, moveTransaction } from './moves.ts';
import { FIRST_PAYMENT_TYPES } from '../payments/states.ts';
import { type FirstPaymentOutcome, EXTPAY_REFUND_REQUESTED, type ListTransactionsQuery, transactionView, type TransactionView } from './views.ts';
import { ExtpayLedger } from './external.ts';

export { EXTPAY_REFUND_REQUESTED, disputeView, type ListTransactionsQuery, transactionView, type TransactionView } from './views.ts';

/** The rows the payments module writes for its attempts (always in the caller's transaction). */
const LEDGER_ROWS = {
  insertTransaction: repo.insertTransaction,
  insertTransactionWithNext: repo.insertTransactionWithNext,
  closeAttempt,
  closeAttemptAtCommit,
  findTransaction: repo.findTransaction,
  listOrderTransactions: repo.listOrderTransactions,
  reversedAmount: repo.reversedAmount,
  insertPaymentMethod: repo.insertPaymentMethod,
  deferPaymentMethod: repo.deferPaymentMethod,
  dropPaymentMethod: repo.dropPaymentMethod,
  findPaymentMethod: repo.findPaymentMethod,
  updatePaymentMethod: repo.updatePaymentMethod,
} as const;

/**
 * The ledger: transactions (every attempt, sale, refund, void and chargeback), disputes and saved
 * payment methods. Attempts are rows here from before their provider call until their answer.
 */
export class LedgerService {
  constructor(private readonly store: Store) {}

  readonly rows = LEDGER_ROWS;
  readonly external = new ExtpayLedger();

  findTransactionRow(db: Executor, teamId: string, id: string) {
    return repo.findTransaction(db, teamId, id);
  }

  findInFlight(db: Executor, teamId: string, orderId: string, step: string) {
    return repo.findInFlight(db, teamId, orderId, step);
  }

  listInFlight(olderThan: Date, limit: number) {
    return this.store.run((db) => repo.listInFlight(db, olderThan, limit));
  }

  findPaymentMethod(db: Executor, teamId: string, id: string) {
    return repo.findPaymentMethod(db, teamId, id);
  }

  /** The saved payment method another module's subquery names (an order's, by the order's id), as a query to send with others. */
  paymentMethodOfQuery(db: Executor, teamId: string, idOf: KeyedIdSubquery, key: string) {
    return repo.paymentMethodOfQuery(db, teamId, idOf, key);
  }

  orderTransactions(db: Executor, teamId: string, orderId: string) {
    return repo.listOrderTransactions(db, teamId, orderId);
  }

  /** The orders search's card last 4 (subqueries the orders repo embeds). */
  cardLast4Matches(db: Executor, teamId: string, last4: string) {
    return repo.cardLast4Matches(db, teamId, last4);
  }

  /**
   * Opens a refund or void against an approved sale under the sale's row lock: the pending
   * row counts against the balance at once, so concurrent refunds cannot exceed it.
   */
  async beginReversal(
    trx: Tx,
    teamId: string,
    orderId: string,
    kind: 'refund' | 'void',
    target: { transactionId?: string | undefined; amount?: number | undefined },
  ): Promise<{ sale: Row<'transactions'>; reversal: Row<'transactions'> }> {
    // An extpay payment whose money the provider holds (known id, not settled) can be voided too (spec 4.5).
    const heldExternally = (t: Row<'transactions'>) => kind === 'void' && t.status === 'pending' && t.connection_id !== null && t.provider_ref !== null;
    const sales = (await repo.listOrderTransactions(trx, teamId, orderId)).filter((t) => t.type === 'sale' && (t.status === 'approved' || heldExternally(t)));
    let sale: Row<'transactions'> | undefined;
    if (target.transactionId) {
      sale = sales.find((s) => s.id === target.transactionId);
      if (!sale) throw invalid('transaction_id', 'no approved charge with this id on this order');
    } else {
      // Without an id: the order's first charge (the initial purchase); upsell charges are named by id.
      sale = sales[0];
      if (!sale) throw new ApiError('conflict', 'This order has no approved charge to reverse.');
    }
    const locked = (await repo.findTransaction(trx, teamId, sale!.id, { forUpdate: true }))!;
    const { refunded, voided } = await repo.reversedAmount(trx, teamId, locked.id);
    if (voided) throw new ApiError('conflict', `Charge ${locked.id} has been voided.`);
    const remaining = locked.amount - refunded;
    let amount: number;
    if (kind === 'void') {
      if (refunded > 0) throw new ApiError('conflict', `Charge ${locked.id} has refunds; refund the rest instead of voiding.`);
      amount = locked.amount;
    } else {
      if (remaining <= 0) throw new ApiError('conflict', `Charge ${locked.id} is fully refunded.`);
      amount = target.amount ?? remaining;
      if (amount > remaining) throw invalid('amount', `exceeds the refundable balance of ${remaining} (charged ${locked.amount}, refunded ${refunded})`);
    }
    // Phase 1: committed in flight before the provider hears of it; it counts against the balance at once.
    const reversalId = newId('transaction');
    const reversal = await repo.insertTransaction(trx, {
      id: reversalId,
      team_id: teamId,
      order_id: orderId,
      parent_id: locked.id,
      type: kind,
      step: `${kind}:${reversalId}`,
      in_flight: true,
      status: 'pending',
      response_code: 'in_flight',
      response_text: `Sent to the provider; waiting for its answer`,
      amount,
      currency: locked.currency,
      gateway_id: locked.gateway_id,
      payment_method_id: locked.payment_method_id,
      card_brand: locked.card_brand,
      card_bin: locked.card_bin,
      card_last4: locked.card_last4,
      card_exp: locked.card_exp,
      is_test: locked.is_test,
    });
    return { sale: locked, reversal };
  }

  /**
   * Records the provider's answer to a refund or void. `settledMeanwhile`: the provider's own
   * event (extpay refund.created) already settled this row while the call was out; it is left as
   * that event made it, and the order's totals were moved then.
   */
  async finishReversal(trx: Tx, teamId: string, reversal: Row<'transactions'>, result: Exclude<ReversalOutcome, { kind: 'unknown' }>): Promise<{ row: Row<'transactions'>; settledMeanwhile: boolean }> {
    const current = (await repo.findTransaction(trx, teamId, reversal.id, { forUpdate: true }))!;
    if (current.status !== 'pending') {
      // The provider's own event (extpay refund.created) settled it while our call was out: it is no longer a question.
      const row = current.in_flight ? await moveTransaction(trx, current, { in_flight: false }) : current;
      return { row, settledMeanwhile: true };
    }
    const row = await moveTransaction(trx, current, {
      status: result.kind === 'approved' ? 'approved' : 'declined',
      in_flight: false,
      ...(result.providerRef ? { provider_ref: result.providerRef } : {}),
      response_code: result.code,
      response_text: result.text,
      // extpay (spec 4.5): the amount asked for stands until refund.created carries what settled.
      ...(result.kind === 'approved' && result.code === EXTPAY_REFUND_REQUESTED ? { provisional: true, requested_amount: reversal.amount } : {}),
    });
    return { row, settledMeanwhile: false };
  }

  /** The order's first-payment transaction awaiting the customer or the gateway (Capture's target). */
  async findCapturable(db: Executor, teamId: string, orderId: string): Promise<Row<'transactions'> | undefined> {
    const all = await repo.listOrderTransactions(db, teamId, orderId);
    return all.filter((t) => (FIRST_PAYMENT_TYPES as readonly string[]).includes(t.type) && t.status === 'pending' && !t.upsell_id && (t.provider_ref || t.plan_ref)).at(-1);
  }

  listStalePending(olderThan: Date, limit: number) {
    return this.store.run((db) => repo.listStalePending(db, olderThan, limit));
  }

  findByProviderRef(db: Executor, teamId: string, gatewayId: string, providerRef: string) {
    return repo.findByProviderRef(db, teamId, gatewayId, providerRef);
  }

  /**
   * Settles a pending first payment in the caller's transaction (which holds the order's row
   * lock): approved saves the payment method for merchant-initiated follow-ups (a gateway vault
   * token, or for extpay the provider's member and, once known, its payment method); declined
   * closes it. Returns null when the transaction was already settled (the other path won).
   */
  async settlePending(
    trx: Tx,
    teamId: string,
    txnId: string,
    customerId: string,
    outcome: FirstPaymentOutcome,
  ): Promise<{ transaction: Row<'transactions'>; paymentMethod: Row<'payment_methods'> | null } | null> {
    const txn = await repo.findTransaction(trx, teamId, txnId, { forUpdate: true });
    if (!txn || txn.status !== 'pending') return null;
    if (!outcome.approved) {
      const t = await moveTransaction(trx, txn, {
        status: 'declined',
        response_code: outcome.code,
        response_text: outcome.message,
        ...(outcome.paymentRef ? { provider_ref: outcome.paymentRef } : {}),
      });
      return { transaction: t, paymentMethod: null };
    }
    const ext = outcome.external;
    if (ext && txn.connection_id) {
      const method = txn.checkout_ref
        ? await repo.upsertExtpayMethod(trx, {
            id: newId('paymentMethod'),
            team_id: teamId,
            customer_id: customerId,
            connection_id: txn.connection_id,
            member_ref: ext.memberRef,
            vault_ref: null,
            original_ref: txn.checkout_ref,
            brand: ext.cardBrand ?? 'unknown',
            bin: '',
            last4: ext.cardLast4 ?? '',
            exp: '',
            is_test: txn.is_test,
          })
        : null;
      const t = await moveTransaction(trx, txn, {
        status: 'approved',
        provider_ref: ext.paymentRef,
        response_code: 'paid',
        response_text: 'Paid at the external checkout provider',
        card_brand: ext.cardBrand,
        card_last4: ext.cardLast4,
        payment_method_id: method?.id ?? null,
      });
      return { transaction: t, paymentMethod: method };
    }
    const method = await repo.insertPaymentMethod(trx, {
      id: newId('paymentMethod'),
      team_id: teamId,
      customer_id: customerId,
      gateway_id: txn.gateway_id,
      vault_ref: outcome.paymentMethod,
      original_ref: txn.provider_ref,
      brand: txn.card_brand ?? 'unknown',
      bin: txn.card_bin ?? '',
      last4: txn.card_last4 ?? '',
      exp: txn.card_exp ?? '',
      is_test: txn.is_test,
    });
    const t = await moveTransaction(trx, txn, { status: 'approved', response_code: 'succeeded', response_text: 'Approved after 3-D Secure', payment_method_id: method.id });
    return { transaction: t, paymentMethod: method };
  }

  /** extpay: the provider's payment id for a first payment still pending (learned at Capture 202 or from a webhook). */
  async notePaymentRef(trx: Tx, teamId: string, txnId: string, paymentRef: string): Promise<void> {
    const txn = await repo.findTransaction(trx, teamId, txnId, { forUpdate: true });
    if (txn && txn.status === 'pending' && !txn.provider_ref) await repo.updateTransaction(trx, teamId, txnId, { provider_ref: paymentRef });
  }

  listOrderDisputes(db: Executor, teamId: string, orderId: string) {
    return repo.listOrderDisputes(db, teamId, orderId);
  }

  async get(teamId: string, id: string): Promise<TransactionView> {
    const t = await this.store.run((db) => repo.findTransaction(db, teamId, id));
    if (!t) throw notFound('Transaction');
    return transactionView(t);
  }

  async list(teamId: string, q: ListTransactionsQuery): Promise<Page<TransactionView>> {
    return this.store.run(async (db) => {
      const filter = { orderId: q.order_number, status: q.status, type: q.type, isTest: q.is_test, createdGte: q.created_gte, createdLte: q.created_lte };
      return listPage(db, 'transactions', teamId, q, (afterSeq) => repo.listTransactions(db, teamId, { limit: q.limit, afterSeq, ...filter }), transactionView);
    });
  }
}
