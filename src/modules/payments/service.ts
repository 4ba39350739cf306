import { ApiError, invalid, notFound } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import { iso } from '../../app/schemas.ts';
import type { Executor, Store, Tx } from '../../db/database.ts';
import { listPage, type Page } from '../../db/pagination.ts';
import type { Row } from '../../db/schema.ts';
import { type CardProviders, type CardProvider, type ChargeOutcome, type ChargeRequest, type Found, type Payer, providerFor, type ReversalOutcome } from '../../providers/provider.ts';
import type {
  ExtpayConnection,
  ExtpayDispute,
  ExtpayEmbedCheckout,
  ExtpayError,
  ExtpayMembership,
  ExtpayPayment,
  ExtpayPaymentResult,
  ExtpayProviderAdapter,
  ExtpayRefund,
  ExtpaySetupIntent,
} from '../../providers/extpay/types.ts';
import { disputeIsChargeback, EXTPAY_REFUND_STATES } from '../../providers/extpay/status.ts';
import { embedCheckout, renewalPlanFor } from '../../providers/extpay/wire.ts';
import type { ConnectionsService } from '../connections/service.ts';
import type { GatewaysService } from '../gateways/service.ts';
import type { PaymentInput } from '../orders/schemas.ts';
import type { CardInput, CardSummary } from './card.ts';
import { attemptRow } from './attempts.ts';
import { FirstPaymentLedger } from './first-payment.ts';
import * as repo from './repo.ts';

/** The response code of an extpay refund the provider accepted but has not settled. */
export const EXTPAY_REFUND_REQUESTED = 'refund_requested';

export function transactionView(t: Row<'transactions'>) {
  return {
    object: 'transaction' as const,
    id: t.id,
    order_number: t.order_id,
    parent_id: t.parent_id,
    type: t.type,
    status: t.status,
    amount: t.amount,
    currency: t.currency,
    gateway_id: t.gateway_id,
    router_id: t.router_id,
    attempt: t.attempt,
    upsell_id: t.upsell_id,
    provider_ref: t.provider_ref,
    auth_code: t.auth_code,
    response_code: t.response_code,
    response_text: t.response_text,
    card: t.card_last4 ? { brand: t.card_brand, bin: t.card_bin, last4: t.card_last4, exp: t.card_exp } : null,
    connection_id: t.connection_id,
    provisional: t.provisional,
    requested_amount: t.requested_amount,
    is_test: t.is_test,
    created_at: iso(t.created_at),
  };
}
export type TransactionView = ReturnType<typeof transactionView>;

export function disputeView(d: Row<'disputes'>) {
  return {
    object: 'dispute' as const,
    id: d.id,
    order_number: d.order_id,
    transaction_id: d.transaction_id,
    provider_ref: d.provider_ref,
    status: d.status,
    reason: d.reason,
    amount: d.amount,
    currency: d.currency,
    chargeback_transaction_id: d.chargeback_id,
    created_at: iso(d.created_at),
    updated_at: iso(d.updated_at),
  };
}

import { type RouteRequest, routeTarget } from './attempts.ts';
export { type FirstChargeRequest, type PaymentPlan, type RouteRequest, routeTarget } from './attempts.ts';
export type { Payer } from '../../providers/provider.ts';

/** A one-click upsell on the card the first payment saved. */
export interface SavedChargeRequest {
  teamId: string;
  orderId: string;
  amount: number;
  currency: string;
  method: Row<'payment_methods'>;
  upsellId: string;
  payer: Payer;
}

/** An upsell charge in atomic phases: an attempt to send, or an answer decided without a provider call. */
export type UpsellStep =
  | { kind: 'call'; attempt: Row<'transactions'>; gateway: Row<'gateways'>; request: ChargeRequest }
  | { kind: 'done'; outcome: Exclude<ChargeOutcome, { kind: 'unknown' }>; transaction: Row<'transactions'> };

/** What the provider said about an extpay payment that settled a first payment. */
export interface ExternalPaid {
  paymentRef: string;
  memberRef: string | null;
  membershipRef: string | null;
  cardBrand: string | null;
  cardLast4: string | null;
}

/** How a pending first payment ended (3-D Secure gateway or extpay). */
export type FirstPaymentOutcome =
  | { approved: true; paymentMethod: string | null; external?: ExternalPaid }
  | { approved: false; code: string; message: string; paymentRef?: string | null };

export interface ListTransactionsQuery {
  limit: number;
  starting_after?: string | undefined;
  created_gte?: Date | undefined;
  created_lte?: Date | undefined;
  order_number?: string | undefined;
  status?: string | undefined;
  type?: string | undefined;
  is_test?: boolean | undefined;
}

export function cardOf(payment: PaymentInput): CardInput | null {
  if (payment.method !== 'card' || !payment.card_number || !payment.card_exp || !payment.card_cvv) return null;
  return { number: payment.card_number, exp: payment.card_exp, cvv: payment.card_cvv };
}

/**
 * The card payment core. Provider calls happen outside any database transaction; each
 * attempt is written as a transaction row as soon as its answer is known, so a crash
 * mid-cascade leaves a record of every charge the gateways saw.
 */
export class PaymentsService {
  constructor(
    private readonly store: Store,
    private readonly gateways: GatewaysService,
    private readonly providers: CardProviders,
    private readonly connections: ConnectionsService,
    private readonly extpay: ExtpayProviderAdapter,
  ) {
    this.first = new FirstPaymentLedger(gateways);
  }

  /** The first payment's phases (routing, salvage, attempts). */
  readonly first: FirstPaymentLedger;

