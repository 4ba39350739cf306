import type { CardInput } from '../card.ts';
import type { GatewayAccount } from '../card-gateway.ts';

/**
 * The card gateway that requires 3-D Secure. The spec does not name it, so its wire format is ours
 * (docs/sandbox.md, "3-D Secure card gateway"), modelled on how modern card APIs do 3DS: a payment
 * object whose status says what happens next, a redirect to a hosted authentication page, signed
 * webhooks. The account is a `GatewayAccount` whose credentials hold `api_key`.
 */

/** The payment statuses the gateway speaks; `status.ts` maps each one to ours exactly once. */
export const THREEDS_WIRE_STATUSES = ['succeeded', 'declined', 'requires_action', 'processing', 'canceled'] as const;
export type ThreeDsWireStatus = (typeof THREEDS_WIRE_STATUSES)[number];

/** A gateway payment as the adapter reads it (camelCase; the wire is snake_case, see `wire.ts`). */
export interface ThreeDsPayment {
  id: string;
  status: ThreeDsWireStatus;
  /** Minor units of `currency`. */
  amount: number;
  currency: string;
  /** Our attempt id, echoed back: lets Capture check that a payment belongs to the order. */
  reference: string | null;
  amountRefunded: number;
  /** The saved card (`pm_…`), once a payment with `save_payment_method` has succeeded. */
  paymentMethod: string | null;
  merchantInitiated: boolean;
  originalPaymentId: string | null;
  declineCode: string | null;
  message: string | null;
  /** Where to send the customer's browser while the status is `requires_action`. */
  redirectUrl: string | null;
  card: { brand: string; last4: string; expMonth: number; expYear: number } | null;
  /** Unix seconds. */
  created: number;
}

export interface ThreeDsPaymentRequest {
  /** Minor units of `currency`. */
  amount: number;
  currency: string;
  /** Our attempt id: sent as `reference` and, unless `idempotencyKey` says otherwise, as the Idempotency-Key. */
  attemptId: string;
  idempotencyKey?: string;
  /** A new card (exp `MM/YY`); exactly one of `card` and `paymentMethod`. */
  card?: CardInput;
  /** A saved card (`pm_…`) from an earlier succeeded payment. */
  paymentMethod?: string;
  customer?: { email?: string | null; first_name?: string | null; last_name?: string | null } | null;
  /** From the gateway's risk SDK on the checkout page; without it a customer-initiated payment is declined. */
  riskSessionId?: string | null;
  returnUrl?: string | null;
  cancelUrl?: string | null;
  savePaymentMethod: boolean;
  /**
   * A rebill or upsell the merchant starts on a saved card: no 3DS, never a redirect. Needs
   * `paymentMethod` and the id of the payment the customer authenticated when the card was saved.
   */
  merchantInitiated?: { originalPaymentId: string } | null;
}

/**
 * What a payment came to. `payment` is the gateway's object, typed, for checks and for the record
 * (it never holds a card number).
 */
export type ThreeDsOutcome =
  | { kind: 'approved'; paymentId: string; paymentMethod?: string; payment: ThreeDsPayment }
  /** `retryable`: the same card may be tried on another gateway; `hard`: the card itself is the problem (see `THREEDS_DECLINE_CODES`). */
  | { kind: 'declined'; paymentId: string; code: string; message: string; retryable: boolean; hard: boolean; payment: ThreeDsPayment }
  | { kind: 'redirect'; paymentId: string; url: string; payment: ThreeDsPayment }
  /** Authenticated, under review at the gateway: a webhook (or a later retrieve) settles it. */
  | { kind: 'pending'; paymentId: string; payment: ThreeDsPayment };

export type ThreeDsErrorCode =
  | 'network_error'
  | 'timeout'
  | 'bad_response'
  | 'gateway_error'
  | 'authentication_failed'
  | 'invalid_request'
  | 'not_found'
  | 'idempotency_conflict'
  | 'in_progress';

/**
 * The call did not produce an answer we can act on. `safeToRetry`: sending the same call again with
 * the same Idempotency-Key cannot charge twice and may get a real answer (transport failures, 5xx,
 * a request still in flight); false when the gateway refused the request itself (4xx).
 * `gatewayCode` is the gateway's own `error.code`, when it sent one.
 */
export interface ThreeDsError {
  kind: 'error';
  code: ThreeDsErrorCode;
  gatewayCode: string | null;
  message: string;
  httpStatus: number | null;
  safeToRetry: boolean;
}

export type ThreeDsPaymentResult = ThreeDsOutcome | ThreeDsError;

export type ThreeDsRefundResult =
  | { kind: 'refunded'; refundId: string; paymentId: string; amount: number; currency: string }
  | { kind: 'refund_pending'; refundId: string; paymentId: string; amount: number; currency: string }
  | { kind: 'refund_failed'; refundId: string; paymentId: string; message: string }
  | ThreeDsError;

export type ThreeDsCancelResult = { kind: 'canceled'; paymentId: string; payment: ThreeDsPayment } | ThreeDsError;

/**
 * A payment or refund looked up by our reference (the attempt id sent when it was created), after the
 * answer to the create was lost. `not_found`: the gateway has none with that reference — the create
 * never reached it, or was refused before anything was created; no money moved.
 */
export type ThreeDsPaymentLookup = ThreeDsPaymentResult | { kind: 'not_found' };
export type ThreeDsRefundLookup = ThreeDsRefundResult | { kind: 'not_found' };

export interface ThreeDsRefundRequest {
  paymentId: string;
  /** Minor units; omitted refunds what is left of the payment. */
  amount?: number;
  /** Our refund attempt id, sent as the Idempotency-Key and as the refund's `reference`. */
  attemptId: string;
}

export interface ThreeDsCancelRequest {
  paymentId: string;
  /** Sent as the Idempotency-Key. */
  attemptId: string;
}

/** The adapter: outcomes are values; only configuration bugs and invalid input throw. */
export interface ThreeDsGatewayAdapter {
  readonly kind: 'threeds';
  createPayment(account: GatewayAccount, req: ThreeDsPaymentRequest): Promise<ThreeDsPaymentResult>;
  retrievePayment(account: GatewayAccount, paymentId: string): Promise<ThreeDsPaymentResult>;
  refund(account: GatewayAccount, req: ThreeDsRefundRequest): Promise<ThreeDsRefundResult>;
  /** Voids a payment that has not settled, or one still waiting for authentication or review. */
  cancel(account: GatewayAccount, req: ThreeDsCancelRequest): Promise<ThreeDsCancelResult>;
  /** The payment created with `reference` = our attempt id (`GET /v1/payments?reference=…`), as `retrievePayment` reads it. */
  findPaymentByReference(account: GatewayAccount, reference: string): Promise<ThreeDsPaymentLookup>;
  /** The refund created with `reference` = our refund attempt id (`GET /v1/refunds?reference=…`). */
  findRefundByReference(account: GatewayAccount, reference: string): Promise<ThreeDsRefundLookup>;
}

/** A key with the `sk_test_` prefix is a test-mode key (spec §2.8). */
export function isTestApiKey(apiKey: string): boolean {
  return apiKey.startsWith('sk_test_');
}
