import { ApiError, invalid } from '../../app/errors.ts';
import type { Store, Tx } from '../../db/database.ts';
import { unlessRefused } from '../../db/helpers.ts';
import type { Row } from '../../db/schema.ts';
import type { ChargeOutcome } from '../../providers/provider.ts';
import type { AffiliatesService } from '../affiliates/service.ts';
import type { CatalogService } from '../catalog/service.ts';
import { convertAffiliateOrder } from './affiliate-conversion.ts';
import type { EventsService } from '../events/service.ts';
import type { FirstChargeRequest } from '../payments/attempts.ts';
import { committed, FIRST_PAYMENT, type FirstStep, type OpenedStep } from '../payments/first-payment.ts';
import type { PaymentsService } from '../payments/service.ts';
import type { OrdersService } from '../orders/service.ts';
import type { HeldOrderOptions } from '../orders/repo.ts';
import type { LedgerService } from '../ledger/service.ts';
import type { OrderStatus, PaymentStatus } from '../orders/states.ts';
import { type OrderEvent, orderView, type PaymentResult } from '../orders/views.ts';

/** Where a payment's outcome leaves the order. `unknown` leaves it as it is: the recovery run decides. */
export function orderAfter(outcome: ChargeOutcome): { status: OrderStatus; payment_status: PaymentStatus } | null {
  switch (outcome.kind) {
    case 'approved':
      return { status: 'processing', payment_status: 'completed' };
    case 'declined':
      return { status: 'declined', payment_status: 'declined' };
    case 'pending':
      return { status: 'pending_external_confirmation', payment_status: 'pending_external_confirmation' };
    case 'redirect':
      return { status: 'pending', payment_status: 'pending_redirect' };
    case 'unknown':
      return null;
  }
}

export function paymentResult(outcome: ChargeOutcome, view: PaymentResult['data'] extends infer D ? Omit<D, 'redirect_required' | 'transaction_id' | 'attempts'> : never, transactions: Row<'transactions'>[]): PaymentResult {
  const data = { ...view, redirect_required: false, transaction_id: transactions.at(-1)?.id ?? null, attempts: transactions.length };
  switch (outcome.kind) {
    case 'approved':
      // Nothing was due: the card was verified and saved for the subscription's rebills, not charged.
      if (transactions.at(-1)?.type === 'verification') return { outcome: 'approved', success: true, message: 'Card verified and saved; nothing was charged.', data };
      return { outcome: 'approved', success: true, message: 'Payment approved.', data };
    case 'declined':
      return { outcome: 'declined', success: false, message: `Payment declined: ${outcome.text}`, data, error: { type: 'card_error', code: 'payment_declined', decline_code: outcome.code ?? null } };
    case 'pending':
      return { outcome: 'pending', success: true, message: 'Payment is awaiting external confirmation.', data };
    case 'redirect':
      return { outcome: 'redirect', success: true, message: 'Customer redirect is required to complete the payment.', data: { ...data, redirect_required: true, redirect_url: outcome.url } };
    case 'unknown':
      return {
        outcome: 'unknown',
        success: false,
        message:
          'The gateway did not answer, so whether the card was charged is not known yet. Do not charge the customer again: ' +
          'the payment is confirmed with the gateway within minutes and the order then shows the outcome.',
        data,
        error: { type: 'api_error', code: 'payment_outcome_unknown', decline_code: null },
      };
  }
}

export interface FirstPaymentDeps {
  store: Store;
  payments: PaymentsService;
  catalog: CatalogService;
  events: EventsService;
  recordEvents(trx: Tx, teamId: string, orderId: string, events: OrderEvent[]): Promise<void>;
  orders: OrdersService;
  ledger: LedgerService;
  affiliates: AffiliatesService;
}

/**
 * A card first payment in atomic phases (ARCHITECTURE "Atomic phases for money"):
 * 1. `open`, in the caller's claim transaction: no attempt of this order may be in flight; the
 *    coupon's use and the gateway's volume are reserved; the attempt row is written in flight.
 * 2. `run`: the provider call, holding no lock, with our attempt id as its order id.
 * 3. the answer and the order's move, in one transaction under the order's row lock.
 * A crash between 1 and 3 leaves the attempt in flight: the recovery run asks the provider.
 */
export class CardFirstPayment {
  constructor(private readonly d: FirstPaymentDeps) {}

  async open(trx: Tx, order: Row<'orders'>, req: FirstChargeRequest, wasPending: boolean): Promise<OpenedStep> {
    await this.claim(trx, order, wasPending);
    return this.d.payments.first.open(trx, req);
  }

  /**
   * The claim every first payment (card or external checkout) takes in its phase-1 transaction: no
   * attempt of this order may be in flight (the unique index on in-flight steps backs this up), and
   * the coupon's use is reserved. An attempt in flight leaves its order `pending` (phase 1 moves it
   * there, and only its answer or the recovery run moves it on), so only a `pending` order is looked at.
   */
  async claim(trx: Tx, order: Row<'orders'>, wasPending: boolean): Promise<void> {
    if (wasPending && (await this.d.ledger.findInFlight(trx, order.team_id, order.id, FIRST_PAYMENT))) {
      throw new ApiError('payment_in_progress', 'A payment for this order was sent to the provider and its outcome is not recorded yet; it is being confirmed. Retry in a moment.');
    }
    await this.reserveCoupon(trx, order);
  }

  /** A coupon's use is held from the moment its discounted payment starts (released if it declines). */
  async reserveCoupon(trx: Tx, order: Row<'orders'>): Promise<void> {
    if (!order.coupon_id) return;
    if (!(await this.d.catalog.reserveCoupon(trx, order.team_id, order.coupon_id, order.id, order.discount_total))) {
      throw invalid('coupon_code', 'this coupon has been used up');
    }
  }

