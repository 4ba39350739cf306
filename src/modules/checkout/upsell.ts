import { ApiError, invalid, notFound } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import { readTogether, type Tx } from '../../db/database.ts';
import { isGuardRefusal } from '../../db/helpers.ts';
import type { Row } from '../../db/schema.ts';
import { subscriptionView } from '../subscriptions/service.ts';
import { type PaymentsService } from '../payments/service.ts';
import type { ChargeOutcome, ChargeRequest } from '../../providers/provider.ts';
import type { UpsellBody } from '../orders/schemas.ts';
import { type OrderStatus, UPSELLABLE } from '../orders/states.ts';
import { draftLine, type LineDraft } from '../orders/pricing.ts';
import type { OrdersService } from '../orders/service.ts';
import type { LineViewSource } from '../orders/views.ts';
import { UseCase } from './use-case.ts';

/**
 * Process Upsell: one click on the saved payment method, in atomic phases whatever the provider;
 * a provider that confirms later (the external checkout provider) answers 202 until it does.
 */

/** Phase 1's result: an answer decided without a provider, or an attempt to send. */
type UpsellPhase =
  | { kind: 'done'; outcome: Exclude<ChargeOutcome, { kind: 'unknown' }>; transaction: Row<'transactions'> }
  | { kind: 'call'; attempt: Row<'transactions'>; confirmsLater: boolean; send: () => Promise<ChargeOutcome> };
export class UpsellUseCase extends UseCase {
  /**
   * Process Upsell: one click on the order's saved card. Each upsell is charged at most once
   * per order; a repeat gets the first answer back. The line and totals change only on approval.
   */
  async processUpsell(teamId: string, body: UpsellBody): Promise<{ httpStatus: number; body: string }> {
    const claim = await this.store.transaction(async (trx) => {
      // The upsell is configuration (cached): known before the order is read.
      const upsell = await this.catalog.findUpsell(trx, teamId, body.upsell_id);
      // The order's lock, then its claim on this upsell, its saved method, its customer and its lines,
      // read by the order's id as locked, in one round trip (the last three only matter when the
      // upsell goes ahead; the lines let an approval be answered in one round trip: settleApprovalAtCommit).
      const orderId = body.order_number;
      const [[order], [previous], [savedMethod], [customer], lines] = await readTogether(trx, [
        this.orders.rows.lockOrderQuery(trx, teamId, orderId),
        this.orders.rows.orderUpsellQuery(trx, teamId, orderId, body.upsell_id),
        this.ledger.paymentMethodOfQuery(trx, teamId, this.orders.rows.paymentMethodIdOfOrder, orderId),
        this.customers.findOfQuery(trx, teamId, this.orders.rows.customerIdOfOrder, orderId),
        this.orders.rows.linesQuery(trx, teamId, [orderId]),
      ] as const);
      if (!order) throw notFound('Order');
      if (!upsell) throw notFound('Upsell');
      if (previous) return { replay: previous } as const;
      if (!UPSELLABLE.includes(order.status as OrderStatus)) {
        throw new ApiError('order_not_payable', `Order ${order.id} is ${order.status}; upsells need a paid order.`);
      }
      if (upsell.campaign_id !== order.campaign_id) throw invalid('upsell_id', "is not an upsell of this order's campaign");
      if (!upsell.is_active) throw invalid('upsell_id', 'this upsell is not active');
      const method = order.payment_method_id ? savedMethod : undefined;
      if (!method) throw new ApiError('no_saved_payment_method');
      const drafts = await this.orders.priceLines(trx, teamId, order.campaign_id, [{ offer_id: upsell.offer_id, quantity: body.quantity }]);
      const line = { ...drafts[0]!, upsell_id: upsell.id };
      const claimId = newId('orderUpsell');
      const claim = { id: claimId, team_id: teamId, order_id: order.id, upsell_id: upsell.id, quantity: body.quantity, status: 'in_flight' } as const;
      if (method.connection_id) {
        await this.orders.rows.insertOrderUpsell(trx, claim);
        return { order, method, line, claimId, step: null };
      }
      // Phase 1: the attempt commits with the claim that names it, so a crash leaves a question for the gateway, never an unrecorded charge.
      const opened = await this.payments.openSavedCharge(trx, {
        step: `upsell:${upsell.id}`,
        teamId,
        orderId: order.id,
        amount: line.line_total + line.shipping,
        currency: order.currency,
        method,
        upsellId: upsell.id,
        payer: { email: customer!.email, first_name: customer!.first_name, last_name: customer!.last_name },
      });
      await this.orders.rows.insertOrderUpsell(trx, { ...claim, transaction_id: opened.kind === 'call' ? opened.request.attemptId : opened.transaction.id });
      if (opened.kind === 'done') {
        // Decided without a provider call (a test card, nothing to charge, no gateway): the claim
        // settles in this same transaction, so no failure between two commits can leave it in flight.
        const o = opened.outcome;
        const result = o.kind === 'approved' ? ({ approved: true } as const) : { approved: false as const, reason: o.kind === 'declined' ? o.text : 'declined' };
        return { answered: await this.applyUpsellOutcome(trx, teamId, order, line, opened.transaction, result, claimId, customer) };
      }
      // The attempt row, the claim and the COMMIT go in one round trip; the row is read once committed.
      const next = { kind: 'call', attempt: opened.attempt, confirmsLater: false, send: () => this.payments.sendCharge(opened.gateway, opened.request) } as const;
      return { order, method, line, claimId, step: next, customer, lines };
    });
    if ('replay' in claim) {
      const r = claim.replay!;
      if (r.status === 'in_flight') throw new ApiError('payment_in_progress', 'This upsell is already being charged.');
      return { httpStatus: r.response_status!, body: r.response_body! };
    }
    if ('answered' in claim) {
      this.events.nudge();
      return claim.answered!;
    }

    const { order, method, line, claimId } = claim;
    const customer = 'customer' in claim ? claim.customer : undefined;
    const lines = 'lines' in claim ? claim.lines : undefined;
    const step: UpsellPhase = claim.step ? { ...claim.step, attempt: await claim.step.attempt } : await this.openSavedAtProvider(teamId, order, method, line, claimId);
    if (step.kind === 'done') return this.settleUpsell(teamId, order.id, line, claimId, step.transaction, step.outcome);
    // Phase 2: the attempt row is committed; the provider is asked holding no lock.
    const outcome = await step.send();
    if (outcome.kind === 'unknown') {
      const data = await this.store.run((db) => this.orders.view(db, teamId, order));
      return {
        httpStatus: 502,
        body: JSON.stringify({
          success: false,
          message: 'The provider did not answer, so whether the upsell was charged is not known yet; it is confirmed with the provider within minutes. Do not charge it again.',
          data: { ...data, upsell_id: line.upsell_id, transaction_id: step.attempt.id },
          error: { type: 'api_error', code: 'payment_outcome_unknown' },
        }),
      };
    }
    if (step.confirmsLater) {
      if (outcome.kind === 'declined' && outcome.providerRef === null) {
        // Refused before any payment was made (the request itself): nothing to decline, the upsell can be tried again.
        await this.store.transaction(async (trx) => {
          await this.payments.closeAttempt(trx, teamId, order.customer_id, step.attempt, outcome);
          await this.orders.rows.deleteOrderUpsell(trx, teamId, claimId);
        });
        throw new ApiError('gateway_unavailable', `The external checkout provider could not charge the saved payment method: ${outcome.text}`);
      }
      // Spec 4.3: accepted (pending, or even paid at once), the line is added when the provider's payment.succeeded confirms it.
      if (outcome.kind !== 'declined') return this.acceptUpsell(teamId, order.id, line, claimId, step.attempt, outcome.providerRef);
    } else if (outcome.kind === 'approved' && customer && lines) {
      const answered = await this.settleApprovalAtCommit(order, lines, line, claimId, step.attempt, outcome, customer);
      if (answered) return answered;
    }
    return this.settleUpsell(teamId, order.id, line, claimId, step.attempt, outcome, customer);
  }

