import { ApiError, notFound } from '../../app/errors.ts';
import type { ListQuery } from '../../app/schemas.ts';
import { newId } from '../../app/ids.ts';
import type { Executor, Store, Tx } from '../../db/database.ts';
import { listPage, type Page } from '../../db/pagination.ts';
import type { Row, RowPatch } from '../../db/schema.ts';
import type { ExtpayConnection, ExtpayError, ExtpayMembership, ExtpayMembershipResult, ExtpayProviderAdapter } from '../../providers/extpay/types.ts';
import { membershipState } from '../../providers/extpay/status.ts';
import { transition, type TransitionEvent } from '../../app/state-machine.ts';
import type { ConnectionsService } from '../connections/service.ts';
import type { EventsService } from '../events/service.ts';
import type { LedgerService } from '../ledger/service.ts';
import * as repo from './repo.ts';
import { type BillingMoment, cardActionPatch } from './manage.ts';
import { type SubscriptionView, viewWithCard, withCards } from './views.ts';
import { type BillingSchedule, dueAt, initialSchedule } from './schedule.ts';
import type { Clock } from '../../app/clock.ts';
import type { RebillSettings } from '../../app/config.ts';
import type { TeamsService } from '../teams/service.ts';
import { CARD_SUBSCRIPTION_MOVES, SUBSCRIPTION, type SubscriptionAction, type SubscriptionStatus } from './states.ts';

export { CARD_SUBSCRIPTION_MOVES, SUBSCRIPTION_STATUSES, type SubscriptionAction, type SubscriptionStatus } from './states.ts';
export { subscriptionView, type SubscriptionView } from './views.ts';

/** The provider call behind each action on an externally managed subscription, and what it asks in the merchant's words. */
const MEMBERSHIP_CALLS: Record<SubscriptionAction, { ask: string; call: (extpay: ExtpayProviderAdapter, conn: ExtpayConnection, membershipId: string) => Promise<ExtpayMembershipResult> }> = {
  cancel: { ask: 'cancel the membership', call: (x, c, m) => x.cancelMembership(c, m, 'immediate') },
  cancel_at_period_end: { ask: 'cancel the membership at the end of its period', call: (x, c, m) => x.cancelMembership(c, m, 'at_period_end') },
  pause: { ask: 'pause the membership', call: (x, c, m) => x.pauseMembership(c, m) },
  resume: { ask: 'restart the membership', call: (x, c, m) => x.resumeMembership(c, m) },
  reactivate: { ask: 'reactivate (un-cancel) the membership', call: (x, c, m) => x.uncancelMembership(c, m) },
};

/**
 * A provider error → the API's. A 4xx is the provider refusing the request itself (permissions, a
 * membership it will not move, an unknown id): 409 with its own words. Anything else (network,
 * timeout, 5xx, an answer we cannot read) means we do not know what happened: 502, and nothing
 * changed here; Sync from Provider reads the outcome later.
 */
