import { type Tx } from '../../db/database.ts';
import { unlessRefused } from '../../db/helpers.ts';
import type { Row } from '../../db/schema.ts';
import { subscriptionView } from '../subscriptions/service.ts';
import type { ChargeOutcome } from '../../providers/provider.ts';
import { draftLine, type LineDraft } from '../orders/pricing.ts';
import type { OrdersService } from '../orders/service.ts';
import type { LineViewSource, OrderEvent } from '../orders/views.ts';
import { UseCase } from './use-case.ts';

/**
 * An upsell's charge settled on its order (Process Upsell's phase 3, and the other paths that learn
 * the charge's outcome: the recovery run, the external provider's webhook or watchdog): the line and
 * totals on approval, the order webhook, and the answer stored on the claim for a repeat of the request.
 */
/** The order's timeline row of an upsell's outcome: which upsell, its charge, and the amount charged (line and shipping). */
function upsellEvent(type: 'upsell.added' | 'upsell.declined', line: LineDraft, txn: Row<'transactions'>): OrderEvent {
  return { type, data: { upsell_id: line.upsell_id, transaction: txn.id, amount: line.line_total + line.shipping } };
}

export class UpsellSettlement extends UseCase {
  /**
   * Phase 3 of a card upsell (the request's own, or the recovery run's): the attempt takes the
   * gateway's answer and the order its line, in one transaction under the order's row lock. When
   * another path recorded it first, its stored answer is the answer.
   */
  async settleUpsell(
    teamId: string,
    orderId: string,
    line: LineDraft,
    claimId: string,
    attempt: Row<'transactions'>,
    outcome: Exclude<ChargeOutcome, { kind: 'unknown' }>,
    /** The order's customer when the caller holds it (the request read it in phase 1). */
    customer?: Row<'customers'>,
  ) {
    const answered = await this.store.transaction(async (trx) => {
      let current: Row<'orders'>;
      let txn = attempt;
      let adding: ReturnType<OrdersService['addLineWithNext']> | undefined;
      if (attempt.in_flight) {
        // With the order's customer in hand (the request's own phase 3), closing the attempt needs
        // nothing of the order's row: the lock goes with the attempt's UPDATE, in its round trip.
        const locked = customer ? this.orders.rows.lockOrderWithNext(trx, teamId, orderId) : this.orders.rows.findOrder(trx, teamId, orderId, { forUpdate: true });
        // An approved answer's line (and the read of all the lines) goes with the lock and the
        // attempt's UPDATE too, in their round trip, before it is known that this answer is the one
        // recorded: when it is not (the recovery run recorded it first), the line is taken back.
        adding = customer && outcome.kind === 'approved' ? this.orders.addLineWithNext(trx, teamId, orderId, { ...line, order_id: orderId }) : undefined;
        const customerId = customer?.id ?? (await locked)!.customer_id;
        const closed = await this.payments.closeAttempt(trx, teamId, customerId, attempt, outcome);
        current = (await locked)!;
        if (!closed) {
          await adding?.drop();
          const stored = (await this.orders.rows.findOrderUpsellByTransaction(trx, teamId, attempt.id))!;
          return { httpStatus: stored.response_status ?? 409, body: stored.response_body ?? '{}' };
        }
        txn = closed.transaction;
      } else {
        current = (await this.orders.rows.findOrder(trx, teamId, orderId, { forUpdate: true }))!;
      }
      const approved = outcome.kind === 'approved';
      return this.applyUpsellOutcome(trx, teamId, current, line, txn, approved ? { approved: true } : { approved: false, reason: outcome.kind === 'declined' ? outcome.text : 'declined' }, claimId, customer, adding);
    }, { outcome: true });
    this.events.nudge();
    return answered;
  }