  /**
   * Checks made before anything is written or any provider is called; a request failing
   * here leaves no trace. Explicit routing ids must name the team's own gateway or router.
   */
  async preflight(db: Executor, teamId: string, payment: PaymentInput, route: RouteRequest): Promise<void> {
    if (payment.method === 'extpay') {
      // Spec 4.1 rule 8: the pinned connection, or any Active one; none → "not configured".
      await this.connections.resolveForOrder(db, teamId, payment.external_payment_id);
      return;
    }
    if (route.gatewayId && !(await this.gateways.findGateway(db, teamId, route.gatewayId))) throw invalid('gateway_id', 'no such gateway');
    if (route.paymentOrchestratorId && !(await this.gateways.findRouter(db, teamId, route.paymentOrchestratorId))) {
      throw invalid('payment_orchestrator_id', 'no such payment orchestrator');
    }
    // Spec 4.1 rule 2: routed directly to the 3-D Secure gateway (no router in between), both URLs
    // are checked here, before any gateway call. Through a router the gateway's decline says so (rule 3).
    const { gatewayId: directId } = routeTarget(route);
    if (directId && payment.method === 'card' && (!payment.return_url || !payment.cancel_url)) {
      const direct = await this.gateways.findGateway(db, teamId, directId);
      if (direct?.kind === 'threeds') {
        const missing = (['return_url', 'cancel_url'] as const).filter((f) => !payment[f]);
        throw new ApiError('validation_failed', 'This gateway requires 3D Secure: send payment.return_url and payment.cancel_url.', {
          fields: missing.map((f) => ({ path: `payment.${f}`, message: 'is required: the gateway requires 3D Secure' })),
        });
      }
    }
  }

  /** The provider of a gateway's kind: the one interface every card gateway speaks through. */
  provider(gateway: Row<'gateways'>): CardProvider {
    return providerFor(this.providers, gateway.kind);
  }

  /**
   * Phase 1 of a one-click upsell, in the transaction that claims it: a test card or a free upsell
   * is answered without a gateway; otherwise an attempt row is committed in flight with our id as
   * the gateway's order id. While it is in flight no other charge of this upsell can start.
   */
  async openUpsell(trx: Tx, req: SavedChargeRequest): Promise<UpsellStep> {
    const m = req.method;
    const card: CardSummary = { brand: m.brand, bin: m.bin, last4: m.last4, exp: m.exp };
    const base = (id: string, status: 'approved' | 'declined' | 'pending', code: string, text: string, gatewayId: string | null) => ({
      ...attemptRow(req, card, { id, status, gatewayId, code, text }),
      payment_method_id: m.id,
      upsell_id: req.upsellId,
      step: `upsell:${req.upsellId}`,
    });
    const done = async (status: 'approved' | 'declined', code: string, text: string, isTest: boolean): Promise<UpsellStep> => {
      const id = newId('transaction');
      const t = await repo.insertTransaction(trx, { ...base(id, status, code, text, m.gateway_id), provider_ref: status === 'approved' && code === 'test_card' ? `test_${id}` : null, is_test: isTest });
      const outcome: ChargeOutcome =
        status === 'approved'
          ? { kind: 'approved', providerRef: t.provider_ref ?? `none_${id}`, authCode: null, code, text, vaultRef: null }
          : { kind: 'declined', providerRef: null, code, text, retryable: false };
      return { kind: 'done', outcome, transaction: t };
    };
    if (m.is_test && !m.vault_ref) return done('approved', 'test_card', 'Approved: test card (no gateway was called)', true);
    // A free upsell (a $0 trial) adds its line; a gateway refuses a zero sale, so none is sent.
    if (req.amount === 0) return done('approved', 'no_charge', 'Nothing to charge (amount 0)', m.is_test);
    const gateway = m.gateway_id ? await this.gateways.findGateway(trx, req.teamId, m.gateway_id) : undefined;
    if (!gateway || !gateway.is_active || !m.vault_ref) return done('declined', 'gateway_unavailable', 'The gateway that saved this card is not available.', false);
    const month = await this.gateways.reserveVolume(trx, req.teamId, gateway, null, req.amount);
    if (!month) return done('declined', 'no_route', `No payment gateway is available: ${gateway.id} monthly cap reached.`, false);
    const id = newId('transaction');
    const attempt = await repo.insertTransaction(trx, {
      ...base(id, 'pending', 'in_flight', 'Sent to the gateway; waiting for its answer', gateway.id),
      in_flight: true,
      volume_month: month,
      is_test: gateway.test_mode,
    });
    // Merchant-initiated on the saved card, chained to the authenticated first payment: never redirected.
    const request: ChargeRequest = {
      attemptId: id,
      orderId: req.orderId,
      amount: req.amount,
      currency: req.currency,
      saved: { vaultRef: m.vault_ref, originalRef: m.original_ref },
      saveCard: false,
      payer: req.payer,
    };
    return { kind: 'call', attempt, gateway, request };
  }

  /** Phase 2: the provider call, holding no lock. */
  sendCharge(gateway: Row<'gateways'>, request: ChargeRequest): Promise<ChargeOutcome> {
    return this.provider(gateway).charge(this.gateways.account(gateway), request);
  }

  /** Phase 3 for any attempt (first payment, upsell): see FirstPaymentLedger.close. */
  closeAttempt(trx: Tx, teamId: string, customerId: string, attempt: Row<'transactions'>, outcome: Exclude<ChargeOutcome, { kind: 'unknown' }>) {
    return this.first.close(trx, teamId, customerId, attempt, outcome, null);
  }

  findTransactionRow(db: Executor, teamId: string, id: string) {
    return repo.findTransaction(db, teamId, id);
  }

  findInFlight(db: Executor, teamId: string, orderId: string, step: string) {
    return repo.findInFlight(db, teamId, orderId, step);
  }

