import { iso } from '../../app/schemas.ts';
import type { Executor } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import type { LedgerService } from '../ledger/service.ts';

/** What a subscription shows of the card it charges: brand, last 4 and expiry, never more. */
export interface PaymentMethodSummary {
  brand: string;
  last4: string;
  exp: string;
}

export function paymentMethodSummary(m: Row<'payment_methods'> | undefined | null): PaymentMethodSummary | null {
  return m ? { brand: m.brand, last4: m.last4, exp: m.exp } : null;
}

/** Card subscriptions in these statuses are not billed on any date (Restart or Reactivate decides the next one). */
const NOT_BILLED = new Set(['paused', 'cancelled', 'completed', 'expired']);

/**
 * A subscription as the API shows it. `paymentMethod`: the card it charges, read through the ledger
 * (`paymentMethodsOf`); null when not given. A card subscription's next billing date is the one its
 * schedule set (dueAt(cycle + 1)), shown while it is billed or ended on it; an external one's is the
 * provider's, mirrored.
 */
export function subscriptionView(s: Row<'subscriptions'>, paymentMethod: PaymentMethodSummary | null = null) {
  return {
    object: 'subscription' as const,
    id: s.id,
    order_number: s.order_id,
    customer_number: s.customer_id,
    offer_id: s.offer_id,
    status: s.status,
    interval_unit: s.interval_unit,
    interval_count: s.interval_count,
    quantity: s.quantity,
    recurring_price: s.recurring_price,
    currency: s.currency,
    next_billing_at: !s.externally_managed && NOT_BILLED.has(s.status) ? null : iso(s.next_billing_at),
    cycle: s.cycle,
    payment_method: paymentMethod,
    retry_count: s.retry_count,
    retry_at: iso(s.retry_at),
    ended_at: iso(s.ended_at),
    end_reason: s.end_reason,
    externally_managed: s.externally_managed,
    membership_ref: s.membership_ref,
    created_at: iso(s.created_at),
    updated_at: iso(s.updated_at),
  };
}
export type SubscriptionView = ReturnType<typeof subscriptionView>;

/** The cards these subscriptions charge, by payment method id. */
export async function paymentMethodsOf(
  ledger: Pick<LedgerService, 'findPaymentMethod'>,
  db: Executor,
  teamId: string,
  subs: readonly Row<'subscriptions'>[],
): Promise<Map<string, PaymentMethodSummary>> {
  const ids = [...new Set(subs.map((s) => s.payment_method_id).filter((id): id is string => id !== null))];
  const out = new Map<string, PaymentMethodSummary>();
  // One at a time: inside a transaction the queries share one connection.
  for (const id of ids) {
    const m = await ledger.findPaymentMethod(db, teamId, id);
    if (m) out.set(m.id, paymentMethodSummary(m)!);
  }
  return out;
}

/** One subscription's view with its card. */
export async function viewWithCard(ledger: Pick<LedgerService, 'findPaymentMethod'>, db: Executor, s: Row<'subscriptions'>) {
  const methods = await paymentMethodsOf(ledger, db, s.team_id, [s]);
  return subscriptionView(s, s.payment_method_id ? (methods.get(s.payment_method_id) ?? null) : null);
}

/** A list page's fetch and view (listPage) for subscriptions with their cards: each page's cards are read once. */
export function withCards(ledger: Pick<LedgerService, 'findPaymentMethod'>, db: Executor, teamId: string, fetch: (afterSeq: number | null) => Promise<Row<'subscriptions'>[]>) {
  let cards = new Map<string, PaymentMethodSummary>();
  return {
    fetch: async (afterSeq: number | null) => {
      const rows = await fetch(afterSeq);
      cards = await paymentMethodsOf(ledger, db, teamId, rows);
      return rows;
    },
    view: (s: Row<'subscriptions'>) => subscriptionView(s, (s.payment_method_id && cards.get(s.payment_method_id)) || null),
  };
}
