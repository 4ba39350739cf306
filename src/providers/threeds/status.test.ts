import { describe, expect, it } from 'vitest';
import { THREEDS_DECLINE_CODES, THREEDS_STATUS_OUTCOMES, classifyThreeDsDecline, paymentOutcome } from './status.ts';
import { THREEDS_WIRE_STATUSES, type ThreeDsPayment } from './types.ts';
import { WirePayment, buildPaymentBody, fromWirePayment, toWireExpiry } from './wire.ts';

function payment(extra: Partial<ThreeDsPayment> = {}): ThreeDsPayment {
  return {
    id: 'pay_1',
    status: 'succeeded',
    amount: 4999,
    currency: 'USD',
    reference: 'att_1',
    amountRefunded: 0,
    paymentMethod: null,
    merchantInitiated: false,
    originalPaymentId: null,
    declineCode: null,
    message: null,
    redirectUrl: null,
    card: null,
    created: 1_700_000_000,
    ...extra,
  };
}

describe('3DS gateway statuses', () => {
  it('maps every wire status exactly once', () => {
    expect(Object.keys(THREEDS_STATUS_OUTCOMES).sort()).toEqual([...THREEDS_WIRE_STATUSES].sort());
    expect(THREEDS_STATUS_OUTCOMES).toEqual({ succeeded: 'approved', declined: 'declined', requires_action: 'redirect', processing: 'pending', canceled: 'declined' });
    for (const status of THREEDS_WIRE_STATUSES) {
      const r = paymentOutcome(payment({ status, redirectUrl: 'https://gw.test/authenticate/pay_1' }));
      expect(r.kind, status).toBe(THREEDS_STATUS_OUTCOMES[status]);
    }
  });

  it('approves with the saved payment method when there is one', () => {
    expect(paymentOutcome(payment())).toEqual({ kind: 'approved', paymentId: 'pay_1', payment: payment() });
    expect(paymentOutcome(payment({ paymentMethod: 'pm_9' }))).toMatchObject({ kind: 'approved', paymentMethod: 'pm_9' });
  });

  it("declines with the gateway's own text, falling back to the code's", () => {
    const text = 'billing email, first name and last name must be present';
    expect(paymentOutcome(payment({ status: 'declined', declineCode: 'missing_customer_details', message: text }))).toMatchObject({
      kind: 'declined',
      code: 'missing_customer_details',
      message: text,
      retryable: false,
    });
    expect(paymentOutcome(payment({ status: 'declined', declineCode: 'do_not_honor' }))).toMatchObject({ code: 'do_not_honor', message: THREEDS_DECLINE_CODES.do_not_honor.text, retryable: true });
    expect(paymentOutcome(payment({ status: 'declined' }))).toMatchObject({ code: 'declined', message: 'The payment was declined.', retryable: false });
  });

  it('reads a canceled payment as a decline that is never retried', () => {
    expect(paymentOutcome(payment({ status: 'canceled', message: 'ignored' }))).toMatchObject({ kind: 'declined', code: 'canceled', message: 'The payment was canceled.', retryable: false });
  });

  it('redirects only with a URL; without one the answer is unusable', () => {
    expect(paymentOutcome(payment({ status: 'requires_action', redirectUrl: 'https://gw.test/a' }))).toMatchObject({ kind: 'redirect', url: 'https://gw.test/a' });
    expect(paymentOutcome(payment({ status: 'requires_action' }))).toMatchObject({ kind: 'error', code: 'bad_response', safeToRetry: true });
  });

  it('salvages only issuer soft declines; integration declines surface their text', () => {
    const retryable = Object.entries(THREEDS_DECLINE_CODES)
      .filter(([, d]) => d.retryable)
      .map(([c]) => c)
      .sort();
    expect(retryable).toEqual(['do_not_honor', 'insufficient_funds']);
    expect(classifyThreeDsDecline('something_new')).toEqual({ retryable: false, hard: false, text: 'The payment was declined.' });
    expect(classifyThreeDsDecline('toString')).toMatchObject({ retryable: false });
    expect(classifyThreeDsDecline(null)).toMatchObject({ retryable: false });
    expect(THREEDS_DECLINE_CODES.authentication_required.text).toMatch(/3D Secure is required/);
    expect(THREEDS_DECLINE_CODES.risk_session_missing.text).toMatch(/risk session/);
  });

  it('tells hard declines (the card itself) from soft ones for the dunning', () => {
    const hard = Object.entries(THREEDS_DECLINE_CODES)
      .filter(([, d]) => d.hard)
      .map(([c]) => c)
      .sort();
    expect(hard).toEqual(['expired_card', 'incorrect_number', 'stop_recurring']);
    expect(paymentOutcome(payment({ status: 'declined', declineCode: 'stop_recurring' }))).toMatchObject({ kind: 'declined', hard: true, retryable: false });
    expect(paymentOutcome(payment({ status: 'declined', declineCode: 'insufficient_funds' }))).toMatchObject({ kind: 'declined', hard: false, retryable: true });
  });
});

