/**
 * The external checkout provider (`extpay`, spec §1, §2.7): Whop. Whop is merchant of record; the card
 * never reaches us. We create a checkout configuration with an inline plan, send the customer to its
 * `purchase_url` (or mount Whop's embed with the plan and session ids), and learn the outcome from
 * Capture (`GET /payments/{id}`) and from Standard-Webhooks-signed events.
 *
 * The adapter speaks Whop's public REST API v1 (https://docs.whop.com/api-reference, the OpenAPI spec
 * behind github.com/whopio/whopsdk-typescript); docs/sandbox.md lists the paths and shapes, and which
 * parts could not be confirmed from the public material. A real Whop company works by setting the API
 * base URL, key, company id and webhook secret; `checkstand sandbox` serves the same API.
 *
 * Money is integer minor units everywhere in this module's interface; the wire carries Whop's decimal
 * major units (`wire.ts` converts, once).
 */

import type { ExtpayRefundRequest, ExtpayRefundResult, ExtpayVoidResult, ExtpayRefund, ExtpayRefundLookup, ExtpayMembershipResult, ExtpayCancelMode, ExtpayDisputeLookup } from './types-lifecycle.ts';

export const EXTPAY_ENVIRONMENTS = ['sandbox', 'production'] as const;
export type ExtpayEnvironment = (typeof EXTPAY_ENVIRONMENTS)[number];

/** Whop's own API bases (docs.whop.com: "sandbox and production share no accounts, keys, products, or webhooks"). */
export const WHOP_API_BASE_URLS: Readonly<Record<ExtpayEnvironment, string>> = {
  production: 'https://api.whop.com/api/v1',
  sandbox: 'https://sandbox-api.whop.com/api/v1',
};

/** The API base of `checkstand sandbox` for one environment: `${sandboxUrl}/extpay/{environment}/api/v1`. */
export function sandboxApiBaseUrl(sandboxUrl: string, environment: ExtpayEnvironment): string {
  return `${sandboxUrl.replace(/\/+$/, '')}/extpay/${environment}/api/v1`;
}

/**
 * One `extpay` connection (spec §2.7), decrypted for the call. `baseUrl` is the API base including
 * `/api/v1` (see `WHOP_API_BASE_URLS`); paths are appended to it.
 */
export interface ExtpayConnection {
  baseUrl: string;
  apiKey: string;
  /** `biz_…` */
  companyId: string;
  environment: ExtpayEnvironment;
  /** `ws_…` (sandbox) or `whsec_…` (production), as given; only the webhook verifier needs it. */
  webhookSecret?: string | null;
  /** The pinned `Api-Version-Date` every request sends; default `EXTPAY_API_VERSION_DATE`. */
  apiVersionDate?: string | null;
}

/**
 * The Whop API version the adapter speaks, sent as `Api-Version-Date` on every request
 * (docs.whop.com/developer/api/versioning: no header is the original 2025-01-01 behaviour, an unknown
 * date a 400). A connection may pin another; the wire shapes follow the version sent.
 */
export const EXTPAY_API_VERSION_DATE = '2026-07-01';
/** From this version on, list parameters name the account (`account_id`) and a checkout configuration takes `company_id` at its top level. */
export const EXTPAY_ACCOUNT_ID_SINCE = '2026-06-09';

/** Whether the connection's pinned version is account-scoped (see `EXTPAY_ACCOUNT_ID_SINCE`). */
export function accountScoped(conn: Pick<ExtpayConnection, 'apiVersionDate'>): boolean {
  return (conn.apiVersionDate ?? EXTPAY_API_VERSION_DATE) >= EXTPAY_ACCOUNT_ID_SINCE;
}

/**
 * What Whop's "Create checkout configuration" requires (docs.whop.com/api-reference/checkout-configurations/
 * create-checkout-configuration): spec §2.7 names three families; the reference lists five permissions.
 */
export const EXTPAY_CHECKOUT_PERMISSIONS = ['checkout_configuration:create', 'plan:create', 'access_pass:create', 'access_pass:update', 'checkout_configuration:basic:read'] as const;

/** Every permission the integration uses, by what it is for (the connection doctor checks each one). */
export const EXTPAY_INTEGRATION_PERMISSIONS = {
  'create checkouts': EXTPAY_CHECKOUT_PERMISSIONS,
  'read payments and refunds': ['payment:basic:read'],
  'read plans (crash recovery)': ['plan:basic:read'],
  'charge saved payment methods (upsells)': ['payment:charge'],
  'refund and void': ['payment:manage'],
  'read disputes': ['payment:dispute:read'],
  'read memberships': ['member:basic:read'],
  'cancel, pause and resume memberships': ['member:manage'],
  'read saved payment methods': ['member:payment_methods:read'],
  'read webhooks (the doctor only)': ['developer:manage_webhook'],
} as const satisfies Record<string, readonly string[]>;

