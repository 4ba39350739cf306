import { z } from 'zod';
import type { Clock } from '../../app/clock.ts';
import { ApiError, notFound } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import type { Store, Tx } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import { type CardInput, type CardSummary, summarizeCard } from '../../providers/card.ts';
import type { ChargeOutcome } from '../../providers/provider.ts';
import type { CatalogService } from '../catalog/service.ts';
import type { CustomersService } from '../customers/service.ts';
import type { EventsService } from '../events/service.ts';
import type { GatewaysService } from '../gateways/service.ts';
import type { LedgerService } from '../ledger/service.ts';
import { PaymentInput } from '../orders/schemas.ts';
import type { OrdersService } from '../orders/service.ts';
import type { PaymentsService } from '../payments/service.ts';
import { subscriptionView, type SubscriptionsService } from './service.ts';

/** The attempt's step: one card replacement of a subscription in flight at a time (the unique in-flight index on (order, step)). */
export const CARD_UPDATE_STEP = 'payment_method';
const stepOf = (subscriptionId: string) => `${CARD_UPDATE_STEP}:${subscriptionId}`;

/** The new card, validated as the payment object's card fields are (a valid number, MM/YY not expired, 3–4 digit CVV). */
export const ReplacePaymentMethodBody = z
  .object({
    card_number: PaymentInput.shape.card_number.unwrap(),
    card_exp: PaymentInput.shape.card_exp.unwrap(),
    card_cvv: PaymentInput.shape.card_cvv.unwrap(),
  })
  .strict()
  .meta({ id: 'ReplacePaymentMethod' });

export interface PaymentMethodDeps {
  store: Store;
  clock: Clock;
  subscriptions: SubscriptionsService;
  payments: PaymentsService;
  gateways: GatewaysService;
  ledger: LedgerService;
  catalog: CatalogService;
  orders: OrdersService;
  customers: CustomersService;
  events: EventsService;
}

/** Phase 1's result: the attempt to send, or a card decided without a gateway (a listed test card). */
type Opened =
  | { kind: 'call'; attempt: Row<'transactions'>; gateway: Row<'gateways'>; order: Row<'orders'>; payer: { email: string | null; first_name: string | null; last_name: string | null } }
  | { kind: 'saved'; view: ReturnType<typeof subscriptionView> }
  | { kind: 'declined'; transaction: Row<'transactions'> };

const ENDED = new Set(['completed', 'expired']);

/**
 * Replacing the card a card subscription charges (POST /v1/subscriptions/{id}/payment-method): the
 * new card is verified and vaulted at $0 (CardProvider.verify, as a $0 first payment is) in atomic
 * phases — an attempt of type `verification` committed in flight on the subscription's order, the
 * gateway call holding no lock, then in one transaction the answer, the new payment_methods row
 * (brand, BIN, last 4, expiry and the gateway's token; never the number), the subscription pointed at
 * it and `subscription.updated`. The old card is left as it is (its vault entry and its row).
 *
 * Where: the gateway that saved the old card, when it still exists and is active (a vault token
 * does not travel, and the merchant's acquirer stays the same); otherwise the gateway the order's
 * campaign routes a first payment to now (its gateway, or its router's first active member).
 */
export class SubscriptionPaymentMethods {
  constructor(private readonly d: PaymentMethodDeps) {}

  async replaceCard(teamId: string, subscriptionId: string, card: CardInput) {
    const opened = await this.d.store.transaction((trx) => this.open(trx, teamId, subscriptionId, card));
    if (opened.kind === 'declined') throw declinedError(opened.transaction);
    if (opened.kind === 'saved') {
      this.d.events.nudge();
      return opened.view;
    }
    const outcome = await this.d.payments.sendVerification(opened.gateway, {
      attemptId: opened.attempt.id,
      orderId: opened.order.id,
      currency: opened.attempt.currency,
      card,
      payer: opened.payer,
      billing: opened.order.billing_address,
      // A merchant's API call cannot send the customer through 3-D Secure: no return URLs are given.
      redirect: {},
    });
    if (outcome.kind === 'unknown') {
      throw new ApiError(
        'payment_outcome_unknown',
        `The gateway did not answer, so whether it saved the card is not known: ${outcome.text}. The subscription keeps its current card; the answer is recorded within minutes, then send the card again.`,
      );
    }
    const recorded = await this.d.store.transaction((trx) => this.record(trx, teamId, subscriptionId, opened.attempt, card, outcome));
    // The declined attempt is committed with the answer; the subscription keeps its card.
    if (recorded.kind === 'declined') throw declinedError(recorded.transaction);
    this.d.events.nudge();
    return recorded.view;
  }

