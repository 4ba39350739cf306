import { describe, expect, it } from 'vitest';
import type { ExtpayConnection } from './types.ts';
import { attemptIdOfNote, attemptNote, buildChargeBody, buildCheckoutBody, embedCheckout, fromWireAmount, missingPermissionsOf, readWireError, renewalPlanFor, toIsoTime, toWireAmount } from './wire.ts';

const conn: ExtpayConnection = { baseUrl: 'https://api.whop.com/api/v1', apiKey: 'k', companyId: 'biz_abc', environment: 'production' };

describe('extpay wire conversions', () => {
  it('converts minor units to Whop decimals and back, per currency', () => {
    expect(toWireAmount(4999, 'USD')).toBe(49.99);
    expect(toWireAmount(500, 'jpy')).toBe(500);
    expect(toWireAmount(1234, 'KWD')).toBe(1.234);
    expect(fromWireAmount(49.99, 'USD')).toBe(4999);
    expect(fromWireAmount(0.1 + 0.2, 'USD')).toBe(30);
    expect(fromWireAmount('12.50', 'usd')).toBe(1250);
    expect(fromWireAmount(500, 'JPY')).toBe(500);
    expect(fromWireAmount(1.5, 'JPY')).toBeNull();
    expect(fromWireAmount(12.345, 'USD')).toBeNull();
    expect(fromWireAmount(-1, 'USD')).toBeNull();
    expect(fromWireAmount('abc', 'USD')).toBeNull();
  });

  it('reads ISO strings and Unix seconds or milliseconds as ISO time', () => {
    expect(toIsoTime('2025-06-15T10:00:00Z')).toBe('2025-06-15T10:00:00.000Z');
    expect(toIsoTime(1_750_000_000)).toBe('2025-06-15T15:06:40.000Z');
    expect(toIsoTime('1750000000')).toBe('2025-06-15T15:06:40.000Z');
    expect(toIsoTime(1_750_000_000_000)).toBe('2025-06-15T15:06:40.000Z');
    expect(toIsoTime('not a time')).toBeNull();
    expect(toIsoTime(null)).toBeNull();
  });

  it('builds a checkout configuration with an inline one-time plan', () => {
    expect(
      buildCheckoutBody(conn, {
        currency: 'USD',
        plan: { planType: 'one_time', initialPrice: 4999 },
        metadata: { order_number: 'ord_1', attempt_id: 'att_1' },
        redirectUrl: 'https://shop.test/return',
        title: 'Order ord_1',
        product: { externalIdentifier: 'checkstand', title: 'Shop' },
      }),
    ).toEqual({
      company_id: 'biz_abc',
      plan: {
        currency: 'usd',
        plan_type: 'one_time',
        initial_price: 49.99,
        visibility: 'hidden',
        title: 'Order ord_1',
        product: { external_identifier: 'checkstand', title: 'Shop' },
      },
      metadata: { order_number: 'ord_1', attempt_id: 'att_1' },
      redirect_url: 'https://shop.test/return',
    });
  });

  it('puts the company inside the inline plan for a connection pinned before the account-scoped versions', () => {
    const body = buildCheckoutBody({ ...conn, apiVersionDate: '2025-01-01' }, { currency: 'USD', plan: { planType: 'one_time', initialPrice: 100 } });
    expect(body.company_id).toBeUndefined();
    expect(body.plan).toMatchObject({ company_id: 'biz_abc', currency: 'usd' });
  });

  it('reads the permission names of a 403', () => {
    expect(missingPermissionsOf('This API key is missing the permissions: access_pass:update, checkout_configuration:basic:read.')).toEqual(['access_pass:update', 'checkout_configuration:basic:read']);
    expect(missingPermissionsOf('You are not authorized to access this company.')).toEqual([]);
  });

  it('builds a renewal plan with a trial, and refuses impossible plans', () => {
    expect(buildCheckoutBody(conn, { currency: 'eur', plan: { planType: 'renewal', initialPrice: 100, renewalPrice: 2999, billingPeriodDays: 30, trialPeriodDays: 14 } }).plan).toEqual({
      currency: 'eur',
      plan_type: 'renewal',
      initial_price: 1,
      renewal_price: 29.99,
      billing_period: 30,
      trial_period_days: 14,
      visibility: 'hidden',
    });
    expect(() => buildCheckoutBody(conn, { currency: 'USD', plan: { planType: 'one_time', initialPrice: 1.5 } })).toThrow(RangeError);
    expect(() => buildCheckoutBody(conn, { currency: 'USD', plan: { planType: 'renewal', initialPrice: 0, renewalPrice: 0, billingPeriodDays: 30 } })).toThrow(RangeError);
    expect(() => buildCheckoutBody(conn, { currency: 'USD', plan: { planType: 'renewal', initialPrice: 0, renewalPrice: 100, billingPeriodDays: 0 } })).toThrow(RangeError);
    expect(() => buildCheckoutBody(conn, { currency: 'dollars', plan: { planType: 'one_time', initialPrice: 1 } })).toThrow(RangeError);
  });

  it('builds an off-session charge of a saved payment method', () => {
    expect(buildChargeBody(conn, { memberId: 'mber_1', paymentMethodId: 'payt_1', currency: 'USD', amount: 1999, title: 'Upsell' })).toEqual({
      company_id: 'biz_abc',
      member_id: 'mber_1',
      payment_method_id: 'payt_1',
      plan: { currency: 'usd', plan_type: 'one_time', initial_price: 19.99, visibility: 'hidden', title: 'Upsell' },
    });
    expect(() => buildChargeBody(conn, { memberId: '', paymentMethodId: 'payt_1', currency: 'USD', amount: 1 })).toThrow();
    expect(() => buildChargeBody(conn, { memberId: 'm', paymentMethodId: 'p', currency: 'USD', amount: 0 })).toThrow(RangeError);
  });

  it('marks a charge’s own inline plan with our attempt id (Idempotency-Key unless given apart), so it can be found again', () => {
    const body = buildChargeBody(conn, { memberId: 'mber_1', paymentMethodId: 'payt_1', currency: 'USD', amount: 1999, idempotencyKey: 'att_7' });
    expect(body.plan).toEqual({
      currency: 'usd',
      plan_type: 'one_time',
      initial_price: 19.99,
      visibility: 'hidden',
      internal_notes: 'checkstand:attempt_id=att_7',
      force_create_new_plan: true,
    });
    expect(body).not.toHaveProperty('metadata');
    expect(buildChargeBody(conn, { memberId: 'm', paymentMethodId: 'p', currency: 'USD', amount: 1, idempotencyKey: 'k', attemptId: 'att_8' }).plan).toMatchObject({ internal_notes: 'checkstand:attempt_id=att_8' });
    expect(attemptIdOfNote(attemptNote('att_9'))).toBe('att_9');
    for (const other of [null, undefined, '', 'VIP customer', 'checkstand:attempt_id=', 'checkstand:attempt_id=a b']) expect(attemptIdOfNote(other), String(other)).toBeNull();
  });

  it('turns a cart into the one plan of its checkout (spec §4.1 rule 10)', () => {
    expect(renewalPlanFor({ chargeToday: 4999 })).toEqual({ planType: 'one_time', initialPrice: 4999 });
    expect(renewalPlanFor({ chargeToday: 4999, recurring: { renewalAmount: 2999, intervalDays: 30 } })).toEqual({ planType: 'renewal', initialPrice: 2000, renewalPrice: 2999, billingPeriodDays: 30 });
    expect(renewalPlanFor({ chargeToday: 0, recurring: { renewalAmount: 2999, intervalDays: 30 }, trialDays: 14 })).toEqual({
      planType: 'renewal',
      initialPrice: 0,
      renewalPrice: 2999,
      billingPeriodDays: 30,
      trialPeriodDays: 14,
    });
    // An introductory first period below the renewal price is a trial of one period.
    expect(renewalPlanFor({ chargeToday: 100, recurring: { renewalAmount: 2999, intervalDays: 30 } })).toEqual({
      planType: 'renewal',
      initialPrice: 100,
      renewalPrice: 2999,
      billingPeriodDays: 30,
      trialPeriodDays: 30,
    });
  });

  it('hands the embed what the spec lists, and reads errors of any usual shape', () => {
    const checkout = { id: 'ch_1', companyId: 'biz_abc', plan: { id: 'plan_1', planType: 'one_time' as const, currency: 'USD', initialPrice: 1, renewalPrice: 0, billingPeriodDays: null, trialPeriodDays: null }, purchaseUrl: 'https://whop.com/checkout/plan_1?session=ch_1', redirectUrl: null, metadata: {} };
    expect(embedCheckout({ environment: 'sandbox' }, checkout, { email: 'ada@example.com', name: 'Ada' })).toEqual({
      provider: 'extpay',
      session_id: 'ch_1',
      plan_id: 'plan_1',
      environment: 'sandbox',
      setup_future_usage: 'off_session',
      purchase_url: 'https://whop.com/checkout/plan_1?session=ch_1',
      prefill: { email: 'ada@example.com', name: 'Ada' },
    });
    expect(readWireError({ error: { type: 'permission_error', code: 'missing_permissions', message: 'no' } })).toEqual({ code: 'missing_permissions', message: 'no' });
    expect(readWireError({ error: { type: 'unauthorized', message: 'bad key' } })).toEqual({ code: 'unauthorized', message: 'bad key' });
    expect(readWireError({ error: 'Not found' })).toEqual({ code: null, message: 'Not found' });
    expect(readWireError({ message: 'Oops' })).toEqual({ code: null, message: 'Oops' });
    expect(readWireError('<html>')).toEqual({ code: null, message: null });
  });
});
