import { addDays } from 'date-fns';
import type { Logger } from 'pino';
import { ApiError, notFound } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import type { Tx } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import type { ChargeOutcome } from '../../providers/provider.ts';
import { type LineDraft, totalsOf } from '../orders/pricing.ts';
import { NOT_RECEIVED } from '../payments/attempts.ts';
import type { UpsellStep } from '../payments/service.ts';
import { atLocalHour, dueAt } from '../subscriptions/schedule.ts';
import { UseCase } from './use-case.ts';

/** One attempt in flight per rebill order: its retries are new attempts on the same order, one at a time. */
export const REBILL_STEP = 'rebill';

type Settled = Exclude<ChargeOutcome, { kind: 'unknown' }>;

/** What one billing of one subscription came to. */
export type RebillResult =
  | { kind: 'charged'; cycle: number; order: Row<'orders'>; transaction: Row<'transactions'>; subscription: Row<'subscriptions'> }
  | { kind: 'declined'; cycle: number; order: Row<'orders'>; transaction: Row<'transactions'> | null; subscription: Row<'subscriptions'>; final: boolean }
  /** The provider did not answer: the attempt stays in flight until the recovery run asks it. */
  | { kind: 'unknown'; cycle: number; order: Row<'orders'>; transaction: Row<'transactions'> }
  /** Reached the end of a period it was cancelled at: ended, not charged. */
  | { kind: 'ended'; subscription: Row<'subscriptions'> }
  /** Not billable now (no longer due, paused, another run holds its attempt). */
  | { kind: 'skipped'; why: string };

export interface RebillTally {
  due: number;
  charged: number;
  declined: number;
  cancelled: number;
  ended: number;
  unknown: number;
  skipped: number;
  failed: number;
}

const DUE_STATUSES = ['trialing', 'active', 'cancel_at_period_end'];

/** What this process's rebill runs came to since it started (the `checkstand_rebills_total` metric). */
export const REBILL_OUTCOMES = { due: 0, charged: 0, declined: 0, recovered: 0, cancelled: 0, ended: 0, unknown: 0, failed: 0 };

/**
 * Card subscriptions billed here (spec §4.1 rule 7: merchant-initiated on the saved card, chained to
 * the original authenticated payment, never redirected). Each cycle is one rebill order
 * (`rebill_of`, `subscription_id`, `rebill_cycle`; unique per subscription and cycle) charged in
 * the payment core's atomic phases: the attempt commits in flight before the provider is called,
 * the answer and every state change after it commit together. So a cycle is charged at most once
 * whatever happens: two workers, a worker killed between phases (its attempt is settled by the
 * recovery run, and blocks a second attempt meanwhile), a retry of the same cycle.
 */
export class RebillUseCase extends UseCase {
  /**
   * The rebill queue: every card subscription due now (a cycle whose day has come, a dunning retry),
   * in claimed batches until none is left. Externally managed subscriptions are never taken (the
   * provider bills them, spec §4.5).
   */
  async runDue(log?: Logger, opts: { maxBatches?: number } = {}): Promise<RebillTally> {
    const tally: RebillTally = { due: 0, charged: 0, declined: 0, cancelled: 0, ended: 0, unknown: 0, skipped: 0, failed: 0 };
    const size = this.subscriptions.billing.settings.batchSize;
    for (let batch = 1; batch <= (opts.maxBatches ?? Number.POSITIVE_INFINITY); batch++) {
      const claimed = await this.subscriptions.claimDue(size);
      if (claimed.length === 0) break;
      tally.due += claimed.length;
      REBILL_OUTCOMES.due += claimed.length;
      // Up to `concurrency` subscriptions at once: gateway calls overlap (a real one takes ~250 ms);
      // each subscription's phases stay in order, and the claims keep two workers apart.
      const queue = [...claimed];
      const lane = async () => {
        for (let s = queue.shift(); s; s = queue.shift()) await one(s);
      };
      const one = async (s: { id: string; team_id: string }) => {
        try {
          const r = await this.bill(s.team_id, s.id, { mode: 'due' });
          if (r.kind === 'charged') tally.charged++;
          else if (r.kind === 'declined') {
            tally.declined++;
            if (r.final && r.subscription.status === 'cancelled') tally.cancelled++;
          } else tally[r.kind]++;
          if (r.kind === 'unknown' || r.kind === 'ended') REBILL_OUTCOMES[r.kind]++;
        } catch (err) {
          // One subscription's failure never stops the run; its lease lets the next run take it again.
          tally.failed++;
          REBILL_OUTCOMES.failed++;
          log?.error({ err, subscription_id: s.id }, 'rebill failed');
        }
      };
      await Promise.all(Array.from({ length: Math.min(this.subscriptions.billing.settings.concurrency, claimed.length) }, lane));
      log?.info({ batch, ...tally }, 'rebill queue progress');
      if (claimed.length < size) break;
    }
    return tally;
  }

