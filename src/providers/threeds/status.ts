import type { ThreeDsError, ThreeDsOutcome, ThreeDsPayment, ThreeDsWireStatus } from './types.ts';

/**
 * The gateway's payment statuses, each mapped once to the outcome the payment core acts on.
 * `canceled` (3DS abandoned and canceled, or voided) is not a completed payment: Capture treats it
 * as a decline.
 */
export const THREEDS_STATUS_OUTCOMES = {
  succeeded: 'approved',
  declined: 'declined',
  requires_action: 'redirect',
  processing: 'pending',
  canceled: 'declined',
} as const satisfies Record<ThreeDsWireStatus, ThreeDsOutcome['kind']>;

export interface ThreeDsDeclineCode {
  /** The same card may be tried on another gateway. */
  retryable: boolean;
  /** The card itself is the problem (wrong, expired, the cardholder revoked recurring payments): a rebill must not be retried. */
  hard: boolean;
  text: string;
}

/**
 * The gateway's `decline_code` values. Only issuer soft declines are retryable. The integration
 * declines (missing customer details, risk session or 3DS URLs) are not: the spec wants their text
 * surfaced to the merchant, not hidden behind a salvage on another gateway. A failed 3DS challenge
 * is the cardholder saying no.
 */
export const THREEDS_DECLINE_CODES = {
  do_not_honor: { retryable: true, hard: false, text: 'The card issuer declined the payment (do not honor).' },
  insufficient_funds: { retryable: true, hard: false, text: 'The card has insufficient funds.' },
  incorrect_number: { retryable: false, hard: true, text: 'The card number is incorrect.' },
  expired_card: { retryable: false, hard: true, text: 'The card has expired.' },
  // The cardholder revoked the merchant's authority (Visa R0/R1): card-network rules forbid re-presenting it.
  stop_recurring: { retryable: false, hard: true, text: 'The cardholder asked to stop all recurring payments to this merchant.' },
  authentication_failed: { retryable: false, hard: false, text: 'The cardholder failed 3D Secure authentication.' },
  authentication_required: { retryable: false, hard: false, text: '3D Secure is required: return_url and cancel_url must be provided' },
  missing_customer_details: { retryable: false, hard: false, text: 'billing email, first name and last name must be present' },
  risk_session_missing: { retryable: false, hard: false, text: 'The risk session is missing: send risk.session_id from the risk SDK.' },
  review_declined: { retryable: false, hard: false, text: 'The payment was declined after review.' },
  canceled: { retryable: false, hard: false, text: 'The payment was canceled.' },
} as const satisfies Record<string, ThreeDsDeclineCode>;

export type ThreeDsDeclineCodeName = keyof typeof THREEDS_DECLINE_CODES;

export function isKnownDeclineCode(code: string): code is ThreeDsDeclineCodeName {
  return Object.hasOwn(THREEDS_DECLINE_CODES, code);
}

/** A code the gateway adds later is a decline we do not salvage. */
export function classifyThreeDsDecline(code: string | null): ThreeDsDeclineCode {
  const c = (code ?? '').trim();
  return isKnownDeclineCode(c) ? THREEDS_DECLINE_CODES[c] : { retryable: false, hard: false, text: 'The payment was declined.' };
}

/** The one place a gateway payment becomes an outcome, by `THREEDS_STATUS_OUTCOMES`. */
export function paymentOutcome(payment: ThreeDsPayment): ThreeDsOutcome | ThreeDsError {
  const paymentId = payment.id;
  const kind = THREEDS_STATUS_OUTCOMES[payment.status];
  switch (kind) {
    case 'approved':
      return payment.paymentMethod ? { kind, paymentId, paymentMethod: payment.paymentMethod, payment } : { kind, paymentId, payment };
    case 'declined': {
      const canceled = payment.status === 'canceled';
      const code = canceled ? 'canceled' : (payment.declineCode ?? 'declined');
      const decline = classifyThreeDsDecline(code);
      // The gateway's own text first: the spec shows merchants the gateway's wording.
      const message = !canceled && payment.message ? payment.message : decline.text;
      return { kind, paymentId, code, message, retryable: decline.retryable, hard: decline.hard, payment };
    }
    case 'redirect':
      if (!payment.redirectUrl)
        return { kind: 'error', code: 'bad_response', gatewayCode: null, message: 'The gateway asked for authentication without a redirect URL.', httpStatus: 200, safeToRetry: true };
      return { kind, paymentId, url: payment.redirectUrl, payment };
    case 'pending':
      return { kind, paymentId, payment };
    default: {
      const unreachable: never = kind;
      throw new Error(`unmapped 3DS gateway outcome ${String(unreachable)}`);
    }
  }
}