  listInFlight(olderThan: Date, limit: number) {
    return this.store.run((db) => repo.listInFlight(db, olderThan, limit));
  }

  /**
   * The recovery run's question: what did the provider do with this attempt? Asked by our attempt
   * id (the gateway's order id / reference); `not_found` when it never saw it.
   */
  async findAttemptOutcome(t: Row<'transactions'>, parent?: Row<'transactions'>): Promise<Found<ChargeOutcome | ReversalOutcome>> {
    const gateway = t.gateway_id ? await this.store.run((db) => this.gateways.findGateway(db, t.team_id, t.gateway_id!)) : undefined;
    if (!gateway) return { kind: 'not_found' };
    const account = this.gateways.account(gateway);
    const provider = this.provider(gateway);
    if (t.type === 'refund' || t.type === 'void') {
      return provider.findReversal(account, { attemptId: t.id, chargeRef: parent?.provider_ref ?? '', amount: t.amount, currency: t.currency, type: t.type });
    }
    return provider.findCharge(account, t.id);
  }


  findPaymentMethod(db: Executor, teamId: string, id: string) {
    return repo.findPaymentMethod(db, teamId, id);
  }

  orderTransactions(db: Executor, teamId: string, orderId: string) {
    return repo.listOrderTransactions(db, teamId, orderId);
  }

  /**
   * Opens a refund or void against an approved sale under the sale's row lock: the pending
   * row counts against the balance at once, so concurrent refunds cannot exceed it.
   */
  async beginReversal(
    trx: Tx,
    teamId: string,
    orderId: string,
    kind: 'refund' | 'void',
    target: { transactionId?: string | undefined; amount?: number | undefined },
  ): Promise<{ sale: Row<'transactions'>; reversal: Row<'transactions'> }> {
    // An extpay payment whose money the provider holds (known id, not settled) can be voided too (spec 4.5).
    const heldExternally = (t: Row<'transactions'>) => kind === 'void' && t.status === 'pending' && t.connection_id !== null && t.provider_ref !== null;
    const sales = (await repo.listOrderTransactions(trx, teamId, orderId)).filter((t) => t.type === 'sale' && (t.status === 'approved' || heldExternally(t)));
    let sale: Row<'transactions'> | undefined;
    if (target.transactionId) {
      sale = sales.find((s) => s.id === target.transactionId);
      if (!sale) throw invalid('transaction_id', 'no approved charge with this id on this order');
    } else {
      // Without an id: the order's first charge (the initial purchase); upsell charges are named by id.
      sale = sales[0];
      if (!sale) throw new ApiError('conflict', 'This order has no approved charge to reverse.');
    }
    const locked = (await repo.findTransaction(trx, teamId, sale!.id, { forUpdate: true }))!;
    const { refunded, voided } = await repo.reversedAmount(trx, teamId, locked.id);
    if (voided) throw new ApiError('conflict', `Charge ${locked.id} has been voided.`);
    const remaining = locked.amount - refunded;
    let amount: number;
    if (kind === 'void') {
      if (refunded > 0) throw new ApiError('conflict', `Charge ${locked.id} has refunds; refund the rest instead of voiding.`);
      amount = locked.amount;
    } else {
      if (remaining <= 0) throw new ApiError('conflict', `Charge ${locked.id} is fully refunded.`);
      amount = target.amount ?? remaining;
      if (amount > remaining) throw invalid('amount', `exceeds the refundable balance of ${remaining} (charged ${locked.amount}, refunded ${refunded})`);
    }
    // Phase 1: committed in flight before the provider hears of it; it counts against the balance at once.
    const reversalId = newId('transaction');
    const reversal = await repo.insertTransaction(trx, {
      id: reversalId,
      team_id: teamId,
      order_id: orderId,
      parent_id: locked.id,
      type: kind,
      step: `${kind}:${reversalId}`,
      in_flight: true,
      status: 'pending',
      amount,
      currency: locked.currency,
      gateway_id: locked.gateway_id,
      payment_method_id: locked.payment_method_id,
      card_brand: locked.card_brand,
      card_bin: locked.card_bin,
      card_last4: locked.card_last4,
      card_exp: locked.card_exp,
      is_test: locked.is_test,
    });
    return { sale: locked, reversal };
  }

  /** Phase 2 of a refund or void: sent to the charge's provider (test-card charges never reached one). Outside any transaction. */
  async sendReversal(teamId: string, sale: Row<'transactions'>, reversal: Row<'transactions'>): Promise<ReversalOutcome> {
    if (sale.connection_id) return this.sendExternalReversal(teamId, sale, reversal);
    if (sale.response_code === 'test_card' || !sale.gateway_id || !sale.provider_ref) {
      return { kind: 'approved', providerRef: `test_${reversal.id}`, code: 'test_card', text: 'Approved: test card' };
    }
    const gateway = await this.store.run((db) => this.gateways.findGateway(db, teamId, sale.gateway_id!));
    if (!gateway) return { kind: 'declined', providerRef: null, code: 'gateway_unavailable', text: 'The gateway of this charge no longer exists.' };
    const account = this.gateways.account(gateway);
    const req = { attemptId: reversal.id, chargeRef: sale.provider_ref, amount: reversal.amount, currency: reversal.currency };
    return reversal.type === 'void' ? this.provider(gateway).void(account, req) : this.provider(gateway).refund(account, req);
  }