  /** Phase 1, under the subscription's row lock: the checks, then the attempt row in flight (or a test card saved at once). */
  private async open(trx: Tx, teamId: string, subscriptionId: string, card: CardInput): Promise<Opened> {
    const sub = await this.d.subscriptions.lock(trx, teamId, subscriptionId);
    if (!sub) throw notFound('Subscription');
    if (sub.externally_managed)
      throw new ApiError('subscription_externally_managed', 'This subscription is billed by an external provider, which holds its card: change the card at the provider.');
    if (ENDED.has(sub.status))
      throw new ApiError('subscription_not_actionable', `This subscription is ${sub.status}, so its card cannot be replaced.`, { data: { status: sub.status } });
    const step = stepOf(sub.id);
    if (await this.d.ledger.findInFlight(trx, teamId, sub.order_id, step))
      throw new ApiError('payment_in_progress', "A card replacement for this subscription was sent to the gateway and its answer is not recorded yet; retry in a moment.");
    const order = (await this.d.orders.rows.findOrder(trx, teamId, sub.order_id))!;
    const summary = summarizeCard(card);
    const row = (status: 'approved' | 'declined' | 'pending', gatewayId: string | null, code: string, text: string) => ({
      id: newId('transaction'),
      team_id: teamId,
      order_id: order.id,
      type: 'verification',
      status,
      amount: 0,
      currency: sub.currency,
      gateway_id: gatewayId,
      response_code: code,
      response_text: text,
      card_brand: summary.brand,
      card_bin: summary.bin,
      card_last4: summary.last4,
      card_exp: summary.exp,
      step,
    });

    if (await this.d.gateways.isBinBlocked(trx, teamId, card.number)) {
      const text = `The card's BIN ${summary.bin} is blocked by this merchant.`;
      return { kind: 'declined', transaction: await this.d.ledger.rows.insertTransaction(trx, row('declined', null, 'bin_blocked', text)) };
    }
    if (await this.d.gateways.isTestCard(trx, teamId, card.number)) {
      // A listed test card is saved without reaching any gateway, as at checkout.
      const old = await this.currentMethod(trx, teamId, sub, order);
      const method = await this.saveMethod(trx, sub, summary, old?.gateway_id ?? null, null, null, true);
      const t = { ...row('approved', method.gateway_id, 'test_card', 'Saved: test card (no gateway was called)'), provider_ref: `test_${method.id}`, is_test: true, payment_method_id: method.id };
      await this.d.ledger.rows.insertTransaction(trx, t);
      return { kind: 'saved', view: await this.pointAt(trx, teamId, sub.id, method) };
    }
    const gateway = await this.gatewayFor(trx, teamId, sub, order);
    const attempt = await this.d.ledger.rows.insertTransaction(trx, {
      ...row('pending', gateway.id, 'in_flight', 'Sent to the gateway; waiting for its answer'),
      in_flight: true,
      is_test: gateway.test_mode,
    });
    const [customer] = await this.d.customers.findMany(trx, teamId, [sub.customer_id]);
    return { kind: 'call', attempt, gateway, order, payer: { email: customer?.email ?? null, first_name: customer?.first_name ?? null, last_name: customer?.last_name ?? null } };
  }