function providerFailure(e: ExtpayError, ask: string): ApiError {
  const data = { provider_code: e.providerCode, provider_status: e.httpStatus };
  if (e.httpStatus !== null && e.httpStatus >= 400 && e.httpStatus < 500)
    return new ApiError('provider_rejected', `The provider refused to ${ask}: ${e.message}`, { data });
  return new ApiError('gateway_unavailable', `The provider could not be asked to ${ask}; nothing was changed here: ${e.message}`, { data });
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

export interface CardBilling {
  teams: Pick<TeamsService, 'timeZoneOf' | 'update'>;
  clock: Clock;
  settings: RebillSettings;
}

export class SubscriptionsService {
  constructor(
    private readonly store: Store,
    private readonly connections: ConnectionsService,
    private readonly extpay: ExtpayProviderAdapter,
    /** Sync from Provider finds the order's first payment through it (the transactions are the ledger's). */
    private readonly ledger: Pick<LedgerService, 'orderTransactions' | 'findPaymentMethod'>,
    private readonly events: EventsService,
    /** Card subscriptions are billed here: the team's time zone, the clock, the rebill hour and dunning. */
    readonly billing: CardBilling,
  ) {}

  /** Now, by the billing clock (tests move it forward). */
  now(): Date {
    return this.billing.clock.now();
  }

  /** When cycle `cycle` of a card subscription is due: its schedule, the team's time zone, the rebill hour. */
  async dueAt(db: Executor, sub: BillingSchedule & { team_id: string }, cycle: number): Promise<Date> {
    return dueAt(sub, cycle, await this.billing.teams.timeZoneOf(db, sub.team_id), this.billing.settings.hour);
  }

  /**
   * A team's settings change (PATCH /v1/team). A new time zone moves every live card subscription's
   * next billing day to the rebill hour there, in the same transaction; cycles already billed stay.
   */
  async updateTeam(teamId: string, patch: { name?: string | undefined; time_zone?: string | undefined }) {
    return this.store.transaction(async (trx) => {
      const team = await this.billing.teams.update(trx, teamId, { ...(patch.name ? { name: patch.name } : {}), ...(patch.time_zone ? { time_zone: patch.time_zone } : {}) });
      if (patch.time_zone) {
        for (const s of await repo.lockLiveCardSubscriptions(trx, teamId)) {
          if (!s.billing_anchor) continue;
          await repo.updateSubscription(trx, teamId, s.id, { next_billing_at: dueAt(s, s.cycle + 1, patch.time_zone, this.billing.settings.hour) });
        }
      }
      return team;
    });
  }

  /** The team's time zone (billing days and the rebill hour are counted there). */
  timeZoneOf(db: Executor, teamId: string): Promise<string> {
    return this.billing.teams.timeZoneOf(db, teamId);
  }

  /**
   * Claims up to `limit` card subscriptions due now (a cycle whose date has come, or a dunning
   * retry) for one billing run: SKIP LOCKED plus a lease, so several workers never take the same one.
   */
  claimDue(limit: number, leaseMs = 10 * 60_000): Promise<Array<{ id: string; team_id: string }>> {
    const now = this.now();
    return this.store.run((db) => repo.claimDue(db, now, new Date(now.getTime() + leaseMs), limit));
  }

  /** The subscription under its row lock, in the caller's transaction (the rebill phases). */
  lock(trx: Tx, teamId: string, id: string): Promise<Row<'subscriptions'> | undefined> {
    return repo.lockSubscription(trx, teamId, id);
  }

  /**
   * A billing-driven change of a card subscription (its cycle, dates, dunning state, status), under
   * its row lock in the caller's transaction; a status change is checked against SUBSCRIPTION and
   * recorded on the order's timeline like any other.
   */
  updateBilling(trx: Tx, current: Row<'subscriptions'>, patch: RowPatch<'subscriptions'>): Promise<Row<'subscriptions'>> {
    const to = (patch.status ?? current.status) as SubscriptionStatus;
    return this.changeStatus(trx, current, to, (db) => repo.updateSubscription(db, current.team_id, current.id, patch));
  }

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
      changed.push(
        await this.changeStatus(trx, r, status, (db) => repo.updateSubscription(db, teamId, r.id, { status, membership_ref: membership.id, next_billing_at: nextBillingAt }), { mirror: true }),
      );
    }
    return changed;
  }

  /** `applyMembership`, announcing each subscription that really changed (`subscription.updated`) in the same transaction. */
  async mirrorMembership(trx: Tx, teamId: string, membership: ExtpayMembership, recover?: { orderId: string }): Promise<Row<'subscriptions'>[]> {
    const changed = await this.applyMembership(trx, teamId, membership, recover);
    for (const s of changed) await this.events.emit(trx, teamId, 'subscription.updated', { orderId: s.order_id, object: await this.view(trx, s) });
    return changed;
  }

  /** Cancel (spec 3.2): at once by default; `atPeriodEnd` keeps it running until the period it was paid for ends. */
  cancelSubscription(teamId: string, id: string, opts: { atPeriodEnd: boolean }): Promise<SubscriptionView> {
    return this.act(teamId, id, opts.atPeriodEnd ? 'cancel_at_period_end' : 'cancel');
  }

  pauseSubscription(teamId: string, id: string): Promise<SubscriptionView> {
    return this.act(teamId, id, 'pause');
  }

  /** Restart (spec 3.2): paused → active. */
  restartSubscription(teamId: string, id: string): Promise<SubscriptionView> {
    return this.act(teamId, id, 'resume');
  }

  /** Reactivate (spec 3.2): cancelled or cancelling at period end → active; for extpay the membership is un-cancelled at the provider. */
  reactivateSubscription(teamId: string, id: string): Promise<SubscriptionView> {
    return this.act(teamId, id, 'reactivate');
  }

  /**
   * Sync from Provider (spec 3.2): status and next billing date read again from the membership. A
   * subscription still without a membership reference (a missed payment.succeeded, spec 7) recovers
   * it through the order's first payment at the provider.
   */
  async syncFromProvider(teamId: string, id: string): Promise<SubscriptionView> {
    const sub = await this.find(teamId, id);
    if (!sub.externally_managed)
      throw new ApiError('subscription_not_actionable', 'Only subscriptions billed by an external provider can be synced; this one is billed by card here.');
    const conn = await this.billingConnection(teamId, sub);
    const membershipId = sub.membership_ref ?? (await this.membershipOfFirstPayment(teamId, sub, conn));
    const r = await this.extpay.retrieveMembership(conn, membershipId);
    if (r.kind === 'error') throw providerFailure(r, 'return the membership');
    return this.mirror(teamId, sub.id, r.membership, sub.membership_ref ? undefined : { orderId: sub.order_id });
  }

  private async find(teamId: string, id: string): Promise<Row<'subscriptions'>> {
    const sub = await this.store.run((db) => repo.findSubscription(db, teamId, id));
    if (!sub) throw notFound('Subscription');
    return sub;
  }

  /**
   * Externally managed: sent to the provider first, outside any transaction; only its answer is
   * mirrored. A refusal or an unreachable provider changes nothing here (spec 3.2).
   */
  private async act(teamId: string, id: string, action: SubscriptionAction): Promise<SubscriptionView> {
    const sub = await this.find(teamId, id);
    if (!sub.externally_managed) return this.changeCardSubscription(teamId, id, action);
    if (!sub.membership_ref) throw new ApiError('membership_missing');
    const conn = await this.billingConnection(teamId, sub);
    const { ask, call } = MEMBERSHIP_CALLS[action];
    const r = await call(this.extpay, conn, sub.membership_ref);
    if (r.kind === 'error') throw providerFailure(r, ask);
    return this.mirror(teamId, sub.id, r.membership);
  }

  private async mirror(teamId: string, id: string, membership: ExtpayMembership, recover?: { orderId: string }): Promise<SubscriptionView> {
    const { row, changed } = await this.store.transaction(async (trx) => {
      const changed = await this.mirrorMembership(trx, teamId, membership, recover);
      const row = await repo.findSubscription(trx, teamId, id);
      if (!row) throw notFound('Subscription');
      return { row, changed: changed.length };
    });
    if (changed > 0) this.events.nudge();
    return this.store.run((db) => this.view(db, row));
  }

  /** Card subscriptions: the state check and the change (manage.ts) under the row lock. */
  private changeCardSubscription(teamId: string, id: string, action: SubscriptionAction): Promise<SubscriptionView> {
    const move = CARD_SUBSCRIPTION_MOVES[action];
    return this.changeCardLocally(teamId, id, (_db, s, at) => {
      if (!(move.from as readonly string[]).includes(s.status))
        throw new ApiError('subscription_not_actionable', `This subscription is ${s.status}, so it cannot be ${move.done}; that needs a subscription that is ${move.from.join(' or ')}.`, {
          data: { status: s.status },
        });
      return cardActionPatch(s, action, move.to, at);
    });
  }

  /**
   * A merchant's change of a card subscription (manage.ts decides it) under its row lock: written
   * through changeStatus (a timeline row when the status moves) and announced as
   * `subscription.updated`; a change that changes nothing writes and announces nothing.
   */
  async changeCardLocally(
    teamId: string,
    id: string,
    decide: (db: Tx, s: Row<'subscriptions'>, at: BillingMoment) => Promise<RowPatch<'subscriptions'>>,
  ): Promise<SubscriptionView> {
    const { row, changed } = await this.store.transaction(async (trx) => {
      const s = await repo.lockSubscription(trx, teamId, id);
      if (!s) throw notFound('Subscription');
      const at = { now: this.now(), hour: this.billing.settings.hour, timeZone: () => this.timeZoneOf(trx, teamId) };
      const patch = await decide(trx, s, at);
      const value = (v: unknown) => (v instanceof Date ? v.getTime() : v);
      if (Object.entries(patch).every(([k, v]) => value(v) === value(s[k as keyof typeof s]))) return { row: s, changed: false };
      const updated = await this.changeStatus(trx, s, (patch.status ?? s.status) as SubscriptionStatus, (db) => repo.updateSubscription(db, teamId, id, patch));
      await this.events.emit(trx, teamId, 'subscription.updated', { orderId: updated.order_id, object: await this.view(trx, updated) });
      return { row: updated, changed: true };
    });
    if (changed) this.events.nudge();
    return this.store.run((db) => this.view(db, row));
  }

  /**
   * Every status write of a subscription, under its row lock: the move is checked against
   * SUBSCRIPTION and, when the status really changes, the order's timeline records it in the
   * same transaction. A write that keeps the status (a new billing date) records nothing.
   * `mirror`: the provider bills the subscription and its state is the truth; a move the table
   * does not list is still applied (refusing it would make the provider redeliver its event
   * forever) and its timeline row says so (`off_table`), for someone to look at.
   */
  private changeStatus(
    trx: Tx,
    current: Row<'subscriptions'>,
    to: SubscriptionStatus,
    write: (trx: Tx) => Promise<Row<'subscriptions'>>,
    opts: { mirror?: boolean } = {},
  ): Promise<Row<'subscriptions'>> {
    const offTable = opts.mirror === true && current.status !== to && !SUBSCRIPTION.canMove(current.status, to);
    const event: TransitionEvent | null =
      current.status === to
        ? null
        : {
            teamId: current.team_id,
            orderId: current.order_id,
            type: 'subscription.status_changed',
            data: { subscription_id: current.id, from_status: current.status, to_status: to, ...(offTable ? { off_table: true } : {}) },
          };
    const move = offTable ? [] : SUBSCRIPTION.move(current.status, to);
    return transition(trx, move, event ? { write, event, recordEvent: repo.insertOrderEvent } : { write, event: null });
  }

  /** The connection that bills the subscription, decrypted; whatever its Active flag, as long as it is not deleted. */
  private async billingConnection(teamId: string, sub: Row<'subscriptions'>): Promise<ExtpayConnection> {
    const row = sub.connection_id ? await this.store.run((db) => this.connections.findLive(db, teamId, sub.connection_id!)) : undefined;
    if (!row) throw new ApiError('provider_not_configured', 'The extpay connection that bills this subscription was deleted, so the provider cannot be asked.');
    return this.connections.connection(row);
  }

  /** The membership the provider started with the order's first payment (an approved extpay sale of this connection). */
  private async membershipOfFirstPayment(teamId: string, sub: Row<'subscriptions'>, conn: ExtpayConnection): Promise<string> {
    const txs = await this.store.run((db) => this.ledger.orderTransactions(db, teamId, sub.order_id));
    const sale = txs.find((t) => t.type === 'sale' && t.status === 'approved' && t.upsell_id === null && t.connection_id === sub.connection_id && t.provider_ref);
    if (!sale?.provider_ref)
      throw new ApiError('membership_missing', 'The provider has no membership for this subscription yet: its order has no confirmed first payment at the provider.');
    const p = await this.extpay.retrievePayment(conn, sale.provider_ref);
    if (p.kind === 'error') throw providerFailure(p, "return the order's first payment");
    if (!p.payment.membershipId)
      throw new ApiError('membership_missing', `The provider has no membership for this subscription yet: payment ${p.paymentId} has not started one. Sync again later.`);
    return p.payment.membershipId;
  }

  /**
   * At completion: one subscription per recurring or trial line, billed by us (not externally
   * managed). A trial's first renewal is after its trial days; a recurring line's after one interval.
   */
  async createForOrder(
    trx: Tx,
    teamId: string,
    order: { id: string; customer_id: string; currency: string; payment_method_id?: string | null },
    lines: RecurringLine[],
    now = this.now(),
    /** extpay: the provider bills; status and next billing date are mirrored from it, never computed. */
    external?: ExternalBilling,
  ) {
    const created: Row<'subscriptions'>[] = [];
    // Read only when a line recurs: most orders start no subscription.
    let timeZone: string | undefined = external ? 'UTC' : undefined;
    for (const { offer, quantity } of lines) {
      if (offer.billing_type === 'one_time' || !offer.interval_unit || !offer.interval_count) continue;
      timeZone ??= await this.timeZoneOf(trx, teamId);
      const trial = offer.billing_type === 'trial' && offer.trial_days;
      // Card: billed here on the schedule (schedule.ts): cycle 1 after the trial, or one interval after the purchase.
      const schedule = { interval_unit: offer.interval_unit, interval_count: offer.interval_count, ...initialSchedule(now, trial ? offer.trial_days : null) };
      const next = dueAt(schedule, 1, timeZone, this.billing.settings.hour);
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
          quantity,
          ...(external ? {} : { payment_method_id: order.payment_method_id ?? null, billing_anchor: schedule.billing_anchor, anchor_cycle: schedule.anchor_cycle }),
          ...(external?.status ? { status: external.status } : {}),
        }),
      );
    }
    return created;
  }

  /** The API's view of a subscription, with the card it charges (read through the ledger). */
  view(db: Executor, s: Row<'subscriptions'>): Promise<SubscriptionView> {
    return viewWithCard(this.ledger, db, s);
  }

  /** The subscriptions a provider membership bills (renewals, failed renewals), locked in the caller's transaction. */
  forMembership(trx: Tx, teamId: string, membershipRef: string): Promise<Row<'subscriptions'>[]> {
    return repo.findByMembership(trx, teamId, membershipRef);
  }

  async get(teamId: string, id: string): Promise<SubscriptionView> {
    return this.store.run(async (db) => {
      const s = await repo.findSubscription(db, teamId, id);
      if (!s) throw notFound('Subscription');
      return this.view(db, s);
    });
  }

  async list(
    teamId: string,
    q: ListQuery & { status?: string | undefined; customer_number?: string | undefined; order_number?: string | undefined },
  ): Promise<Page<SubscriptionView>> {
    return this.store.run(async (db) => {
      const filter = { status: q.status, customerId: q.customer_number, orderId: q.order_number, createdGte: q.created_gte, createdLte: q.created_lte };
      const page = withCards(this.ledger, db, teamId, (afterSeq) => repo.listSubscriptions(db, teamId, { limit: q.limit, afterSeq, ...filter }));
      return listPage(db, 'subscriptions', teamId, q, page.fetch, page.view);
    });
  }
}
