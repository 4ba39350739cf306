import type { GatewayAccount } from './card-gateway.ts';

/**
 * The one contract the payment core speaks to a card provider through. Each provider kind (NMI's
 * Direct Post gateway, the 3-D Secure gateway) implements it in its own folder, mapping its wire
 * answers to these outcomes exhaustively; the core never branches on a provider kind, it reads
 * `capabilities`. Expected outcomes are values; only bugs and misconfiguration throw.
 */
export interface ProviderCapabilities {
  /** Answers a card charge at once (approved or declined). */
  syncCard: boolean;
  /** May answer a customer-present charge with a redirect (3-D Secure) settled later by Capture or a webhook. */
  redirect: boolean;
  /** Takes the payment on its own page as merchant of record (the external checkout provider). */
  externalCheckout: boolean;
}

export interface Payer {
  email: string | null;
  first_name: string | null;
  last_name: string | null;
}

export interface ChargeRequest {
  /** Our attempt id: the provider's idempotency key / order id, so the charge can be found from either side. */
  attemptId: string;
  orderId: string;
  /** Minor units of `currency`. */
  amount: number;
  currency: string;
  /** A card the customer typed now (held in memory only); exactly one of `card` and `saved`. */
  card?: { number: string; exp: string; cvv: string };
  /**
   * A payment method saved by an earlier approved payment: a merchant-initiated charge, never
   * redirected. `memberRef`: the provider's customer it belongs to (the external checkout provider).
   */
  saved?: { vaultRef: string; originalRef: string | null; memberRef?: string | null };
  /** What the customer sees on the charge, where the provider shows one (the external checkout provider's inline plan). */
  description?: string;
  saveCard: boolean;
  payer: Payer;
  billing?: { line1?: string; city?: string; state?: string; postal_code?: string; country?: string } | null;
  /** Where a redirect-capable provider sends the customer, and its risk SDK's session. */
  redirect?: { returnUrl?: string | undefined; cancelUrl?: string | undefined; riskSessionId?: string | undefined };
}

/**
 * A $0 first payment (a free trial, a fully discounted cart): the card the customer typed is
 * checked with its issuer and saved for merchant-initiated charges, and nothing is charged. A
 * redirect-capable provider may answer `redirect` (3-D Secure), settled by Capture like a paid
 * first payment; the approved answer's `providerRef` is then the authenticated payment rebills chain to.
 */
export type VerifyRequest = Omit<ChargeRequest, 'amount' | 'card' | 'saved' | 'saveCard' | 'description'> & { card: NonNullable<ChargeRequest['card']> };

/**
 * What a charge came to. `unknown`: the provider may or may not have charged (a timeout, a broken
 * answer); the attempt stays open until the provider is asked again (`findCharge`).
 */
export type ChargeOutcome =
  | { kind: 'approved'; providerRef: string; authCode: string | null; code: string; text: string; vaultRef: string | null }
  /**
   * `retryable`: the same card may be tried on another gateway now (decline salvage). `hard`: the
   * card itself is the problem (lost, stolen, expired, recurring payments stopped by the
   * cardholder), so dunning must not retry it; absent or false is a soft decline a later retry may turn.
   */
  | { kind: 'declined'; providerRef: string | null; code: string; text: string; retryable: boolean; hard?: boolean }
  | { kind: 'pending'; providerRef: string; code: string; text: string }
  | { kind: 'redirect'; providerRef: string; url: string; code: string; text: string }
  | { kind: 'unknown'; providerRef: string | null; code: string; text: string };

/** A refund or a void. */
export type ReversalOutcome =
  | { kind: 'approved'; providerRef: string | null; code: string; text: string }
  | { kind: 'declined'; providerRef: string | null; code: string; text: string }
  | { kind: 'unknown'; providerRef: string | null; code: string; text: string };

/** The customer a payment taken on the provider's own checkout was made by (the external checkout provider). */
export interface ExternalPayer {
  memberRef: string | null;
  membershipRef: string | null;
  cardBrand: string | null;
  cardLast4: string | null;
}

/** A first payment left pending (a 3-D Secure redirect, a held payment, an external checkout), as Capture and the watchdog ask about it. */
export interface PendingPayment {
  orderId: string;
  /** The provider's payment id, once known. */
  providerRef: string | null;
  /** The external checkout's plan (its payment is found through it until its id is known). */
  planRef: string | null;
  /** The receipt the customer's browser brought back (Capture's payment_id). */
  receipt?: string | undefined;
}

/** Where a pending first payment stands at its provider. */
export type Confirmation =
  | { kind: 'approved'; providerRef: string; vaultRef: string | null; payer: ExternalPayer | null }
  | { kind: 'pending'; providerRef: string | null }
  | { kind: 'declined'; providerRef: string | null; code: string; text: string }
  /** The customer has not finished authenticating (3-D Secure). */
  | { kind: 'redirect' }
  /** No such receipt, or nothing paid in the checkout yet. */
  | { kind: 'not_found' }
  /** The receipt is another order's. */
  | { kind: 'foreign' }
  | { kind: 'unknown'; text: string };

/** What the provider knows of one of our attempts, asked by its id after the answer was lost. */
export type Found<T> = T | { kind: 'not_found' };

export interface ReversalRequest {
  attemptId: string;
  /** The provider's id of the charge being reversed. */
  chargeRef: string;
  amount: number;
  currency: string;
  /** The refund takes all that is left of the charge (a provider may want no amount then). */
  full?: boolean;
}