  /**
   * Records the provider's answer to a refund or void. `settledMeanwhile`: the provider's own
   * event (extpay refund.created) already settled this row while the call was out; it is left as
   * that event made it, and the order's totals were moved then.
   */
  async finishReversal(trx: Tx, teamId: string, reversal: Row<'transactions'>, result: Exclude<ReversalOutcome, { kind: 'unknown' }>): Promise<{ row: Row<'transactions'>; settledMeanwhile: boolean }> {
    const current = (await repo.findTransaction(trx, teamId, reversal.id, { forUpdate: true }))!;
    if (current.status !== 'pending') return { row: current, settledMeanwhile: true };
    const row = await repo.updateTransaction(trx, teamId, reversal.id, {
      status: result.kind === 'approved' ? 'approved' : 'declined',
      in_flight: false,
      ...(result.providerRef ? { provider_ref: result.providerRef } : {}),
      response_code: result.code,
      response_text: result.text,
      // extpay (spec 4.5): the amount asked for stands until refund.created carries what settled.
      ...(result.kind === 'approved' && result.code === EXTPAY_REFUND_REQUESTED ? { provisional: true, requested_amount: reversal.amount } : {}),
    });
    return { row, settledMeanwhile: false };
  }

  /** extpay: refunds and voids go to the provider, which is merchant of record (spec 4.5). */
  private async sendExternalReversal(teamId: string, sale: Row<'transactions'>, reversal: Row<'transactions'>): Promise<ReversalOutcome> {
    const conn = await this.store.run((db) => this.connections.findLive(db, teamId, sale.connection_id!));
    if (!conn || !sale.provider_ref) {
      return { kind: 'declined', providerRef: null, code: 'provider_unavailable', text: 'The provider connection of this charge no longer exists.' };
    }
    const connection = this.connections.connection(conn);
    if (reversal.type === 'void') {
      const r = await this.extpay.voidPayment(connection, { paymentId: sale.provider_ref, idempotencyKey: reversal.id });
      if (r.kind === 'voided') return { kind: 'approved', providerRef: r.paymentId, code: 'voided', text: 'Voided at the provider' };
      return { kind: 'declined', providerRef: null, code: r.providerCode ?? r.code, text: r.message };
    }
    const full = reversal.amount === sale.amount && (await this.store.run((db) => repo.reversedAmount(db, teamId, sale.id))).refunded === reversal.amount;
    const r = await this.extpay.refundPayment(connection, { paymentId: sale.provider_ref, ...(full ? {} : { amount: reversal.amount }), idempotencyKey: reversal.id });
    if (r.kind === 'refund_requested') {
      // No refund id yet: refund.created names it, and settles this row (repo.findRefundToSettle).
      return { kind: 'approved', providerRef: null, code: EXTPAY_REFUND_REQUESTED, text: 'Refund requested at the provider; the amount is provisional until it settles' };
    }
    return { kind: 'declined', providerRef: null, code: r.providerCode ?? r.code, text: r.message };
  }

  /**
   * extpay: opens the provider's embedded checkout for the order — one plan per checkout (spec 4.1
   * rule 10: a recurring or trial cart renews at recurring price × quantity + recurring shipping,
   * on the shortest interval, after the trial) — and records the first payment as pending.
   */
  async startCheckout(req: {
    teamId: string;
    orderId: string;
    amount: number;
    currency: string;
    returnUrl: string;
    externalPaymentId?: string | undefined;
    lines: Array<{ offer: Row<'offers'>; quantity: number }>;
    payer: Payer;
  }): Promise<{ transaction: Row<'transactions'>; checkout: ExtpayEmbedCheckout }> {
    const conn = await this.store.run((db) => this.connections.resolveForOrder(db, req.teamId, req.externalPaymentId));
    const recurring = req.lines.filter((l) => l.offer.billing_type !== 'one_time' && l.offer.interval_unit && l.offer.interval_count);
    const days = (o: Row<'offers'>) => ({ day: 1, week: 7, month: 30, year: 365 })[o.interval_unit!] * o.interval_count!;
    const trials = recurring.filter((l) => l.offer.billing_type === 'trial' && l.offer.trial_days).map((l) => l.offer.trial_days!);
    const plan = renewalPlanFor({
      chargeToday: req.amount,
      recurring: recurring.length
        ? {
            renewalAmount: recurring.reduce((s, l) => s + (l.offer.recurring_price ?? 0) * l.quantity + (l.offer.recurring_shipping ?? 0), 0),
            intervalDays: Math.min(...recurring.map((l) => days(l.offer))),
          }
        : null,
      trialDays: trials.length ? Math.min(...trials) : null,
    });
    const attemptId = newId('transaction');
    const connection = this.connections.connection(conn);
    const r = await this.extpay.createCheckout(connection, {
      currency: req.currency,
      plan,
      metadata: { order_number: req.orderId, attempt_id: attemptId },
      redirectUrl: req.returnUrl,
      idempotencyKey: attemptId,
    });
    if (r.kind === 'error') throw new ApiError('gateway_unavailable', `The external checkout provider could not open a checkout: ${r.message}`);
    const transaction = await this.store.run((db) =>
      repo.insertTransaction(db, {
        id: attemptId,
        team_id: req.teamId,
        order_id: req.orderId,
        type: 'sale',
        status: 'pending',
        amount: req.amount,
        currency: req.currency,
        connection_id: conn.id,
        // The payment id is learned at Capture or from the webhook; until then the plan names it.
        plan_ref: r.checkout.plan.id,
        checkout_ref: r.checkout.id,
        response_code: 'checkout_open',
        response_text: 'Waiting for the customer to pay in the embedded checkout',
        is_test: conn.environment === 'sandbox',
      }),
    );
    const name = [req.payer.first_name, req.payer.last_name].filter(Boolean).join(' ');
    return { transaction, checkout: embedCheckout(connection, r.checkout, { email: req.payer.email, name }) };
  }