  /**
   * Phase 3 of the common answer, an approved card upsell on an order with nothing else to settle
   * (not completed yet, so no fulfillment entry or subscription to add; no affiliate; no coupon), in
   * one round trip: the order's lock, the attempt's UPDATE, the line's insert, the order's totals
   * and timeline, the webhook event and the claim's stored answer go in one socket write with the
   * COMMIT, written from the order and its lines as phase 1 read them under the lock. Each write
   * checks in SQL what settleUpsell checks in code: the attempt is still in flight
   * (closeApprovalAtCommit), the order still as phase 1 left it (addLineAtCommit). If either is not,
   * nothing of it commits and the answer is null: the caller takes the ordinary way (settleUpsell),
   * which reads the order under its lock and answers what the recovery run recorded, if that was first.
   */
  async settleApprovalAtCommit(
    order: Row<'orders'>,
    lines: readonly Row<'order_lines'>[],
    line: LineDraft,
    claimId: string,
    attempt: Row<'transactions'>,
    outcome: Extract<ChargeOutcome, { kind: 'approved' }>,
    customer: Row<'customers'>,
  ): Promise<{ httpStatus: number; body: string } | null> {
    if (order.status === 'completed' || order.affiliate_id || order.coupon_id) return null;
    const teamId = order.team_id;
    const answered = await unlessRefused(
      this.store.transaction(async (trx) => {
        // The order's lock first, as the ordinary way and the recovery run take it: the same order of locks.
        void this.orders.rows.lockOrderWithNext(trx, teamId, order.id);
        const txn = await this.payments.closeApprovalAtCommit(trx, teamId, customer.id, attempt, outcome);
        const now = await this.orders.addLineAtCommit(trx, order, lines, { ...line, order_id: order.id }, [upsellEvent('upsell.added', line, txn)]);
        return this.answerUpsell(trx, teamId, now.updated, now.lines, line, txn, { approved: true }, claimId, customer);
      }, { outcome: true }),
    );
    if (answered) this.events.nudge();
    return answered;
  }

  /**
   * The recovery run found what the provider did with an upsell attempt whose answer was lost:
   * settled as the request would have. One the provider holds (pending) waits for its confirmation.
   */
  async recoverUpsell(attempt: Row<'transactions'>, outcome: Exclude<ChargeOutcome, { kind: 'unknown' }>): Promise<void> {
    const teamId = attempt.team_id;
    if (outcome.kind === 'pending' || outcome.kind === 'redirect') {
      await this.store.transaction((trx) => this.payments.closeAttempt(trx, teamId, '', attempt, { kind: 'pending', providerRef: outcome.providerRef, code: 'pending', text: 'Held at the provider; waiting for its confirmation' }), { outcome: true });
      return;
    }
    const claim = await this.store.run((db) => this.orders.rows.findOrderUpsellByTransaction(db, teamId, attempt.id));
    if (!claim) {
      // The claim and the attempt commit together: an attempt without one is not an upsell of ours.
      await this.store.transaction((trx) => this.payments.closeAttempt(trx, teamId, '', attempt, outcome), { outcome: true });
      return;
    }
    const line = await this.store.run(async (db) => {
      const upsell = (await this.catalog.findUpsell(db, teamId, claim.upsell_id))!;
      const [offer] = await this.catalog.findOffers(db, teamId, [upsell.offer_id]);
      return { ...draftLine(teamId, offer!, claim.quantity), upsell_id: claim.upsell_id };
    });
    await this.settleUpsell(teamId, attempt.order_id, line, claim.id, attempt, outcome);
  }

  /**
   * An upsell's charge ended, under the order's row lock: approved adds the line and totals (and,
   * on an order already completed, its fulfillment entry and subscription); either way the order
   * webhook fires and the stored answer becomes the one a repeat of the request gets.
   */
  async applyUpsellOutcome(
    trx: Tx,
    teamId: string,
    current: Row<'orders'>,
    line: LineDraft,
    txn: Row<'transactions'>,
    outcome: { approved: true } | { approved: false; reason: string },
    claimId: string,
    customer?: Row<'customers'>,
    /** The approved line, when the caller already sent its insert (addLineWithNext). */
    adding?: ReturnType<OrdersService['addLineWithNext']>,
  ): Promise<{ httpStatus: number; body: string }> {
    let updated = current;
    let lines: Row<'order_lines'>[] | undefined;
    if (outcome.approved) {
      const now = adding ? await adding.totals(current.coupon_id) : await this.orders.addLineAndTotals(trx, teamId, current.id, current.coupon_id, { ...line, order_id: current.id });
      const added = now.added;
      lines = now.lines;
      updated = await this.orders.updateWithEvents(trx, current, now.totals, [upsellEvent('upsell.added', line, txn)]);
      if (current.status === 'completed') {
        // Completed before the upsell (Capture completes a redirected payment at once): the new
        // line still ships and, if it recurs and we bill it, still renews. An extpay upsell is a
        // one-time charge at the provider (one plan per checkout, spec 8): it starts no subscription.
        await this.fulfillments.addLateLine(trx, teamId, current.id, added);
        if (!txn.connection_id) {
          const [offer] = await this.catalog.findOffers(trx, teamId, [added.offer_id]);
          const subs = await this.subscriptions.createForOrder(trx, teamId, current, [{ offer: offer!, quantity: added.quantity }]);
          for (const sub of subs) await this.events.emit(trx, teamId, 'subscription.created', { orderId: current.id, object: subscriptionView(sub) });
        }
      }
      await this.affiliates.recordActivity(trx, updated, 'upsell', { transactionId: txn.id, amount: txn.amount });
    } else {
      await this.orders.recordEvents(trx, teamId, current.id, [upsellEvent('upsell.declined', line, txn)]);
    }
    return this.answerUpsell(trx, teamId, updated, lines, line, txn, outcome, claimId, customer);
  }