// ---- plans and checkouts ----

/**
 * The plan a checkout carries (one per checkout, spec §8), in Whop's terms with minor units:
 *
 * - `one_time`: `initialPrice` is charged at checkout.
 * - `renewal`: `initialPrice` is charged at checkout *in addition to* the first period's
 *   `renewalPrice`, unless there is a trial, in which case only `initialPrice` is charged and the
 *   first `renewalPrice` falls due when the trial ends. (Whop documents `initial_price` as "an
 *   additional amount charged upon first purchase"; `renewalPlanFor` builds these fields from a cart.)
 */
export type ExtpayPlanInput =
  | { planType: 'one_time'; initialPrice: number }
  | { planType: 'renewal'; initialPrice: number; renewalPrice: number; billingPeriodDays: number; trialPeriodDays?: number | null };

export interface ExtpayCheckoutRequest {
  /** ISO 4217; sent lower case as Whop expects. */
  currency: string;
  plan: ExtpayPlanInput;
  /** Copied by Whop onto the payments and memberships of this checkout: put the order number and attempt id here. */
  metadata?: Record<string, string>;
  /** Where Whop sends the customer after paying on the hosted page. */
  redirectUrl?: string | null;
  /** The product the inline plan belongs to; found or created by its external identifier. */
  product?: { externalIdentifier: string; title: string } | null;
  /** The plan's title, shown on the hosted page. */
  title?: string | null;
  /** Sent as `Idempotency-Key`; our attempt id. */
  idempotencyKey?: string | null;
}

export interface ExtpayPlan {
  id: string;
  planType: 'one_time' | 'renewal';
  currency: string;
  /** Minor units. */
  initialPrice: number;
  /** Minor units. */
  renewalPrice: number;
  billingPeriodDays: number | null;
  trialPeriodDays: number | null;
}

export interface ExtpayCheckout {
  /** `ch_…`: the embed's `session_id`. */
  id: string;
  companyId: string | null;
  plan: ExtpayPlan;
  purchaseUrl: string;
  redirectUrl: string | null;
  metadata: Record<string, unknown>;
}

/** `data.checkout` of a Create Order answer (spec §2.4), built by `embedCheckout`. */
export interface ExtpayEmbedCheckout {
  provider: 'extpay';
  session_id: string;
  plan_id: string;
  environment: ExtpayEnvironment;
  setup_future_usage: 'off_session';
  purchase_url: string;
  prefill: { email: string; name: string };
}

// ---- payments ----

/** Whop's receipt statuses (`ReceiptStatus`); `status.ts` maps each one once. */
export const EXTPAY_PAYMENT_STATUSES = ['draft', 'open', 'paid', 'pending', 'uncollectible', 'unresolved', 'void'] as const;
export type ExtpayPaymentStatus = (typeof EXTPAY_PAYMENT_STATUSES)[number];

/** A Whop payment (receipt) as the adapter reads it: camelCase, minor units, no card number. */
export interface ExtpayPayment {
  /** `pay_…`: the receipt id the embed hands back. */
  id: string;
  status: ExtpayPaymentStatus | null;
  /** Whop's friendly status: `succeeded`, `pending`, `failed`, `refunded`, `partially_refunded`, `open_dispute`, … */
  substatus: string | null;
  /** Minor units (Whop's `total`, else `subtotal`). */
  amount: number;
  currency: string;
  /** Minor units refunded and settled so far. */
  refundedAmount: number;
  /** `one_time`, `subscription_create`, `subscription_cycle`, `manual`, … */
  billingReason: string | null;
  failureMessage: string | null;
  companyId: string | null;
  planId: string | null;
  productId: string | null;
  membershipId: string | null;
  membershipStatus: string | null;
  memberId: string | null;
  userId: string | null;
  email: string | null;
  cardBrand: string | null;
  cardLast4: string | null;
  /** The checkout's metadata, copied by Whop (order number, attempt id). */
  metadata: Record<string, unknown>;
  refundable: boolean;
  voidable: boolean;
  /** ISO 8601. */
  createdAt: string | null;
  paidAt: string | null;
  disputeAlertedAt: string | null;
}

