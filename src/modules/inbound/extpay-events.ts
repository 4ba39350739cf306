import { ApiError } from '../../app/errors.ts';
import type { Store, Tx } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import { paymentOutcome } from '../../providers/extpay/status.ts';
import type { ExtpayPayment } from '../../providers/extpay/types.ts';
import type { ExtpayWebhookEvent } from '../../providers/extpay/webhook.ts';
import type { PaymentsService } from '../payments/service.ts';
import type { LedgerService } from '../ledger/service.ts';
import type { InboundService } from './service.ts';
import type { FirstPaymentOutcome } from '../ledger/views.ts';
import type { UseCases } from '../checkout/use-case.ts';

export type InboundResult = 'processed' | 'duplicate' | 'ignored';

/** An extpay event's deduplication source is `extpay:<connection id>`: one connection's record of it. */
const SOURCE_PREFIX = 'extpay:';

/** What we keep of an inbound event (the dedupe row): never the whole payload, which names the customer. */
function summary(event: ExtpayWebhookEvent): Record<string, unknown> {
  const subject =
    'payment' in event
      ? { payment_id: event.payment.id, status: event.payment.status, billing_reason: event.payment.billingReason }
      : 'membership' in event
        ? { membership_id: event.membership.id, status: event.membership.status }
        : 'refund' in event
          ? { refund_id: event.refund.id, status: event.refund.status, amount: event.refund.amount, payment_id: event.refund.paymentId }
          : 'dispute' in event
            ? { dispute_id: event.dispute.id, status: event.dispute.status, payment_id: event.dispute.paymentId }
            : 'setupIntent' in event
              ? { setup_intent_id: event.setupIntent.id, status: event.setupIntent.status }
              : {};
  return { id: event.id, type: event.rawType, timestamp: event.timestamp, company_id: event.companyId, ...subject };
}

/** An extpay payment the provider reports paid, as the first-payment settlement takes it. */
export function paidExternally(p: ExtpayPayment): FirstPaymentOutcome {
  return {
    approved: true,
    paymentMethod: null,
    external: { paymentRef: p.id, memberRef: p.memberId, membershipRef: p.membershipId, cardBrand: p.cardBrand, cardLast4: p.cardLast4 },
  };
}

/**
 * The eleven inbound extpay event kinds (spec 6.1), each applied with the effect the spec gives.
 * Every effect runs in one transaction with the event's deduplication row (source + webhook-id),
 * so a redelivery, or a retry after a failure, is processed exactly once. Provider reads that an
 * effect needs happen before that transaction: memberships, refunds and disputes are applied as
 * the provider has them now, so deliveries arriving out of order cannot undo a newer state.
 */
export class ExtpayEventsService {
  constructor(
    private readonly store: Store,
    private readonly uc: UseCases,
    private readonly payments: PaymentsService,
    private readonly ledger: LedgerService,
    private readonly inbound: InboundService,
  ) {}

  /** The team's connections that verified and recorded a delivery of this event id (the doctor's round trip). */
  async recordedBy(teamId: string, eventId: string): Promise<string[]> {
    const sources = await this.store.run((db) => this.inbound.sourcesOf(db, teamId, SOURCE_PREFIX, eventId));
    return sources.map((s) => s.slice(SOURCE_PREFIX.length));
  }

  async apply(conn: Row<'extpay_connections'>, event: ExtpayWebhookEvent): Promise<InboundResult> {
    const teamId = conn.team_id;
    const source = `${SOURCE_PREFIX}${conn.id}`;
    if (await this.store.run((db) => this.inbound.inboundSeen(db, source, event.id))) return 'duplicate';
    let fresh = false;
    const guard = async (trx: Tx) => (fresh = await this.inbound.recordInbound(trx, source, event.id, teamId, event.rawType, summary(event)));
    const only = async (): Promise<InboundResult> => {
      await this.store.transaction((trx) => guard(trx));
      return fresh ? 'ignored' : 'duplicate';
    };
    const done = (r: 'processed' | 'ignored' | 'duplicate' | boolean | unknown): InboundResult => (!fresh ? 'duplicate' : r === 'ignored' ? 'ignored' : 'processed');

    switch (event.type) {
      case 'payment.succeeded':
      case 'payment.failed':
      case 'payment.created':
        return this.payment(conn, event.type, event.payment, guard, only, done);
      case 'membership.activated':
      case 'membership.deactivated':
      case 'membership.cancel_at_period_end_changed': {
        const m = await this.payments.currentMembership(teamId, conn.id, event.membership);
        return done(await this.uc.renewals.applyMembershipEvent(teamId, m, guard));
      }
      case 'refund.created':
      case 'refund.updated': {
        const sale = event.refund.paymentId ? await this.store.run((db) => this.ledger.external.findExternalSale(db, teamId, conn.id, event.refund.paymentId!)) : undefined;
        if (!sale) return only();
        const refund = await this.payments.currentRefund(teamId, conn.id, event.refund);
        return done(await this.uc.extpayEffects.applyExternalRefund(teamId, sale, refund, guard));
      }
      case 'dispute.created':
      case 'dispute.updated': {
        const sale = event.dispute.paymentId ? await this.store.run((db) => this.ledger.external.findExternalSale(db, teamId, conn.id, event.dispute.paymentId!)) : undefined;
        if (!sale) return only();
        const dispute = await this.payments.currentDispute(teamId, conn.id, event.dispute);
        return done(await this.uc.extpayEffects.applyExternalDispute(teamId, sale, dispute, guard));
      }
      case 'setup_intent.succeeded': {
        const s = event.setupIntent;
        const first = await this.store.run((db) => this.ledger.external.findFirstPaymentFor(db, teamId, conn.id, { metadata: s.metadata, planId: null }));
        if (!first?.checkout_ref || !s.paymentMethodId) return only();
        return done(await this.uc.extpayEffects.saveExternalMethod(teamId, first, s, guard));
      }
      case 'unknown':
        return only();
    }
  }

