import { TZDate } from '@date-fns/tz';
import { addDays } from 'date-fns';
import { ApiError, invalid } from '../../app/errors.ts';
import type { Executor } from '../../db/database.ts';
import type { Row, RowPatch } from '../../db/schema.ts';
import type { CatalogService } from '../catalog/service.ts';
import { atLocalHour, dueAt, reanchor } from './schedule.ts';
import { ENDED_SUBSCRIPTION_STATUSES, type SubscriptionAction } from './states.ts';
import type { SubscriptionView } from './views.ts';

/**
 * Local management of card subscriptions (billed here, not externally managed): what Cancel,
 * Pause, Restart and Reactivate write besides the status, and what PATCH may change. Each decides
 * a patch for a row its caller holds under lock (SubscriptionsService.changeCardLocally writes it).
 *
 * Dates: cycle n is due on `dueAt(schedule, n)` in the team's time zone at the rebill hour, and
 * `next_billing_at` keeps dueAt(cycle + 1). A paused or cancelled subscription is never billed;
 * when it restarts after the date it would have been billed has passed, the missed cycles are
 * skipped, never billed after the fact: the next cycle is re-anchored to the next rebill hour.
 */

export const END_REASON_CANCELLED_BY_MERCHANT = 'cancelled_by_merchant';

/** The billing clock and calendar of the subscription's team, as SubscriptionsService reads them under the row lock. */
export interface BillingMoment {
  now: Date;
  /** REBILL_HOUR: cycles fall due at this hour of their day in the team's time zone. */
  hour: number;
  timeZone(): Promise<string>;
}

/** PATCH /v1/subscriptions/{id}: any of these (the route asks for at least one). */
export interface SubscriptionChanges {
  next_billing_at?: string | undefined;
  quantity?: number | undefined;
  offer_id?: string | undefined;
}

/** The first rebill hour in `timeZone` strictly after `now`: today's if still ahead, else tomorrow's (a calendar day there, DST-safe). */
export function nextRebillHourAfter(now: Date, timeZone: string, hour: number): Date {
  const today = atLocalHour(now, timeZone, hour);
  if (today.getTime() > now.getTime()) return today;
  const tomorrow = addDays(new TZDate(now.getTime(), timeZone), 1);
  tomorrow.setHours(hour, 0, 0, 0);
  return new Date(tomorrow.getTime());
}

/**
 * The billing day a merchant names: a date (`2027-01-31`) is that calendar day in the team's time
 * zone; a date-time is the calendar day it falls on there. Either way at the rebill hour.
 */
export function billingDayOf(input: string, timeZone: string, hour: number): Date {
  const date = /^(\d{4})-(\d{2})-(\d{2})$/.exec(input);
  if (date) return new Date(new TZDate(Number(date[1]), Number(date[2]) - 1, Number(date[3]), hour, 0, 0, 0, timeZone).getTime());
  return atLocalHour(new Date(input), timeZone, hour);
}

/**
 * A rebill of this subscription is being charged (the engine's lease is running): a change now
 * could cancel, pause or re-date a cycle whose charge is already at the gateway. Refused; the
 * lease is short.
 */
function assertNotBilling(s: Row<'subscriptions'>, now: Date): void {
  if (s.billing_lease_until && s.billing_lease_until.getTime() > now.getTime())
    throw new ApiError('payment_in_progress', 'A rebill of this subscription is being charged right now; nothing was changed. Retry in a minute.');
}

/**
 * The next cycle re-anchored on `day` (schedule.reanchor): cycle + 1 is due that day at the rebill
 * hour and later ones count from it, in `interval` (the subscription's, or the one it moves to).
 */
async function anchoredOn(s: Row<'subscriptions'>, day: Date, at: BillingMoment, interval = { interval_unit: s.interval_unit, interval_count: s.interval_count }) {
  const anchored = reanchor(day, s.cycle + 1);
  return { ...anchored, next_billing_at: dueAt({ ...interval, ...anchored }, s.cycle + 1, await at.timeZone(), at.hour) };
}

/** Kept when still ahead; else the next cycle is due at the next rebill hour (the missed ones are skipped, not billed). */
async function dateAfterRestart(s: Row<'subscriptions'>, at: BillingMoment): Promise<RowPatch<'subscriptions'>> {
  if (s.next_billing_at && s.next_billing_at.getTime() > at.now.getTime()) return {};
  return anchoredOn(s, nextRebillHourAfter(at.now, await at.timeZone(), at.hour), at);
}

/**
 * Besides the status (CARD_SUBSCRIPTION_MOVES, checked by the caller): Cancel ends it now
 * (`ended_at`, `end_reason`, no retry left); Restart and Reactivate keep a next billing date still
 * ahead and re-anchor one that passed; Reactivate clears the end and the dunning state, so an
 * unpaid cycle is tried afresh on that date. Cancel at period end keeps the date: the rebill
 * engine ends the subscription then instead of charging it.
 */
export async function cardActionPatch(s: Row<'subscriptions'>, action: SubscriptionAction, to: string, at: BillingMoment): Promise<RowPatch<'subscriptions'>> {
  assertNotBilling(s, at.now);
  switch (action) {
    case 'cancel':
      return { status: to, ended_at: at.now, end_reason: END_REASON_CANCELLED_BY_MERCHANT, retry_at: null };
    case 'cancel_at_period_end':
    case 'pause':
      return { status: to };
    case 'resume':
      return { status: to, ...(await dateAfterRestart(s, at)) };
    case 'reactivate':
      return { status: to, ended_at: null, end_reason: null, retry_count: 0, retry_at: null, ...(await dateAfterRestart(s, at)) };
  }
}