  /**
   * Rebill Now: the next cycle charged at once, whatever its date (a past-due one: the failing cycle
   * again). `cycle`, when sent, must be that cycle (a repeat of an answered request is refused
   * instead of charging the following one).
   */
  async rebillNow(teamId: string, id: string, cycle?: number): Promise<{ httpStatus: number; body: unknown }> {
    const r = await this.bill(teamId, id, { mode: 'now', cycle });
    if (r.kind === 'skipped' || r.kind === 'ended') throw new ApiError('conflict', 'Nothing was charged.');
    const data = {
      subscription: await this.subscriptions.get(teamId, id),
      cycle: r.cycle,
      order_number: r.order.id,
      transaction_id: r.transaction?.id ?? null,
    };
    if (r.kind === 'charged') return { httpStatus: 200, body: { success: true, message: `Cycle ${r.cycle} charged.`, data } };
    if (r.kind === 'unknown') {
      return {
        httpStatus: 502,
        body: { success: false, message: 'The gateway did not answer, so whether the cycle was charged is not known yet; it is confirmed with the gateway within minutes. Do not charge it again.', data, error: { type: 'api_error', code: 'payment_outcome_unknown' } },
      };
    }
    return {
      httpStatus: 402,
      body: {
        success: false,
        message: `Rebill declined: ${r.transaction?.response_text ?? 'declined'}`,
        data,
        error: { type: 'card_error', code: 'payment_declined', decline_code: r.transaction?.response_code ?? null },
      },
    };
  }

  /** The recovery run found what the gateway did with a rebill attempt whose answer was lost: settled as the run would have. */
  async recoverRebill(attempt: Row<'transactions'>, outcome: Settled): Promise<void> {
    if (outcome.kind === 'pending' || outcome.kind === 'redirect') return; // a rebill is never held or redirected: ask again later
    await this.store.transaction((trx) => this.settle(trx, attempt.team_id, attempt, outcome), { outcome: true });
    this.events.nudge();
  }

  private async bill(teamId: string, id: string, o: { mode: 'due' | 'now'; cycle?: number | undefined }): Promise<RebillResult> {
    // Phase 1: under the subscription's lock — the cycle's order, and its attempt committed in flight.
    const opened = await this.store.transaction(async (trx) => {
      const sub = await this.subscriptions.lock(trx, teamId, id);
      if (!sub) throw notFound('Subscription');
      const now = this.subscriptions.now();
      if (o.mode === 'now') this.checkRebillNow(sub, o.cycle);
      else if (!isDue(sub, now)) return { done: await this.release(trx, sub, 'not due') };
      if (o.mode === 'due' && sub.status === 'cancel_at_period_end') {
        const ended = await this.subscriptions.updateBilling(trx, sub, { status: 'cancelled', ended_at: now, end_reason: 'period_end', next_billing_at: null, billing_lease_until: null });
        await this.events.emit(trx, teamId, 'subscription.cancelled', { orderId: sub.order_id, object: await this.subscriptions.view(trx, ended) });
        return { done: { kind: 'ended', subscription: ended } as RebillResult };
      }
      const cycle = sub.cycle + 1;
      const order = await this.rebillOrder(trx, sub, cycle);
      if (await this.ledger.findInFlight(trx, teamId, order.id, REBILL_STEP)) {
        if (o.mode === 'now') throw new ApiError('payment_in_progress', `Cycle ${cycle} of this subscription is being charged; its outcome is confirmed with the gateway.`);
        return { done: await this.release(trx, sub, 'attempt in flight') };
      }
      // The run's lease (the queue's claim set one already): the merchant's changes wait for the answer.
      if (o.mode === 'now') await this.subscriptions.updateBilling(trx, sub, { billing_lease_until: new Date(now.getTime() + 10 * 60_000) });
      const method = sub.payment_method_id ? await this.ledger.findPaymentMethod(trx, teamId, sub.payment_method_id) : undefined;
      const [customer] = await this.customers.findMany(trx, teamId, [sub.customer_id]);
      const step: UpsellStep | null = method
        ? await this.payments.openSavedCharge(trx, {
            teamId,
            orderId: order.id,
            amount: order.total,
            currency: order.currency,
            method,
            upsellId: null,
            step: REBILL_STEP,
            payer: { email: customer!.email, first_name: customer!.first_name, last_name: customer!.last_name },
          })
        : null;
      if (!step || step.kind === 'done') {
        // Decided without a gateway call (no saved card, a test card, nothing to charge): settled in this transaction.
        const outcome: Settled = step?.kind === 'done' ? step.outcome : { kind: 'declined', providerRef: null, code: 'no_payment_method', text: 'The subscription has no saved card to charge.', retryable: false, hard: true };
        return { done: await this.apply(trx, sub, order, step?.kind === 'done' ? step.transaction : null, outcome) };
      }
      return { call: step, order, cycle };
    });
    if (opened.done) {
      this.events.nudge();
      return opened.done;
    }
    // Phase 2: the gateway, holding no lock.
    const { call, order, cycle } = opened as { call: Extract<UpsellStep, { kind: 'call' }>; order: Row<'orders'>; cycle: number };
    // The attempt row went with the COMMIT (UpsellStep): committed by now.
    const attempt = await call.attempt;
    const outcome = await this.payments.sendCharge(call.gateway, call.request);
    if (outcome.kind === 'unknown') return { kind: 'unknown', cycle, order, transaction: attempt };
    // Phase 3: the answer and everything it changes, together.
    const r = await this.store.transaction((trx) => this.settle(trx, teamId, attempt, outcome), { outcome: true });
    this.events.nudge();
    return r ?? { kind: 'skipped', why: 'settled by another path' };
  }