  /** Phase 3: the gateway's answer, the new card saved and the subscription pointed at it — or the decline, on the record. */
  private async record(
    trx: Tx,
    teamId: string,
    subscriptionId: string,
    attempt: Row<'transactions'>,
    card: CardInput,
    outcome: Exclude<ChargeOutcome, { kind: 'unknown' }>,
  ): Promise<{ kind: 'saved'; view: ReturnType<typeof subscriptionView> } | { kind: 'declined'; transaction: Row<'transactions'> }> {
    if (outcome.kind !== 'approved') {
      // A redirect or a hold means the gateway wants the customer to authenticate, which an API call cannot do.
      const declined =
        outcome.kind === 'declined'
          ? outcome
          : { providerRef: outcome.providerRef, code: 'authentication_required', text: 'The gateway asks the cardholder to authenticate (3-D Secure) to save this card; replace it through a checkout instead.' };
      const t = await this.d.ledger.rows.closeAttempt(trx, teamId, attempt, { status: 'declined', provider_ref: declined.providerRef, response_code: declined.code, response_text: declined.text });
      return { kind: 'declined', transaction: t ?? attempt };
    }
    const sub = (await this.d.subscriptions.lock(trx, teamId, subscriptionId))!;
    const method = await this.saveMethod(trx, sub, summarizeCard(card), attempt.gateway_id, outcome.vaultRef, outcome.providerRef, attempt.is_test);
    const closed = await this.d.ledger.rows.closeAttempt(trx, teamId, attempt, {
      status: 'approved',
      provider_ref: outcome.providerRef,
      auth_code: outcome.authCode,
      response_code: outcome.code,
      response_text: outcome.text,
      payment_method_id: method.id,
    });
    if (!closed) throw new ApiError('conflict', 'The recovery run recorded this card replacement meanwhile; send the card again.');
    return { kind: 'saved', view: await this.pointAt(trx, teamId, sub.id, method) };
  }

  /**
   * The subscription charges `method` from now on; a `past_due` one is retried now (the rebill engine
   * takes it on its next run), since a new card is the usual answer to a declined rebill.
   */
  private async pointAt(trx: Tx, teamId: string, subscriptionId: string, method: Row<'payment_methods'>) {
    const sub = (await this.d.subscriptions.lock(trx, teamId, subscriptionId))!;
    const updated = await this.d.subscriptions.updateBilling(trx, sub, { payment_method_id: method.id, ...(sub.status === 'past_due' ? { retry_at: this.d.clock.now() } : {}) });
    await this.d.orders.recordEvents(trx, teamId, updated.order_id, [
      { type: 'subscription.payment_method_replaced', data: { subscription_id: updated.id, payment_method_id: method.id, previous_payment_method_id: sub.payment_method_id, retry_now: sub.status === 'past_due' } },
    ]);
    const view = { ...subscriptionView(updated), payment_method: { brand: method.brand, last4: method.last4, exp: method.exp } };
    await this.d.events.emit(trx, teamId, 'subscription.updated', { orderId: updated.order_id, object: view });
    return view;
  }

  private async currentMethod(trx: Tx, teamId: string, sub: Row<'subscriptions'>, order: Row<'orders'>) {
    const id = sub.payment_method_id ?? order.payment_method_id;
    return id ? this.d.ledger.findPaymentMethod(trx, teamId, id) : undefined;
  }

  /** The old card's gateway while it exists and is active; else where the order's campaign routes a first payment now. */
  private async gatewayFor(trx: Tx, teamId: string, sub: Row<'subscriptions'>, order: Row<'orders'>): Promise<Row<'gateways'>> {
    const old = await this.currentMethod(trx, teamId, sub, order);
    const own = old?.gateway_id ? await this.d.gateways.findGateway(trx, teamId, old.gateway_id) : undefined;
    if (own?.is_active) return own;
    const campaign = await this.d.catalog.findCampaign(trx, teamId, order.campaign_id);
    const plan = campaign ? await this.d.payments.first.plan(trx, teamId, { campaign }) : null;
    const next = plan?.candidates.find((c) => c.gateway.is_active)?.gateway;
    if (!next) throw new ApiError('conflict', 'No active payment gateway can save this card: the one that saved the old card is gone or inactive, and the campaign routes to none.');
    return next;
  }

  private saveMethod(trx: Tx, sub: Row<'subscriptions'>, card: CardSummary, gatewayId: string | null, vaultRef: string | null, originalRef: string | null, isTest: boolean) {
    return this.d.ledger.rows.insertPaymentMethod(trx, {
      id: newId('paymentMethod'),
      team_id: sub.team_id,
      customer_id: sub.customer_id,
      gateway_id: gatewayId,
      vault_ref: vaultRef,
      original_ref: originalRef,
      brand: card.brand,
      bin: card.bin,
      last4: card.last4,
      exp: card.exp,
      is_test: isTest,
    });
  }
}

/** 422 with the gateway's decline in the envelope's data; nothing was saved and the subscription keeps its card. */
function declinedError(t: Row<'transactions'>): ApiError {
  return new ApiError('card_verification_declined', `The new card was declined when it was verified: ${t.response_text ?? 'declined'}. Nothing was saved; the subscription keeps its card.`, {
    data: { decline_code: t.response_code, decline_text: t.response_text, transaction_id: t.id },
  });
}
