import { newId } from '../../app/ids.ts';
import type { Tx } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import type { ChargeOutcome, ChargeRequest, VerifyRequest } from '../../providers/provider.ts';
import { type FraudService, velocityBlockText } from '../fraud/service.ts';
import type { GatewaysService } from '../gateways/service.ts';
import { orderMembers } from '../gateways/service.ts';
import { type CardSummary, summarizeCard } from '../../providers/card.ts';
import type { LedgerService } from '../ledger/service.ts';
import { attemptRow, NOT_RECEIVED, type FirstChargeRequest, type PaymentPlan, type RouteRequest, routeTarget } from './attempts.ts';
import { firstPaymentType } from './states.ts';

/**
 * The first payment of an order in atomic phases. Nothing due (a free trial, a fully discounted
 * cart) makes it a verification: the same phases and routing, the card checked and saved at $0. `open` runs in the transaction that claims the
 * order: BIN block, fraud velocity rules and test cards are decided there (no provider call),
 * otherwise the first routable gateway's volume is reserved and an attempt row is committed in flight. After the
 * provider answered, `record` runs in the transaction that settles the order: it closes the
 * attempt and, on a retryable decline through a router, opens the next one (decline salvage).
 */
export type FirstStep =
  | { kind: 'call'; attempt: Row<'transactions'>; gateway: Row<'gateways'>; plan: PaymentPlan; index: number; transactions: Row<'transactions'>[]; holds: boolean }
  | {
      kind: 'done';
      outcome: ChargeOutcome;
      transactions: Row<'transactions'>[];
      /** The card saved for upsells (its id: what the order names). */
      paymentMethod: Pick<Row<'payment_methods'>, 'id'> | null;
      isTest: boolean;
      /** Whether the screening took velocity holds; unset when not known here (the recovery run): settled as if it had. */
      holds?: boolean;
    };

type FirstCall = Extract<FirstStep, { kind: 'call' }>;

/**
 * A step as phase 1 (or a salvage in phase 3) writes it: a call's attempt row goes with the
 * transaction's next statement or its COMMIT, in the same round trip, so it is a promise until the
 * transaction has committed; `committed()` then gives the call. `earlier`: the attempts before it.
 */
export type OpenedStep = Exclude<FirstStep, FirstCall> | (Omit<FirstCall, 'attempt' | 'transactions'> & { attempt: Promise<Row<'transactions'>>; earlier: Row<'transactions'>[] });

/** A call once the transaction that wrote its attempt has committed (the row is read by then). */
export async function committed(step: Extract<OpenedStep, { kind: 'call' }>): Promise<FirstCall> {
  const { earlier, attempt: written, ...call } = step;
  const attempt = await written;
  return { ...call, attempt, transactions: [...earlier, attempt] };
}

export const FIRST_PAYMENT = 'first_payment';
/** The recovery run's code for an attempt its gateway never saw (see checkout/recover.ts). */

export class FirstPaymentLedger {
  constructor(
    private readonly gateways: GatewaysService,
    private readonly ledger: LedgerService,
    private readonly fraud?: FraudService,
  ) {}

  /** Routing precedence (spec 2.1): explicit gateway or router, then the campaign's router, then its gateway. */
  async plan(trx: Tx, teamId: string, route: RouteRequest): Promise<PaymentPlan> {
    const { routerId, gatewayId } = routeTarget(route);
    if (gatewayId) {
      const g = route.gateway?.id === gatewayId ? route.gateway : await this.gateways.findGateway(trx, teamId, gatewayId);
      return { routerId: null, maxAttempts: 1, candidates: g ? [{ gateway: g, memberCap: null }] : [], skipped: [] };
    }
    if (routerId) {
      const r = await this.gateways.findRouter(trx, teamId, routerId);
      if (r && r.router.is_active) {
        const candidates = orderMembers(r.router.strategy, r.members).map((m) => ({ gateway: m.gateway, memberCap: m.monthly_cap }));
        return { routerId: r.router.id, maxAttempts: r.router.max_attempts, candidates, skipped: [] };
      }
    }
    return { routerId: null, maxAttempts: 1, candidates: [], skipped: [] };
  }

