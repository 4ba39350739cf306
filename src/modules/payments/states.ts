import { defineMachine } from '../../app/state-machine.ts';
import { EXTPAY_DISPUTE_STATUSES } from '../../providers/extpay/types.ts';

// ---- the order's payment_status ----

export const PAYMENT_STATUSES = ['pending_redirect', 'pending_external_confirmation', 'completed', 'declined', 'voided'] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

/** `orders.payment_status` as a machine state: null (no payment has reached an outcome yet) is `none`. */
export const ORDER_PAYMENT_STATES = ['none', ...PAYMENT_STATUSES] as const;
export type OrderPaymentState = (typeof ORDER_PAYMENT_STATES)[number];

export function orderPaymentState(paymentStatus: string | null): string {
  return paymentStatus ?? 'none';
}

/**
 * An order's first payment. A new payment may start over an open redirect or a decline (Process /
 * Reprocess Payment), so those lead anywhere a payment's outcome can. `completed → voided` is the
 * void of a held extpay payment on a paid order (an upsell's: orders/service.ts settleReversal).
 */
export const ORDER_PAYMENT_MOVES = {
  none: ['pending_redirect', 'pending_external_confirmation', 'completed', 'declined'],
  pending_redirect: ['pending_external_confirmation', 'completed', 'declined'],
  pending_external_confirmation: ['completed', 'declined', 'voided'],
  declined: ['pending_redirect', 'pending_external_confirmation', 'completed'],
  completed: ['voided'],
  voided: [],
} as const satisfies Record<OrderPaymentState, readonly OrderPaymentState[]>;

/** Initial: a new order (`none`), a rebill order recorded paid (`completed`). */
export const ORDER_PAYMENT = defineMachine('order payment', ORDER_PAYMENT_MOVES, { states: ORDER_PAYMENT_STATES, initial: ['none', 'completed'] });

// ---- transactions: sales (attempts), refunds, voids, chargebacks ----

export const TRANSACTION_STATUSES = ['pending', 'approved', 'declined'] as const;
export type TransactionStatus = (typeof TRANSACTION_STATUSES)[number];

/**
 * A transaction row as a machine state: an attempt committed before its provider call and not yet
 * answered (status `pending`, `in_flight` true) is `in_flight`; otherwise its status.
 */
export const TRANSACTION_STATES = ['in_flight', ...TRANSACTION_STATUSES] as const;
export type TransactionState = (typeof TRANSACTION_STATES)[number];

export function transactionState(t: { status: string; in_flight: boolean }): string {
  return t.in_flight && t.status === 'pending' ? 'in_flight' : t.status;
}

/**
 * A sale (first payment, upsell, renewal). `in_flight → pending`: the provider answered redirect
 * (3-D Secure) or pending. `pending` ends at the 3-D Secure gateway's or the external provider's
 * answer (settlePending, settleExternalSale), a held extpay payment voided included (→ declined).
 * Refunds and voids are rows of their own: an approved sale never moves.
 */
export const SALE_MOVES = {
  in_flight: ['approved', 'declined', 'pending'],
  pending: ['approved', 'declined'],
  approved: [],
  declined: [],
} as const satisfies Record<TransactionState, readonly TransactionState[]>;

/** Initial: a card attempt (`in_flight`), an extpay checkout or upsell (`pending`), and rows decided without a provider call (test card, free upsell, renewal, BIN block, no route). */
export const SALE = defineMachine('sale', SALE_MOVES, { states: TRANSACTION_STATES, initial: ['in_flight', 'pending', 'approved', 'declined'] });

/**
 * A verification: a $0 first payment (a free trial, a fully discounted cart) that checks the card
 * and saves it, charging nothing (NMI `validate`, the 3-D Secure gateway's zero-amount setup). Its
 * attempt moves as a sale's does (a 3-D Secure setup waits `pending` for the customer).
 */
export const VERIFICATION_MOVES = SALE_MOVES;
export const VERIFICATION = defineMachine('verification', VERIFICATION_MOVES, { states: TRANSACTION_STATES, initial: ['in_flight', 'approved', 'declined'] });