  /**
   * The end of an upsell's charge, once the order holds its outcome (`updated`; with `lines` and
   * the customer when the caller has them): the order webhook, and the answer stored on the claim,
   * the one a repeat of the request gets.
   */
  private async answerUpsell(
    trx: Tx,
    teamId: string,
    updated: Row<'orders'>,
    lines: readonly LineViewSource[] | undefined,
    line: LineDraft,
    txn: Row<'transactions'>,
    outcome: { approved: true } | { approved: false; reason: string },
    claimId: string,
    customer?: Row<'customers'>,
  ): Promise<{ httpStatus: number; body: string }> {
    const view = await this.orders.view(trx, teamId, updated, lines, customer);
    await this.events.emit(trx, teamId, outcome.approved ? 'order.upsell_added' : 'order.upsell_declined', {
      orderId: updated.id,
      object: { ...view, upsell_id: line.upsell_id, transaction_id: txn.id },
    });
    const response = {
      success: outcome.approved,
      message: outcome.approved ? 'Upsell added.' : `Upsell declined: ${outcome.reason}`,
      data: { ...view, upsell_id: line.upsell_id, transaction_id: txn.id },
      ...(outcome.approved ? {} : { error: { type: 'card_error', code: 'payment_declined', decline_code: txn.response_code } }),
    };
    const httpStatus = outcome.approved ? 200 : 402;
    const text = JSON.stringify(response);
    await this.orders.moveUpsellClaim(trx, teamId, claimId, outcome.approved ? 'approved' : 'declined', { transaction_id: txn.id, response_status: httpStatus, response_body: text });
    return { httpStatus, body: text };
  }

  /**
   * The provider confirmed (payment.succeeded, or the watchdog's read) or refused (payment.failed /
   * a fraud denial on payment.created) an upsell charge it had accepted: the line is added now, or
   * the upsell is declined.
   * `guard` is the webhook's deduplication row, in the same transaction. Null: nothing to do.
   */
  async confirmHeldUpsell(
    teamId: string,
    txn: Row<'transactions'>,
    outcome: { approved: true; paymentRef: string } | { approved: false; paymentRef: string; code: string; message: string },
    guard: (trx: Tx) => Promise<boolean>,
  ): Promise<boolean> {
    const done = await this.store.transaction(async (trx) => {
      const current = (await this.orders.rows.findOrder(trx, teamId, txn.order_id, { forUpdate: true }))!;
      if (!(await guard(trx))) return false;
      const claim = await this.orders.rows.findOrderUpsellByTransaction(trx, teamId, txn.id);
      const settled = await this.ledger.external.settleExternalSale(
        trx,
        teamId,
        txn.id,
        outcome.approved ? { status: 'approved', paymentRef: outcome.paymentRef } : { status: 'declined', paymentRef: outcome.paymentRef, code: outcome.code, message: outcome.message },
      );
      if (!settled || !claim) return false;
      const upsell = await this.catalog.findUpsell(trx, teamId, claim.upsell_id);
      const [offer] = await this.catalog.findOffers(trx, teamId, [upsell!.offer_id]);
      const line = { ...draftLine(teamId, offer!, claim.quantity), upsell_id: claim.upsell_id };
      await this.applyUpsellOutcome(trx, teamId, current, line, settled, outcome.approved ? { approved: true } : { approved: false, reason: outcome.message }, claim.id);
      return true;
    });
    if (done) this.events.nudge();
    return done;
  }
}