/** What a payment came to, for Capture, upsells and webhooks. */
export type ExtpayPaymentOutcome =
  | { kind: 'approved'; paymentId: string; payment: ExtpayPayment }
  /** The provider has the money (or is charging) but has not settled: a webhook decides (spec §3.2). */
  | { kind: 'pending'; paymentId: string; payment: ExtpayPayment }
  | { kind: 'declined'; paymentId: string; code: string; message: string; payment: ExtpayPayment };

export type ExtpayErrorCode =
  | 'network_error'
  | 'timeout'
  | 'bad_response'
  | 'provider_error'
  | 'authentication_failed'
  | 'forbidden'
  | 'invalid_request'
  | 'not_found'
  | 'idempotency_conflict'
  | 'rate_limited'
  | 'in_progress';

/**
 * The call did not produce an answer we can act on. `safeToRetry`: the same call (same
 * Idempotency-Key) may be sent again; false when the provider refused the request itself.
 */
export interface ExtpayError {
  kind: 'error';
  code: ExtpayErrorCode;
  /** The provider's own error type or code, when it sent one. */
  providerCode: string | null;
  message: string;
  httpStatus: number | null;
  safeToRetry: boolean;
}

export type ExtpayPaymentResult = ExtpayPaymentOutcome | ExtpayError;

export interface ExtpayPaymentList {
  kind: 'list';
  payments: ExtpayPayment[];
  hasNextPage: boolean;
  endCursor: string | null;
}

export interface ExtpayListPaymentsQuery {
  /** Only payments of these plans: a checkout's plan is unique to it, so this finds an order's payments. */
  planIds?: string[];
  statuses?: ExtpayPaymentStatus[];
  /** ISO 8601: only payments created at or after this (Whop's `created_after`). */
  createdAfter?: string | null;
  /** Page size, 1–100 (default 25). */
  first?: number;
  /** `endCursor` of the previous page. */
  after?: string | null;
}

/** An upsell (spec §4.3): charges the member's saved payment method off-session. */
export interface ExtpayChargeRequest {
  memberId: string;
  paymentMethodId: string;
  currency: string;
  /** Minor units; a one-time plan is created inline for it. */
  amount: number;
  title?: string | null;
  product?: { externalIdentifier: string; title: string } | null;
  /**
   * Sent as `Idempotency-Key`. Whop's create-payment body has no `metadata`: the payment is tied to
   * the upsell by the id this call answers with (the webhook carries the same id).
   */
  idempotencyKey?: string | null;
  /**
   * Our attempt id (default: `idempotencyKey`). Written into the inline plan's `internal_notes` (a plan
   * made for this charge alone), so `findPaymentByAttempt` can find the payment if this answer is lost.
   */
  attemptId?: string | null;
}

/** What `findPaymentByAttempt` looks for: the payment one of our attempts created. */
export interface ExtpayFindPaymentQuery {
  attemptId: string;
  /**
   * The member the charge was for (an upsell's saved-method charge): only their payments are looked at.
   * Whop's list has no member filter; the adapter filters the pages it reads.
   */
  memberId?: string | null;
  /**
   * ISO 8601: the attempt's creation less a margin for clock skew (a minute). Bounds the scan; without
   * it every payment of the company is a candidate, up to the scan's limit.
   */
  createdAfter?: string | null;
}

/**
 * `found`: the payment the attempt created (`metadata.attempt_id` from its checkout, or the inline
 * plan's `internal_notes` of a saved-method charge) and its outcome as `retrievePayment` reads it;
 * `duplicates` are further payments of the same attempt (there should be none: Idempotency-Key).
 * `not_found`: none among the company's payments since `createdAfter` — no money moved.
 * `inconclusive`: too many payments to look through; narrow with `memberId` / `createdAfter`.
 */
export type ExtpayPaymentLookup =
  | { kind: 'found'; payment: ExtpayPayment; outcome: ExtpayPaymentResult; duplicates: ExtpayPayment[] }
  | { kind: 'not_found' }
  | { kind: 'inconclusive'; message: string }
  | ExtpayError;

/** What `findRefundByAttempt` looks for: the refund our refund attempt requested of `paymentId`. */
export interface ExtpayFindRefundQuery {
  paymentId: string;
  /** ISO 8601: the refund attempt's creation less a margin for clock skew. Earlier refunds are not ours. */
  createdAfter: string;
}

/**
 * `found`: the first refund of the payment created since the attempt began (only one refund attempt
 * of a payment may be open at a time, so it is ours); `later`: refunds created after it (other
 * attempts, or the dashboard). `not_found`: the provider made no refund — nothing was refunded.
 */