  /**
   * extpay Capture: the receipt the embed handed back (or, without one, the newest payment of the
   * checkout's plan), and whether it belongs to this order (its plan or its metadata).
   */
  async retrieveExternal(teamId: string, txn: Row<'transactions'>, receiptId: string | undefined): Promise<{ result: ExtpayPaymentResult | null; belongs: boolean }> {
    const conn = await this.store.run((db) => this.connections.findLive(db, teamId, txn.connection_id!));
    if (!conn) return { result: null, belongs: false };
    const connection = this.connections.connection(conn);
    let result: ExtpayPaymentResult | null;
    if (receiptId) {
      result = await this.extpay.retrievePayment(connection, receiptId);
    } else {
      const list = await this.extpay.listPayments(connection, { planIds: [txn.plan_ref!] });
      if (list.kind === 'error') return { result: list, belongs: false };
      const newest = list.payments[0];
      result = newest ? await this.extpay.retrievePayment(connection, newest.id) : null;
    }
    if (!result || result.kind === 'error') return { result, belongs: false };
    const p = result.payment;
    const belongs = p.planId === txn.plan_ref || p.metadata.order_number === txn.order_id;
    return { result, belongs };
  }

  /** extpay: the membership a payment started, as the provider has it now; null when there is none or it cannot be read. */
  async membershipOf(teamId: string, connectionId: string, membershipId: string | null): Promise<ExtpayMembership | null> {
    if (!membershipId) return null;
    const conn = await this.store.run((db) => this.connections.findLive(db, teamId, connectionId));
    if (!conn) return null;
    const r = await this.extpay.retrieveMembership(this.connections.connection(conn), membershipId);
    return r.kind === 'membership' ? r.membership : null;
  }

  /**
   * The provider's current state of an object an event announced. Deliveries can arrive out of
   * order (a dispute's update before its creation): applying the object as it is now, not as the
   * event carried it, keeps a late delivery from undoing a newer state. A read that may succeed
   * later fails the delivery (the provider retries); one that cannot (permissions) falls back to
   * the event's copy.
   */
  private async current<T extends object>(teamId: string, connectionId: string, fromEvent: T, read: (c: ExtpayConnection) => Promise<T | ExtpayError>): Promise<T> {
    const conn = await this.store.run((db) => this.connections.findLive(db, teamId, connectionId));
    if (!conn) return fromEvent;
    const r = await read(this.connections.connection(conn));
    if (!('kind' in r && r.kind === 'error')) return r as T;
    const err = r as ExtpayError;
    if (err.safeToRetry) throw new ApiError('gateway_unavailable', `The provider could not be asked for the current state: ${err.message}; deliver the event again.`);
    return fromEvent;
  }

  currentDispute(teamId: string, connectionId: string, d: ExtpayDispute): Promise<ExtpayDispute> {
    return this.current(teamId, connectionId, d, async (c) => {
      const r = await this.extpay.retrieveDispute(c, d.id);
      return r.kind === 'dispute' ? r.dispute : r;
    });
  }

  currentRefund(teamId: string, connectionId: string, refund: ExtpayRefund): Promise<ExtpayRefund> {
    return this.current(teamId, connectionId, refund, async (c) => {
      const r = await this.extpay.retrieveRefund(c, refund.id);
      return r.kind === 'refund' ? { ...r.refund, paymentId: r.refund.paymentId ?? refund.paymentId } : r;
    });
  }

  currentMembership(teamId: string, connectionId: string, m: ExtpayMembership): Promise<ExtpayMembership> {
    return this.current(teamId, connectionId, m, async (c) => {
      const r = await this.extpay.retrieveMembership(c, m.id);
      return r.kind === 'membership' ? { ...r.membership, metadata: { ...m.metadata, ...r.membership.metadata } } : r;
    });
  }

  /** The order's first-payment transaction awaiting the customer or the gateway (Capture's target). */
  async findCapturable(db: Executor, teamId: string, orderId: string): Promise<Row<'transactions'> | undefined> {
    const all = await repo.listOrderTransactions(db, teamId, orderId);
    return all.filter((t) => t.type === 'sale' && t.status === 'pending' && !t.upsell_id && (t.provider_ref || t.plan_ref)).at(-1);
  }

  /** Whether the order's latest first-payment attempt went to a gateway that redirects (3-D Secure) and was answered there. */
  async lastFirstPaymentWasRedirected(teamId: string, orderId: string): Promise<boolean> {
    return this.store.run(async (db) => {
      const last = (await repo.listOrderTransactions(db, teamId, orderId)).filter((t) => t.type === 'sale' && !t.upsell_id).at(-1);
      if (!last?.gateway_id || !last.provider_ref) return false;
      const gateway = await this.gateways.findGateway(db, teamId, last.gateway_id);
      return gateway ? this.provider(gateway).capabilities.redirect : false;
    });
  }

  /** Inbound provider events, one row per (source, event id): false when this one was seen before. */
  async recordInbound(trx: Tx, source: string, eventId: string, teamId: string, type: string, payload: Record<string, unknown>): Promise<boolean> {
    return repo.insertInbound(trx, { id: newId('inboundWebhook'), source, event_id: eventId, team_id: teamId, type, payload: JSON.stringify(payload) });
  }

  /** Whether an inbound event was already applied (a cheap early answer; the effect's own transaction decides). */
  inboundSeen(db: Executor, source: string, eventId: string): Promise<boolean> {
    return repo.inboundSeen(db, source, eventId);
  }

  listStalePending(olderThan: Date, limit: number) {
    return this.store.run((db) => repo.listStalePending(db, olderThan, limit));
  }

  findByProviderRef(db: Executor, teamId: string, gatewayId: string, providerRef: string) {
    return repo.findByProviderRef(db, teamId, gatewayId, providerRef);
  }