describe('3DS gateway wire format', () => {
  it('reads a payment leniently: unknown fields dropped, missing optional ones defaulted', () => {
    const w = WirePayment.parse({ id: 'pay_1', status: 'requires_action', amount: 100, currency: 'eur', next_action: { type: 'redirect', url: 'https://x/y' }, extra: 1 });
    expect(fromWirePayment(w)).toEqual(payment({ status: 'requires_action', amount: 100, currency: 'EUR', reference: null, redirectUrl: 'https://x/y', created: 0 }));
    expect(WirePayment.safeParse({ id: 'pay_1', status: 'authorized', amount: 1, currency: 'USD' }).success).toBe(false);
    expect(WirePayment.safeParse({ id: 'pay_1', status: 'succeeded', amount: 1.5, currency: 'USD' }).success).toBe(false);
  });

  it('writes expiries as month and four-digit year', () => {
    expect(toWireExpiry('12/30')).toEqual({ exp_month: 12, exp_year: 2030 });
    expect(toWireExpiry('1230')).toEqual({ exp_month: 12, exp_year: 2030 });
    expect(toWireExpiry('01/2031')).toEqual({ exp_month: 1, exp_year: 2031 });
    expect(toWireExpiry('soon')).toEqual({ exp_month: 0, exp_year: 0 });
  });

  it('builds a customer-initiated card payment with every field the gateway checks', () => {
    const body = buildPaymentBody({
      amount: 4999,
      currency: 'usd',
      attemptId: 'att_1',
      card: { number: '4000 0000 0000 3220', exp: '12/30', cvv: '123' },
      customer: { email: 'ada@example.com', first_name: 'Ada', last_name: ' ' },
      riskSessionId: 'rs_1',
      returnUrl: 'https://shop.test/return',
      cancelUrl: 'https://shop.test/cancel',
      savePaymentMethod: true,
    });
    expect(body).toEqual({
      amount: 4999,
      currency: 'USD',
      reference: 'att_1',
      card: { number: '4000000000003220', exp_month: 12, exp_year: 2030, cvc: '123' },
      // A blank name is left out: the gateway decides what is missing.
      customer: { email: 'ada@example.com', first_name: 'Ada' },
      risk: { session_id: 'rs_1' },
      return_url: 'https://shop.test/return',
      cancel_url: 'https://shop.test/cancel',
      save_payment_method: true,
      merchant_initiated: false,
    });
  });

  it('builds a merchant-initiated charge on a saved card, and refuses impossible requests', () => {
    expect(buildPaymentBody({ amount: 100, currency: 'USD', attemptId: 'a', paymentMethod: 'pm_1', savePaymentMethod: false, merchantInitiated: { originalPaymentId: 'pay_0' } })).toEqual({
      amount: 100,
      currency: 'USD',
      reference: 'a',
      payment_method: 'pm_1',
      save_payment_method: false,
      merchant_initiated: true,
      original_payment_id: 'pay_0',
    });
    const card = { number: '4000000000003055', exp: '12/30', cvv: '' };
    expect(() => buildPaymentBody({ amount: 100, currency: 'USD', attemptId: 'a', savePaymentMethod: false })).toThrow();
    expect(() => buildPaymentBody({ amount: 100, currency: 'USD', attemptId: 'a', card, paymentMethod: 'pm_1', savePaymentMethod: false })).toThrow();
    expect(() => buildPaymentBody({ amount: 100, currency: 'USD', attemptId: 'a', card, savePaymentMethod: false, merchantInitiated: { originalPaymentId: 'p' } })).toThrow();
    expect(() => buildPaymentBody({ amount: 0, currency: 'USD', attemptId: 'a', card, savePaymentMethod: false })).toThrow(RangeError);
    // Zero is a setup only: a new card saved, customer-initiated.
    expect(buildPaymentBody({ amount: 0, currency: 'USD', attemptId: 'a', card, savePaymentMethod: true })).toMatchObject({ amount: 0, save_payment_method: true, merchant_initiated: false });
    expect(() => buildPaymentBody({ amount: 0, currency: 'USD', attemptId: 'a', paymentMethod: 'pm_1', savePaymentMethod: true })).toThrow(RangeError);
  });
});
