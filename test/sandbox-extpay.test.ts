import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { luhnValid } from '../src/app/luhn.ts';
import { ExtpayAdapter, extpayAdapter } from '../src/providers/extpay/adapter.ts';
import { disputeIsChargeback, membershipState, paymentOutcome } from '../src/providers/extpay/status.ts';
import {
  type ExtpayCheckout,
  type ExtpayConnection,
  type ExtpayEnvironment,
  type ExtpayPaymentOutcome,
  type ExtpayPaymentResult,
  type ExtpayPlanInput,
  sandboxApiBaseUrl,
} from '../src/providers/extpay/types.ts';
import { type ExtpayWebhookEvent, verifyExtpayWebhook } from '../src/providers/extpay/webhook.ts';
import { embedCheckout } from '../src/providers/extpay/wire.ts';
import { EXTPAY_CARDS } from '../src/sandbox/extpay-provider.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { type Delivery, type RecordingReceiver, startRecordingReceiver, waitFor } from './support/receiver.ts';

// The real adapter against the sandbox over a real socket, and a local receiver for the provider's
// Standard-Webhooks-signed events; no database involved.
let sandbox: { url: string; close(): Promise<void> };
let receiverUrl: string;
let seq = 0;

let deliveries: Delivery[];
let failures: Map<string, number>;
let recorder: RecordingReceiver;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  recorder = await startRecordingReceiver();
  ({ deliveries, failures, url: receiverUrl } = recorder);
});
afterAll(async () => {
  await sandbox?.close();
  await recorder?.close();
});

const WS_SECRET = 'ws_9f3c1d2e4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff';
const WHSEC_SECRET = `whsec_${Buffer.from('checkstand-production-signing-key').toString('base64')}`;

type Company = ExtpayConnection & { hookPath: string; webhookSecret: string };