  /** Phases 2 and 3, repeated while a router salvages a retryable decline on its next member. */
  async run(order: Row<'orders'>, customer: Row<'customers'>, lines: Row<'order_lines'>[], req: FirstChargeRequest, opened: OpenedStep): Promise<PaymentResult> {
    let step = opened;
    for (;;) {
      if (step.kind === 'done') {
        const done = step;
        const r = await this.d.store.transaction(async (trx) => {
          const current = (await this.d.orders.rows.findOrder(trx, order.team_id, order.id, { forUpdate: true }))!;
          return this.settle(trx, current, customer, lines, done);
        });
        this.d.events.nudge();
        return r;
      }
      // The attempt row went with the COMMIT of the transaction that wrote it: committed by now.
      const call = await committed(step);
      const outcome = await this.d.payments.sendFirstPayment(call.gateway, call.attempt, req);
      const approved = outcome.kind === 'approved' ? await this.settleApprovalAtCommit(order, customer, lines, req, call, outcome) : null;
      if (approved) {
        this.d.events.nudge();
        return approved;
      }
      const next = await this.d.store.transaction(async (trx): Promise<{ result: PaymentResult } | { step: OpenedStep }> => {
        // The order's lock goes with the answer's first write (neither depends on the other's result).
        const locked = this.d.orders.rows.lockOrderWithNext(trx, order.team_id, order.id);
        const recorded = await this.d.payments.first.record(trx, req, call, outcome);
        const current = (await locked)!;
        // The recovery run recorded this attempt first (and moved the order): answer what it decided.
        if (!recorded) return { result: paymentResult(outcome, orderView(current, customer, lines), call.transactions) };
        if (recorded.kind === 'call') return { step: recorded };
        return { result: await this.settle(trx, current, customer, lines, recorded) };
      }, { outcome: true });
      if ('result' in next) {
        this.d.events.nudge();
        return next.result;
      }
      step = next.step;
    }
  }

  /**
   * Phase 3 of the common answer, an approval with nothing else to settle (no velocity holds, no
   * affiliate conversion), in one round trip: the order's lock, the attempt's UPDATE and the order's
   * move go in one socket write with the COMMIT, the move written from `order` as phase 1 left it
   * instead of the row read under the lock. Each write checks in SQL what the ordinary way checks
   * in code: the attempt is still in flight (closeAttemptAtCommit), the order still as phase 1 left
   * it (unchangedSinceEarlierPhase). If either is not, nothing of it commits and the answer is null:
   * the caller takes the ordinary way, which reads the order under its lock (and answers what the
   * recovery run recorded, if that was first).
   */
  private async settleApprovalAtCommit(
    order: Row<'orders'>,
    customer: Row<'customers'>,
    lines: Row<'order_lines'>[],
    req: FirstChargeRequest,
    call: Extract<FirstStep, { kind: 'call' }>,
    outcome: Extract<ChargeOutcome, { kind: 'approved' }>,
  ): Promise<PaymentResult | null> {
    if (call.holds || order.affiliate_id) return null;
    return unlessRefused(
      this.d.store.transaction(async (trx) => {
        // The order's lock first, as the ordinary way and the recovery run take it: the same order of locks.
        void this.d.orders.rows.lockOrderWithNext(trx, order.team_id, order.id);
        const done = await this.d.payments.first.recordApprovalAtCommit(trx, req, call, outcome);
        return this.settle(trx, order, customer, lines, done, { unchangedSinceEarlierPhase: true });
      }, { outcome: true }),
    );
  }

  /**
   * The payment's outcome on the order, in the transaction that recorded it. `current`: the order
   * as read under the lock, or (`unchangedSinceEarlierPhase`) as phase 1 left it, checked by the move.
   */
  async settle(
    trx: Tx,
    current: Row<'orders'>,
    customer: Row<'customers'>,
    lines: Row<'order_lines'>[],
    done: Extract<FirstStep, { kind: 'done' }>,
    held: HeldOrderOptions = {},
  ): Promise<PaymentResult> {
    await this.d.payments.first.settleVelocity(trx, current.team_id, current.id, done);
    const next = orderAfter(done.outcome);
    if (!next) {
      await this.d.recordEvents(trx, current.team_id, current.id, [{ type: 'payment.unknown', data: { transactions: done.transactions.map((t) => t.id) } }]);
      return paymentResult(done.outcome, orderView(current, customer, lines), done.transactions);
    }
    let updated = await this.d.orders.move(
      trx,
      current,
      next,
      { type: `payment.${done.outcome.kind}`, data: { transactions: done.transactions.map((t) => t.id), from_status: current.status, to_status: next.status, is_test: done.isTest } },
      { ...(done.paymentMethod ? { payment_method_id: done.paymentMethod.id } : {}), ...(done.isTest ? { is_test: true } : {}) },
      held,
    );
    if (done.outcome.kind === 'declined' && current.coupon_id) await this.d.catalog.releaseCoupon(trx, current.team_id, current.coupon_id, current.id);
    if (done.outcome.kind === 'approved') {
      const charge = done.transactions.at(-1);
      updated = await convertAffiliateOrder(this.d, trx, updated, { transactionId: charge?.id ?? null, amount: charge?.amount ?? updated.total });
    }
    // The payment claim kept the lines and the customer as they were: answer from the rows in hand.
    const view = orderView(updated, customer, lines);
    if (done.outcome.kind === 'declined') await this.d.events.emit(trx, current.team_id, 'order.declined', { orderId: current.id, object: view });
    return paymentResult(done.outcome, view, done.transactions);
  }
}