/** The transaction types a first payment's attempt can have: a sale, or (nothing due) a verification. */
export const FIRST_PAYMENT_TYPES = ['sale', 'verification'] as const;
export type FirstPaymentType = (typeof FIRST_PAYMENT_TYPES)[number];

/** What a first payment of `amount` is: nothing due is a verification of the card, not a $0 sale (a gateway refuses those). */
export function firstPaymentType(amount: number): FirstPaymentType {
  return amount === 0 ? 'verification' : 'sale';
}

type ReversalState = Exclude<TransactionState, 'pending'>;

/**
 * A refund. `in_flight` ends at the provider's answer (finishReversal), or earlier at extpay's
 * refund.created (settleExternalRefund). An accepted extpay refund is provisional until it
 * settles: the provider may still fail it (`approved → declined`), and report succeeded one it
 * had reported failed (`declined → approved`).
 */
export const REFUND_MOVES = {
  in_flight: ['approved', 'declined'],
  approved: ['declined'],
  declined: ['approved'],
} as const satisfies Record<ReversalState, readonly ReversalState[]>;

/** Initial: our refund (`in_flight`), a refund made at the provider directly (`approved`). */
export const REFUND = defineMachine('refund', REFUND_MOVES, { initial: ['in_flight', 'approved'] });

/** A void: the provider's answer, once. */
export const VOID_MOVES = {
  in_flight: ['approved', 'declined'],
  approved: [],
  declined: [],
} as const satisfies Record<ReversalState, readonly ReversalState[]>;

export const VOID = defineMachine('void', VOID_MOVES, { initial: ['in_flight'] });

/** A chargeback is recorded approved and never moves. */
export const CHARGEBACK_MOVES = { approved: [] } as const satisfies Partial<Record<TransactionState, readonly TransactionState[]>>;

export const CHARGEBACK = defineMachine('chargeback', CHARGEBACK_MOVES, { initial: ['approved'] });

export const TRANSACTION_MACHINES = { sale: SALE, verification: VERIFICATION, refund: REFUND, void: VOID, chargeback: CHARGEBACK } as const;
export type TransactionType = keyof typeof TRANSACTION_MACHINES;

/** The machine of a transaction row's `type` (sale, verification, refund, void, chargeback). */
export function transactionMachine(type: string): (typeof TRANSACTION_MACHINES)[TransactionType] {
  if (!Object.hasOwn(TRANSACTION_MACHINES, type)) throw new Error(`No state machine for transactions of type ${type}`);
  return TRANSACTION_MACHINES[type as TransactionType];
}

// ---- disputes ----

/** A dispute's status is stored as the provider reports it. */
export const DISPUTE_STATUSES = EXTPAY_DISPUTE_STATUSES;
export type DisputeStatus = (typeof DISPUTE_STATUSES)[number];

/**
 * Disputes mirror the provider, which reads forward through stages: the early warning (an inquiry),
 * the chargeback, the outcome. A stage may be skipped (an inquiry won outright), never gone back
 * to; `warning_closed`, `won`, `lost` and `closed` end it. `other` is a status the provider did
 * not name: it may come from and lead to any open status.
 */
export const DISPUTE_MOVES = {
  warning_needs_response: ['warning_under_review', 'warning_closed', 'needs_response', 'under_review', 'won', 'lost', 'closed', 'other'],
  warning_under_review: ['warning_closed', 'needs_response', 'under_review', 'won', 'lost', 'closed', 'other'],
  warning_closed: [],
  needs_response: ['under_review', 'won', 'lost', 'closed', 'other'],
  under_review: ['won', 'lost', 'closed', 'other'],
  won: [],
  lost: [],
  closed: [],
  other: ['warning_needs_response', 'warning_under_review', 'warning_closed', 'needs_response', 'under_review', 'won', 'lost', 'closed'],
} as const satisfies Record<DisputeStatus, readonly DisputeStatus[]>;

/** Initial: any status — a dispute is recorded as the provider first reports it (recordExternalDispute). */
export const DISPUTE = defineMachine('dispute', DISPUTE_MOVES, { states: DISPUTE_STATUSES, initial: DISPUTE_STATUSES });