  private checkRebillNow(sub: Row<'subscriptions'>, cycle: number | undefined): void {
    if (sub.externally_managed) throw new ApiError('subscription_externally_managed');
    if (!['trialing', 'active', 'past_due', 'cancel_at_period_end'].includes(sub.status)) {
      throw new ApiError('subscription_not_actionable', `This subscription is ${sub.status}: only a trialing, active or past-due subscription can be rebilled.`, { data: { status: sub.status } });
    }
    if (cycle !== undefined && cycle !== sub.cycle + 1) {
      throw new ApiError(
        'conflict',
        cycle <= sub.cycle ? `Cycle ${cycle} of this subscription is already paid.` : `Cycle ${cycle} is not the next one: the next cycle to bill is ${sub.cycle + 1}.`,
        { data: { paid_cycles: sub.cycle, next_cycle: sub.cycle + 1 } },
      );
    }
  }

  private async release(trx: Tx, sub: Row<'subscriptions'>, why: string): Promise<RebillResult> {
    if (sub.billing_lease_until) await this.subscriptions.updateBilling(trx, sub, { billing_lease_until: null });
    return { kind: 'skipped', why };
  }

  /** The cycle's rebill order: found (a retry, a resumed run) or made now, pending, with the subscription's line. */
  private async rebillOrder(trx: Tx, sub: Row<'subscriptions'>, cycle: number): Promise<Row<'orders'>> {
    const existing = await this.orders.rows.findRebillOrder(trx, sub.team_id, sub.id, cycle);
    if (existing) return existing;
    const parent = (await this.orders.rows.findOrder(trx, sub.team_id, sub.order_id))!;
    const [offer] = await this.catalog.findOffers(trx, sub.team_id, [sub.offer_id]);
    // The subscription's price is the price (recurring price × quantity + recurring shipping, fixed
    // when it started or last changed); the offer only names the line and its current shipping share.
    const shipping = Math.min(offer?.recurring_shipping ?? 0, sub.recurring_price);
    const lineTotal = sub.recurring_price - shipping;
    const line: LineDraft = {
      id: newId('orderLine'),
      team_id: sub.team_id,
      offer_id: sub.offer_id,
      product_id: offer!.product_id,
      upsell_id: null,
      name: `${offer!.name} (renewal ${cycle})`,
      quantity: sub.quantity,
      unit_price: Math.round(lineTotal / Math.max(1, sub.quantity)),
      shipping,
      line_total: lineTotal,
      billing_type: offer!.billing_type,
      fulfillment_type: offer!.fulfillment_type,
    };
    const orderId = newId('order');
    const order = await this.orders.rows.insertOrder(trx, {
      id: orderId,
      team_id: sub.team_id,
      campaign_id: parent.campaign_id,
      customer_id: sub.customer_id,
      status: 'pending',
      currency: sub.currency,
      phone: parent.phone,
      shipping_address: parent.shipping_address ? JSON.stringify(parent.shipping_address) : null,
      billing_address: parent.billing_address ? JSON.stringify(parent.billing_address) : null,
      is_test: parent.is_test,
      // A renewal keeps the first order's attribution and throttling: its commission and postback follow them.
      is_throttle: parent.is_throttle,
      affiliate_id: parent.affiliate_id,
      affiliate_click_id: parent.affiliate_click_id,
      affiliate_sub1: parent.affiliate_sub1,
      affiliate_sub2: parent.affiliate_sub2,
      affiliate_sub3: parent.affiliate_sub3,
      affiliate_sub4: parent.affiliate_sub4,
      affiliate_sub5: parent.affiliate_sub5,
      payment_method_id: sub.payment_method_id,
      subscription_id: sub.id,
      rebill_of: parent.id,
      rebill_cycle: cycle,
      ...totalsOf([line]),
    });
    await this.orders.rows.insertLines(trx, [{ ...line, order_id: orderId }]);
    await this.orders.recordEvents(trx, sub.team_id, orderId, [{ type: 'order.created', data: { rebill_of: parent.id, subscription_id: sub.id, cycle, total: order.total } }]);
    return order;
  }