  /**
   * payment.succeeded confirms a first payment (completing the order exactly once), an upsell
   * (adding its line) or a renewal (a rebill order); payment.failed declines them; payment.created
   * matters only when the provider's own fraud check refused the payment (spec 3.2).
   */
  private async payment(
    conn: Row<'extpay_connections'>,
    type: 'payment.succeeded' | 'payment.failed' | 'payment.created',
    p: ExtpayPayment,
    guard: (trx: Tx) => Promise<boolean>,
    only: () => Promise<InboundResult>,
    done: (r: unknown) => InboundResult,
  ): Promise<InboundResult> {
    const teamId = conn.team_id;
    const read = paymentOutcome(p);
    let approved: boolean;
    if (type === 'payment.succeeded') approved = true;
    else if (type === 'payment.failed') approved = false;
    else if (read.kind === 'declined') approved = false;
    else return only();
    const decline = {
      code: read.kind === 'declined' ? read.code : 'failed',
      message: read.kind === 'declined' ? read.message : (p.failureMessage ?? 'The payment failed.'),
    };

    if (p.billingReason === 'subscription_cycle' && p.membershipId) {
      const membership = await this.payments.membershipOf(teamId, conn.id, p.membershipId);
      if (approved) return done(await this.uc.renewals.recordRenewal(teamId, conn.id, p, membership, guard));
      if (!membership) throw new ApiError('gateway_unavailable', 'The membership of this failed renewal could not be read from the provider; deliver the event again.');
      return done(await this.uc.renewals.renewalFailed(teamId, p, membership, guard));
    }

    // Asked before the sale is looked up: an upsell's payment id is recorded in the transaction that
    // ends its flight, so if none is in flight now, a sale of this payment is already findable below.
    // (Asked after a lookup that found nothing, an answer recorded in between was missed: the event
    // was ignored and the upsell stayed pending until the watchdog.)
    const upsellInFlight = await this.store.run((db) => this.ledger.external.hasUpsellInFlight(db, teamId, conn.id));
    const sale = await this.store.run((db) => this.ledger.external.findExternalSale(db, teamId, conn.id, p.id));
    if (sale?.upsell_id) {
      const outcome = approved ? { approved: true as const, paymentRef: p.id } : { approved: false as const, paymentRef: p.id, ...decline };
      return done(await this.uc.upsellSettlement.confirmHeldUpsell(teamId, sale, outcome, guard));
    }
    const first = sale ?? (await this.store.run((db) => this.ledger.external.findFirstPaymentFor(db, teamId, conn.id, p)));
    if (first && !first.upsell_id) {
      if (approved) {
        // Settled already (Capture or an earlier delivery won): the finalize only records this event, no provider read needed.
        const membership = first.status === 'pending' ? await this.payments.membershipOf(teamId, conn.id, p.membershipId) : null;
        return done(await this.uc.finalize.finalizeFirstPayment(teamId, first.order_id, first.id, paidExternally(p), guard, membership));
      }
      return done(await this.uc.finalize.finalizeFirstPayment(teamId, first.order_id, first.id, { approved: false, ...decline, paymentRef: p.id }, guard));
    }
    // Not ours, unless an upsell charge is between the provider's answer and our record of its
    // payment id: then the provider should deliver again in a moment.
    if (upsellInFlight) throw new ApiError('webhook_not_ready');
    return only();
  }
}
