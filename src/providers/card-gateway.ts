import type { CardInput } from './card.ts';

/** One configured gateway: where it lives and how to sign in. Credentials are decrypted only for the call. */
export interface GatewayAccount {
  baseUrl: string;
  credentials: Record<string, string>;
  testMode: boolean;
  descriptor?: string | null;
}

export interface SaleRequest {
  /** Minor units of `currency` (cents for USD, yen for JPY). */
  amount: number;
  currency: string;
  orderId: string;
  /** Our attempt id, sent as the gateway's order id so a charge can be found from either side. */
  attemptId: string;
  card?: CardInput;
  vaultRef?: string;
  saveCard: boolean;
  customer?: { email?: string | null; first_name?: string | null; last_name?: string | null };
  billing?: { line1?: string; city?: string; state?: string; postal_code?: string; country?: string } | null;
}

/** A card verified and saved without a charge (NMI `type=validate` with `customer_vault=add_customer`). */
export type ValidateRequest = Omit<SaleRequest, 'amount' | 'card' | 'vaultRef' | 'saveCard'> & { card: CardInput };

/**
 * What the gateway said, as a value. `retryable` on a decline or an error means the same card may be
 * tried on another gateway (salvage): it is false whenever the charge may already have gone through.
 */
export type GatewayResult =
  | { kind: 'approved'; transactionId: string; authCode: string | null; responseCode: string; responseText: string; vaultRef: string | null }
  | { kind: 'declined'; transactionId: string | null; responseCode: string; responseText: string; retryable: boolean; hard: boolean }
  | { kind: 'error'; transactionId: string | null; responseCode: string; responseText: string; retryable: boolean };

/**
 * A lookup of what the gateway did, for crash recovery: by our attempt id (`orderId`, sent as the
 * gateway's order id on sales and refunds) or by the gateway's transaction id (a void is an action on
 * the transaction it voids). At least one of the two.
 */
export type GatewayQueryRequest = { orderId: string; transactionId?: string } | { orderId?: string; transactionId: string };

/** One event in a transaction's history as the gateway reports it (the sale itself, a void, a capture, a settlement…). */
export interface GatewayQueryAction {
  /** The gateway's action type, lower case: `sale`, `auth`, `capture`, `refund`, `credit`, `void`, `settle`, … */
  type: string;
  /** Minor units of the transaction's currency; null when absent or unreadable. */
  amountMinor: number | null;
  success: boolean;
  responseCode: string | null;
  responseText: string | null;
  /** ISO 8601 (UTC), when the gateway gave a date. */
  at: string | null;
}

/** A transaction found by a query, typed; no card number (the gateway masks it, and only the last four digits are kept). */
export interface GatewayQueriedTransaction {
  transactionId: string;
  orderId: string | null;
  /** What the transaction is: the type of its first money action (`sale`, `auth`, `refund`, `credit`, `validate`, …). */
  type: string;
  /** How that first action ended: approved, declined by the issuer, or refused / failed at the gateway or processor. */
  status: 'approved' | 'declined' | 'error';
  /** The gateway's own state of the transaction (NMI `condition`: `pendingsettlement`, `complete`, `pending`, `canceled`, `failed`, …). */
  condition: string | null;
  /** The first action's response code; when the gateway gave none, `100` approved, `200` declined, `300` error (as `GatewayResult` reads a bare answer). */
  responseCode: string;
  /** The first action's response text, or '' when the gateway gave none. */
  responseText: string;
  amountMinor: number | null;
  /** ISO 4217 upper case, when the gateway said. Without it amounts are read with two decimals. */
  currency: string | null;
  authCode: string | null;
  /** The saved card (customer vault id) this transaction saved or charged, else null. */
  vaultRef: string | null;
  cardLast4: string | null;
  /** Refunds the gateway lists as actions of this transaction (a refund is usually a transaction of its own). */
  refunds: GatewayQueryAction[];
  /** Voided (condition `canceled`, or a successful `void` action). */
  voided: boolean;
  actions: GatewayQueryAction[];
  /** ISO 8601 of the first action, when known. */
  createdAt: string | null;
}

/**
 * `not_found`: the gateway has no transaction for the filter — the request never reached it, or was
 * refused before it became a transaction; either way no money moved. `error`: nothing is known.
 */
export type GatewayQueryResult =
  | { kind: 'found'; transactions: GatewayQueriedTransaction[] }
  | { kind: 'not_found' }
  | { kind: 'error'; code: 'authentication_failed' | 'rejected' | 'network_error' | 'timeout' | 'bad_response'; message: string };

export interface CardGatewayAdapter {
  readonly kind: string;
  sale(account: GatewayAccount, req: SaleRequest): Promise<GatewayResult>;
  /** Checks a card with its issuer and saves it to the gateway's vault, charging nothing ($0 first payments). */
  validate(account: GatewayAccount, req: ValidateRequest): Promise<GatewayResult>;
  refund(account: GatewayAccount, req: { transactionId: string; amount: number; currency: string; attemptId: string }): Promise<GatewayResult>;
  void(account: GatewayAccount, req: { transactionId: string; attemptId: string }): Promise<GatewayResult>;
  /** Asks the gateway what happened to an attempt whose answer was lost. Never throws for expected outcomes. */
  query(account: GatewayAccount, req: GatewayQueryRequest): Promise<GatewayQueryResult>;
}