async function control(env: ExtpayEnvironment, path: string, body: unknown = {}): Promise<{ status: number; json: any }> {
  const res = await fetch(`${sandbox.url}/extpay/${env}/sandbox/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, json: await res.json() };
}

/** Each test gets its own company (and key) in the environment, with its own webhook path. */
async function company(env: ExtpayEnvironment = 'sandbox', settings: Record<string, unknown> = {}, permissions?: string[]): Promise<Company> {
  const n = ++seq;
  const companyId = `biz_${env.slice(0, 4)}${n}x${Date.now()}`;
  const apiKey = `key_${env}_${n}_${Date.now()}`;
  const hookPath = `/hooks/${env}/${n}`;
  const webhookSecret = env === 'sandbox' ? WS_SECRET : WHSEC_SECRET;
  const r = await control(env, 'companies', {
    company_id: companyId,
    title: `Shop ${n}`,
    api_keys: [{ key: apiKey, ...(permissions ? { permissions } : {}) }],
    webhook_url: receiverUrl + hookPath,
    webhook_secret: webhookSecret,
    webhook_retry_delays_ms: [0, 50, 100],
    ...settings,
  });
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  return { baseUrl: sandboxApiBaseUrl(sandbox.url, env), apiKey, companyId, environment: env, webhookSecret, hookPath };
}

const ONE_TIME: ExtpayPlanInput = { planType: 'one_time', initialPrice: 4999 };

async function checkout(conn: ExtpayConnection, plan: ExtpayPlanInput = ONE_TIME, extra: { redirectUrl?: string | null; metadata?: Record<string, string> } = {}): Promise<ExtpayCheckout> {
  const r = await extpayAdapter.createCheckout(conn, {
    currency: 'USD',
    plan,
    metadata: extra.metadata ?? { order_number: `ord_${++seq}`, attempt_id: `att_${seq}` },
    redirectUrl: extra.redirectUrl === undefined ? 'https://shop.test/checkout/return?order=ord_1' : extra.redirectUrl,
    title: 'Order',
    product: { externalIdentifier: 'checkstand-demo', title: 'Demo shop' },
    idempotencyKey: `att_${++seq}`,
  });
  if (r.kind !== 'created') throw new Error(JSON.stringify(r));
  return r.checkout;
}

/** Posts the hosted page's form, as a browser would; answers without following the redirect. */
async function purchase(co: ExtpayCheckout, card: string, opts: { email?: string; setupFutureUsage?: boolean; returnUrl?: string; embed?: boolean } = {}): Promise<Response> {
  const u = new URL(co.purchaseUrl);
  const form = new URLSearchParams({ session: u.searchParams.get('session')!, email: opts.email ?? 'ada@example.com', name: 'Ada Lovelace', card_number: card });
  if (opts.setupFutureUsage) form.set('setup_future_usage', 'off_session');
  if (opts.returnUrl) form.set('return_url', opts.returnUrl);
  if (opts.embed) form.set('embed', '1');
  return fetch(`${u.origin}${u.pathname}`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form });
}

/** Buys through the hosted page and answers the receipt id from the redirect. */
async function buy(co: ExtpayCheckout, card: string = EXTPAY_CARDS.paid, opts: { setupFutureUsage?: boolean; email?: string } = {}): Promise<string> {
  const res = await purchase(co, card, opts);
  expect(res.status).toBe(303);
  const back = new URL(res.headers.get('location')!);
  expect(back.searchParams.get('status')).toBe('success');
  return back.searchParams.get('payment_id')!;
}

function bodyOf(d: Delivery): { id: string; type: string; data: { id: string } & Record<string, unknown> } {
  return JSON.parse(d.raw.toString('utf8'));
}

/** The first 2xx delivery at the company's webhook path of that type about that object, verified with its secret. */
async function delivered(conn: Company, type: string, subjectId: string): Promise<ExtpayWebhookEvent> {
  const d = await waitFor(
    () => deliveries.find((x) => x.path === conn.hookPath && x.answered < 300 && bodyOf(x).type === type && bodyOf(x).data.id === subjectId),
    `${type} for ${subjectId}`,
  );
  const v = verifyExtpayWebhook(d.raw, d.headers, conn.webhookSecret);
  if (!v.ok) throw new Error(`${type} did not verify: ${v.reason}`);
  return v.event;
}

function typesFor(conn: Company, subjectId: string): string[] {
  return deliveries.filter((d) => d.path === conn.hookPath && d.answered < 300 && bodyOf(d).data.id === subjectId).map((d) => bodyOf(d).type);
}

async function ledger(conn: Company): Promise<any> {
  const res = await fetch(`${sandbox.url}/extpay/${conn.environment}/sandbox/ledger?company_id=${conn.companyId}`);
  expect(res.status).toBe(200);
  return res.json();
}

function expectKind<K extends ExtpayPaymentOutcome['kind']>(r: ExtpayPaymentResult, kind: K): Extract<ExtpayPaymentOutcome, { kind: K }> {
  expect(r.kind, JSON.stringify(r)).toBe(kind);
  return r as Extract<ExtpayPaymentOutcome, { kind: K }>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('extpay adapter against the sandbox: checkouts and purchases', () => {
  it('is listed by the health check; its test cards are Luhn-valid', async () => {
    expect(await (await fetch(`${sandbox.url}/sandbox/health`)).json()).toMatchObject({ ok: true, providers: expect.arrayContaining(['extpay']) });
    for (const [name, pan] of Object.entries(EXTPAY_CARDS)) expect(luhnValid(pan), name).toBe(true);
  });

  it('creates a checkout configuration with an inline one-time plan, with Whop’s shape on the wire', async () => {
    const conn = await company();
    const co = await checkout(conn, ONE_TIME, { metadata: { order_number: 'ord_wire', attempt_id: 'att_wire' } });
    expect(co.id).toMatch(/^ch_/);
    expect(co.plan).toEqual({ id: expect.stringMatching(/^plan_/), planType: 'one_time', currency: 'USD', initialPrice: 4999, renewalPrice: 0, billingPeriodDays: null, trialPeriodDays: null });
    expect(co.purchaseUrl).toBe(`${sandbox.url}/extpay/sandbox/checkout/${co.plan.id}?session=${co.id}`);
    expect(co.metadata).toEqual({ order_number: 'ord_wire', attempt_id: 'att_wire' });
    expect(co.companyId).toBe(conn.companyId);
    expect(embedCheckout(conn, co, { email: 'ada@example.com', name: 'Ada' })).toMatchObject({ session_id: co.id, plan_id: co.plan.id, environment: 'sandbox', purchase_url: co.purchaseUrl });

    const raw = await fetch(`${conn.baseUrl}/checkout_configurations/${co.id}`, { headers: { authorization: `Bearer ${conn.apiKey}` } });
    expect(raw.status).toBe(200);
    const wire = (await raw.json()) as Record<string, any>;
    expect(Object.keys(wire).sort()).toEqual(['affiliate_code', 'company_id', 'currency', 'id', 'metadata', 'mode', 'plan', 'purchase_url', 'redirect_url'].sort());
    expect(wire.plan).toMatchObject({ id: co.plan.id, plan_type: 'one_time', currency: 'usd', initial_price: 49.99, renewal_price: 0, billing_period: null, trial_period_days: null, visibility: 'hidden' });
    const plan = await fetch(`${conn.baseUrl}/plans/${co.plan.id}`, { headers: { authorization: `Bearer ${conn.apiKey}` } });
    expect(await plan.json()).toMatchObject({ id: co.plan.id, initial_price: 49.99, product: { title: 'Demo shop' } });

    const html = await (await fetch(co.purchaseUrl)).text();
    expect(html).toContain('49.99 USD');
    expect(html).toContain(`name="session" value="${co.id}"`);
    expect(html).toContain('name="card_number"');
  });

  it('creates a trial + renewal plan; a purchase charges the initial price, starts a trialing membership and saves the card', async () => {
    const conn = await company();
    const co = await checkout(conn, { planType: 'renewal', initialPrice: 100, renewalPrice: 2999, billingPeriodDays: 30, trialPeriodDays: 14 });
    expect(co.plan).toMatchObject({ planType: 'renewal', initialPrice: 100, renewalPrice: 2999, billingPeriodDays: 30, trialPeriodDays: 14 });
    const page = await (await fetch(co.purchaseUrl)).text();
    expect(page).toContain('1.00 USD');
    expect(page).toContain('every 30 days after a 14-day trial');

    const started = Date.now();
    const paymentId = await buy(co, EXTPAY_CARDS.paid, { setupFutureUsage: true });
    const paid = expectKind(await extpayAdapter.retrievePayment(conn, paymentId), 'approved');
    expect(paid.payment).toMatchObject({ amount: 100, currency: 'USD', billingReason: 'subscription_create', planId: co.plan.id, membershipStatus: 'trialing', cardLast4: '4242', email: 'ada@example.com', metadata: co.metadata });
    const membershipId = paid.payment.membershipId!;
    expect(membershipId).toMatch(/^mem_/);

    const m = await extpayAdapter.retrieveMembership(conn, membershipId);
    if (m.kind !== 'membership') throw new Error(JSON.stringify(m));
    expect(m.membership).toMatchObject({ status: 'trialing', cancelAtPeriodEnd: false, paused: false, planId: co.plan.id, metadata: co.metadata });
    const trialEnd = Date.parse(m.membership.renewalPeriodEnd!);
    expect(trialEnd - started).toBeGreaterThan(14 * 86_400_000 - 60_000);
    expect(trialEnd - started).toBeLessThan(14 * 86_400_000 + 60_000);

    expect(await delivered(conn, 'payment.created', paymentId)).toMatchObject({ type: 'payment.created', payment: { status: 'pending' } });
    expect(await delivered(conn, 'membership.activated', membershipId)).toMatchObject({ membership: { status: 'trialing' } });
    expect(await delivered(conn, 'payment.succeeded', paymentId)).toMatchObject({ payment: { status: 'paid', membershipId, metadata: co.metadata } });
    const setup = await waitFor(() => deliveries.find((d) => d.path === conn.hookPath && bodyOf(d).type === 'setup_intent.succeeded'), 'setup_intent.succeeded');
    const si = verifyExtpayWebhook(setup.raw, setup.headers, WS_SECRET);
    if (!si.ok || si.event.type !== 'setup_intent.succeeded') throw new Error('setup intent did not verify');
    expect(si.event.setupIntent).toMatchObject({ status: 'succeeded', memberId: paid.payment.memberId, checkoutConfigurationId: co.id, paymentMethodId: expect.stringMatching(/^payt_/) });
  });

  it('signs production deliveries with a whsec_ secret the standard way, and they verify', async () => {
    const conn = await company('production');
    const co = await checkout(conn);
    const paymentId = await buy(co);
    const e = await delivered(conn, 'payment.succeeded', paymentId);
    expect(e).toMatchObject({ type: 'payment.succeeded', companyId: conn.companyId, payment: { id: paymentId, amount: 4999 } });
    expect(co.purchaseUrl).toContain('/extpay/production/checkout/');
  });

  it('holds a pending payment until the settle control endpoint, then sends payment.succeeded; a held payment can be voided', async () => {
    const conn = await company();
    const co = await checkout(conn);
    const paymentId = await buy(co, EXTPAY_CARDS.pending);
    expectKind(await extpayAdapter.retrievePayment(conn, paymentId), 'pending');
    await delivered(conn, 'payment.created', paymentId);
    await sleep(100);
    expect(typesFor(conn, paymentId)).toEqual(['payment.created']);

    const settle = await control('sandbox', `payments/${paymentId}/settle`, {});
    expect(settle.status).toBe(200);
    expect(await delivered(conn, 'payment.succeeded', paymentId)).toMatchObject({ payment: { status: 'paid' } });
    expectKind(await extpayAdapter.retrievePayment(conn, paymentId), 'approved');
    expect((await control('sandbox', `payments/${paymentId}/settle`, {})).status).toBe(409);

    const held = await buy(await checkout(conn), EXTPAY_CARDS.pending);
    expect(await extpayAdapter.voidPayment(conn, { paymentId: held, idempotencyKey: `void_${held}` })).toMatchObject({ kind: 'voided', payment: { status: 'void' } });
    expect(await extpayAdapter.retrievePayment(conn, held)).toMatchObject({ kind: 'declined', code: 'voided' });
    expect(await extpayAdapter.voidPayment(conn, { paymentId })).toMatchObject({ kind: 'error', code: 'invalid_request', providerCode: 'payment_not_voidable', httpStatus: 400 });
    const failedHeld = await buy(await checkout(conn), EXTPAY_CARDS.pending);
    await control('sandbox', `payments/${failedHeld}/settle`, { result: 'failed' });
    expect(await delivered(conn, 'payment.failed', failedHeld)).toMatchObject({ payment: { status: 'open', substatus: 'failed' } });
  });

  it('declines the failed card: payment.created then payment.failed, and the page says why', async () => {
    const conn = await company();
    const co = await checkout(conn);
    const res = await purchase(co, EXTPAY_CARDS.failed);
    expect(res.status).toBe(402);
    const html = await res.text();
    expect(html).toContain('Your card was declined.');
    const paymentId = /data-payment-id="(pay_[^"]+)"/.exec(html)![1]!;
    expect(await extpayAdapter.retrievePayment(conn, paymentId)).toMatchObject({ kind: 'declined', code: 'failed', message: 'Your card was declined.' });
    await delivered(conn, 'payment.created', paymentId);
    const failed = await delivered(conn, 'payment.failed', paymentId);
    if (failed.type !== 'payment.failed') throw new Error('unexpected');
    expect(paymentOutcome(failed.payment)).toMatchObject({ kind: 'declined' });
  });

  it('denies the fraud card before the card network: only payment.created is sent, carrying the denial', async () => {
    const conn = await company();
    const co = await checkout(conn);
    const res = await purchase(co, EXTPAY_CARDS.fraudDenied);
    expect(res.status).toBe(402);
    const paymentId = /data-payment-id="(pay_[^"]+)"/.exec(await res.text())![1]!;
    const created = await delivered(conn, 'payment.created', paymentId);
    if (created.type !== 'payment.created') throw new Error('unexpected');
    expect(paymentOutcome(created.payment)).toMatchObject({ kind: 'declined', message: expect.stringMatching(/fraud/) });
    await sleep(200);
    expect(typesFor(conn, paymentId)).toEqual(['payment.created']);
    expect((await ledger(conn)).events.filter((e: { subject: string }) => e.subject === paymentId).map((e: { type: string }) => e.type)).toEqual(['payment.created']);
    expect(await extpayAdapter.retrievePayment(conn, paymentId)).toMatchObject({ kind: 'declined', code: 'failed' });
  });

  it('refuses a bad card number or email on the page without creating anything', async () => {
    const conn = await company();
    const co = await checkout(conn);
    const bad = await purchase(co, '4242424242424241');
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('Your card number is incorrect.');
    expect((await purchase(co, EXTPAY_CARDS.paid, { email: 'not-an-email' })).status).toBe(400);
    expect((await ledger(conn)).payments).toEqual([]);
    expect((await fetch(`${sandbox.url}/extpay/sandbox/checkout/plan_nope`)).status).toBe(404);
    expect((await fetch(`${sandbox.url}/extpay/staging/checkout/${co.plan.id}`)).status).toBe(404);
  });

  it('finds an order’s payments by plan, and pages through the list', async () => {
    const conn = await company();
    const a = await checkout(conn);
    const b = await checkout(conn);
    const pa = await buy(a);
    const pb1 = await buy(b);
    const pb2 = await buy(b, EXTPAY_CARDS.pending);
    const byPlan = await extpayAdapter.listPayments(conn, { planIds: [b.plan.id] });
    if (byPlan.kind !== 'list') throw new Error(JSON.stringify(byPlan));
    expect(byPlan.payments.map((p) => p.id)).toEqual([pb2, pb1]);
    const page1 = await extpayAdapter.listPayments(conn, { first: 2 });
    if (page1.kind !== 'list') throw new Error(JSON.stringify(page1));
    expect(page1).toMatchObject({ hasNextPage: true, endCursor: pb1 });
    const page2 = await extpayAdapter.listPayments(conn, { first: 2, after: page1.endCursor });
    if (page2.kind !== 'list') throw new Error(JSON.stringify(page2));
    expect(page2.payments.map((p) => p.id)).toEqual([pa]);
    expect(page2.hasNextPage).toBe(false);
    const paidOnly = await extpayAdapter.listPayments(conn, { statuses: ['paid'] });
    expect(paidOnly.kind === 'list' && paidOnly.payments.map((p) => p.id).sort()).toEqual([pa, pb1].sort());
  });
});

describe('extpay adapter against the sandbox: memberships, refunds, disputes, upsells', () => {
  it('cancels, uncancels, pauses and resumes a membership, renews it and fails a renewal, with the events', async () => {
    const conn = await company();
    const co = await checkout(conn, { planType: 'renewal', initialPrice: 0, renewalPrice: 2999, billingPeriodDays: 30 });
    const paymentId = await buy(co, EXTPAY_CARDS.paid, { setupFutureUsage: true });
    const first = expectKind(await extpayAdapter.retrievePayment(conn, paymentId), 'approved');
    expect(first.payment.amount).toBe(2999);
    const id = first.payment.membershipId!;
    await delivered(conn, 'membership.activated', id);

    const cancel = await extpayAdapter.cancelMembership(conn, id);
    expect(cancel).toMatchObject({ kind: 'membership', membership: { status: 'active', cancelAtPeriodEnd: true } });
    if (cancel.kind === 'membership') expect(membershipState(cancel.membership)).toBe('cancel_at_period_end');
    expect(await delivered(conn, 'membership.cancel_at_period_end_changed', id)).toMatchObject({ membership: { cancelAtPeriodEnd: true } });

    expect(await extpayAdapter.uncancelMembership(conn, id)).toMatchObject({ kind: 'membership', membership: { cancelAtPeriodEnd: false } });
    await waitFor(() => (typesFor(conn, id).filter((t) => t === 'membership.cancel_at_period_end_changed').length === 2 ? true : undefined), 'second cancel_at_period_end_changed');
    expect(await extpayAdapter.uncancelMembership(conn, id)).toMatchObject({ kind: 'error', code: 'invalid_request', providerCode: 'membership_not_uncancelable' });

    const paused = await extpayAdapter.pauseMembership(conn, id);
    expect(paused).toMatchObject({ kind: 'membership', membership: { paused: true } });
    if (paused.kind === 'membership') expect(membershipState(paused.membership)).toBe('paused');
    expect((await control('sandbox', `memberships/${id}/renew`)).status).toBe(409);
    expect(await extpayAdapter.resumeMembership(conn, id)).toMatchObject({ kind: 'membership', membership: { paused: false, status: 'active' } });

    const before = await extpayAdapter.retrieveMembership(conn, id);
    const renewed = await control('sandbox', `memberships/${id}/renew`);
    expect(renewed.status).toBe(200);
    const renewalId = renewed.json.payment.id as string;
    const ok = await delivered(conn, 'payment.succeeded', renewalId);
    expect(ok).toMatchObject({ payment: { billingReason: 'subscription_cycle', amount: 2999, membershipId: id, membershipStatus: 'active', metadata: co.metadata } });
    const after = await extpayAdapter.retrieveMembership(conn, id);
    if (before.kind !== 'membership' || after.kind !== 'membership') throw new Error('no membership');
    expect(Date.parse(after.membership.renewalPeriodEnd!) - Date.parse(before.membership.renewalPeriodEnd!)).toBe(30 * 86_400_000);

    const failed = await control('sandbox', `memberships/${id}/fail_renewal`);
    const failedId = failed.json.payment.id as string;
    expect(await delivered(conn, 'payment.failed', failedId)).toMatchObject({ payment: { billingReason: 'subscription_cycle', membershipStatus: 'past_due' } });
    expect(await extpayAdapter.retrieveMembership(conn, id)).toMatchObject({ membership: { status: 'past_due' } });
    await control('sandbox', `memberships/${id}/renew`);
    expect(await extpayAdapter.retrieveMembership(conn, id)).toMatchObject({ membership: { status: 'active' } });

    // A cancel scheduled at period end ends the membership when the period does.
    await extpayAdapter.cancelMembership(conn, id, 'at_period_end');
    const ended = await control('sandbox', `memberships/${id}/renew`);
    expect(ended.json).toMatchObject({ payment: null, membership: { status: 'canceled' } });
    expect(await delivered(conn, 'membership.deactivated', id)).toMatchObject({ membership: { status: 'canceled' } });
    expect(await extpayAdapter.uncancelMembership(conn, id)).toMatchObject({ kind: 'error', providerCode: 'membership_not_uncancelable' });
    expect(await extpayAdapter.cancelMembership(conn, id)).toMatchObject({ kind: 'error', providerCode: 'membership_not_cancelable' });
  });

  it('cancels at once, and ends a membership after a final failed renewal', async () => {
    const conn = await company();
    const plan: ExtpayPlanInput = { planType: 'renewal', initialPrice: 0, renewalPrice: 1500, billingPeriodDays: 7 };
    const a = expectKind(await extpayAdapter.retrievePayment(conn, await buy(await checkout(conn, plan))), 'approved').payment.membershipId!;
    expect(await extpayAdapter.cancelMembership(conn, a, 'immediate')).toMatchObject({ membership: { status: 'canceled', cancelAtPeriodEnd: false } });
    await delivered(conn, 'membership.deactivated', a);

    const b = expectKind(await extpayAdapter.retrievePayment(conn, await buy(await checkout(conn, plan))), 'approved').payment.membershipId!;
    const final = await control('sandbox', `memberships/${b}/fail_renewal`, { final: true });
    expect(final.json.membership.status).toBe('canceled');
    await delivered(conn, 'payment.failed', final.json.payment.id);
    await delivered(conn, 'membership.deactivated', b);
  });

  it('refunds in part and in full (settling at once), and refuses more than is left', async () => {
    const conn = await company();
    const paymentId = await buy(await checkout(conn, { planType: 'one_time', initialPrice: 5000 }));
    const part = await extpayAdapter.refundPayment(conn, { paymentId, amount: 2000, idempotencyKey: 'rf_1' });
    expect(part).toMatchObject({ kind: 'refund_requested', paymentId, requestedAmount: 2000, payment: { refundedAmount: 2000, substatus: 'partially_refunded' } });
    const created = await waitFor(() => deliveries.find((d) => d.path === conn.hookPath && bodyOf(d).type === 'refund.created'), 'refund.created');
    const v = verifyExtpayWebhook(created.raw, created.headers, WS_SECRET);
    expect(v).toMatchObject({ ok: true, event: { type: 'refund.created', refund: { status: 'succeeded', amount: 2000, currency: 'USD', paymentId } } });
    if (v.ok && v.event.type === 'refund.created') expect(await extpayAdapter.retrieveRefund(conn, v.event.refund.id)).toMatchObject({ kind: 'refund', refund: { amount: 2000, status: 'succeeded' } });

    expect(await extpayAdapter.refundPayment(conn, { paymentId, amount: 3001 })).toMatchObject({ kind: 'error', code: 'invalid_request', providerCode: 'amount_too_large' });
    expect(await extpayAdapter.refundPayment(conn, { paymentId })).toMatchObject({ kind: 'refund_requested', requestedAmount: null, payment: { refundedAmount: 5000, substatus: 'refunded', refundable: false } });
    expect(await extpayAdapter.refundPayment(conn, { paymentId, amount: 1 })).toMatchObject({ kind: 'error', providerCode: 'charge_already_refunded' });
    expect(await extpayAdapter.refundPayment(conn, { paymentId: 'pay_nope' })).toMatchObject({ kind: 'error', code: 'not_found' });
    const fail = await buy(await checkout(conn), EXTPAY_CARDS.pending);
    expect(await extpayAdapter.refundPayment(conn, { paymentId: fail })).toMatchObject({ kind: 'error', providerCode: 'payment_not_refundable' });
  });

  it('settles a refund for less than requested: refund.created carries the settled amount, a later change refund.updated', async () => {
    const conn = await company('sandbox', { refunds: 'manual' });
    const paymentId = await buy(await checkout(conn, { planType: 'one_time', initialPrice: 5000 }));
    const r = await extpayAdapter.refundPayment(conn, { paymentId, amount: 3000, idempotencyKey: 'rf_manual' });
    expect(r).toMatchObject({ kind: 'refund_requested', requestedAmount: 3000, payment: { refundedAmount: 0 } });
    // Still pending: what is left excludes it.
    expect(await extpayAdapter.refundPayment(conn, { paymentId, amount: 2001 })).toMatchObject({ kind: 'error', providerCode: 'amount_too_large' });
    const refund = (await ledger(conn)).refunds[0];
    expect(refund).toMatchObject({ status: 'pending', amount: 30, requested_amount: 30 });
    await sleep(100);
    expect(deliveries.some((d) => d.path === conn.hookPath && bodyOf(d).type.startsWith('refund.'))).toBe(false);

    expect((await control('sandbox', `refunds/${refund.id}/settle`, { amount: 30.01 })).status).toBe(400);
    const settled = await control('sandbox', `refunds/${refund.id}/settle`, { amount: 25 });
    expect(settled.json).toMatchObject({ status: 'succeeded', amount: 25 });
    expect(await delivered(conn, 'refund.created', refund.id)).toMatchObject({ refund: { status: 'succeeded', amount: 2500, paymentId } });
    expect(await extpayAdapter.retrievePayment(conn, paymentId)).toMatchObject({ payment: { refundedAmount: 2500, substatus: 'partially_refunded' } });

    await control('sandbox', `refunds/${refund.id}/settle`, { status: 'failed' });
    expect(await delivered(conn, 'refund.updated', refund.id)).toMatchObject({ refund: { status: 'failed' } });
    expect(await extpayAdapter.retrievePayment(conn, paymentId)).toMatchObject({ payment: { refundedAmount: 0 } });
  });

  it('opens and updates a dispute with status and reason; only past the early warning is it a chargeback', async () => {
    const conn = await company();
    const paymentId = await buy(await checkout(conn));
    const opened = await control('sandbox', `payments/${paymentId}/disputes`, { reason: 'product_not_received' });
    expect(opened.status).toBe(200);
    const disputeId = opened.json.id as string;
    const created = await delivered(conn, 'dispute.created', disputeId);
    if (created.type !== 'dispute.created') throw new Error('unexpected');
    expect(created.dispute).toMatchObject({ status: 'warning_needs_response', reason: 'product_not_received', amount: 4999, paymentId });
    expect(disputeIsChargeback(created.dispute)).toBe(false);
    expect(await extpayAdapter.retrievePayment(conn, paymentId)).toMatchObject({ kind: 'approved', payment: { substatus: 'dispute_warning', disputeAlertedAt: expect.any(String) } });

    await control('sandbox', `disputes/${disputeId}`, { status: 'needs_response', reason: 'fraudulent' });
    const updated = await delivered(conn, 'dispute.updated', disputeId);
    if (updated.type !== 'dispute.updated') throw new Error('unexpected');
    expect(updated.dispute).toMatchObject({ status: 'needs_response', reason: 'fraudulent' });
    expect(disputeIsChargeback(updated.dispute)).toBe(true);
    const wire = await fetch(`${conn.baseUrl}/disputes/${disputeId}`, { headers: { authorization: `Bearer ${conn.apiKey}` } });
    expect(await wire.json()).toMatchObject({ id: disputeId, status: 'needs_response', amount: 49.99, payment: { id: paymentId } });
    expect((await control('sandbox', `disputes/${disputeId}`, { status: 'maybe' })).status).toBe(400);
  });

  it('charges the saved payment method off-session for an upsell: pending, then payment.succeeded; a declining card fails at once', async () => {
    const conn = await company('sandbox', { charge_settle_ms: 50 });
    const first = expectKind(await extpayAdapter.retrievePayment(conn, await buy(await checkout(conn), EXTPAY_CARDS.paid, { setupFutureUsage: true })), 'approved').payment;
    const methods = await extpayAdapter.listPaymentMethods(conn, first.memberId!);
    if (methods.kind !== 'list') throw new Error(JSON.stringify(methods));
    expect(methods.methods).toEqual([{ id: expect.stringMatching(/^payt_/), type: 'card', cardBrand: 'visa', cardLast4: '4242', createdAt: expect.any(String) }]);
    const charge = { memberId: first.memberId!, paymentMethodId: methods.methods[0]!.id, currency: 'USD', amount: 1999, title: 'Upsell', idempotencyKey: 'ups_1' };
    const pending = expectKind(await extpayAdapter.chargeSavedPaymentMethod(conn, charge), 'pending');
    expect(pending.payment).toMatchObject({ amount: 1999, memberId: first.memberId, billingReason: 'one_time' });
    expect(await delivered(conn, 'payment.succeeded', pending.paymentId)).toMatchObject({ payment: { status: 'paid', amount: 1999 } });
    expectKind(await extpayAdapter.retrievePayment(conn, pending.paymentId), 'approved');
    // The same Idempotency-Key replays the first answer: no second charge.
    const replay = await extpayAdapter.chargeSavedPaymentMethod(conn, charge);
    expect(replay).toMatchObject({ kind: 'pending', paymentId: pending.paymentId });
    expect(await extpayAdapter.chargeSavedPaymentMethod(conn, { ...charge, amount: 2999 })).toMatchObject({ kind: 'error', code: 'idempotency_conflict', safeToRetry: false });

    const decliner = expectKind(await extpayAdapter.retrievePayment(conn, await buy(await checkout(conn), EXTPAY_CARDS.offSessionDecline, { setupFutureUsage: true, email: 'grace@example.com' })), 'approved').payment;
    const dm = await extpayAdapter.listPaymentMethods(conn, decliner.memberId!);
    if (dm.kind !== 'list') throw new Error('no methods');
    const declined = await extpayAdapter.chargeSavedPaymentMethod(conn, { ...charge, idempotencyKey: 'ups_2', memberId: decliner.memberId!, paymentMethodId: dm.methods[0]!.id });
    expect(declined).toMatchObject({ kind: 'declined', code: 'failed', message: expect.stringMatching(/declined/) });
    if (declined.kind === 'declined') await delivered(conn, 'payment.failed', declined.paymentId);

    // Without setup_future_usage nothing is saved; another member's method cannot be used.
    const other = expectKind(await extpayAdapter.retrievePayment(conn, await buy(await checkout(conn), EXTPAY_CARDS.paid, { email: 'alan@example.com' })), 'approved').payment;
    expect(await extpayAdapter.listPaymentMethods(conn, other.memberId!)).toEqual({ kind: 'list', methods: [] });
    expect(await extpayAdapter.chargeSavedPaymentMethod(conn, { ...charge, idempotencyKey: 'ups_3', memberId: other.memberId! })).toMatchObject({ kind: 'error', code: 'invalid_request', providerCode: 'resource_missing' });
  });
});

describe('extpay lookups by attempt id (crash recovery)', () => {
  /** A company with a member who saved a card at checkout: what an upsell charge needs. */
  async function savedCard(conn: Company, card: string = EXTPAY_CARDS.paid, email = 'ada@example.com') {
    const first = expectKind(await extpayAdapter.retrievePayment(conn, await buy(await checkout(conn), card, { setupFutureUsage: true, email })), 'approved').payment;
    const methods = await extpayAdapter.listPaymentMethods(conn, first.memberId!);
    if (methods.kind !== 'list') throw new Error(JSON.stringify(methods));
    return { first, memberId: first.memberId!, paymentMethodId: methods.methods[0]!.id };
  }
  const aMinuteBefore = (iso: string) => new Date(Date.parse(iso) - 60_000).toISOString();

  it('finds a saved-method charge by our attempt id (its plan’s internal notes), as it is now; not_found for an attempt never sent', async () => {
    const conn = await company('sandbox', { charge_settle_ms: 30 });
    const { memberId, paymentMethodId } = await savedCard(conn);
    const startedAt = new Date().toISOString();
    const attemptId = `att_ups_${++seq}`;
    const pending = expectKind(await extpayAdapter.chargeSavedPaymentMethod(conn, { memberId, paymentMethodId, currency: 'USD', amount: 1999, title: 'Upsell', idempotencyKey: attemptId }), 'pending');
    await delivered(conn, 'payment.succeeded', pending.paymentId);
    const q = { attemptId, memberId, createdAfter: aMinuteBefore(startedAt) };
    const found = await extpayAdapter.findPaymentByAttempt(conn, q);
    expect(found).toMatchObject({ kind: 'found', payment: { id: pending.paymentId, amount: 1999, memberId, status: 'paid' }, outcome: { kind: 'approved', paymentId: pending.paymentId }, duplicates: [] });
    // Without the member or the time bound it is found all the same, just by reading more.
    expect(await extpayAdapter.findPaymentByAttempt(conn, { attemptId })).toMatchObject({ kind: 'found', payment: { id: pending.paymentId } });

    expect(await extpayAdapter.findPaymentByAttempt(conn, { ...q, attemptId: 'att_never_sent' })).toEqual({ kind: 'not_found' });
    expect(await extpayAdapter.findPaymentByAttempt(conn, { ...q, memberId: 'mber_someone_else' })).toEqual({ kind: 'not_found' });
    expect(await extpayAdapter.findPaymentByAttempt(conn, { ...q, createdAfter: new Date(Date.now() + 60_000).toISOString() })).toEqual({ kind: 'not_found' });
    expect(await extpayAdapter.findPaymentByAttempt(await company(), { attemptId })).toEqual({ kind: 'not_found' });

    // On the wire: the charge's own plan carries the mark, out of customers' sight.
    const plan = await fetch(`${conn.baseUrl}/plans/${found.kind === 'found' ? found.payment.planId : ''}`, { headers: { authorization: `Bearer ${conn.apiKey}` } });
    expect(await plan.json()).toMatchObject({ internal_notes: `checkstand:attempt_id=${attemptId}`, visibility: 'hidden' });
  });

  it('finds a declined charge as declined, and a checkout’s payment by the attempt id in its metadata', async () => {
    const conn = await company();
    const { memberId, paymentMethodId } = await savedCard(conn, EXTPAY_CARDS.offSessionDecline);
    const attemptId = `att_dec_${++seq}`;
    expect(await extpayAdapter.chargeSavedPaymentMethod(conn, { memberId, paymentMethodId, currency: 'USD', amount: 500, idempotencyKey: attemptId })).toMatchObject({ kind: 'declined' });
    expect(await extpayAdapter.findPaymentByAttempt(conn, { attemptId, memberId })).toMatchObject({ kind: 'found', payment: { status: 'open', amount: 500 }, outcome: { kind: 'declined', code: 'failed' } });

    const co = await checkout(conn, ONE_TIME, { metadata: { order_number: 'ord_meta', attempt_id: 'att_checkout_1' } });
    const paymentId = await buy(co, EXTPAY_CARDS.paid, { email: 'grace@example.com' });
    expect(await extpayAdapter.findPaymentByAttempt(conn, { attemptId: 'att_checkout_1' })).toMatchObject({ kind: 'found', payment: { id: paymentId, metadata: { attempt_id: 'att_checkout_1' } }, outcome: { kind: 'approved' } });
  });

  it('replays a charge with the same Idempotency-Key without a second charge, so the lookup finds exactly one', async () => {
    const conn = await company();
    const { memberId, paymentMethodId } = await savedCard(conn);
    const charge = { memberId, paymentMethodId, currency: 'USD', amount: 2500, title: 'Upsell', idempotencyKey: `att_replay_${++seq}` };
    const a = await extpayAdapter.chargeSavedPaymentMethod(conn, charge);
    const b = await extpayAdapter.chargeSavedPaymentMethod(conn, charge);
    expect(a.kind).not.toBe('error');
    expect(b).toEqual(a);
    const charges = (await ledger(conn)).payments.filter((p: { billing_reason: string; total: number }) => p.total === 25);
    expect(charges).toHaveLength(1);
    expect(await extpayAdapter.findPaymentByAttempt(conn, { attemptId: charge.idempotencyKey, memberId })).toMatchObject({ kind: 'found', duplicates: [] });
  });

  it('finds a refund by the time its attempt began, and a replayed refund request makes no second refund', async () => {
    const conn = await company('sandbox', { refunds: 'manual' });
    const paymentId = await buy(await checkout(conn, { planType: 'one_time', initialPrice: 5000 }));
    const startedAt = aMinuteBefore(new Date().toISOString());
    expect(await extpayAdapter.findRefundByAttempt(conn, { paymentId, createdAfter: startedAt })).toEqual({ kind: 'not_found' });
    const req = { paymentId, amount: 2000, idempotencyKey: `rf_att_${++seq}` };
    const first = await extpayAdapter.refundPayment(conn, req);
    expect(first).toMatchObject({ kind: 'refund_requested', requestedAmount: 2000 });
    expect(await extpayAdapter.refundPayment(conn, req)).toEqual(first);
    expect((await ledger(conn)).refunds).toHaveLength(1);

    const found = await extpayAdapter.findRefundByAttempt(conn, { paymentId, createdAfter: startedAt });
    expect(found).toMatchObject({ kind: 'found', refund: { id: expect.stringMatching(/^rfnd_/), status: 'pending', amount: 2000, currency: 'USD', paymentId }, later: [] });
    // A refund created before the attempt began is not ours.
    expect(await extpayAdapter.findRefundByAttempt(conn, { paymentId, createdAfter: new Date(Date.now() + 60_000).toISOString() })).toEqual({ kind: 'not_found' });
    const second = await extpayAdapter.refundPayment(conn, { paymentId, amount: 1000, idempotencyKey: `rf_att_${++seq}` });
    expect(second.kind).toBe('refund_requested');
    const both = await extpayAdapter.findRefundByAttempt(conn, { paymentId, createdAfter: startedAt });
    expect(both).toMatchObject({ kind: 'found', refund: { amount: 2000 }, later: [{ amount: 1000 }] });

    const wire = await fetch(`${conn.baseUrl}/refunds?payment_id=${paymentId}&first=1`, { headers: { authorization: `Bearer ${conn.apiKey}` } });
    expect(wire.status).toBe(200);
    expect(await wire.json()).toMatchObject({ data: [{ amount: 10, status: 'pending', payment: { id: paymentId } }], page_info: { has_next_page: true } });
    expect(await extpayAdapter.findRefundByAttempt(conn, { paymentId: 'pay_nope', createdAfter: startedAt })).toMatchObject({ kind: 'error', code: 'not_found' });
    expect((await fetch(`${conn.baseUrl}/refunds`, { headers: { authorization: `Bearer ${conn.apiKey}` } })).status).toBe(400);
  });

  it('filters the payment list by created_after, and refuses an unreadable one', async () => {
    const conn = await company();
    await buy(await checkout(conn));
    const auth = { authorization: `Bearer ${conn.apiKey}` };
    const list = async (createdAfter: string) => (await (await fetch(`${conn.baseUrl}/payments?company_id=${conn.companyId}&created_after=${encodeURIComponent(createdAfter)}`, { headers: auth })).json()).data;
    expect(await list(new Date(Date.now() - 60_000).toISOString())).toHaveLength(1);
    expect(await list(String(Math.floor(Date.now() / 1000) + 60))).toHaveLength(0);
    expect((await fetch(`${conn.baseUrl}/payments?company_id=${conn.companyId}&created_after=yesterday`, { headers: auth })).status).toBe(400);
  });
});

describe('extpay adapter against the sandbox: environments, keys, signatures, delivery', () => {
  it('keeps sandbox and production apart: a key or company id of one fails on the other', async () => {
    const sb = await company('sandbox');
    const prod = await company('production');
    // The sandbox key against the production API: unknown there.
    const crossed: ExtpayConnection = { ...sb, baseUrl: sandboxApiBaseUrl(sandbox.url, 'production') };
    expect(await extpayAdapter.testConnection(crossed)).toMatchObject({ kind: 'failed_to_authenticate' });
    expect(await extpayAdapter.createCheckout(crossed, { currency: 'USD', plan: ONE_TIME })).toMatchObject({ kind: 'error', code: 'authentication_failed', httpStatus: 401, providerCode: 'invalid_api_key' });
    // A production key with the sandbox company id, and a real key with a made-up company.
    expect(await extpayAdapter.testConnection({ ...prod, companyId: sb.companyId })).toMatchObject({ kind: 'failed_to_authenticate', message: expect.stringMatching(/not authorized/) });
    expect(await extpayAdapter.createCheckout({ ...prod, companyId: sb.companyId }, { currency: 'USD', plan: ONE_TIME })).toMatchObject({ kind: 'error', code: 'forbidden', httpStatus: 403 });
    expect(await extpayAdapter.testConnection({ ...sb, apiKey: 'key_wrong_123456' })).toMatchObject({ kind: 'failed_to_authenticate' });
    expect(await extpayAdapter.testConnection({ ...sb, companyId: 'acme' })).toMatchObject({ kind: 'failed_to_authenticate', message: expect.stringMatching(/biz_/) });
    expect(await extpayAdapter.testConnection(sb)).toEqual({ kind: 'connected' });
    expect(await extpayAdapter.testConnection(prod)).toEqual({ kind: 'connected' });

    // Objects of one environment do not exist in the other.
    const co = await checkout(sb);
    const paymentId = await buy(co);
    expect(await extpayAdapter.retrievePayment(prod, paymentId)).toMatchObject({ kind: 'error', code: 'not_found', httpStatus: 404 });
    expect((await fetch(`${sandbox.url}/extpay/production/checkout/${co.plan.id}?session=${co.id}`)).status).toBe(404);
    // The same key string may exist in both environments, for different companies.
    const twinKey = `key_twin_${Date.now()}`;
    const twinCompany = `biz_twin${Date.now()}`;
    expect((await control('sandbox', 'companies', { company_id: twinCompany, api_keys: [{ key: twinKey }] })).status).toBe(200);
    expect((await control('production', 'companies', { company_id: `${twinCompany}p`, api_keys: [{ key: twinKey }] })).status).toBe(200);
    expect((await control('sandbox', 'companies', { company_id: `${twinCompany}q`, api_keys: [{ key: twinKey }] })).status).toBe(409);
  });

  it('reports a key without the checkout permissions as connected but unable to create checkouts', async () => {
    const readOnly = await company('sandbox', {}, ['payment:basic:read', 'member:basic:read', 'checkout_configuration:basic:read']);
    const test = await extpayAdapter.testConnection(readOnly);
    expect(test).toMatchObject({ kind: 'cannot_create_checkouts', message: expect.stringMatching(/checkout_configuration:create/) });
    expect(await extpayAdapter.createCheckout(readOnly, { currency: 'USD', plan: ONE_TIME })).toMatchObject({ kind: 'error', code: 'forbidden', providerCode: 'missing_permissions', safeToRetry: false });
    expect(await extpayAdapter.listPayments(readOnly)).toMatchObject({ kind: 'list', payments: [] });
    // A working key that cannot even read the company's payments cannot confirm a checkout: named, with the checkout permissions it also lacks (issue 18).
    const none = await company('sandbox', {}, ['plan:basic:read']);
    expect(await extpayAdapter.testConnection(none)).toMatchObject({ kind: 'cannot_create_checkouts', exact: true, missing: expect.arrayContaining(['payment:basic:read', 'checkout_configuration:create']) });
    const noAuth = await fetch(`${readOnly.baseUrl}/payments?company_id=${readOnly.companyId}`);
    expect(noAuth.status).toBe(401);
    expect(await noAuth.json()).toMatchObject({ error: { type: 'authentication_error', code: 'missing_api_key' } });
  });

  it('rejects a real delivery that was tampered with, checked with the wrong secret, 6 minutes old or ahead, or missing a header', async () => {
    const conn = await company();
    const paymentId = await buy(await checkout(conn));
    await delivered(conn, 'payment.succeeded', paymentId);
    const d = deliveries.find((x) => x.path === conn.hookPath && bodyOf(x).type === 'payment.succeeded' && bodyOf(x).data.id === paymentId)!;
    expect(d.headers['content-type']).toBe('application/json');
    expect(d.headers['webhook-id']).toMatch(/^msg_/);
    expect(d.headers['webhook-timestamp']).toMatch(/^\d+$/);
    expect(d.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(verifyExtpayWebhook(d.raw, d.headers, WS_SECRET).ok).toBe(true);

    const tampered = Buffer.from(d.raw.toString().replace('"paid"', '"void"'));
    expect(tampered.equals(d.raw)).toBe(false);
    expect(verifyExtpayWebhook(tampered, d.headers, WS_SECRET)).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(verifyExtpayWebhook(d.raw, d.headers, 'ws_wrong')).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(verifyExtpayWebhook(d.raw, d.headers, WHSEC_SECRET)).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(verifyExtpayWebhook(d.raw, d.headers, WS_SECRET, { now: Date.now() + 6 * 60_000 })).toEqual({ ok: false, reason: 'timestamp_out_of_range' });
    expect(verifyExtpayWebhook(d.raw, d.headers, WS_SECRET, { now: Date.now() - 6 * 60_000 })).toEqual({ ok: false, reason: 'timestamp_out_of_range' });
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      const { [name]: _gone, ...rest } = d.headers;
      expect(verifyExtpayWebhook(d.raw, rest, WS_SECRET), name).toEqual({ ok: false, reason: 'missing_headers' });
    }
    expect(verifyExtpayWebhook(d.raw, d.headers, null)).toEqual({ ok: false, reason: 'no_secret' });
  });

  it('retries a delivery until a 2xx with the same id and body, and redelivers on request', async () => {
    const conn = await company('sandbox', { webhook_retry_delays_ms: [0, 30, 60, 90], webhook_events: ['payment.succeeded'] });
    failures.set(conn.hookPath, 2);
    const paymentId = await buy(await checkout(conn));
    await delivered(conn, 'payment.succeeded', paymentId);
    const attempts = deliveries.filter((d) => d.path === conn.hookPath);
    // Only the subscribed kind is sent.
    expect(attempts.map((d) => bodyOf(d).type)).toEqual(['payment.succeeded', 'payment.succeeded', 'payment.succeeded']);
    expect(attempts.map((d) => d.answered)).toEqual([500, 500, 204]);
    expect(new Set(attempts.map((d) => d.headers['webhook-id'])).size).toBe(1);
    expect(new Set(attempts.map((d) => d.raw.toString())).size).toBe(1);
    for (const d of attempts) expect(verifyExtpayWebhook(d.raw, d.headers, WS_SECRET).ok).toBe(true);

    const event = (await ledger(conn)).events[0];
    expect(event).toMatchObject({ type: 'payment.succeeded', subject: paymentId, delivered: true });
    expect(event.attempts.map((a: { status: number }) => a.status)).toEqual([500, 500, 204]);
    const again = await control('sandbox', `events/${event.id}/redeliver`);
    expect(again).toMatchObject({ status: 200, json: { attempt: { status: 204 } } });
    expect(deliveries.filter((d) => d.path === conn.hookPath)).toHaveLength(4);
    expect((await control('sandbox', 'events/msg_nope/redeliver')).status).toBe(404);
  });

  it('gives up after the last retry', async () => {
    const conn = await company('sandbox', { webhook_retry_delays_ms: [0, 20], webhook_events: ['payment.succeeded'] });
    failures.set(conn.hookPath, 10);
    const paymentId = await buy(await checkout(conn));
    await waitFor(() => (deliveries.filter((d) => d.path === conn.hookPath).length === 2 ? true : undefined), 'two attempts');
    await sleep(150);
    expect(deliveries.filter((d) => d.path === conn.hookPath)).toHaveLength(2);
    expect((await ledger(conn)).events[0]).toMatchObject({ subject: paymentId, delivered: false });
    failures.delete(conn.hookPath);
  });

  it('serves the embed loader, and the embedded page hands back the plan id and receipt id', async () => {
    const js = await fetch(`${sandbox.url}/extpay/embed.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/javascript/);
    const src = await js.text();
    for (const attr of ['whopCheckoutPlanId', 'whopCheckoutSession', 'whopCheckoutEnvironment', 'whopCheckoutSetupFutureUsage', 'whopCheckoutReturnUrl', 'whopCheckoutPrefillEmail', 'whopCheckoutOnComplete'])
      expect(src, attr).toContain(attr);
    expect(src).toContain("'/checkout/'");

    const conn = await company();
    const co = await checkout(conn);
    const framed = await fetch(`${sandbox.url}/extpay/sandbox/checkout/${co.plan.id}?session=${co.id}&embed=1&setup_future_usage=off_session&email=ada%40example.com&return_url=${encodeURIComponent('https://shop.test/r')}`);
    const framedHtml = await framed.text();
    expect(framedHtml).toContain('name="embed" value="1"');
    expect(framedHtml).toContain('name="setup_future_usage" value="off_session"');
    expect(framedHtml).toContain('value="ada@example.com"');

    const done = await purchase(co, EXTPAY_CARDS.paid, { embed: true, setupFutureUsage: true });
    expect(done.status).toBe(200);
    const result = JSON.parse(/<script type="application\/json" id="extpay-result">(.*?)<\/script>/s.exec(await done.text())![1]!);
    expect(result).toMatchObject({ source: 'extpay-sandbox', type: 'complete', plan_id: co.plan.id, receipt_id: expect.stringMatching(/^pay_/), status: 'paid' });
    // Capture would confirm exactly this receipt.
    expect(await extpayAdapter.retrievePayment(conn, result.receipt_id)).toMatchObject({ kind: 'approved', payment: { planId: co.plan.id, metadata: co.metadata } });

    const declined = await purchase(await checkout(conn), EXTPAY_CARDS.failed, { embed: true });
    expect(declined.status).toBe(402);
    expect(JSON.parse(/id="extpay-result">(.*?)<\/script>/s.exec(await declined.text())![1]!)).toMatchObject({ type: 'payment_error', message: 'Your card was declined.' });
  });

  it('answers errors in one shape, and refuses malformed requests without echoing values', async () => {
    const conn = await company();
    const post = (body: string) => fetch(`${conn.baseUrl}/checkout_configurations`, { method: 'POST', headers: { authorization: `Bearer ${conn.apiKey}`, 'content-type': 'application/json' }, body });
    const bad = async (body: unknown, raw?: string) => {
      const r = await post(raw ?? JSON.stringify(body));
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(await r.json()).toMatchObject({ error: { type: 'invalid_request_error', message: expect.any(String) } });
    };
    const plan = { company_id: conn.companyId, currency: 'usd', initial_price: 10 };
    await bad({ plan: { ...plan, surprise: true } });
    await bad({ plan: { ...plan, initial_price: 10.001 } });
    await bad({ plan: { ...plan, plan_type: 'renewal' } });
    await bad({ plan: { ...plan, currency: 'dollars' } });
    await bad({ plan, plan_id: 'plan_x' });
    await bad({ plan, redirect_url: 'javascript:alert(1)' });
    await bad(null, '{"plan": ');
    expect((await fetch(`${conn.baseUrl}/nothing`)).status).toBe(404);
    expect((await fetch(`${sandbox.url}/extpay/staging/api/v1/payments/pay_1`, { headers: { authorization: `Bearer ${conn.apiKey}` } })).status).toBe(404);
    expect(await extpayAdapter.retrieveMembership(conn, 'mem_nope')).toMatchObject({ kind: 'error', code: 'not_found' });
  });
});

