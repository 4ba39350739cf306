/** Whop's refunds, voids, memberships, disputes and setup intents as the adapter sees them (split from types.ts). */
import type { ExtpayPayment, ExtpayError } from './types.ts';

// ---- refunds, voids ----

export interface ExtpayRefundRequest {
  paymentId: string;
  /** Minor units; omitted refunds the whole payment. */
  amount?: number;
  idempotencyKey?: string | null;
}

/**
 * A refund was accepted. The amount we asked for is provisional: `refund.created` carries what
 * settled (spec §4.5). `payment` is the payment as Whop answered it.
 */
export type ExtpayRefundResult = { kind: 'refund_requested'; paymentId: string; requestedAmount: number | null; payment: ExtpayPayment } | ExtpayError;

export type ExtpayVoidResult = { kind: 'voided'; paymentId: string; payment: ExtpayPayment } | ExtpayError;

export const EXTPAY_REFUND_STATUSES = ['pending', 'requires_action', 'succeeded', 'failed', 'canceled'] as const;
export type ExtpayRefundStatus = (typeof EXTPAY_REFUND_STATUSES)[number];

export interface ExtpayRefund {
  /** `rfnd_…` */
  id: string;
  status: ExtpayRefundStatus;
  /** Minor units: what settled (or is settling). */
  amount: number;
  currency: string;
  paymentId: string | null;
  createdAt: string | null;
}

export type ExtpayRefundLookup = { kind: 'refund'; refund: ExtpayRefund } | ExtpayError;

// ---- memberships ----

export const EXTPAY_MEMBERSHIP_STATUSES = ['trialing', 'active', 'past_due', 'completed', 'canceled', 'expired', 'unresolved', 'drafted'] as const;
export type ExtpayMembershipStatus = (typeof EXTPAY_MEMBERSHIP_STATUSES)[number];

export interface ExtpayMembership {
  /** `mem_…`: the subscription's membership reference (spec §2.9). */
  id: string;
  status: ExtpayMembershipStatus;
  cancelAtPeriodEnd: boolean;
  /** Whop's `payment_collection_paused`. */
  paused: boolean;
  planId: string | null;
  memberId: string | null;
  companyId: string | null;
  /** ISO 8601; the next billing date is `renewalPeriodEnd`, mirrored, never computed (spec §2.9). */
  renewalPeriodStart: string | null;
  renewalPeriodEnd: string | null;
  canceledAt: string | null;
  metadata: Record<string, unknown>;
}

export type ExtpayMembershipResult = { kind: 'membership'; membership: ExtpayMembership } | ExtpayError;

export type ExtpayCancelMode = 'at_period_end' | 'immediate';

// ---- disputes, setup intents ----

/** Whop's dispute statuses; `warning_*` is the early-warning stage (spec §4.5). */
export const EXTPAY_DISPUTE_STATUSES = [
  'warning_needs_response',
  'warning_under_review',
  'warning_closed',
  'needs_response',
  'under_review',
  'won',
  'lost',
  'closed',
  'other',
] as const;
export type ExtpayDisputeStatus = (typeof EXTPAY_DISPUTE_STATUSES)[number];

export interface ExtpayDispute {
  /** `dspt_…` */
  id: string;
  status: ExtpayDisputeStatus;
  reason: string | null;
  /** Minor units. */
  amount: number;
  currency: string;
  paymentId: string | null;
  createdAt: string | null;
}

export type ExtpayDisputeLookup = { kind: 'dispute'; dispute: ExtpayDispute } | ExtpayError;

export interface ExtpaySetupIntent {
  id: string;
  status: string;
  paymentMethodId: string | null;
  cardBrand: string | null;
  cardLast4: string | null;
  memberId: string | null;
  checkoutConfigurationId: string | null;
  metadata: Record<string, unknown>;
}