  async open(trx: Tx, req: FirstChargeRequest): Promise<OpenedStep> {
    const card = summarizeCard(req.card);
    if (await this.gateways.isBinBlocked(trx, req.teamId, req.card.number)) {
      const text = `The card's BIN ${card.bin} is blocked by this merchant.`;
      const t = await this.ledger.rows.insertTransaction(trx, attemptRow(req, card, { type: firstPaymentType(req.amount), status: 'declined', gatewayId: null, code: 'bin_blocked', text }));
      return { kind: 'done', outcome: { kind: 'declined', providerRef: null, code: 'bin_blocked', text, retryable: false }, transactions: [t], paymentMethod: null, isTest: false, holds: false };
    }
    // Velocity rules count every card first payment past the blacklist, listed test cards included.
    const screened = await this.fraud?.screen(trx, { teamId: req.teamId, orderId: req.orderId, cardNumber: req.card.number, email: req.payer.email, ipAddress: req.ipAddress });
    if (screened?.kind === 'blocked') {
      const text = velocityBlockText(screened.rule);
      const t = await this.ledger.rows.insertTransaction(trx, attemptRow(req, card, { type: firstPaymentType(req.amount), status: 'declined', gatewayId: null, code: 'velocity_blocked', text }));
      return { kind: 'done', outcome: { kind: 'declined', providerRef: null, code: 'velocity_blocked', text, retryable: false }, transactions: [t], paymentMethod: null, isTest: false, holds: false };
    }
    const holds = screened?.holds ?? false;
    const plan = await this.plan(trx, req.teamId, req.route);
    // A listed test card is approved without reaching any gateway, production ones included.
    if (await this.gateways.isTestCard(trx, req.teamId, req.card.number)) {
      const gatewayId = plan.candidates[0]?.gateway.id ?? null;
      const id = newId('transaction');
      const saved = await this.saveMethod(trx, req, card, gatewayId, null, id, true);
      const t = await this.ledger.rows.insertTransaction(trx, {
        ...attemptRow(req, card, { type: firstPaymentType(req.amount), id, status: 'approved', gatewayId, routerId: plan.routerId, code: 'test_card', text: 'Approved: test card (no gateway was called)' }),
        provider_ref: `test_${id}`,
        is_test: true,
        payment_method_id: saved.id,
      });
      return { kind: 'done', outcome: { kind: 'approved', providerRef: t.provider_ref!, authCode: null, code: 'test_card', text: t.response_text!, vaultRef: null }, transactions: [t], paymentMethod: saved, isTest: true, holds };
    }
    return this.next(trx, req, card, plan, 0, [], holds);
  }

  /** Opens the attempt on the next gateway that is active and has room under its caps, or declines with no_route. */
  private async next(trx: Tx, req: FirstChargeRequest, card: CardSummary, plan: PaymentPlan, from: number, transactions: Row<'transactions'>[], holds: boolean): Promise<OpenedStep> {
    const tried = transactions.filter((t) => t.gateway_id !== null).length;
    for (let i = from; i < plan.candidates.length && tried < plan.maxAttempts; i++) {
      const { gateway, memberCap } = plan.candidates[i]!;
      if (!gateway.is_active) {
        plan.skipped.push({ gateway_id: gateway.id, reason: 'inactive' });
        continue;
      }
      const volume = await this.gateways.volume.reserve(trx, req.teamId, gateway, memberCap, req.amount);
      if (!volume.ok) {
        plan.skipped.push({ gateway_id: gateway.id, reason: 'monthly_cap_reached' });
        continue;
      }
      // Goes with the transaction's next statement or its COMMIT (OpenedStep), in one round trip.
      const attempt = this.ledger.rows.insertTransactionWithNext(trx, {
        ...attemptRow(req, card, { type: firstPaymentType(req.amount), status: 'pending', gatewayId: gateway.id, routerId: plan.routerId, attempt: tried + 1, code: 'in_flight', text: 'Sent to the gateway; waiting for its answer' }),
        step: FIRST_PAYMENT,
        in_flight: true,
        volume_month: volume.month,
        is_test: gateway.test_mode,
      });
      return { kind: 'call', attempt, gateway, plan, index: i, earlier: transactions, holds };
    }
    if (transactions.length > 0) {
      const last = transactions.at(-1)!;
      return { kind: 'done', outcome: { kind: 'declined', providerRef: last.provider_ref, code: last.response_code ?? 'declined', text: last.response_text ?? 'Declined', retryable: false }, transactions, paymentMethod: null, isTest: false, holds };
    }
    const text = plan.skipped.length
      ? `No payment gateway is available: ${plan.skipped.map((s) => `${s.gateway_id} ${s.reason.replace(/_/g, ' ')}`).join(', ')}.`
      : 'No payment gateway is configured for this campaign.';
    const t = await this.ledger.rows.insertTransaction(trx, attemptRow(req, card, { type: firstPaymentType(req.amount), status: 'declined', gatewayId: null, routerId: plan.routerId, code: 'no_route', text }));
    return { kind: 'done', outcome: { kind: 'declined', providerRef: null, code: 'no_route', text, retryable: false }, transactions: [t], paymentMethod: null, isTest: false, holds };
  }