  /** Asks the gateway where a pending payment stands (Capture, the watchdog). Outside any transaction. */
  async retrieve(teamId: string, txn: Row<'transactions'>): Promise<ChargeOutcome> {
    const gateway = txn.gateway_id ? await this.store.run((db) => this.gateways.findGateway(db, teamId, txn.gateway_id!)) : undefined;
    if (!gateway || !txn.provider_ref || !this.provider(gateway).capabilities.redirect) {
      return { kind: 'unknown', providerRef: txn.provider_ref, code: 'not_capturable', text: 'This payment cannot be re-checked with its gateway.' };
    }
    return this.provider(gateway).retrieve(this.gateways.account(gateway), txn.provider_ref);
  }

  /**
   * Settles a pending first payment in the caller's transaction (which holds the order's row
   * lock): approved saves the payment method for merchant-initiated follow-ups (a gateway vault
   * token, or for extpay the provider's member and, once known, its payment method); declined
   * closes it. Returns null when the transaction was already settled (the other path won).
   */
  async settlePending(
    trx: Tx,
    teamId: string,
    txnId: string,
    customerId: string,
    outcome: FirstPaymentOutcome,
  ): Promise<{ transaction: Row<'transactions'>; paymentMethod: Row<'payment_methods'> | null } | null> {
    const txn = await repo.findTransaction(trx, teamId, txnId, { forUpdate: true });
    if (!txn || txn.status !== 'pending') return null;
    if (!outcome.approved) {
      const t = await repo.updateTransaction(trx, teamId, txn.id, {
        status: 'declined',
        response_code: outcome.code,
        response_text: outcome.message,
        ...(outcome.paymentRef ? { provider_ref: outcome.paymentRef } : {}),
      });
      return { transaction: t, paymentMethod: null };
    }
    const ext = outcome.external;
    if (ext && txn.connection_id) {
      const method = txn.checkout_ref
        ? await repo.upsertExtpayMethod(trx, {
            id: newId('paymentMethod'),
            team_id: teamId,
            customer_id: customerId,
            connection_id: txn.connection_id,
            member_ref: ext.memberRef,
            vault_ref: null,
            original_ref: txn.checkout_ref,
            brand: ext.cardBrand ?? 'unknown',
            bin: '',
            last4: ext.cardLast4 ?? '',
            exp: '',
            is_test: txn.is_test,
          })
        : null;
      const t = await repo.updateTransaction(trx, teamId, txn.id, {
        status: 'approved',
        provider_ref: ext.paymentRef,
        response_code: 'paid',
        response_text: 'Paid at the external checkout provider',
        card_brand: ext.cardBrand,
        card_last4: ext.cardLast4,
        payment_method_id: method?.id ?? null,
      });
      return { transaction: t, paymentMethod: method };
    }
    const method = await repo.insertPaymentMethod(trx, {
      id: newId('paymentMethod'),
      team_id: teamId,
      customer_id: customerId,
      gateway_id: txn.gateway_id,
      vault_ref: outcome.paymentMethod,
      original_ref: txn.provider_ref,
      brand: txn.card_brand ?? 'unknown',
      bin: txn.card_bin ?? '',
      last4: txn.card_last4 ?? '',
      exp: txn.card_exp ?? '',
      is_test: txn.is_test,
    });
    const t = await repo.updateTransaction(trx, teamId, txn.id, { status: 'approved', response_code: 'succeeded', response_text: 'Approved after 3-D Secure', payment_method_id: method.id });
    return { transaction: t, paymentMethod: method };
  }

  /** extpay: the provider's payment id for a first payment still pending (learned at Capture 202 or from a webhook). */
  async notePaymentRef(trx: Tx, teamId: string, txnId: string, paymentRef: string): Promise<void> {
    const txn = await repo.findTransaction(trx, teamId, txnId, { forUpdate: true });
    if (txn && txn.status === 'pending' && !txn.provider_ref) await repo.updateTransaction(trx, teamId, txnId, { provider_ref: paymentRef });
  }

  // ---- extpay after the checkout: upsells, renewals, refunds, disputes, saved methods ----

  /** The sale a provider payment id names on one connection (first payment once known, upsell, renewal). */
  findExternalSale(db: Executor, teamId: string, connectionId: string, paymentRef: string, opts: { forUpdate?: boolean } = {}) {
    return repo.findExternalSale(db, teamId, connectionId, paymentRef, opts);
  }

  /**
   * The first payment a provider payment settles: named by the checkout's metadata (our attempt id,
   * copied by the provider onto the payment), else by the checkout's plan (unique to one checkout).
   */
  async findFirstPaymentFor(db: Executor, teamId: string, connectionId: string, p: { metadata: Record<string, unknown>; planId: string | null }) {
    const attempt = typeof p.metadata.attempt_id === 'string' ? p.metadata.attempt_id : null;
    if (attempt) {
      const t = await repo.findTransaction(db, teamId, attempt);
      if (t && t.connection_id === connectionId && t.type === 'sale' && !t.upsell_id) return t;
    }
    if (p.planId) {
      const t = await repo.findPendingByPlan(db, teamId, connectionId, p.planId);
      if (t && !t.upsell_id) return t;
    }
    return undefined;
  }

  /** Whether an upsell charge was sent on this connection and its payment id is not recorded yet. */
  hasUpsellInFlight(db: Executor, teamId: string, connectionId: string) {
    return repo.hasUpsellInFlight(db, teamId, connectionId);
  }

