import { ApiError, invalid } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import type { Executor, Store, Tx } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import { type BoundProvider, bindProvider, type PaymentProvider, type CardProviders, type CardProvider, type ChargeOutcome, type ChargeRequest, type Found, type Payer, providerFor, type ReversalOutcome, type VerifyRequest } from '../../providers/provider.ts';
import type {
  ExtpayConnection,
  ExtpayDispute,
  ExtpayEmbedCheckout,
  ExtpayError,
  ExtpayMembership,
  ExtpayProviderAdapter,
  ExtpayRefund,
} from '../../providers/extpay/types.ts';
import { embedCheckout, renewalPlanFor } from '../../providers/extpay/wire.ts';
import type { ConnectionsService } from '../connections/service.ts';
import type { FraudService } from '../fraud/service.ts';
import type { GatewaysService } from '../gateways/service.ts';
import type { PaymentInput } from '../orders/schemas.ts';
import type { CardInput, CardSummary } from '../../providers/card.ts';
import { attemptRow, type FirstChargeRequest } from './attempts.ts';
import { FIRST_PAYMENT_TYPES } from './states.ts';
import { FIRST_PAYMENT, FirstPaymentLedger } from './first-payment.ts';
import type { LedgerService } from '../ledger/service.ts';

import { type RouteRequest, routeTarget } from './attempts.ts';
export { type FirstChargeRequest, type PaymentPlan, type RouteRequest, routeTarget } from './attempts.ts';
export type { Payer } from '../../providers/provider.ts';

/** A merchant-initiated charge on the card the first payment saved: a one-click upsell, or a subscription's rebill. */
export interface SavedChargeRequest {
  teamId: string;
  orderId: string;
  amount: number;
  currency: string;
  method: Row<'payment_methods'>;
  /** The upsell charged, or null (a rebill). */
  upsellId: string | null;
  /** The attempt's step: one attempt in flight per (order, step) (`upsell:<id>`, `rebill`). */
  step: string;
  payer: Payer;
}

/**
 * An upsell charge in atomic phases: an attempt to send, or an answer decided without a provider
 * call. A call's attempt row goes with the transaction's next statement or its COMMIT (its id,
 * `request.attemptId`, is known at once): await `attempt` once the transaction has committed.
 */
export type UpsellStep =
  | { kind: 'call'; attempt: Promise<Row<'transactions'>>; gateway: Row<'gateways'>; request: ChargeRequest }
  | { kind: 'done'; outcome: Exclude<ChargeOutcome, { kind: 'unknown' }>; transaction: Row<'transactions'> };

export type { ExternalPaid, FirstPaymentOutcome } from '../ledger/views.ts';

const isFirstPaymentType = (type: string) => (FIRST_PAYMENT_TYPES as readonly string[]).includes(type);

/** A charge no provider saw: a listed test card (or a sale recorded without a provider reference). */
function isTestCharge(sale: Row<'transactions'>): boolean {
  return !sale.connection_id && (sale.response_code === 'test_card' || !sale.gateway_id || !sale.provider_ref);
}

export function cardOf(payment: PaymentInput): CardInput | null {
  if (payment.method !== 'card' || !payment.card_number || !payment.card_exp || !payment.card_cvv) return null;
  return { number: payment.card_number, exp: payment.card_exp, cvv: payment.card_cvv };
}


/**
 * Payments: routing, the card providers and the external checkout provider. Every provider call that
 * can move money is an attempt written in the ledger first (atomic phases); this module decides
 * where a charge goes and speaks to the provider, the ledger keeps the record.
 */
export class PaymentsService {
  constructor(
    private readonly store: Store,
    private readonly gateways: GatewaysService,
    private readonly ledger: LedgerService,
    private readonly providers: CardProviders,
    /** The external checkout provider, for the calls every provider answers (charges, refunds, voids, lookups). */
    private readonly external: PaymentProvider<ExtpayConnection>,
    private readonly connections: ConnectionsService,
    /** Its own API, for what only it does: checkouts, receipts, memberships, disputes. */
    private readonly extpay: ExtpayProviderAdapter,
    /** The team's fraud velocity rules, screened when a card first payment opens. */
    fraud?: FraudService,
  ) {
    this.first = new FirstPaymentLedger(gateways, ledger, fraud);
  }

  /** The first payment's phases (routing, salvage, attempts). */
  readonly first: FirstPaymentLedger;

