import { describe, expect, it } from 'vitest';
import { EXTPAY_DISPUTE_STAGES, EXTPAY_MEMBERSHIP_STATES, EXTPAY_PAYMENT_OUTCOMES, EXTPAY_REFUND_STATES, disputeIsChargeback, membershipIsValid, membershipState, paymentOutcome } from './status.ts';
import { EXTPAY_DISPUTE_STATUSES, EXTPAY_MEMBERSHIP_STATUSES, EXTPAY_PAYMENT_STATUSES, EXTPAY_REFUND_STATUSES, type ExtpayMembership, type ExtpayPayment } from './types.ts';

function payment(extra: Partial<ExtpayPayment>): ExtpayPayment {
  return {
    id: 'pay_1',
    status: 'paid',
    substatus: 'succeeded',
    amount: 4999,
    currency: 'USD',
    refundedAmount: 0,
    billingReason: 'one_time',
    failureMessage: null,
    companyId: 'biz_1',
    planId: 'plan_1',
    productId: null,
    membershipId: null,
    membershipStatus: null,
    memberId: 'mber_1',
    userId: 'user_1',
    email: 'ada@example.com',
    cardBrand: 'visa',
    cardLast4: '4242',
    metadata: {},
    refundable: true,
    voidable: false,
    createdAt: null,
    paidAt: null,
    disputeAlertedAt: null,
    ...extra,
  };
}

function membership(extra: Partial<ExtpayMembership>): ExtpayMembership {
  return {
    id: 'mem_1',
    status: 'active',
    cancelAtPeriodEnd: false,
    paused: false,
    planId: 'plan_1',
    memberId: 'mber_1',
    companyId: 'biz_1',
    renewalPeriodStart: null,
    renewalPeriodEnd: null,
    canceledAt: null,
    metadata: {},
    ...extra,
  };
}

describe('extpay status mapping', () => {
  it('maps every receipt status once', () => {
    expect(Object.keys(EXTPAY_PAYMENT_OUTCOMES).sort()).toEqual([...EXTPAY_PAYMENT_STATUSES].sort());
    expect(paymentOutcome(payment({}))).toMatchObject({ kind: 'approved', paymentId: 'pay_1' });
    expect(paymentOutcome(payment({ substatus: 'partially_refunded' }))).toMatchObject({ kind: 'approved' });
    expect(paymentOutcome(payment({ status: 'pending', substatus: 'pending' }))).toMatchObject({ kind: 'pending' });
    expect(paymentOutcome(payment({ status: 'draft', substatus: 'drafted' }))).toMatchObject({ kind: 'pending' });
    expect(paymentOutcome(payment({ status: 'void', substatus: 'canceled' }))).toMatchObject({ kind: 'declined', code: 'voided', message: 'The payment was voided.' });
    expect(paymentOutcome(payment({ status: 'uncollectible', substatus: 'uncollectible' }))).toMatchObject({ kind: 'declined', code: 'uncollectible' });
    expect(paymentOutcome(payment({ status: 'unresolved', substatus: 'unresolved' }))).toMatchObject({ kind: 'declined', code: 'unresolved' });
  });

  it('reads an open receipt as declined when it failed and as pending otherwise, keeping the provider’s words', () => {
    expect(paymentOutcome(payment({ status: 'open', substatus: 'failed', failureMessage: 'Blocked by fraud checks.' }))).toMatchObject({
      kind: 'declined',
      code: 'failed',
      message: 'Blocked by fraud checks.',
    });
    expect(paymentOutcome(payment({ status: 'open', substatus: 'failed' }))).toMatchObject({ kind: 'declined', message: 'The payment failed.' });
    expect(paymentOutcome(payment({ status: 'open', substatus: 'past_due' }))).toMatchObject({ kind: 'declined' });
    expect(paymentOutcome(payment({ status: 'open', substatus: 'incomplete' }))).toMatchObject({ kind: 'pending' });
  });

  it('falls back to the substatus when the status is missing or unknown, and errs when neither says anything', () => {
    expect(paymentOutcome(payment({ status: null, substatus: 'succeeded' }))).toMatchObject({ kind: 'approved' });
    expect(paymentOutcome(payment({ status: null, substatus: 'failed' }))).toMatchObject({ kind: 'declined' });
    expect(paymentOutcome(payment({ status: null, substatus: 'pending' }))).toMatchObject({ kind: 'pending' });
    expect(paymentOutcome(payment({ status: null, substatus: 'something_new' }))).toMatchObject({ kind: 'error', code: 'bad_response', safeToRetry: true });
  });

  it('mirrors membership states, with pause and a scheduled cancel on top of a valid status', () => {
    expect(Object.keys(EXTPAY_MEMBERSHIP_STATES).sort()).toEqual([...EXTPAY_MEMBERSHIP_STATUSES].sort());
    expect(membershipState(membership({}))).toBe('active');
    expect(membershipState(membership({ status: 'trialing' }))).toBe('trialing');
    expect(membershipState(membership({ paused: true }))).toBe('paused');
    expect(membershipState(membership({ cancelAtPeriodEnd: true }))).toBe('cancel_at_period_end');
    expect(membershipState(membership({ status: 'past_due', paused: true }))).toBe('past_due');
    expect(membershipState(membership({ status: 'canceled' }))).toBe('cancelled');
    expect(membershipState(membership({ status: 'unresolved' }))).toBe('past_due');
    expect(membershipIsValid(membership({ status: 'past_due' }))).toBe(true);
    expect(membershipIsValid(membership({ status: 'expired' }))).toBe(false);
  });

  it('maps refunds, and records a chargeback only past the early warning and not won', () => {
    expect(Object.keys(EXTPAY_REFUND_STATES).sort()).toEqual([...EXTPAY_REFUND_STATUSES].sort());
    expect(Object.keys(EXTPAY_DISPUTE_STAGES).sort()).toEqual([...EXTPAY_DISPUTE_STATUSES].sort());
    for (const s of ['warning_needs_response', 'warning_under_review', 'warning_closed', 'won', 'other'] as const) expect(disputeIsChargeback({ status: s }), s).toBe(false);
    for (const s of ['needs_response', 'under_review', 'lost', 'closed'] as const) expect(disputeIsChargeback({ status: s }), s).toBe(true);
  });
});