  /** What phase 2 sends: the card in memory, our attempt id as the gateway's order id. */
  chargeRequest(req: FirstChargeRequest, attemptId: string): ChargeRequest {
    return {
      attemptId,
      orderId: req.orderId,
      amount: req.amount,
      currency: req.currency,
      card: req.card,
      saveCard: true,
      payer: req.payer,
      billing: req.billing,
      redirect: req.redirect,
    };
  }

  /** What phase 2 sends when nothing is due (a verification attempt): the card to check and save, charging nothing. */
  verifyRequest(req: FirstChargeRequest, attemptId: string): VerifyRequest {
    return { attemptId, orderId: req.orderId, currency: req.currency, card: req.card, payer: req.payer, billing: req.billing, redirect: req.redirect };
  }

  /**
   * Phase 3, under the order's row lock: the attempt takes the provider's answer. A retryable
   * decline through a router opens the next attempt; anything else is the payment's outcome.
   * `unknown` leaves the attempt in flight for the recovery run. Null: another path recorded it first.
   */
  async record(trx: Tx, req: FirstChargeRequest, step: Extract<FirstStep, { kind: 'call' }>, outcome: ChargeOutcome): Promise<OpenedStep | null> {
    const card = summarizeCard(req.card);
    if (outcome.kind === 'unknown') {
      return { kind: 'done', outcome, transactions: step.transactions, paymentMethod: null, isTest: step.gateway.test_mode, holds: step.holds };
    }
    const closed = await this.close(trx, req.teamId, req.customerId, step.attempt, outcome, card);
    if (!closed) return null;
    const transactions = [...step.transactions.slice(0, -1), closed.transaction];
    if (outcome.kind === 'declined' && step.plan.routerId && outcome.retryable) {
      return this.next(trx, req, card, step.plan, step.index + 1, transactions, step.holds);
    }
    return { kind: 'done', outcome, transactions, paymentMethod: closed.paymentMethod, isTest: step.gateway.test_mode, holds: step.holds };
  }

  /**
   * Phase 3 of an approval, written in the same socket write as what follows from it (the order's
   * move, its COMMIT): the attempt's UPDATE is not awaited, and fails the transaction (SQLSTATE
   * CS409) when another path recorded the attempt first; the caller then takes the ordinary way
   * (record). The attempt in the answer is the row as that UPDATE leaves it.
   */
  async recordApprovalAtCommit(trx: Tx, req: FirstChargeRequest, step: FirstCall, outcome: Extract<ChargeOutcome, { kind: 'approved' }>): Promise<Extract<FirstStep, { kind: 'done' }>> {
    const closed = (await this.close(trx, req.teamId, req.customerId, step.attempt, outcome, summarizeCard(req.card), { atCommit: true }))!;
    return { kind: 'done', outcome, transactions: [...step.transactions.slice(0, -1), closed.transaction], paymentMethod: closed.paymentMethod, isTest: step.gateway.test_mode, holds: step.holds };
  }