  /**
   * Checks made before anything is written or any provider is called; a request failing
   * here leaves no trace. Explicit routing ids must name the team's own gateway or router.
   */
  async preflight(db: Executor, teamId: string, payment: PaymentInput, route: RouteRequest): Promise<RouteRequest> {
    if (payment.method === 'extpay') {
      // Spec 4.1 rule 8: the pinned connection, or any Active one; none → "not configured".
      await this.connections.resolveForOrder(db, teamId, payment.external_payment_id);
      return route;
    }
    const { gatewayId: directId } = routeTarget(route);
    // Routed straight to one gateway: read once here, and the plan uses the same row.
    const direct = directId ? await this.gateways.findGateway(db, teamId, directId) : undefined;
    if (route.gatewayId && !direct) throw invalid('gateway_id', 'no such gateway');
    if (route.paymentOrchestratorId && !(await this.gateways.findRouter(db, teamId, route.paymentOrchestratorId))) {
      throw invalid('payment_orchestrator_id', 'no such payment orchestrator');
    }
    // Spec 4.1 rule 2: routed directly to a gateway that demands 3-D Secure (no router in between),
    // both URLs are checked here, before any gateway call. Through a router the gateway's decline says so (rule 3).
    if (direct && payment.method === 'card' && (!payment.return_url || !payment.cancel_url)) {
      if (this.provider(direct).capabilities.redirect) {
        const missing = (['return_url', 'cancel_url'] as const).filter((f) => !payment[f]);
        throw new ApiError('validation_failed', 'This gateway requires 3D Secure: send payment.return_url and payment.cancel_url.', {
          fields: missing.map((f) => ({ path: `payment.${f}`, message: 'is required: the gateway requires 3D Secure' })),
        });
      }
    }
    return direct ? { ...route, gateway: direct } : route;
  }

  /** The provider of a gateway's kind: the one interface every card gateway speaks through. */
  provider(gateway: Row<'gateways'>): CardProvider {
    return providerFor(this.providers, gateway.kind);
  }