/** What PATCH needs of SubscriptionsService: a locked change of a card subscription, written and announced there. */
export interface LocalChanges {
  changeCardLocally(
    teamId: string,
    id: string,
    decide: (db: Executor, s: Row<'subscriptions'>, at: BillingMoment) => Promise<RowPatch<'subscriptions'>>,
  ): Promise<SubscriptionView>;
}

/**
 * PATCH /v1/subscriptions/{id} on a card subscription: the next billing date (re-anchored: later
 * cycles count from it), the quantity and the offer (its interval and price from the next cycle
 * on). A past_due subscription keeps its status and its dunning count: a new date moves the retry
 * of the unpaid cycle to that day.
 */
export class SubscriptionUpdates {
  constructor(
    private readonly subscriptions: LocalChanges,
    private readonly catalog: Pick<CatalogService, 'findOffers' | 'findCampaign'>,
  ) {}

  update(teamId: string, id: string, changes: SubscriptionChanges): Promise<SubscriptionView> {
    return this.subscriptions.changeCardLocally(teamId, id, (db, s, at) => this.patchFor(db, s, changes, at));
  }

  private async patchFor(db: Executor, s: Row<'subscriptions'>, changes: SubscriptionChanges, at: BillingMoment): Promise<RowPatch<'subscriptions'>> {
    if (s.externally_managed)
      throw new ApiError(
        'subscription_externally_managed',
        'This subscription is billed by an external provider, which holds its plan, price and billing date: change them at the provider.',
      );
    if ((ENDED_SUBSCRIPTION_STATUSES as readonly string[]).includes(s.status))
      throw new ApiError(
        'subscription_not_actionable',
        `This subscription is ${s.status}: nothing more is billed, so its billing date, quantity and offer cannot be changed${s.status === 'cancelled' ? ' (reactivate it first)' : ''}.`,
        { data: { status: s.status } },
      );
    assertNotBilling(s, at.now);
    const patch: RowPatch<'subscriptions'> = {};

    let interval = { interval_unit: s.interval_unit, interval_count: s.interval_count };
    if (changes.offer_id !== undefined || changes.quantity !== undefined) {
      const offer = changes.offer_id !== undefined ? await this.switchableOffer(db, s, changes.offer_id) : await this.currentOffer(db, s);
      const quantity = changes.quantity ?? s.quantity;
      patch.quantity = quantity;
      patch.recurring_price = (offer.recurring_price ?? 0) * quantity + (offer.recurring_shipping ?? 0);
      if (changes.offer_id !== undefined) {
        interval = { interval_unit: offer.interval_unit!, interval_count: offer.interval_count! };
        Object.assign(patch, { offer_id: offer.id, ...interval });
      }
    }

    if (changes.next_billing_at !== undefined) {
      const timeZone = await at.timeZone();
      const day = billingDayOf(changes.next_billing_at, timeZone, at.hour);
      if (Number.isNaN(day.getTime())) throw invalid('next_billing_at', 'must be a date (2027-01-31) or an ISO 8601 date-time');
      if (day.getTime() <= at.now.getTime())
        throw invalid('next_billing_at', `must be in the future: that day's rebill time (${String(at.hour).padStart(2, '0')}:00 ${timeZone}) is ${day.toISOString()}, already past`);
      Object.assign(patch, await anchoredOn(s, day, at, interval));
      // Dunning: the unpaid cycle is retried on the new day, with the attempts it has left.
      if (s.status === 'past_due') patch.retry_at = patch.next_billing_at;
    } else if (changes.offer_id !== undefined && s.next_billing_at) {
      // The next cycle stays due when it was; the ones after it count from it in the new interval.
      Object.assign(patch, await anchoredOn(s, s.next_billing_at, at, interval));
    }
    return patch;
  }

  private async currentOffer(db: Executor, s: Row<'subscriptions'>): Promise<Row<'offers'>> {
    const [offer] = await this.catalog.findOffers(db, s.team_id, [s.offer_id]);
    if (!offer) throw invalid('offer_id', 'the offer this subscription was sold with no longer exists: send the offer to bill from now on');
    return offer;
  }

  /** Another recurring or trial offer, active, of the campaign the subscription's order was sold in (its offer's), in its currency. */
  private async switchableOffer(db: Executor, s: Row<'subscriptions'>, offerId: string): Promise<Row<'offers'>> {
    const current = await this.currentOffer(db, s);
    const [offer] = await this.catalog.findOffers(db, s.team_id, [offerId]);
    if (!offer) throw invalid('offer_id', 'no offer with this id in your team');
    if (offer.billing_type === 'one_time' || !offer.interval_unit || !offer.interval_count)
      throw invalid('offer_id', 'this is a one-time offer: a subscription can only move to a recurring or trial offer');
    if (offer.campaign_id !== current.campaign_id) throw invalid('offer_id', "this offer belongs to another campaign than the subscription's order");
    if (!offer.is_active) throw invalid('offer_id', 'this offer is not active');
    const campaign = await this.catalog.findCampaign(db, s.team_id, offer.campaign_id);
    if (!campaign || campaign.currency !== s.currency)
      throw invalid('offer_id', `this offer sells in ${campaign?.currency ?? 'another currency'}, but the subscription bills in ${s.currency}`);
    return offer;
  }
}
