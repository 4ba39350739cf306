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
  /** A card saved by an earlier approved payment: a merchant-initiated charge, never redirected. */
  saved?: { vaultRef: string; originalRef: string | null };
  saveCard: boolean;
  payer: Payer;
  billing?: { line1?: string; city?: string; state?: string; postal_code?: string; country?: string } | null;
  /** Where a redirect-capable provider sends the customer, and its risk SDK's session. */
  redirect?: { returnUrl?: string | undefined; cancelUrl?: string | undefined; riskSessionId?: string | undefined };
}

/**
 * What a charge came to. `unknown`: the provider may or may not have charged (a timeout, a broken
 * answer); the attempt stays open until the provider is asked again (`findCharge`).
 */
export type ChargeOutcome =
  | { kind: 'approved'; providerRef: string; authCode: string | null; code: string; text: string; vaultRef: string | null }
  | { kind: 'declined'; providerRef: string | null; code: string; text: string; retryable: boolean }
  | { kind: 'pending'; providerRef: string; code: string; text: string }
  | { kind: 'redirect'; providerRef: string; url: string; code: string; text: string }
  | { kind: 'unknown'; providerRef: string | null; code: string; text: string };

/** A refund or a void. */
export type ReversalOutcome =
  | { kind: 'approved'; providerRef: string | null; code: string; text: string }
  | { kind: 'declined'; providerRef: string | null; code: string; text: string }
  | { kind: 'unknown'; providerRef: string | null; code: string; text: string };

/** What the provider knows of one of our attempts, asked by its id after the answer was lost. */
export type Found<T> = T | { kind: 'not_found' };

export interface ReversalRequest {
  attemptId: string;
  /** The provider's id of the charge being reversed. */
  chargeRef: string;
  amount: number;
  currency: string;
}

export interface CardProvider {
  readonly kind: string;
  readonly capabilities: ProviderCapabilities;
  charge(account: GatewayAccount, req: ChargeRequest): Promise<ChargeOutcome>;
  /** Where a redirected or held charge stands now (Capture, webhooks, the watchdog). */
  retrieve(account: GatewayAccount, providerRef: string): Promise<ChargeOutcome>;
  /** The charge our attempt made, found by our attempt id; `not_found` when the provider never saw it. */
  findCharge(account: GatewayAccount, attemptId: string): Promise<Found<ChargeOutcome>>;
  refund(account: GatewayAccount, req: ReversalRequest): Promise<ReversalOutcome>;
  void(account: GatewayAccount, req: Omit<ReversalRequest, 'amount'>): Promise<ReversalOutcome>;
  /** The refund or void our attempt made, found by our attempt id. */
  findReversal(account: GatewayAccount, req: ReversalRequest & { type: 'refund' | 'void' }): Promise<Found<ReversalOutcome>>;
}

/** The card providers by gateway kind. */
export type CardProviders = Readonly<Record<string, CardProvider>>;

export function providerFor(providers: CardProviders, kind: string): CardProvider {
  const p = providers[kind];
  // Gateway kinds are checked on write: an unknown one is a deployment bug, not a client error.
  if (!p) throw new Error(`no payment provider is registered for gateway kind ${kind}`);
  return p;
}