  /**
   * Phase 1 of a charge on a saved card (a one-click upsell, a rebill), in the transaction that
   * claims it: a test card or a free charge is answered without a gateway; otherwise an attempt row
   * is committed in flight with our id as the gateway's order id. While it is in flight no other
   * charge of the same step can start. Merchant-initiated: chained to the original payment, never redirected.
   */
  async openSavedCharge(trx: Tx, req: SavedChargeRequest): Promise<UpsellStep> {
    const m = req.method;
    const card: CardSummary = { brand: m.brand, bin: m.bin, last4: m.last4, exp: m.exp };
    const base = (id: string, status: 'approved' | 'declined' | 'pending', code: string, text: string, gatewayId: string | null) => ({
      ...attemptRow(req, card, { id, status, gatewayId, code, text }),
      payment_method_id: m.id,
      upsell_id: req.upsellId,
      step: req.step,
    });
    const done = async (status: 'approved' | 'declined', code: string, text: string, isTest: boolean): Promise<UpsellStep> => {
      const id = newId('transaction');
      const t = await this.ledger.rows.insertTransaction(trx, { ...base(id, status, code, text, m.gateway_id), provider_ref: status === 'approved' && code === 'test_card' ? `test_${id}` : null, is_test: isTest });
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
    const volume = await this.gateways.volume.reserve(trx, req.teamId, gateway, null, req.amount);
    if (!volume.ok) return done('declined', 'no_route', `No payment gateway is available: ${gateway.id} monthly cap reached.`, false);
    const id = newId('transaction');
    const attempt = this.ledger.rows.insertTransactionWithNext(trx, {
      ...base(id, 'pending', 'in_flight', 'Sent to the gateway; waiting for its answer', gateway.id),
      in_flight: true,
      volume_month: volume.month,
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

  /** Phase 2 of a card verification ($0: check and save the card, charge nothing), holding no lock. */
  sendVerification(gateway: Row<'gateways'>, request: VerifyRequest): Promise<ChargeOutcome> {
    return this.provider(gateway).verify(this.gateways.account(gateway), request);
  }

  /** Phase 2 of a first payment's attempt: a charge, or a verification when nothing is due. */
  sendFirstPayment(gateway: Row<'gateways'>, attempt: Row<'transactions'>, req: FirstChargeRequest): Promise<ChargeOutcome> {
    return attempt.type === 'verification' ? this.sendVerification(gateway, this.first.verifyRequest(req, attempt.id)) : this.sendCharge(gateway, this.first.chargeRequest(req, attempt.id));
  }

  /** Phase 3 for any attempt (first payment, upsell): see FirstPaymentLedger.close. */
  closeAttempt(trx: Tx, teamId: string, customerId: string, attempt: Row<'transactions'>, outcome: Exclude<ChargeOutcome, { kind: 'unknown' }>) {
    return this.first.close(trx, teamId, customerId, attempt, outcome, null);
  }

  /**
   * closeAttempt for an approval whose consequences go in the same socket write (FirstPaymentLedger.close
   * with `atCommit`): the UPDATE is not awaited and fails the transaction (SQLSTATE CS409) when another
   * path recorded the attempt first. The answer is the attempt as that UPDATE leaves it.
   */
  async closeApprovalAtCommit(trx: Tx, teamId: string, customerId: string, attempt: Row<'transactions'>, outcome: Extract<ChargeOutcome, { kind: 'approved' }>): Promise<Row<'transactions'>> {
    return (await this.first.close(trx, teamId, customerId, attempt, outcome, null, { atCommit: true }))!.transaction;
  }

  /**
   * The provider behind a sale, with its account: the gateway's kind (card gateways), or the
   * external checkout connection. Undefined when the gateway or connection is gone.
   */
  async providerOf(teamId: string, sale: Pick<Row<'transactions'>, 'gateway_id' | 'connection_id'>): Promise<BoundProvider | undefined> {
    if (sale.connection_id) {
      const conn = await this.store.run((db) => this.connections.findLive(db, teamId, sale.connection_id!));
      return conn ? bindProvider(this.external, this.connections.connection(conn)) : undefined;
    }
    const gateway = sale.gateway_id ? await this.store.run((db) => this.gateways.findGateway(db, teamId, sale.gateway_id!)) : undefined;
    return gateway ? bindProvider(this.provider(gateway), this.gateways.account(gateway)) : undefined;
  }

  /**
   * The recovery run's question: what did the provider do with this attempt? Asked by our attempt
   * id (the gateway's order id / reference, the external provider's metadata); `not_found` when it
   * never saw it.
   */
  async findAttemptOutcome(t: Row<'transactions'>, parent?: Row<'transactions'>): Promise<Found<ChargeOutcome | ReversalOutcome>> {
    if (parent && isTestCharge(parent)) {
      // A test-card charge never reached a provider, and neither did its refund: phase 2 approves it at once.
      return { kind: 'approved', providerRef: `test_${t.id}`, code: 'test_card', text: 'Approved: test card' };
    }
    // A refund or void is asked of its sale's provider.
    const provider = await this.providerOf(t.team_id, t.type === 'sale' ? t : (parent ?? t));
    if (!provider) return t.connection_id || parent?.connection_id ? { kind: 'unknown', providerRef: null, code: 'provider_unavailable', text: 'The provider of this attempt is not available.' } : { kind: 'not_found' };
    if (t.type === 'refund' || t.type === 'void') {
      return provider.findReversal({ attemptId: t.id, chargeRef: parent?.provider_ref ?? '', amount: t.amount, currency: t.currency, type: t.type, since: t.created_at });
    }
    // An external checkout whose answer was lost never reached the customer: nobody can have paid it.
    if (provider.capabilities.externalCheckout && t.step === FIRST_PAYMENT) return { kind: 'not_found' };
    const method = t.payment_method_id ? await this.store.run((db) => this.ledger.rows.findPaymentMethod(db, t.team_id, t.payment_method_id!)) : undefined;
    return provider.findCharge({ id: t.id, createdAt: t.created_at, memberRef: method?.member_ref ?? null });
  }

  /** Phase 2 of a refund or void: sent to the charge's provider (test-card charges never reached one). Outside any transaction. */
  async sendReversal(teamId: string, sale: Row<'transactions'>, reversal: Row<'transactions'>): Promise<ReversalOutcome> {
    if (isTestCharge(sale)) return { kind: 'approved', providerRef: `test_${reversal.id}`, code: 'test_card', text: 'Approved: test card' };
    const provider = await this.providerOf(teamId, sale);
    if (!provider || !sale.provider_ref) return { kind: 'declined', providerRef: null, code: 'provider_unavailable', text: 'The gateway or provider connection of this charge no longer exists.' };
    const full = reversal.amount === sale.amount && (await this.store.run((db) => this.ledger.rows.reversedAmount(db, teamId, sale.id))).refunded === reversal.amount;
    const req = { attemptId: reversal.id, chargeRef: sale.provider_ref, amount: reversal.amount, currency: reversal.currency, full };
    return reversal.type === 'void' ? provider.void(req) : provider.refund(req);
  }

  /**
   * Phase 1 of an external checkout, in the transaction that claims the order: the attempt row,
   * in flight, on the pinned or oldest Active connection. Its id becomes the checkout's
   * idempotency key and metadata, so the provider's payment names it.
   */
  async openCheckout(trx: Tx, req: { teamId: string; orderId: string; amount: number; currency: string; externalPaymentId?: string | undefined }) {
    const conn = await this.connections.resolveForOrder(trx, req.teamId, req.externalPaymentId);
    const attempt = await this.ledger.rows.insertTransaction(trx, {
      ...attemptRow(req, null, { status: 'pending', gatewayId: null, code: 'in_flight', text: 'Opening the checkout at the external provider' }),
      connection_id: conn.id,
      step: FIRST_PAYMENT,
      in_flight: true,
      is_test: conn.environment === 'sandbox',
    });
    return { attempt, conn };
  }

  /**
   * Phase 2 of an external checkout, holding no lock: one inline plan for the cart (spec 4.1 rule
   * 10: a recurring or trial cart renews at recurring price × quantity + recurring shipping, on the
   * shortest interval, after the trial), our attempt id as the idempotency key and in the metadata.
   */
  async sendCheckout(
    opened: { attempt: Row<'transactions'>; conn: Row<'extpay_connections'> },
    req: { returnUrl: string; lines: Array<{ offer: Row<'offers'>; quantity: number }>; payer: Payer },
  ): Promise<{ kind: 'opened'; planRef: string; checkoutRef: string; checkout: ExtpayEmbedCheckout } | { kind: 'failed'; code: string; message: string }> {
    const { attempt, conn } = opened;
    const recurring = req.lines.filter((l) => l.offer.billing_type !== 'one_time' && l.offer.interval_unit && l.offer.interval_count);
    const days = (o: Row<'offers'>) => ({ day: 1, week: 7, month: 30, year: 365 })[o.interval_unit!] * o.interval_count!;
    const trials = recurring.filter((l) => l.offer.billing_type === 'trial' && l.offer.trial_days).map((l) => l.offer.trial_days!);
    const plan = renewalPlanFor({
      chargeToday: attempt.amount,
      recurring: recurring.length
        ? {
            renewalAmount: recurring.reduce((s, l) => s + (l.offer.recurring_price ?? 0) * l.quantity + (l.offer.recurring_shipping ?? 0), 0),
            intervalDays: Math.min(...recurring.map((l) => days(l.offer))),
          }
        : null,
      trialDays: trials.length ? Math.min(...trials) : null,
    });
    const connection = this.connections.connection(conn);
    const r = await this.extpay.createCheckout(connection, {
      currency: attempt.currency,
      plan,
      metadata: { order_number: attempt.order_id, attempt_id: attempt.id },
      redirectUrl: req.returnUrl,
      idempotencyKey: attempt.id,
    });
    if (r.kind === 'error') return { kind: 'failed', code: r.providerCode ?? r.code, message: r.message };
    const name = [req.payer.first_name, req.payer.last_name].filter(Boolean).join(' ');
    return { kind: 'opened', planRef: r.checkout.plan.id, checkoutRef: r.checkout.id, checkout: embedCheckout(connection, r.checkout, { email: req.payer.email, name }) };
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

  /** Whether the order's latest first-payment attempt went to a gateway that redirects (3-D Secure) and was answered there. */
  async lastFirstPaymentWasRedirected(teamId: string, orderId: string): Promise<boolean> {
    return this.store.run(async (db) => {
      const last = (await this.ledger.rows.listOrderTransactions(db, teamId, orderId)).filter((t) => isFirstPaymentType(t.type) && !t.upsell_id).at(-1);
      if (!last?.gateway_id || !last.provider_ref) return false;
      const gateway = await this.gateways.findGateway(db, teamId, last.gateway_id);
      return gateway ? this.provider(gateway).capabilities.redirect : false;
    });
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
    const sale = (await this.store.run((db) => this.ledger.rows.listOrderTransactions(db, teamId, orderId))).find((t) => t.checkout_ref === method.original_ref && t.provider_ref);
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
      this.ledger.rows.updatePaymentMethod(db, teamId, method.id, { vault_ref: first.id, ...(first.cardBrand ? { brand: first.cardBrand } : {}), ...(first.cardLast4 ? { last4: first.cardLast4 } : {}) }),
    );
    return { connection: conn, paymentMethodRef: first.id };
  }
}