describe('extpay adapter transport failures', () => {
  let odd: http.Server;
  let oddUrl: string;

  beforeAll(async () => {
    odd = http.createServer((req, res) => {
      req.resume();
      if (req.url?.startsWith('/redirect/')) res.writeHead(307, { location: `${sandbox.url}/extpay/sandbox/api/v1${req.url.slice('/redirect'.length)}` }).end();
      else if (req.url?.startsWith('/html/')) res.writeHead(200, { 'content-type': 'text/html' }).end('<html>Down for maintenance</html>');
      else if (req.url?.startsWith('/hang/')) setTimeout(() => res.writeHead(200).end('{}'), 1_000);
      else if (req.url?.startsWith('/limited/')) res.writeHead(429, { 'content-type': 'application/json' }).end('{"error":{"type":"rate_limit","message":"slow down"}}');
      else res.writeHead(502, { 'content-type': 'application/json' }).end('{"error":{"type":"api_error","message":"bad gateway"}}');
    });
    await new Promise<void>((resolve) => odd.listen(0, '127.0.0.1', resolve));
    oddUrl = `http://127.0.0.1:${(odd.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    odd?.closeAllConnections();
    await new Promise((resolve) => odd?.close(resolve));
  });

  const at = (baseUrl: string): ExtpayConnection => ({ baseUrl, apiKey: 'key_transport_1234', companyId: 'biz_transport', environment: 'sandbox' });

  it('reads redirects, 5xx, 429, non-JSON and unreachable providers as errors; never follows a redirect', async () => {
    expect(await extpayAdapter.createCheckout(at(`${oddUrl}/redirect`), { currency: 'USD', plan: ONE_TIME })).toMatchObject({ kind: 'error', code: 'bad_response', httpStatus: 307 });
    expect(await extpayAdapter.retrievePayment(at(`${oddUrl}/502`), 'pay_1')).toMatchObject({ kind: 'error', code: 'provider_error', providerCode: 'api_error', httpStatus: 502, safeToRetry: true });
    expect(await extpayAdapter.retrievePayment(at(`${oddUrl}/limited`), 'pay_1')).toMatchObject({ kind: 'error', code: 'rate_limited', safeToRetry: true });
    expect(await extpayAdapter.retrievePayment(at(`${oddUrl}/html`), 'pay_1')).toMatchObject({ kind: 'error', code: 'bad_response', safeToRetry: true });
    expect(await extpayAdapter.testConnection(at(`${oddUrl}/502`))).toMatchObject({ kind: 'error', code: 'provider_error' });
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    expect(await extpayAdapter.retrievePayment(at(`http://127.0.0.1:${port}`), 'pay_1')).toMatchObject({ kind: 'error', code: 'network_error', safeToRetry: true });
    await expect(extpayAdapter.retrievePayment({ ...at(oddUrl), apiKey: '' }, 'pay_1')).rejects.toThrow(/API key/);
  });

  it('times out without throwing', async () => {
    const impatient = new ExtpayAdapter({ timeoutMs: 100 });
    const started = Date.now();
    const r = await impatient.retrievePayment(at(`${oddUrl}/hang`), 'pay_1');
    expect(Date.now() - started).toBeLessThan(900);
    expect(r).toMatchObject({ kind: 'error', code: 'timeout', safeToRetry: true });
  });
});