export type ExtpayRefundAttemptLookup = { kind: 'found'; refund: ExtpayRefund; later: ExtpayRefund[] } | { kind: 'not_found' } | ExtpayError;

export interface ExtpayPaymentMethod {
  /** `payt_…` on Whop. */
  id: string;
  type: string | null;
  cardBrand: string | null;
  cardLast4: string | null;
  createdAt: string | null;
}

export type ExtpayPaymentMethodsResult = { kind: 'list'; methods: ExtpayPaymentMethod[] } | ExtpayError;

// ---- refunds, voids, memberships, disputes, setup intents: types-lifecycle.ts ----
export * from './types-lifecycle.ts';

// ---- connection test (spec §2.7) ----

export type ExtpayConnectionTest =
  | { kind: 'connected' }
  /**
   * The key authenticates for the company but lacks permissions checkouts need: the five checkout
   * ones, or `payment:basic:read` (without it no checkout's payment can be confirmed). `exact`: the
   * provider named them; false when its 403 did not say which, and `missing` lists every candidate.
   */
  | { kind: 'cannot_create_checkouts'; message: string; missing: string[]; exact: boolean }
  /** Wrong key, wrong company id, or the other environment's credentials; `cause: 'api_version'` when the provider refused the pinned Api-Version-Date before looking at the key. */
  | { kind: 'failed_to_authenticate'; message: string; cause?: 'api_version' }
  /** The provider could not be asked (network, 5xx): nothing is known. */
  | ExtpayError;

export type ExtpayCheckoutResult = { kind: 'created'; checkout: ExtpayCheckout } | ExtpayError;

/** One raw call's answer (the connection doctor reads status codes and bodies itself). */
export type ExtpayProbe = { ok: true; status: number; json: unknown } | { ok: false; error: ExtpayError };

/** The adapter: outcomes are values; only configuration bugs and invalid input throw. */
export interface ExtpayProviderAdapter {
  readonly kind: 'extpay';
  /** A read, or a call the provider refuses before acting (the doctor's probes); never moves money. */
  probe(conn: ExtpayConnection, method: 'GET' | 'POST', path: string, body?: unknown): Promise<ExtpayProbe>;
  testConnection(conn: ExtpayConnection): Promise<ExtpayConnectionTest>;
  createCheckout(conn: ExtpayConnection, req: ExtpayCheckoutRequest): Promise<ExtpayCheckoutResult>;
  retrievePayment(conn: ExtpayConnection, paymentId: string): Promise<ExtpayPaymentResult>;
  listPayments(conn: ExtpayConnection, query?: ExtpayListPaymentsQuery): Promise<ExtpayPaymentList | ExtpayError>;
  chargeSavedPaymentMethod(conn: ExtpayConnection, req: ExtpayChargeRequest): Promise<ExtpayPaymentResult>;
  listPaymentMethods(conn: ExtpayConnection, memberId: string): Promise<ExtpayPaymentMethodsResult>;
  refundPayment(conn: ExtpayConnection, req: ExtpayRefundRequest): Promise<ExtpayRefundResult>;
  /** Crash recovery: the payment an attempt created, by our attempt id (see `ExtpayPaymentLookup`). */
  findPaymentByAttempt(conn: ExtpayConnection, query: ExtpayFindPaymentQuery): Promise<ExtpayPaymentLookup>;
  /** Crash recovery: the refund a refund attempt requested (`GET /refunds?payment_id=…&created_after=…`). */
  findRefundByAttempt(conn: ExtpayConnection, query: ExtpayFindRefundQuery): Promise<ExtpayRefundAttemptLookup>;
  voidPayment(conn: ExtpayConnection, req: { paymentId: string; idempotencyKey?: string | null }): Promise<ExtpayVoidResult>;
  retrieveRefund(conn: ExtpayConnection, refundId: string): Promise<ExtpayRefundLookup>;
  retrieveDispute(conn: ExtpayConnection, disputeId: string): Promise<ExtpayDisputeLookup>;
  retrieveMembership(conn: ExtpayConnection, membershipId: string): Promise<ExtpayMembershipResult>;
  cancelMembership(conn: ExtpayConnection, membershipId: string, mode?: ExtpayCancelMode): Promise<ExtpayMembershipResult>;
  uncancelMembership(conn: ExtpayConnection, membershipId: string): Promise<ExtpayMembershipResult>;
  pauseMembership(conn: ExtpayConnection, membershipId: string): Promise<ExtpayMembershipResult>;
  resumeMembership(conn: ExtpayConnection, membershipId: string): Promise<ExtpayMembershipResult>;
}