/** One of our attempts, as the recovery run asks a provider about it. */
export interface AttemptRef {
  id: string;
  createdAt: Date;
  /** The provider's customer a saved-method charge was made for, where the provider lists charges by customer. */
  memberRef?: string | null;
}

/** One named check of a connection doctor: what it found and, unless it passed, what to do about it. */
export interface DoctorCheck {
  name: string;
  status: 'pass' | 'warn' | 'fail';
  message: string;
  /** Plain-language fix; null when the check passed. */
  fix: string | null;
  /** Measurements and names the check found (missing permissions, clock skew, the URL seen). */
  details?: Record<string, unknown>;
}

/** A doctor's answer: the checks, and the worst of them (`fail` if any failed, else `warn` if any warned, else `pass`). */
export interface DoctorReport {
  object: 'doctor_report';
  status: DoctorCheck['status'];
  checks: DoctorCheck[];
  checked_at: string;
}

export function doctorReport(checks: DoctorCheck[]): DoctorReport {
  const status = checks.some((c) => c.status === 'fail') ? 'fail' : checks.some((c) => c.status === 'warn') ? 'warn' : 'pass';
  return { object: 'doctor_report', status, checks, checked_at: new Date().toISOString() };
}

/** What a doctor needs to know of this install. */
export interface DiagnoseContext {
  /** Where this install receives the provider's webhooks for this account (the provider's webhook URL should be this). */
  webhookUrl: string;
  /** The record's test mode (card gateways) or environment (`sandbox` is test mode). */
  testMode: boolean;
  /**
   * Whether this install's receiver verified a delivery of this event id with THIS account's saved
   * secret and recorded it for this account (a 2xx alone may come from another account of the same
   * provider company whose secret verified). Absent: the round trip is judged by the 2xx.
   */
  recordedDelivery?(eventId: string): Promise<boolean>;
}

export interface PaymentProvider<Account> {
  readonly kind: string;
  readonly capabilities: ProviderCapabilities;
  charge(account: Account, req: ChargeRequest): Promise<ChargeOutcome>;
  /** Where a redirected or held charge stands now (Capture, webhooks, the watchdog). */
  retrieve(account: Account, providerRef: string): Promise<ChargeOutcome>;
  /** Where a pending first payment stands: Capture (with the customer's receipt) and the watchdog. */
  confirm(account: Account, payment: PendingPayment): Promise<Confirmation>;
  /** The charge our attempt made, found by our attempt id; `not_found` when the provider never saw it. */
  findCharge(account: Account, attempt: AttemptRef): Promise<Found<ChargeOutcome>>;
  refund(account: Account, req: ReversalRequest): Promise<ReversalOutcome>;
  void(account: Account, req: Omit<ReversalRequest, 'amount'>): Promise<ReversalOutcome>;
  /** The refund or void our attempt made, found by our attempt id (or, where it has none, on the charge). */
  findReversal(account: Account, req: ReversalRequest & { type: 'refund' | 'void'; since: Date }): Promise<Found<ReversalOutcome>>;
  /**
   * Optional: the connection doctor's named checks (keys, environment, permissions, webhooks, a signed
   * test delivery). Reads and test deliveries only: it changes nothing at the provider.
   */
  diagnose?(account: Account, ctx: DiagnoseContext): Promise<DoctorCheck[]>;
}

/** A card gateway: an account is its base URL and credentials. */
export interface CardProvider extends PaymentProvider<GatewayAccount> {
  /**
   * Verifies and saves a card without charging it (see `VerifyRequest`). Found again after a lost
   * answer by `findCharge` with the same attempt id, like a charge.
   */
  verify(account: GatewayAccount, req: VerifyRequest): Promise<ChargeOutcome>;
}

/** The card providers by gateway kind. */
export type CardProviders = Readonly<Record<string, CardProvider>>;

/** A provider with its account in hand: what the payment core calls, whatever the provider. */
export interface BoundProvider {
  readonly kind: string;
  readonly capabilities: ProviderCapabilities;
  charge(req: ChargeRequest): Promise<ChargeOutcome>;
  retrieve(providerRef: string): Promise<ChargeOutcome>;
  confirm(payment: PendingPayment): Promise<Confirmation>;
  findCharge(attempt: AttemptRef): Promise<Found<ChargeOutcome>>;
  refund(req: ReversalRequest): Promise<ReversalOutcome>;
  void(req: Omit<ReversalRequest, 'amount'>): Promise<ReversalOutcome>;
  findReversal(req: ReversalRequest & { type: 'refund' | 'void'; since: Date }): Promise<Found<ReversalOutcome>>;
}

export function bindProvider<Account>(p: PaymentProvider<Account>, account: Account): BoundProvider {
  return {
    kind: p.kind,
    capabilities: p.capabilities,
    charge: (req) => p.charge(account, req),
    retrieve: (ref) => p.retrieve(account, ref),
    confirm: (payment) => p.confirm(account, payment),
    findCharge: (attempt) => p.findCharge(account, attempt),
    refund: (req) => p.refund(account, req),
    void: (req) => p.void(account, req),
    findReversal: (req) => p.findReversal(account, req),
  };
}

export function providerFor(providers: CardProviders, kind: string): CardProvider {
  const p = providers[kind];
  // Gateway kinds are checked on write: an unknown one is a deployment bug, not a client error.
  if (!p) throw new Error(`no payment provider is registered for gateway kind ${kind}`);
  return p;
}