  /**
   * extpay upsell (spec 4.3): the provider's payment method to charge, saved with the checkout
   * (setup_future_usage off_session). Known from setup_intent.succeeded, else asked of the
   * provider and remembered. Null: nothing was saved ("no saved payment method found").
   */
  async externalMethodToCharge(teamId: string, orderId: string, method: Row<'payment_methods'>): Promise<{ connection: Row<'extpay_connections'>; paymentMethodRef: string } | null> {
    const conn = await this.store.run((db) => this.connections.findLive(db, teamId, method.connection_id!));
    if (!conn || !method.member_ref) return null;
    if (method.vault_ref) return { connection: conn, paymentMethodRef: method.vault_ref };
    // setup_intent.succeeded has not arrived yet: ask the provider. Only a method saved since this
    // order's checkout was paid can have been saved by it (an older one was saved by another checkout).
    const connection = this.connections.connection(conn);
    const sale = (await this.store.run((db) => repo.listOrderTransactions(db, teamId, orderId))).find((t) => t.checkout_ref === method.original_ref && t.provider_ref);
    const paid = sale ? await this.extpay.retrievePayment(connection, sale.provider_ref!) : null;
    const since = paid && paid.kind !== 'error' && paid.payment.createdAt ? Date.parse(paid.payment.createdAt) : null;
    if (since === null) return null;
    const r = await this.extpay.listPaymentMethods(connection, method.member_ref);
    if (r.kind === 'error') {
      if (r.code === 'not_found') return null;
      throw new ApiError('gateway_unavailable', `The external checkout provider could not be asked for the saved payment method: ${r.message}`);
    }
    const first = r.methods.find((m) => m.createdAt !== null && Date.parse(m.createdAt) >= since);
    if (!first) return null;
    await this.store.run((db) =>
      repo.updatePaymentMethod(db, teamId, method.id, { vault_ref: first.id, ...(first.cardBrand ? { brand: first.cardBrand } : {}), ...(first.cardLast4 ? { last4: first.cardLast4 } : {}) }),
    );
    return { connection: conn, paymentMethodRef: first.id };
  }

  /** Opens an extpay upsell charge: recorded pending before the provider is called, so its webhook can never find nothing. */
  async beginExternalUpsell(trx: Tx, req: { teamId: string; orderId: string; amount: number; currency: string; method: Row<'payment_methods'>; upsellId: string }) {
    const m = req.method;
    return repo.insertTransaction(trx, {
      id: newId('transaction'),
      team_id: req.teamId,
      order_id: req.orderId,
      type: 'sale',
      status: 'pending',
      amount: req.amount,
      currency: req.currency,
      connection_id: m.connection_id,
      payment_method_id: m.id,
      upsell_id: req.upsellId,
      card_brand: m.brand,
      card_last4: m.last4 || null,
      response_code: 'charging',
      response_text: 'Charging the payment method saved at the provider',
      is_test: m.is_test,
    });
  }

  /** Sends an extpay upsell charge (outside any transaction); the transaction id is the idempotency key. */
  async sendExternalUpsell(conn: Row<'extpay_connections'>, txn: Row<'transactions'>, memberRef: string, paymentMethodRef: string, title: string) {
    return this.extpay.chargeSavedPaymentMethod(this.connections.connection(conn), {
      memberId: memberRef,
      paymentMethodId: paymentMethodRef,
      currency: txn.currency,
      amount: txn.amount,
      title,
      idempotencyKey: txn.id,
    });
  }

  /** Moves a pending extpay sale on, under the caller's lock; null when it was already settled. */
  async settleExternalSale(
    trx: Tx,
    teamId: string,
    txnId: string,
    outcome: { status: 'pending'; paymentRef: string } | { status: 'approved'; paymentRef: string } | { status: 'declined'; paymentRef: string | null; code: string; message: string },
  ): Promise<Row<'transactions'> | null> {
    const txn = await repo.findTransaction(trx, teamId, txnId, { forUpdate: true });
    if (!txn || txn.status !== 'pending') return null;
    if (outcome.status === 'pending') {
      return repo.updateTransaction(trx, teamId, txnId, { provider_ref: outcome.paymentRef, response_code: 'pending', response_text: 'Accepted by the provider; waiting for its confirmation' });
    }
    if (outcome.status === 'approved') {
      return repo.updateTransaction(trx, teamId, txnId, { status: 'approved', provider_ref: outcome.paymentRef, response_code: 'paid', response_text: 'Paid at the external checkout provider' });
    }
    return repo.updateTransaction(trx, teamId, txnId, {
      status: 'declined',
      ...(outcome.paymentRef ? { provider_ref: outcome.paymentRef } : {}),
      response_code: outcome.code,
      response_text: outcome.message,
    });
  }

  /** A renewal the provider charged (spec 4.5): the rebill order's own, already approved, sale. */
  recordRenewalSale(trx: Tx, teamId: string, orderId: string, connectionId: string, p: ExtpayPayment, isTest: boolean) {
    return repo.insertTransaction(trx, {
      id: newId('transaction'),
      team_id: teamId,
      order_id: orderId,
      type: 'sale',
      status: 'approved',
      amount: p.amount,
      currency: p.currency.toUpperCase(),
      connection_id: connectionId,
      provider_ref: p.id,
      plan_ref: p.planId,
      card_brand: p.cardBrand,
      card_last4: p.cardLast4,
      response_code: 'paid',
      response_text: 'Renewal paid at the external checkout provider',
      is_test: isTest,
    });
  }