  /**
   * Phase 1 for a payment method the external checkout provider saved (spec 4.3): which of the
   * customer's methods the order's checkout saved is asked of the provider first (a read); then the
   * attempt commits in flight, named by the claim. Nothing saved: "no saved payment method found".
   */
  private async openSavedAtProvider(teamId: string, order: Row<'orders'>, method: Row<'payment_methods'>, line: LineDraft, claimId: string): Promise<UpsellPhase> {
    let target: Awaited<ReturnType<PaymentsService['externalMethodToCharge']>>;
    try {
      target = await this.payments.externalMethodToCharge(teamId, order.id, method);
    } catch (err) {
      await this.store.run((db) => this.orders.rows.deleteOrderUpsell(db, teamId, claimId));
      throw err;
    }
    if (!target) {
      await this.store.run((db) => this.orders.rows.deleteOrderUpsell(db, teamId, claimId));
      throw new ApiError(
        'no_saved_payment_method',
        'No saved payment method found: the checkout was not set up for future use (setup_future_usage off_session), so the provider has nothing to charge.',
      );
    }
    const provider = await this.payments.providerOf(teamId, { connection_id: method.connection_id, gateway_id: null });
    if (!provider) {
      await this.store.run((db) => this.orders.rows.deleteOrderUpsell(db, teamId, claimId));
      throw new ApiError('provider_not_configured', 'The external checkout provider connection of this order is no longer available.');
    }
    const attempt = await this.store.transaction(async (trx) => {
      const t = await this.ledger.external.beginExternalUpsell(trx, { teamId, orderId: order.id, amount: line.line_total + line.shipping, currency: order.currency, method, upsellId: line.upsell_id! });
      if (!(await this.orders.rows.finishOrderUpsell(trx, teamId, claimId, { transaction_id: t.id }))) {
        throw new ApiError('payment_in_progress', 'This upsell claim was released while the provider was asked; send the upsell again.');
      }
      return t;
    });
    const request: ChargeRequest = {
      attemptId: attempt.id,
      orderId: order.id,
      amount: attempt.amount,
      currency: attempt.currency,
      saved: { vaultRef: target.paymentMethodRef, originalRef: method.original_ref, memberRef: method.member_ref },
      saveCard: false,
      payer: { email: null, first_name: null, last_name: null },
      description: line.name,
    };
    return { kind: 'call', attempt, confirmsLater: !provider.capabilities.syncCard, send: () => provider.charge(request) };
  }

