import { ApiError, invalid, notFound } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import { readTogether } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import { type PaymentsService } from '../payments/service.ts';
import type { ChargeOutcome, ChargeRequest } from '../../providers/provider.ts';
import type { UpsellBody } from '../orders/schemas.ts';
import { type OrderStatus, UPSELLABLE } from '../orders/states.ts';
import type { LineDraft } from '../orders/pricing.ts';
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
        return { answered: await this.uc.upsellSettlement.applyUpsellOutcome(trx, teamId, order, line, opened.transaction, result, claimId, customer) };
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
    if (step.kind === 'done') return this.uc.upsellSettlement.settleUpsell(teamId, order.id, line, claimId, step.transaction, step.outcome);
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
        }, { outcome: true });
        throw new ApiError('gateway_unavailable', `The external checkout provider could not charge the saved payment method: ${outcome.text}`);
      }
      // Spec 4.3: accepted (pending, or even paid at once), the line is added when the provider's payment.succeeded confirms it.
      if (outcome.kind !== 'declined') return this.acceptUpsell(teamId, order.id, line, claimId, step.attempt, outcome.providerRef);
    } else if (outcome.kind === 'approved' && customer && lines) {
      const answered = await this.uc.upsellSettlement.settleApprovalAtCommit(order, lines, line, claimId, step.attempt, outcome, customer);
      if (answered) return answered;
    }
    return this.uc.upsellSettlement.settleUpsell(teamId, order.id, line, claimId, step.attempt, outcome, customer);
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
    }, { outcome: true });
    this.events.nudge();
    return answered;
  }
}