  /**
   * refund.created / refund.updated (spec 4.5): the provisional refund recorded at request time
   * takes the settled amount (or fails); a refund made at the provider directly is recorded as
   * new. Returns how much the order's refunded total moves, under the caller's order lock.
   */
  async settleExternalRefund(
    trx: Tx,
    teamId: string,
    sale: Row<'transactions'>,
    r: ExtpayRefund,
  ): Promise<{ delta: number; transaction: Row<'transactions'> | null; change: 'settled' | 'failed' | 'pending' | 'recorded' | 'unchanged' }> {
    const state = EXTPAY_REFUND_STATES[r.status];
    const txn = await repo.findRefundToSettle(trx, teamId, sale.id, r.id);
    if (!txn) {
      if (state !== 'settled') return { delta: 0, transaction: null, change: 'unchanged' };
      const t = await repo.insertTransaction(trx, {
        id: newId('transaction'),
        team_id: teamId,
        order_id: sale.order_id,
        parent_id: sale.id,
        type: 'refund',
        status: 'approved',
        amount: r.amount,
        currency: sale.currency,
        connection_id: sale.connection_id,
        provider_ref: r.id,
        response_code: 'settled',
        response_text: 'Refunded at the provider',
        card_brand: sale.card_brand,
        card_last4: sale.card_last4,
        is_test: sale.is_test,
      });
      return { delta: r.amount, transaction: t, change: 'recorded' };
    }
    if (state === 'pending') {
      if (txn.provider_ref === r.id) return { delta: 0, transaction: txn, change: 'unchanged' };
      return { delta: 0, transaction: await repo.updateTransaction(trx, teamId, txn.id, { provider_ref: r.id }), change: 'pending' };
    }
    if (state === 'failed') {
      if (txn.status === 'declined') return { delta: 0, transaction: txn, change: 'unchanged' };
      const t = await repo.updateTransaction(trx, teamId, txn.id, { status: 'declined', provisional: false, provider_ref: r.id, response_code: 'refund_failed', response_text: 'The provider could not complete the refund' });
      return { delta: txn.status === 'approved' ? -txn.amount : 0, transaction: t, change: 'failed' };
    }
    if (!txn.provisional && txn.amount === r.amount && txn.status === 'approved') return { delta: 0, transaction: txn, change: 'unchanged' };
    const before = txn.status === 'approved' ? txn.amount : 0;
    const t = await repo.updateTransaction(trx, teamId, txn.id, {
      status: 'approved',
      amount: r.amount,
      requested_amount: txn.requested_amount ?? txn.amount,
      provisional: false,
      provider_ref: r.id,
      response_code: 'settled',
      response_text: r.amount < (txn.requested_amount ?? txn.amount) ? `Settled for ${r.amount} of ${txn.requested_amount ?? txn.amount} requested` : 'Settled',
    });
    return { delta: r.amount - before, transaction: t, change: 'settled' };
  }

  /**
   * dispute.created / dispute.updated (spec 4.5): the dispute's state on the order, and once it is
   * past the early warning and not won, one chargeback transaction against the charge.
   */
  async recordExternalDispute(
    trx: Tx,
    teamId: string,
    sale: Row<'transactions'>,
    d: ExtpayDispute,
  ): Promise<{ dispute: Row<'disputes'>; opened: boolean; chargeback: Row<'transactions'> | null }> {
    let row = await repo.findDispute(trx, teamId, d.id);
    const opened = !row;
    if (!row) {
      row = await repo.insertDispute(trx, {
        id: newId('dispute'),
        team_id: teamId,
        order_id: sale.order_id,
        transaction_id: sale.id,
        provider_ref: d.id,
        status: d.status,
        reason: d.reason,
        amount: d.amount,
        currency: sale.currency,
      });
    } else if (row.status !== d.status || row.reason !== d.reason) {
      row = await repo.updateDispute(trx, teamId, row.id, { status: d.status, reason: d.reason ?? row.reason });
    }
    let chargeback: Row<'transactions'> | null = null;
    if (disputeIsChargeback(d) && !row.chargeback_id) {
      chargeback = await repo.insertTransaction(trx, {
        id: newId('transaction'),
        team_id: teamId,
        order_id: sale.order_id,
        parent_id: sale.id,
        type: 'chargeback',
        status: 'approved',
        amount: d.amount,
        currency: sale.currency,
        connection_id: sale.connection_id,
        provider_ref: d.id,
        response_code: d.status,
        response_text: `Chargeback: ${d.reason ?? 'no reason given'}`,
        card_brand: sale.card_brand,
        card_last4: sale.card_last4,
        is_test: sale.is_test,
      });
      row = await repo.updateDispute(trx, teamId, row.id, { chargeback_id: chargeback.id });
    }
    return { dispute: row, opened, chargeback };
  }

  listOrderDisputes(db: Executor, teamId: string, orderId: string) {
    return repo.listOrderDisputes(db, teamId, orderId);
  }

  /** setup_intent.succeeded (spec 6.1): the provider saved the customer's payment method for off-session charges. */
  saveExternalMethod(trx: Tx, teamId: string, customerId: string, checkout: Row<'transactions'>, s: ExtpaySetupIntent, isTest: boolean) {
    return repo.upsertExtpayMethod(trx, {
      id: newId('paymentMethod'),
      team_id: teamId,
      customer_id: customerId,
      connection_id: checkout.connection_id!,
      member_ref: s.memberId,
      vault_ref: s.paymentMethodId,
      original_ref: checkout.checkout_ref!,
      brand: s.cardBrand ?? 'unknown',
      bin: '',
      last4: s.cardLast4 ?? '',
      exp: '',
      is_test: isTest,
    });
  }

  async get(teamId: string, id: string): Promise<TransactionView> {
    const t = await this.store.run((db) => repo.findTransaction(db, teamId, id));
    if (!t) throw notFound('Transaction');
    return transactionView(t);
  }

  async list(teamId: string, q: ListTransactionsQuery): Promise<Page<TransactionView>> {
    return this.store.run(async (db) => {
      const filter = { orderId: q.order_number, status: q.status, type: q.type, isTest: q.is_test, createdGte: q.created_gte, createdLte: q.created_lte };
      return listPage(db, 'transactions', teamId, q, (afterSeq) => repo.listTransactions(db, teamId, { limit: q.limit, afterSeq, ...filter }), transactionView);
    });
  }
}