  /**
   * Closes an attempt with the provider's answer (the request's own phase 3, or the recovery run):
   * approved saves the card for one-click upsells; a decline gives its reserved volume back.
   * `atCommit` (an approval only): the attempt's UPDATE goes unanswered with the transaction's next
   * statement or its COMMIT and checks itself (ledger closeAttemptAtCommit); never null then.
   */
  async close(
    trx: Tx,
    teamId: string,
    customerId: string,
    attempt: Row<'transactions'>,
    outcome: Exclude<ChargeOutcome, { kind: 'unknown' }>,
    card: CardSummary | null,
    opts: { atCommit?: boolean } = {},
  ): Promise<{ transaction: Row<'transactions'>; paymentMethod: Pick<Row<'payment_methods'>, 'id'> | null } | null> {
    if (opts.atCommit && outcome.kind !== 'approved') throw new Error('close(): only an approval is written at commit');
    let saved: { id: string } | null = null;
    if (outcome.kind === 'approved' && attempt.step === FIRST_PAYMENT) {
      const summary = card ?? { brand: attempt.card_brand ?? 'unknown', bin: attempt.card_bin ?? '', last4: attempt.card_last4 ?? '', exp: attempt.card_exp ?? '' };
      saved = await this.saveMethod(trx, { teamId, customerId }, summary, attempt.gateway_id, outcome.vaultRef, outcome.providerRef, attempt.is_test);
    }
    const status = outcome.kind === 'approved' ? 'approved' : outcome.kind === 'declined' ? 'declined' : 'pending';
    const patch = {
      status,
      provider_ref: outcome.providerRef,
      auth_code: outcome.kind === 'approved' ? outcome.authCode : null,
      response_code: outcome.code,
      response_text: outcome.text,
      ...(saved ? { payment_method_id: saved.id } : {}),
    } as const;
    if (opts.atCommit) return { transaction: await this.ledger.rows.closeAttemptAtCommit(trx, teamId, attempt, patch), paymentMethod: saved };
    const t = await this.ledger.rows.closeAttempt(trx, teamId, attempt, patch);
    if (!t) {
      // Another path recorded the answer first (the recovery run, which saved the card then): the
      // card this answer saved (its insert rode in the UPDATE) is taken back, not left unnamed.
      if (saved) await this.ledger.rows.dropPaymentMethod(trx, teamId, saved.id);
      return null;
    }
    if (status === 'declined') await this.releaseVolume(trx, t);
    return { transaction: t, paymentMethod: saved };
  }

  /**
   * The payment's outcome is recorded: a gateway's decline turns the velocity holds it took into
   * declines; any other outcome (approved, redirected, held, or declined before reaching a gateway)
   * drops them. An unknown outcome keeps them until the recovery run settles the attempt. A
   * payment whose screening took none (no declines rule counted it) has nothing to settle: no
   * statement.
   */
  async settleVelocity(trx: Tx, teamId: string, orderId: string, done: Extract<FirstStep, { kind: 'done' }>): Promise<void> {
    if (!this.fraud || done.outcome.kind === 'unknown' || done.holds === false) return;
    const gatewayDeclined = done.outcome.kind === 'declined' && done.transactions.some((t) => t.gateway_id !== null && t.status === 'declined' && t.response_code !== NOT_RECEIVED);
    await this.fraud.settle(trx, teamId, orderId, gatewayDeclined);
  }

  /** A declined or abandoned attempt gives back the volume it reserved on its gateway. */
  async releaseVolume(trx: Tx, t: Row<'transactions'>): Promise<void> {
    if (t.gateway_id && t.volume_month) await this.gateways.volume.release(trx, t.team_id, t.gateway_id, t.volume_month, t.amount);
  }

  /**
   * The card saved for one-click upsells: its insert rides in the next statement (the one that
   * names it by `id`: ledger repo's deferPaymentMethod), and fails that statement if it fails.
   */
  private async saveMethod(trx: Tx, req: { teamId: string; customerId: string }, card: CardSummary, gatewayId: string | null, vaultRef: string | null, originalRef: string | null, isTest: boolean): Promise<{ id: string }> {
    const id = newId('paymentMethod');
    await this.ledger.rows.deferPaymentMethod(trx, {
      id,
      team_id: req.teamId,
      customer_id: req.customerId,
      gateway_id: gatewayId,
      vault_ref: vaultRef,
      original_ref: originalRef,
      brand: card.brand,
      bin: card.bin,
      last4: card.last4,
      exp: card.exp,
      is_test: isTest,
    });
    return { id };
  }
}
