import { notFound } from '../../app/errors.ts';
import { iso, type ListQuery } from '../../app/schemas.ts';
import { newId } from '../../app/ids.ts';
import type { Store, Tx } from '../../db/database.ts';
import { listPage, type Page } from '../../db/pagination.ts';
import type { Row } from '../../db/schema.ts';
import * as repo from './repo.ts';

export function subscriptionView(s: Row<'subscriptions'>) {
  return {
    object: 'subscription' as const,
    id: s.id,
    order_number: s.order_id,
    customer_number: s.customer_id,
    offer_id: s.offer_id,
    status: s.status,
    interval_unit: s.interval_unit,
    interval_count: s.interval_count,
    recurring_price: s.recurring_price,
    currency: s.currency,
    next_billing_at: iso(s.next_billing_at),
    externally_managed: s.externally_managed,
    membership_ref: s.membership_ref,
    created_at: iso(s.created_at),
    updated_at: iso(s.updated_at),
  };
}
type SubscriptionView = ReturnType<typeof subscriptionView>;

export function addInterval(from: Date, unit: string, count: number): Date {
  const d = new Date(from);
  if (unit === 'day') d.setUTCDate(d.getUTCDate() + count);
  else if (unit === 'week') d.setUTCDate(d.getUTCDate() + 7 * count);
  else if (unit === 'month') d.setUTCMonth(d.getUTCMonth() + count);
  else d.setUTCFullYear(d.getUTCFullYear() + count);
  return d;
}

export interface RecurringLine {
  offer: Row<'offers'>;
  quantity: number;
}

export class SubscriptionsService {
  constructor(private readonly store: Store) {}

  /**
   * At completion: one subscription per recurring or trial line, billed by us (not externally
   * managed). A trial's first renewal is after its trial days; a recurring line's after one interval.
   */
  async createForOrder(
    trx: Tx,
    teamId: string,
    order: { id: string; customer_id: string; currency: string },
    lines: RecurringLine[],
    now = new Date(),
    /** extpay: the provider bills; status and next billing date are mirrored from it, never computed. */
    external?: { membershipRef: string | null },
  ) {
    const created: Row<'subscriptions'>[] = [];
    for (const { offer, quantity } of lines) {
      if (offer.billing_type === 'one_time' || !offer.interval_unit || !offer.interval_count) continue;
      const trial = offer.billing_type === 'trial' && offer.trial_days;
      const next = trial ? addInterval(now, 'day', offer.trial_days!) : addInterval(now, offer.interval_unit, offer.interval_count);
      created.push(
        await repo.insertSubscription(trx, {
          id: newId('subscription'),
          team_id: teamId,
          order_id: order.id,
          customer_id: order.customer_id,
          offer_id: offer.id,
          status: trial ? 'trialing' : 'active',
          externally_managed: external !== undefined,
          membership_ref: external?.membershipRef ?? null,
          interval_unit: offer.interval_unit,
          interval_count: offer.interval_count,
          recurring_price: (offer.recurring_price ?? 0) * quantity + (offer.recurring_shipping ?? 0),
          currency: order.currency,
          next_billing_at: external ? null : next,
        }),
      );
    }
    return created;
  }

  async get(teamId: string, id: string): Promise<SubscriptionView> {
    const s = await this.store.run((db) => repo.findSubscription(db, teamId, id));
    if (!s) throw notFound('Subscription');
    return subscriptionView(s);
  }

  async list(
    teamId: string,
    q: ListQuery & { status?: string | undefined; customer_number?: string | undefined; order_number?: string | undefined },
  ): Promise<Page<SubscriptionView>> {
    return this.store.run(async (db) => {
      const filter = { status: q.status, customerId: q.customer_number, orderId: q.order_number, createdGte: q.created_gte, createdLte: q.created_lte };
      return listPage(db, 'subscriptions', teamId, q, (afterSeq) => repo.listSubscriptions(db, teamId, { limit: q.limit, afterSeq, ...filter }), subscriptionView);
    });
  }
}