  /** An upsell the provider accepted and confirms later: 202, the claim pending, the line added when its webhook (or the watchdog) confirms. */
  private async acceptUpsell(teamId: string, orderId: string, line: LineDraft, claimId: string, attempt: Row<'transactions'>, paymentRef: string | null) {
    const answered = await this.store.transaction(async (trx) => {
      const current = (await this.orders.rows.findOrder(trx, teamId, orderId, { forUpdate: true }))!;
      const accepted: Exclude<ChargeOutcome, { kind: 'unknown' }> = { kind: 'pending', providerRef: paymentRef ?? '', code: 'pending', text: 'Accepted by the provider; waiting for its confirmation' };
      if (!(await this.payments.closeAttempt(trx, teamId, current.customer_id, attempt, accepted))) {
        // Its webhook (or the recovery run) settled the charge before this answer was recorded: that answer stands.
        const stored = (await this.orders.rows.findOrderUpsellByTransaction(trx, teamId, attempt.id))!;
        return { httpStatus: stored.response_status ?? 202, body: stored.response_body ?? '{}' };
      }
      const amount = line.line_total + line.shipping;
      await this.orders.recordEvents(trx, teamId, orderId, [{ type: 'upsell.pending', data: { upsell_id: line.upsell_id, transaction: attempt.id, amount, payment_id: paymentRef } }]);
      const view = await this.orders.view(trx, teamId, current);
      const text = JSON.stringify({
        success: true,
        message: 'Upsell accepted: the provider confirms the charge shortly, and the line is added to the order then.',
        data: { ...view, payment_status: 'pending_external_confirmation', upsell_status: 'pending_external_confirmation', upsell_id: line.upsell_id, transaction_id: attempt.id },
      });
      await this.orders.moveUpsellClaim(trx, teamId, claimId, 'pending', { response_status: 202, response_body: text });
      return { httpStatus: 202, body: text };
    });
    this.events.nudge();
    return answered;
  }

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
    });
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
  private async settleApprovalAtCommit(
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
    try {
      const answered = await this.store.transaction(async (trx) => {
        // The order's lock first, as the ordinary way and the recovery run take it: the same order of locks.
        void this.orders.rows.lockOrderWithNext(trx, teamId, order.id);
        const txn = await this.payments.closeApprovalAtCommit(trx, teamId, customer.id, attempt, outcome);
        const amount = line.line_total + line.shipping;
        const now = await this.orders.addLineAtCommit(trx, order, lines, { ...line, order_id: order.id }, [{ type: 'upsell.added', data: { upsell_id: line.upsell_id, transaction: txn.id, amount } }]);
        return this.answerUpsell(trx, teamId, now.updated, now.lines, line, txn, { approved: true }, claimId, customer);
      });
      this.events.nudge();
      return answered;
    } catch (err) {
      if (isGuardRefusal(err)) return null;
      throw err;
    }
  }

  /**
   * The recovery run found what the provider did with an upsell attempt whose answer was lost:
   * settled as the request would have. One the provider holds (pending) waits for its confirmation.
   */
  async recoverUpsell(attempt: Row<'transactions'>, outcome: Exclude<ChargeOutcome, { kind: 'unknown' }>): Promise<void> {
    const teamId = attempt.team_id;
    if (outcome.kind === 'pending' || outcome.kind === 'redirect') {
      await this.store.transaction((trx) => this.payments.closeAttempt(trx, teamId, '', attempt, { kind: 'pending', providerRef: outcome.providerRef, code: 'pending', text: 'Held at the provider; waiting for its confirmation' }));
      return;
    }
    const claim = await this.store.run((db) => this.orders.rows.findOrderUpsellByTransaction(db, teamId, attempt.id));
    if (!claim) {
      // The claim and the attempt commit together: an attempt without one is not an upsell of ours.
      await this.store.transaction((trx) => this.payments.closeAttempt(trx, teamId, '', attempt, outcome));
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
    const amount = line.line_total + line.shipping;
    let updated = current;
    let lines: Row<'order_lines'>[] | undefined;
    if (outcome.approved) {
      const now = adding ? await adding.totals(current.coupon_id) : await this.orders.addLineAndTotals(trx, teamId, current.id, current.coupon_id, { ...line, order_id: current.id });
      const added = now.added;
      lines = now.lines;
      updated = await this.orders.updateWithEvents(trx, current, now.totals, [{ type: 'upsell.added', data: { upsell_id: line.upsell_id, transaction: txn.id, amount } }]);
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
      await this.orders.recordEvents(trx, teamId, current.id, [{ type: 'upsell.declined', data: { upsell_id: line.upsell_id, transaction: txn.id, amount } }]);
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
