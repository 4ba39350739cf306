import { iso } from '../../app/schemas.ts';
import type { Row } from '../../db/schema.ts';

/** The response code of an extpay refund the provider accepted but has not settled. */
export { EXTPAY_REFUND_REQUESTED } from '../../providers/extpay/provider.ts';

export function transactionView(t: Row<'transactions'>) {
  return {
    object: 'transaction' as const,
    id: t.id,
    order_number: t.order_id,
    parent_id: t.parent_id,
    type: t.type,
    status: t.status,
    amount: t.amount,
    currency: t.currency,
    gateway_id: t.gateway_id,
    router_id: t.router_id,
    attempt: t.attempt,
    upsell_id: t.upsell_id,
    provider_ref: t.provider_ref,
    auth_code: t.auth_code,
    response_code: t.response_code,
    response_text: t.response_text,
    card: t.card_last4 ? { brand: t.card_brand, bin: t.card_bin, last4: t.card_last4, exp: t.card_exp } : null,
    connection_id: t.connection_id,
    provisional: t.provisional,
    requested_amount: t.requested_amount,
    is_test: t.is_test,
    created_at: iso(t.created_at),
  };
}
export type TransactionView = ReturnType<typeof transactionView>;

export function disputeView(d: Row<'disputes'>) {
  return {
    object: 'dispute' as const,
    id: d.id,
    order_number: d.order_id,
    transaction_id: d.transaction_id,
    provider_ref: d.provider_ref,
    status: d.status,
    reason: d.reason,
    amount: d.amount,
    currency: d.currency,
    chargeback_transaction_id: d.chargeback_id,
    created_at: iso(d.created_at),
    updated_at: iso(d.updated_at),
  };
}

export interface ListTransactionsQuery {
  limit: number;
  starting_after?: string | undefined;
  created_gte?: Date | undefined;
  created_lte?: Date | undefined;
  order_number?: string | undefined;
  status?: string | undefined;
  type?: string | undefined;
  is_test?: boolean | undefined;
}


/** What the provider said about an extpay payment that settled a first payment. */
export interface ExternalPaid {
  paymentRef: string;
  memberRef: string | null;
  membershipRef: string | null;
  cardBrand: string | null;
  cardLast4: string | null;
}

/** How a pending first payment ended (3-D Secure gateway or extpay). */
export type FirstPaymentOutcome =
  | { approved: true; paymentMethod: string | null; external?: ExternalPaid }
  | { approved: false; code: string; message: string; paymentRef?: string | null };
