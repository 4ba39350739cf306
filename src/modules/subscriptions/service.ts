import { notFound } from '../../app/errors.ts';
import { iso, type ListQuery } from '../../app/schemas.ts';
import { newId } from '../../app/ids.ts';
import type { Store, Tx } from '../../db/database.ts';
import { listPage, type Page } from '../../db/pagination.ts';
import type { Row } from '../../db/schema.ts';
import type { ExtpayMembership, ExtpayProviderAdapter } from '../../providers/extpay/types.ts';
import { membershipState } from '../../providers/extpay/status.ts';
import type { ConnectionsService } from '../connections/service.ts';
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

/**
 * extpay (spec 2.9): the provider bills. Status and next billing date come from its membership,
 * never computed here; without a membership yet, the next billing date stays unknown (null).
 */
export interface ExternalBilling {
  connectionId: string;
  membershipRef: string | null;
  /** The membership's mirrored state (status.ts `membershipState`), when it was read. */
  status?: string | null;
  nextBillingAt?: Date | null;
}

export interface RecurringLine {
  offer: Row<'offers'>;
  quantity: number;
}

export class SubscriptionsService {
  constructor(
    private readonly store: Store,
    private readonly connections: ConnectionsService,
    private readonly extpay: ExtpayProviderAdapter,
  ) {}

  /**
   * Mirrors a provider membership onto the externally managed subscriptions that carry its
   * reference (spec 2.9: status and next billing date are the provider's, never computed). With
   * `recover`, subscriptions of that order still lacking a reference (a missed payment.succeeded)
   * take this one. Returns the rows that changed, in the caller's transaction.
   */
  async applyMembership(trx: Tx, teamId: string, membership: ExtpayMembership, recover?: { orderId: string }): Promise<Row<'subscriptions'>[]> {
    const status = membershipState(membership);
    const nextBillingAt = membership.renewalPeriodEnd ? new Date(membership.renewalPeriodEnd) : null;
    let rows = await repo.findByMembership(trx, teamId, membership.id);
    if (rows.length === 0 && recover) rows = (await repo.findByOrder(trx, teamId, recover.orderId)).filter((r) => r.externally_managed && !r.membership_ref);
    const changed: Row<'subscriptions'>[] = [];
    for (const r of rows) {
      const same = r.status === status && r.membership_ref === membership.id && (r.next_billing_at?.getTime() ?? null) === (nextBillingAt?.getTime() ?? null);
      if (same) continue;
      changed.push(await repo.updateSubscription(trx, teamId, r.id, { status, membership_ref: membership.id, next_billing_at: nextBillingAt }));
    }
    return changed;
  }

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
    external?: ExternalBilling,
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
          connection_id: external?.connectionId ?? null,
          interval_unit: offer.interval_unit,
          interval_count: offer.interval_count,
          recurring_price: (offer.recurring_price ?? 0) * quantity + (offer.recurring_shipping ?? 0),
          currency: order.currency,
          next_billing_at: external ? (external.nextBillingAt ?? null) : next,
          ...(external?.status ? { status: external.status } : {}),
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