  /** Phase 3 for an attempt in flight: closed with its answer, then applied under the order's and the subscription's locks. */
  private async settle(trx: Tx, teamId: string, attempt: Row<'transactions'>, outcome: Settled): Promise<RebillResult | null> {
    const order = (await this.orders.rows.findOrder(trx, teamId, attempt.order_id, { forUpdate: true }))!;
    const sub = (await this.subscriptions.lock(trx, teamId, order.subscription_id!))!;
    const closed = await this.payments.closeAttempt(trx, teamId, order.customer_id, attempt, outcome);
    if (!closed) return null; // another path recorded it first
    return this.apply(trx, sub, order, closed.transaction, outcome);
  }

  /** A cycle's charge ended: approved completes its order and moves the subscription on; declined starts or continues dunning. */
  private async apply(trx: Tx, sub: Row<'subscriptions'>, order: Row<'orders'>, txn: Row<'transactions'> | null, outcome: Settled): Promise<RebillResult> {
    const teamId = sub.team_id;
    const cycle = order.rebill_cycle!;
    const now = this.subscriptions.now();
    if (outcome.kind === 'approved') {
      const paid = await this.orders.move(trx, order, { status: 'processing', payment_status: 'completed' }, { type: 'payment.captured', data: { transaction: txn?.id ?? null, cycle } });
      const done = await this.orders.move(trx, paid, { status: 'completed' }, null, { completed_at: now });
      if (txn) await this.affiliates.recordActivity(trx, done, 'rebill', { transactionId: txn.id, amount: txn.amount });
      const lines = await this.orders.rows.linesOf(trx, teamId, [order.id]);
      const fulfillment = await this.fulfillments.createForOrder(trx, teamId, order.id, lines);
      await this.orders.recordEvents(trx, teamId, order.id, [{ type: 'order.completed', data: { fulfillment_id: fulfillment?.id ?? null, subscriptions: [] } }]);
      await this.orders.recordEvents(trx, teamId, sub.order_id, [{ type: 'subscription.renewed', data: { rebill_order: order.id, transaction: txn?.id ?? null, cycle } }]);
      const wasPastDue = sub.status === 'past_due';
      const updated = await this.subscriptions.updateBilling(trx, sub, {
        // Trialing or past due become active; one paused, cancelled or ending at period end while
        // the gateway was asked keeps that status (the cycle is paid all the same).
        status: ['trialing', 'active', 'past_due'].includes(sub.status) ? 'active' : sub.status,
        cycle,
        retry_count: 0,
        retry_at: null,
        billing_lease_until: null,
        next_billing_at: await this.subscriptions.dueAt(trx, sub, cycle + 1),
      });
      const view = await this.orders.view(trx, teamId, done, lines);
      await this.events.emit(trx, teamId, 'order.completed', { orderId: order.id, object: view });
      await this.events.emit(trx, teamId, 'subscription.renewed', { orderId: order.id, object: view });
      REBILL_OUTCOMES.charged++;
      if (wasPastDue) REBILL_OUTCOMES.recovered++;
      if (wasPastDue) await this.events.emit(trx, teamId, 'subscription.recovered', { orderId: sub.order_id, object: await this.subscriptions.view(trx, updated) });
      return { kind: 'charged', cycle, order: done, transaction: txn!, subscription: updated };
    }
    if (outcome.kind === 'declined' && outcome.code === NOT_RECEIVED) {
      // The recovery run found the gateway never received the attempt: nothing was charged or
      // declined, so no dunning; the cycle stays due and the next run charges it.
      const updated = await this.subscriptions.updateBilling(trx, sub, { billing_lease_until: null });
      return { kind: 'declined', cycle, order, transaction: txn, subscription: updated, final: false };
    }
    if (!['trialing', 'active', 'past_due', 'cancel_at_period_end'].includes(sub.status)) {
      // Paused or cancelled while the gateway was asked: the decline is recorded, no dunning starts.
      const updated = await this.subscriptions.updateBilling(trx, sub, { billing_lease_until: null });
      return { kind: 'declined', cycle, order, transaction: txn, subscription: updated, final: true };
    }
    // Declined (a held or redirected answer cannot happen on a merchant-initiated charge; treated as a decline).
    const hard = outcome.kind === 'declined' && (outcome.hard === true || outcome.code === 'no_payment_method');
    const failures = sub.retry_count + 1;
    const { retryDays, afterLastRetry } = this.subscriptions.billing.settings;
    const final = hard || failures > retryDays.length;
    const declinedOrder =
      order.status === 'declined'
        ? order
        : await this.orders.move(trx, order, { status: 'declined', payment_status: 'declined' }, { type: 'payment.declined', data: { transactions: txn ? [txn.id] : [], cycle, hard } });
    if (order.status === 'declined') await this.orders.recordEvents(trx, teamId, order.id, [{ type: 'payment.declined', data: { transactions: txn ? [txn.id] : [], cycle, hard, retry: failures - 1 } }]);
    let updated: Row<'subscriptions'>;
    REBILL_OUTCOMES.declined++;
    if (final && (hard || afterLastRetry === 'cancel')) {
      REBILL_OUTCOMES.cancelled++;
      updated = await this.subscriptions.updateBilling(trx, sub, {
        status: 'cancelled',
        retry_count: failures,
        retry_at: null,
        next_billing_at: null,
        billing_lease_until: null,
        ended_at: now,
        end_reason: hard ? 'hard_decline' : 'payment_failed',
      });
      const view = await this.subscriptions.view(trx, updated);
      if (sub.status !== 'past_due') await this.events.emit(trx, teamId, 'subscription.past_due', { orderId: sub.order_id, object: view });
      await this.events.emit(trx, teamId, 'subscription.cancelled', { orderId: sub.order_id, object: view });
    } else {
      // Retries count from the cycle's due day, at the rebill hour: 1, 3, 5, 7 days after it by default.
      const timeZone = await this.subscriptions.timeZoneOf(trx, teamId);
      const { hour } = this.subscriptions.billing.settings;
      const dueDay = dueAt(sub, cycle, timeZone, hour);
      // Counted from the due day; a cycle billed early (Rebill Now) counts from today.
      const due = dueDay < now ? dueDay : now;
      const retryAt = final ? null : atLocalHour(addDays(due, retryDays[failures - 1]!), timeZone, hour);
      updated = await this.subscriptions.updateBilling(trx, sub, { status: 'past_due', retry_count: failures, retry_at: retryAt, billing_lease_until: null });
      if (sub.status !== 'past_due') await this.events.emit(trx, teamId, 'subscription.past_due', { orderId: sub.order_id, object: await this.subscriptions.view(trx, updated) });
    }
    return { kind: 'declined', cycle, order: declinedOrder, transaction: txn, subscription: updated, final };
  }
}

/** Due now: a live cycle whose day has come, or a past-due one whose retry has. */
function isDue(sub: Row<'subscriptions'>, now: Date): boolean {
  if (sub.externally_managed) return false;
  if (DUE_STATUSES.includes(sub.status)) return sub.next_billing_at !== null && sub.next_billing_at <= now;
  return sub.status === 'past_due' && sub.retry_at !== null && sub.retry_at <= now;
}
