import type {
  ExtpayDispute,
  ExtpayDisputeStatus,
  ExtpayError,
  ExtpayMembership,
  ExtpayMembershipStatus,
  ExtpayPayment,
  ExtpayPaymentOutcome,
  ExtpayPaymentStatus,
  ExtpayRefundStatus,
} from './types.ts';

/**
 * Whop's statuses, each mapped once to what the payment core acts on. Tables rather than ifs, so an
 * unmapped status is a type error.
 */

/**
 * A receipt's `status` → the payment outcome. `open` is a receipt that has not been paid: with a
 * failure (substatus `failed`, or a `failure_message`) it is a decline, otherwise it is still being
 * collected. `void` is a voided (or canceled) payment; `uncollectible` and `unresolved` will not be paid.
 */
export const EXTPAY_PAYMENT_OUTCOMES = {
  paid: 'approved',
  pending: 'pending',
  draft: 'pending',
  open: 'open',
  void: 'declined',
  uncollectible: 'declined',
  unresolved: 'declined',
} as const satisfies Record<ExtpayPaymentStatus, ExtpayPaymentOutcome['kind'] | 'open'>;

/** The friendly statuses (`substatus`) that say how a receipt ended when its `status` is missing or unknown. */
const SUBSTATUS_OUTCOMES: Readonly<Record<string, ExtpayPaymentOutcome['kind']>> = {
  succeeded: 'approved',
  refunded: 'approved',
  partially_refunded: 'approved',
  auto_refunded: 'approved',
  dispute_warning: 'approved',
  open_dispute: 'approved',
  open_resolution: 'approved',
  pending: 'pending',
  incomplete: 'pending',
  drafted: 'pending',
  failed: 'declined',
  canceled: 'declined',
  uncollectible: 'declined',
  unresolved: 'declined',
  past_due: 'declined',
  price_too_low: 'declined',
};

function declineCode(p: ExtpayPayment): string {
  if (p.status === 'void') return 'voided';
  if (p.status === 'uncollectible' || p.status === 'unresolved') return p.status;
  return p.substatus === 'canceled' ? 'canceled' : 'failed';
}

const DECLINE_TEXT: Readonly<Record<string, string>> = {
  voided: 'The payment was voided.',
  canceled: 'The payment was canceled.',
  uncollectible: 'The payment could not be collected.',
  unresolved: 'The payment was not resolved.',
  failed: 'The payment failed.',
};

/** The one place a Whop payment becomes an outcome (Capture, upsells, webhooks all use it). */
export function paymentOutcome(payment: ExtpayPayment): ExtpayPaymentOutcome | ExtpayError {
  const paymentId = payment.id;
  let kind: ExtpayPaymentOutcome['kind'] | 'open' | undefined = payment.status ? EXTPAY_PAYMENT_OUTCOMES[payment.status] : undefined;
  if (kind === 'open') kind = payment.substatus === 'failed' || payment.substatus === 'past_due' || payment.failureMessage ? 'declined' : 'pending';
  kind ??= payment.substatus ? SUBSTATUS_OUTCOMES[payment.substatus] : undefined;
  switch (kind) {
    case 'approved':
    case 'pending':
      return { kind, paymentId, payment };
    case 'declined': {
      const code = declineCode(payment);
      // The provider's own words first: the merchant sees what Whop said (a fraud block, an issuer decline).
      return { kind, paymentId, code, message: payment.failureMessage || DECLINE_TEXT[code]!, payment };
    }
    default:
      return {
        kind: 'error',
        code: 'bad_response',
        providerCode: null,
        message: `The provider answered with a payment in an unknown state (${payment.substatus ?? 'no status'}).`,
        httpStatus: 200,
        safeToRetry: true,
      };
  }
}

/** What an externally managed subscription mirrors from a membership (spec §2.9, §3.2). */
export type MirroredSubscriptionState = 'trialing' | 'active' | 'past_due' | 'paused' | 'cancel_at_period_end' | 'cancelled' | 'completed' | 'expired' | 'pending';

export const EXTPAY_MEMBERSHIP_STATES = {
  trialing: 'trialing',
  active: 'active',
  past_due: 'past_due',
  // Whop's "unresolved": a failed renewal that was not recovered; it still owes money.
  unresolved: 'past_due',
  completed: 'completed',
  canceled: 'cancelled',
  expired: 'expired',
  drafted: 'pending',
} as const satisfies Record<ExtpayMembershipStatus, MirroredSubscriptionState>;

/**
 * The state to mirror: paused collection and a cancel scheduled at period end override a valid
 * (`trialing`/`active`) status, as the spec's Pause and Cancel transitions show them.
 */
export function membershipState(m: ExtpayMembership): MirroredSubscriptionState {
  const base = EXTPAY_MEMBERSHIP_STATES[m.status];
  if (base === 'active' || base === 'trialing') {
    if (m.paused) return 'paused';
    if (m.cancelAtPeriodEnd) return 'cancel_at_period_end';
  }
  return base;
}

/** Whether the membership still grants access (Whop keeps access while a renewal is being retried). */
export function membershipIsValid(m: ExtpayMembership): boolean {
  return m.status === 'trialing' || m.status === 'active' || m.status === 'past_due' || m.status === 'completed';
}

export const EXTPAY_REFUND_STATES = {
  pending: 'pending',
  requires_action: 'pending',
  succeeded: 'settled',
  failed: 'failed',
  canceled: 'failed',
} as const satisfies Record<ExtpayRefundStatus, 'pending' | 'settled' | 'failed'>;

/**
 * Dispute stages (spec §4.5): `warning_*` is the early warning (an inquiry, no money moved); past it,
 * any outcome but `won` is a chargeback against the transaction.
 */
export const EXTPAY_DISPUTE_STAGES = {
  warning_needs_response: 'early_warning',
  warning_under_review: 'early_warning',
  warning_closed: 'early_warning',
  needs_response: 'chargeback',
  under_review: 'chargeback',
  lost: 'chargeback',
  closed: 'chargeback',
  won: 'won',
  other: 'unknown',
} as const satisfies Record<ExtpayDisputeStatus, 'early_warning' | 'chargeback' | 'won' | 'unknown'>;

export function disputeIsChargeback(d: Pick<ExtpayDispute, 'status'>): boolean {
  return EXTPAY_DISPUTE_STAGES[d.status] === 'chargeback';
}
