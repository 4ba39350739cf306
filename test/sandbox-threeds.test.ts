import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { luhnValid } from '../src/app/luhn.ts';
import type { GatewayAccount } from '../src/providers/card-gateway.ts';
import { ThreeDsAdapter, threeDsAdapter } from '../src/providers/threeds/adapter.ts';
import { threeDsProvider } from '../src/providers/threeds/provider.ts';
import type { ThreeDsOutcome, ThreeDsPaymentRequest, ThreeDsPaymentResult } from '../src/providers/threeds/types.ts';
import { verifyThreeDsWebhook } from '../src/providers/threeds/webhook.ts';
import { THREEDS_CARDS } from '../src/sandbox/threeds-gateway.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { type Delivery, type RecordingReceiver, startRecordingReceiver, waitFor } from './support/receiver.ts';

// The real adapter against the sandbox over a real socket, and a local receiver for the gateway's
// webhooks; no database involved.
let sandbox: { url: string; close(): Promise<void> };
let base: string;
let receiverUrl: string;
let seq = 0;

let deliveries: Delivery[];
let failures: Map<string, number>;
let recorder: RecordingReceiver;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  base = `${sandbox.url}/3ds`;
  recorder = await startRecordingReceiver();
  ({ deliveries, failures, url: receiverUrl } = recorder);
});
afterAll(async () => {
  await sandbox?.close();
  await recorder?.close();
});

const SECRET = 'whsec_sandbox_3ds_test';

/** Each test gets its own merchant account (every test key is one), with its own webhook path. */
async function gateway(settings: Record<string, unknown> = {}): Promise<GatewayAccount & { hookPath: string }> {
  const apiKey = `sk_test_${++seq}_${Date.now()}`;
  const hookPath = `/hooks/${seq}`;
  const res = await fetch(`${base}/sandbox/accounts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ api_key: apiKey, webhook_url: receiverUrl + hookPath, webhook_secret: SECRET, webhook_retry_delays_ms: [0, 50, 100], ...settings }),
  });
  expect(res.status).toBe(200);
  return { baseUrl: base, credentials: { api_key: apiKey, webhook_secret: SECRET }, testMode: true, hookPath };
}

function pay(card: string, extra: Partial<ThreeDsPaymentRequest> = {}): ThreeDsPaymentRequest {
  return {
    amount: 4999,
    currency: 'USD',
    attemptId: `att_${++seq}`,
    card: { number: card, exp: '12/30', cvv: '123' },
    customer: { email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace' },
    riskSessionId: `rs_${seq}`,
    returnUrl: 'https://shop.test/checkout/return?order=ord_1',
    cancelUrl: 'https://shop.test/checkout/cancel?order=ord_1',
    savePaymentMethod: false,
    ...extra,
  };
}

function expectKind<K extends ThreeDsOutcome['kind']>(r: ThreeDsPaymentResult, kind: K): Extract<ThreeDsOutcome, { kind: K }> {
  expect(r.kind, JSON.stringify(r)).toBe(kind);
  return r as Extract<ThreeDsOutcome, { kind: K }>;
}

/** Follows the hosted page's button without a browser; answers where the browser would go. */
async function complete(url: string, result: 'success' | 'fail' | 'abandon'): Promise<URL> {
  const res = await fetch(`${url}/complete?result=${result}`, { redirect: 'manual' });
  expect(res.status).toBe(302);
  return new URL(res.headers.get('location')!);
}

function eventOf(d: Delivery): { id: string; type: string; data: { payment: { id: string; status: string } } } {
  return JSON.parse(d.raw.toString('utf8'));
}

/** The first delivery that reached `hookPath` with 2xx for this payment and event type. */
function delivered(account: { hookPath: string }, paymentId: string, type: string): Promise<Delivery> {
  return waitFor(
    () => deliveries.find((d) => d.path === account.hookPath && d.answered < 300 && eventOf(d).type === type && eventOf(d).data.payment.id === paymentId),
    `${type} for ${paymentId}`,
  );
}

async function ledger(account: GatewayAccount) {
  const res = await fetch(`${base}/sandbox/ledger?api_key=${encodeURIComponent(account.credentials.api_key!)}`);
  expect(res.status).toBe(200);
  return (await res.json()) as {
    payments: { id: string; status: string; amount: number; amount_refunded: number; reference: string; three_d_secure: string | null; decline_code?: string }[];
    refunds: { id: string; payment_id: string; amount: number }[];
    events: { id: string; type: string; payment_id: string; delivered: boolean; attempts: { status: number | null }[] }[];
    summary: Record<string, number>;
  };
}

describe('3DS gateway adapter against the sandbox', () => {
  it('is listed by the health check; its test cards are Luhn-valid', async () => {
    expect(await (await fetch(`${sandbox.url}/sandbox/health`)).json()).toMatchObject({ ok: true, providers: expect.arrayContaining(['threeds']) });
    for (const [name, pan] of Object.entries(THREEDS_CARDS)) expect(luhnValid(pan), name).toBe(true);
  });

  it('approves the frictionless card at once and signals PAYMENT_SUCCEEDED', async () => {
    const gw = await gateway();
    const req = pay(THREEDS_CARDS.frictionless);
    const r = expectKind(await threeDsAdapter.createPayment(gw, req), 'approved');
    expect(r.paymentId).toMatch(/^pay_/);
    expect(r.paymentMethod).toBeUndefined();
    expect(r.payment).toMatchObject({ status: 'succeeded', amount: 4999, currency: 'USD', reference: req.attemptId, card: { brand: 'visa', last4: '3055', expMonth: 12, expYear: 2030 } });
    expect(JSON.stringify(r)).not.toContain(THREEDS_CARDS.frictionless);
    const d = await delivered(gw, r.paymentId, 'PAYMENT_SUCCEEDED');
    expect(verifyThreeDsWebhook(d.raw, d.headers, SECRET)).toMatchObject({ ok: true, event: { type: 'PAYMENT_SUCCEEDED', payment: { id: r.paymentId } } });
    const l = await ledger(gw);
    expect(l.payments).toHaveLength(1);
    expect(l.payments[0]).toMatchObject({ status: 'succeeded', three_d_secure: 'frictionless' });
  });

  it('challenges, then authenticates on the hosted page: return_url, succeeded on retrieve, a signed PAYMENT_SUCCEEDED', async () => {
    const gw = await gateway();
    const req = pay(THREEDS_CARDS.challenge, { savePaymentMethod: true });
    const r = expectKind(await threeDsAdapter.createPayment(gw, req), 'redirect');
    expect(r.url).toBe(`${base}/authenticate/${r.paymentId}`);
    expect(r.payment.status).toBe('requires_action');

    const pageRes = await fetch(r.url);
    expect(pageRes.status).toBe(200);
    expect(pageRes.headers.get('content-type')).toMatch(/text\/html/);
    const html = await pageRes.text();
    for (const result of ['success', 'fail', 'abandon']) expect(html).toContain(`/3ds/authenticate/${r.paymentId}/complete?result=${result}`);
    expect(html).toContain('49.99 USD');
    expect(html).not.toContain(THREEDS_CARDS.challenge);

    // Nothing is decided before the customer answers.
    expectKind(await threeDsAdapter.retrievePayment(gw, r.paymentId), 'redirect');

    const back = await complete(r.url, 'success');
    expect(`${back.origin}${back.pathname}`).toBe('https://shop.test/checkout/return');
    expect(back.searchParams.get('payment_id')).toBe(r.paymentId);
    expect(back.searchParams.get('order')).toBe('ord_1');

    const done = expectKind(await threeDsAdapter.retrievePayment(gw, r.paymentId), 'approved');
    expect(done.paymentMethod).toMatch(/^pm_/);
    expect(done.payment.reference).toBe(req.attemptId);

    const d = await delivered(gw, r.paymentId, 'PAYMENT_SUCCEEDED');
    expect(d.headers['content-type']).toBe('application/json');
    expect(d.headers['x-gateway-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    const v = verifyThreeDsWebhook(d.raw, d.headers, gw.credentials.webhook_secret);
    if (!v.ok) throw new Error(v.reason);
    expect(v.event.id).toMatch(/^evt_/);
    expect(v.event.type).toBe('PAYMENT_SUCCEEDED');
    expect(v.event.payment).toMatchObject({ id: r.paymentId, status: 'succeeded', reference: req.attemptId, paymentMethod: done.paymentMethod });

    // Answering the page again changes nothing and sends the browser back to the shop.
    const again = await complete(r.url, 'fail');
    expect(again.pathname).toBe('/checkout/return');
    expectKind(await threeDsAdapter.retrievePayment(gw, r.paymentId), 'approved');
  });

  it('sends a failed authentication to cancel_url, declined, with PAYMENT_FAILED', async () => {
    const gw = await gateway();
    const r = expectKind(await threeDsAdapter.createPayment(gw, pay(THREEDS_CARDS.challenge)), 'redirect');
    const back = await complete(r.url, 'fail');
    expect(`${back.origin}${back.pathname}`).toBe('https://shop.test/checkout/cancel');
    expect(back.searchParams.get('payment_id')).toBe(r.paymentId);
    const d = expectKind(await threeDsAdapter.retrievePayment(gw, r.paymentId), 'declined');
    expect(d).toMatchObject({ code: 'authentication_failed', retryable: false });
    const hook = await delivered(gw, r.paymentId, 'PAYMENT_FAILED');
    expect(verifyThreeDsWebhook(hook.raw, hook.headers, SECRET)).toMatchObject({ ok: true, event: { type: 'PAYMENT_FAILED', payment: { status: 'declined', declineCode: 'authentication_failed' } } });
  });

  it('sends an abandoned authentication to cancel_url, leaves it requires_action, and lets the merchant cancel it', async () => {
    const gw = await gateway();
    const r = expectKind(await threeDsAdapter.createPayment(gw, pay(THREEDS_CARDS.challenge)), 'redirect');
    const back = await complete(r.url, 'abandon');
    expect(`${back.origin}${back.pathname}`).toBe('https://shop.test/checkout/cancel');
    expectKind(await threeDsAdapter.retrievePayment(gw, r.paymentId), 'redirect');
    expect((await ledger(gw)).payments[0]).toMatchObject({ status: 'requires_action', three_d_secure: 'abandoned' });

    // The customer landed on cancel_url: the payment core treats it as a decline and cancels, so a late
    // click on the page cannot complete it.
    const c = await threeDsAdapter.cancel(gw, { paymentId: r.paymentId, attemptId: `void_${r.paymentId}` });
    expect(c).toMatchObject({ kind: 'canceled', paymentId: r.paymentId });
    expect(await threeDsAdapter.retrievePayment(gw, r.paymentId)).toMatchObject({ kind: 'declined', code: 'canceled' });
    expect((await complete(r.url, 'success')).pathname).toBe('/checkout/cancel');
    expect((await ledger(gw)).events).toEqual([]);
  });

  it('holds a payment under review as processing until the control endpoint settles it', async () => {
    const gw = await gateway({ review_ms: null });
    const r = expectKind(await threeDsAdapter.createPayment(gw, pay(THREEDS_CARDS.challengeThenReview, { savePaymentMethod: true })), 'redirect');
    expect((await complete(r.url, 'success')).pathname).toBe('/checkout/return');
    const pending = expectKind(await threeDsAdapter.retrievePayment(gw, r.paymentId), 'pending');
    expect(pending.payment.paymentMethod).toBeNull();
    const review = await delivered(gw, r.paymentId, 'PAYMENT_UNDER_REVIEW');
    expect(verifyThreeDsWebhook(review.raw, review.headers, SECRET)).toMatchObject({ ok: true, event: { type: 'PAYMENT_UNDER_REVIEW', payment: { status: 'processing' } } });

    const resolve = (id: string, result: string) =>
      fetch(`${base}/sandbox/payments/${id}/resolve`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ result }) });
    expect((await resolve(r.paymentId, 'succeeded')).status).toBe(200);
    expect(expectKind(await threeDsAdapter.retrievePayment(gw, r.paymentId), 'approved').paymentMethod).toMatch(/^pm_/);
    await delivered(gw, r.paymentId, 'PAYMENT_SUCCEEDED');
    expect((await resolve(r.paymentId, 'declined')).status).toBe(409);

    const second = expectKind(await threeDsAdapter.createPayment(gw, pay(THREEDS_CARDS.challengeThenReview)), 'redirect');
    await complete(second.url, 'success');
    expect((await resolve(second.paymentId, 'declined')).status).toBe(200);
    expect(await threeDsAdapter.retrievePayment(gw, second.paymentId)).toMatchObject({ kind: 'declined', code: 'review_declined' });
    await delivered(gw, second.paymentId, 'PAYMENT_FAILED');
    expect((await resolve('pay_nope', 'succeeded')).status).toBe(404);
  });

  it("settles a review by itself after the account's review_ms", async () => {
    const gw = await gateway({ review_ms: 150 });
    const r = expectKind(await threeDsAdapter.createPayment(gw, pay(THREEDS_CARDS.challengeThenReview)), 'redirect');
    await complete(r.url, 'success');
    expectKind(await threeDsAdapter.retrievePayment(gw, r.paymentId), 'pending');
    await delivered(gw, r.paymentId, 'PAYMENT_SUCCEEDED');
    expectKind(await threeDsAdapter.retrievePayment(gw, r.paymentId), 'approved');
  });

  it('declines with the texts the spec shows: missing names or email, missing 3DS URLs, missing risk session', async () => {
    const gw = await gateway();
    const details = 'billing email, first name and last name must be present';
    const cases: [Partial<ThreeDsPaymentRequest>, string, string | RegExp][] = [
      [{ customer: { email: 'ada@example.com', first_name: 'Ada', last_name: null } }, 'missing_customer_details', details],
      [{ customer: { email: 'ada@example.com', first_name: '', last_name: 'Lovelace' } }, 'missing_customer_details', details],
      [{ customer: { email: 'not-an-email', first_name: 'Ada', last_name: 'Lovelace' } }, 'missing_customer_details', details],
      [{ customer: null }, 'missing_customer_details', details],
      [{ returnUrl: null }, 'authentication_required', '3D Secure is required: return_url and cancel_url must be provided'],
      [{ cancelUrl: undefined }, 'authentication_required', '3D Secure is required: return_url and cancel_url must be provided'],
      [{ riskSessionId: null }, 'risk_session_missing', /risk session/],
    ];
    for (const [extra, code, message] of cases) {
      const d = expectKind(await threeDsAdapter.createPayment(gw, pay(THREEDS_CARDS.frictionless, extra)), 'declined');
      expect(d.code, JSON.stringify(extra)).toBe(code);
      expect(d.message).toMatch(message);
      expect(d.retryable).toBe(false);
      await delivered(gw, d.paymentId, 'PAYMENT_FAILED');
    }
    expect(await threeDsAdapter.createPayment(gw, pay(THREEDS_CARDS.decline))).toMatchObject({ kind: 'declined', code: 'do_not_honor', retryable: true });
    expect(await threeDsAdapter.createPayment(gw, pay(THREEDS_CARDS.insufficientFunds))).toMatchObject({ kind: 'declined', code: 'insufficient_funds', retryable: true });
    expect(await threeDsAdapter.createPayment(gw, pay('4000000000003221'))).toMatchObject({ kind: 'declined', code: 'incorrect_number' });
    expect(await threeDsAdapter.createPayment(gw, pay(THREEDS_CARDS.frictionless, { card: { number: THREEDS_CARDS.frictionless, exp: '01/20', cvv: '123' } }))).toMatchObject({
      kind: 'declined',
      code: 'expired_card',
    });
    // Any other Luhn-valid number: 3DS is mandatory, so it is challenged.
    expectKind(await threeDsAdapter.createPayment(gw, pay('4242424242424242')), 'redirect');
    const l = await ledger(gw);
    expect(l.summary).toMatchObject({ payments: 12, declined: 11, requires_action: 1, succeeded: 0, charged_minor: 0 });
  });

  it('charges the saved card merchant-initiated with no redirect, chained to the authenticated payment', async () => {
    const gw = await gateway();
    const first = expectKind(await threeDsAdapter.createPayment(gw, pay(THREEDS_CARDS.challenge, { savePaymentMethod: true })), 'redirect');
    await complete(first.url, 'success');
    const pm = expectKind(await threeDsAdapter.retrievePayment(gw, first.paymentId), 'approved').paymentMethod!;
    expect(pm).toMatch(/^pm_/);

    // A rebill: no customer, no risk session, no URLs, no card.
    const rebill = { amount: 1999, currency: 'USD', paymentMethod: pm, savePaymentMethod: false, merchantInitiated: { originalPaymentId: first.paymentId } };
    const upsell = expectKind(await threeDsAdapter.createPayment(gw, { ...rebill, attemptId: `att_${++seq}` }), 'approved');
    expect(upsell.payment).toMatchObject({ merchantInitiated: true, originalPaymentId: first.paymentId, paymentMethod: pm, amount: 1999, card: { last4: '3220' } });
    await delivered(gw, upsell.paymentId, 'PAYMENT_SUCCEEDED');

    const wrongChain = await threeDsAdapter.createPayment(gw, { ...rebill, attemptId: `att_${++seq}`, merchantInitiated: { originalPaymentId: upsell.paymentId } });
    expect(wrongChain).toMatchObject({ kind: 'error', code: 'invalid_request', gatewayCode: 'parameter_invalid', httpStatus: 400, safeToRetry: false });
    const unknown = await threeDsAdapter.createPayment(gw, { ...rebill, attemptId: `att_${++seq}`, paymentMethod: 'pm_unknown' });
    expect(unknown).toMatchObject({ kind: 'error', code: 'invalid_request', gatewayCode: 'resource_missing' });
    // Another account cannot use the card.
    const other = await gateway();
    expect(await threeDsAdapter.createPayment(other, { ...rebill, attemptId: `att_${++seq}` })).toMatchObject({ kind: 'error', gatewayCode: 'resource_missing' });

    // The customer paying again with the saved card is customer-initiated: 3DS again.
    const { card: _card, ...withoutCard } = pay(THREEDS_CARDS.challenge);
    expectKind(await threeDsAdapter.createPayment(gw, { ...withoutCard, paymentMethod: pm }), 'redirect');
  });

  it.each([
    ['rebillSoftDecline', 'insufficient_funds', false],
    ['rebillHardDecline', 'stop_recurring', true],
  ] as const)('succeeds for the %s card when the customer pays, then declines its merchant-initiated charge (%s, hard %s)', async (name, code, hard) => {
    const gw = await gateway();
    const provider = threeDsProvider(threeDsAdapter);
    const first = expectKind(await threeDsAdapter.createPayment(gw, pay(THREEDS_CARDS[name], { savePaymentMethod: true })), 'approved');
    expect(first.paymentMethod).toMatch(/^pm_/);
    const rebill = await provider.charge(gw, {
      attemptId: `att_${++seq}`,
      orderId: 'ord_2',
      amount: 2900,
      currency: 'USD',
      saved: { vaultRef: first.paymentMethod!, originalRef: first.paymentId },
      saveCard: false,
      payer: { email: null, first_name: null, last_name: null },
    });
    expect(rebill).toMatchObject({ kind: 'declined', code, hard, retryable: false });

    // A new card saved by the customer (a new payment method) is charged normally.
    const replaced = expectKind(await threeDsAdapter.createPayment(gw, pay(THREEDS_CARDS.frictionless, { savePaymentMethod: true })), 'approved');
    const again = await provider.charge(gw, {
      attemptId: `att_${++seq}`,
      orderId: 'ord_3',
      amount: 2900,
      currency: 'USD',
      saved: { vaultRef: replaced.paymentMethod!, originalRef: replaced.paymentId },
      saveCard: false,
      payer: { email: null, first_name: null, last_name: null },
    });
    expect(again).toMatchObject({ kind: 'approved' });
  });

  it('takes a zero-amount setup (3DS, card saved, nothing charged), refuses zero otherwise, and never refunds a setup', async () => {
    const gw = await gateway();
    const setup = expectKind(await threeDsAdapter.createPayment(gw, pay(THREEDS_CARDS.challenge, { amount: 0, savePaymentMethod: true })), 'redirect');
    await complete(setup.url, 'success');
    const saved = expectKind(await threeDsAdapter.retrievePayment(gw, setup.paymentId), 'approved');
    expect(saved.payment).toMatchObject({ amount: 0, paymentMethod: expect.stringMatching(/^pm_/) });
    const raw = (body: Record<string, unknown>) =>
      fetch(`${base}/v1/payments`, { method: 'POST', headers: { authorization: `Bearer ${gw.credentials.api_key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const zeroSale = await raw({ amount: 0, currency: 'USD', reference: 'z', card: { number: THREEDS_CARDS.frictionless, exp_month: 12, exp_year: 2030 }, save_payment_method: false });
    expect(zeroSale.status).toBe(400);
    expect(await threeDsAdapter.refund(gw, { paymentId: setup.paymentId, attemptId: `rf_${++seq}` })).toMatchObject({ kind: 'error', gatewayCode: 'payment_not_refundable' });
    // Rebills chain to the setup.
    const rebill = await threeDsAdapter.createPayment(gw, { amount: 2900, currency: 'USD', attemptId: `att_${++seq}`, paymentMethod: saved.paymentMethod!, savePaymentMethod: false, merchantInitiated: { originalPaymentId: setup.paymentId } });
    expect(rebill).toMatchObject({ kind: 'approved' });
  });

  it('refunds in parts up to the payment, refuses more, and cancels (voids) what is not refunded', async () => {
    const gw = await gateway();
    const s = expectKind(await threeDsAdapter.createPayment(gw, pay(THREEDS_CARDS.frictionless, { amount: 5000 })), 'approved');
    const part = await threeDsAdapter.refund(gw, { paymentId: s.paymentId, amount: 2000, attemptId: 'rf_1' });
    expect(part).toMatchObject({ kind: 'refunded', paymentId: s.paymentId, amount: 2000, currency: 'USD', refundId: expect.stringMatching(/^re_/) });
    const over = await threeDsAdapter.refund(gw, { paymentId: s.paymentId, amount: 3001, attemptId: 'rf_2' });
    expect(over).toMatchObject({ kind: 'error', code: 'invalid_request', gatewayCode: 'amount_too_large', safeToRetry: false });
    expect(await threeDsAdapter.refund(gw, { paymentId: s.paymentId, attemptId: 'rf_3' })).toMatchObject({ kind: 'refunded', amount: 3000 });
    expect(await threeDsAdapter.refund(gw, { paymentId: s.paymentId, amount: 1, attemptId: 'rf_4' })).toMatchObject({ kind: 'error', gatewayCode: 'charge_already_refunded' });
    expect(await threeDsAdapter.cancel(gw, { paymentId: s.paymentId, attemptId: 'v_1' })).toMatchObject({ kind: 'error', gatewayCode: 'payment_not_cancelable' });
    expect((await threeDsAdapter.retrievePayment(gw, s.paymentId)) as ThreeDsOutcome).toMatchObject({ kind: 'approved', payment: { amountRefunded: 5000 } });

    const v = expectKind(await threeDsAdapter.createPayment(gw, pay(THREEDS_CARDS.frictionless, { amount: 700 })), 'approved');
    expect(await threeDsAdapter.cancel(gw, { paymentId: v.paymentId, attemptId: 'v_2' })).toMatchObject({ kind: 'canceled', payment: { status: 'canceled' } });
    expect(await threeDsAdapter.retrievePayment(gw, v.paymentId)).toMatchObject({ kind: 'declined', code: 'canceled' });
    expect(await threeDsAdapter.refund(gw, { paymentId: v.paymentId, attemptId: 'rf_5' })).toMatchObject({ kind: 'error', gatewayCode: 'payment_not_refundable' });
    expect(await threeDsAdapter.cancel(gw, { paymentId: v.paymentId, attemptId: 'v_3' })).toMatchObject({ kind: 'error', gatewayCode: 'payment_not_cancelable' });
    expect(await threeDsAdapter.refund(gw, { paymentId: 'pay_nope', attemptId: 'rf_6' })).toMatchObject({ kind: 'error', gatewayCode: 'resource_missing' });

    const l = await ledger(gw);
    expect(l.refunds.map((r) => r.amount)).toEqual([2000, 3000]);
    expect(l.summary).toMatchObject({ payments: 2, succeeded: 1, canceled: 1, charged_minor: 5000, refunded_minor: 5000 });
  });

  it('replays the first answer for a repeated Idempotency-Key and refuses the key on another request', async () => {
    const gw = await gateway();
    const req = pay(THREEDS_CARDS.challenge);
    const first = expectKind(await threeDsAdapter.createPayment(gw, req), 'redirect');
    await complete(first.url, 'success');
    // The same attempt again: the first answer (requires_action) comes back, no second payment.
    const replay = expectKind(await threeDsAdapter.createPayment(gw, req), 'redirect');
    expect(replay.paymentId).toBe(first.paymentId);
    expect((await ledger(gw)).payments).toHaveLength(1);

    const conflict = await threeDsAdapter.createPayment(gw, { ...req, amount: 1 });
    expect(conflict).toMatchObject({ kind: 'error', code: 'idempotency_conflict', gatewayCode: 'idempotency_key_reused', safeToRetry: false });

    const s = expectKind(await threeDsAdapter.createPayment(gw, pay(THREEDS_CARDS.frictionless)), 'approved');
    const r1 = await threeDsAdapter.refund(gw, { paymentId: s.paymentId, amount: 100, attemptId: 'rf_same' });
    const r2 = await threeDsAdapter.refund(gw, { paymentId: s.paymentId, amount: 100, attemptId: 'rf_same' });
    expect(r2).toEqual(r1);
    expect((await ledger(gw)).refunds).toHaveLength(1);

    // On the wire: the replay says so, in a header.
    const raw = (key: string, body: unknown) =>
      fetch(`${base}/v1/payments`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.credentials.api_key}`, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify(body),
      });
    const body = { amount: 100, currency: 'USD', reference: 'raw', card: { number: THREEDS_CARDS.decline, exp_month: 1, exp_year: 2031 } };
    const a = await raw('k1', body);
    const b = await raw('k1', { card: body.card, reference: 'raw', currency: 'USD', amount: 100 });
    expect(a.headers.get('idempotent-replayed')).toBeNull();
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    expect(await b.json()).toEqual(await a.json());
  });

  it('retries a webhook until a 2xx, signing each attempt afresh, and redelivers on request', async () => {
    const gw = await gateway({ webhook_retry_delays_ms: [0, 30, 60, 90] });
    failures.set(gw.hookPath, 2);
    const s = expectKind(await threeDsAdapter.createPayment(gw, pay(THREEDS_CARDS.frictionless)), 'approved');
    const ok = await delivered(gw, s.paymentId, 'PAYMENT_SUCCEEDED');
    const attempts = deliveries.filter((d) => d.path === gw.hookPath);
    expect(attempts.map((d) => d.answered)).toEqual([500, 500, 204]);
    expect(new Set(attempts.map((d) => eventOf(d).id)).size).toBe(1);
    expect(new Set(attempts.map((d) => d.raw.toString())).size).toBe(1);
    for (const d of attempts) expect(verifyThreeDsWebhook(d.raw, d.headers, SECRET).ok).toBe(true);

    const event = (await ledger(gw)).events[0]!;
    expect(event).toMatchObject({ id: eventOf(ok).id, type: 'PAYMENT_SUCCEEDED', payment_id: s.paymentId, delivered: true });
    expect(event.attempts.map((a) => a.status)).toEqual([500, 500, 204]);

    const again = await fetch(`${base}/sandbox/events/${event.id}/redeliver`, { method: 'POST' });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ attempt: { status: 204 } });
    expect(deliveries.filter((d) => d.path === gw.hookPath)).toHaveLength(4);
    expect((await fetch(`${base}/sandbox/events/evt_nope/redeliver`, { method: 'POST' })).status).toBe(404);
  });

  it('gives up after the last retry', async () => {
    const gw = await gateway({ webhook_retry_delays_ms: [0, 20] });
    failures.set(gw.hookPath, 10);
    const s = expectKind(await threeDsAdapter.createPayment(gw, pay(THREEDS_CARDS.frictionless)), 'approved');
    await waitFor(() => (deliveries.filter((d) => d.path === gw.hookPath).length === 2 ? true : undefined), 'two attempts');
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(deliveries.filter((d) => d.path === gw.hookPath)).toHaveLength(2);
    expect((await ledger(gw)).events[0]).toMatchObject({ payment_id: s.paymentId, delivered: false });
    failures.delete(gw.hookPath);
  });

  it('rejects a real delivery that was tampered with, checked with the wrong secret, stale, or unsigned', async () => {
    const gw = await gateway();
    const s = expectKind(await threeDsAdapter.createPayment(gw, pay(THREEDS_CARDS.frictionless)), 'approved');
    const d = await delivered(gw, s.paymentId, 'PAYMENT_SUCCEEDED');
    expect(verifyThreeDsWebhook(d.raw, d.headers, SECRET).ok).toBe(true);

    const tampered = Buffer.from(d.raw.toString().replace('"succeeded"', '"declined"'));
    expect(tampered.equals(d.raw)).toBe(false);
    expect(verifyThreeDsWebhook(tampered, d.headers, SECRET)).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(verifyThreeDsWebhook(d.raw, d.headers, 'whsec_wrong')).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(verifyThreeDsWebhook(d.raw, d.headers, null)).toEqual({ ok: false, reason: 'no_secret' });
    expect(verifyThreeDsWebhook(d.raw, d.headers, SECRET, { now: Date.now() + 6 * 60_000 })).toEqual({ ok: false, reason: 'timestamp_out_of_range' });
    const { 'x-gateway-signature': _sig, ...unsigned } = d.headers;
    expect(verifyThreeDsWebhook(d.raw, unsigned, SECRET)).toEqual({ ok: false, reason: 'missing_signature' });
    expect(verifyThreeDsWebhook(d.raw, { ...d.headers, 'x-gateway-signature': 't=1,v1=zz' }, SECRET)).toEqual({ ok: false, reason: 'malformed_signature' });
  });

  it('refuses live or missing keys, and hides another account’s payments', async () => {
    const gw = await gateway();
    const live: GatewayAccount = { ...gw, credentials: { api_key: 'sk_live_123' } };
    expect(await threeDsAdapter.createPayment(live, pay(THREEDS_CARDS.frictionless))).toMatchObject({
      kind: 'error',
      code: 'authentication_failed',
      gatewayCode: 'invalid_api_key',
      httpStatus: 401,
      safeToRetry: false,
    });
    const noAuth = await fetch(`${base}/v1/payments/pay_x`);
    expect(noAuth.status).toBe(401);
    expect(await noAuth.json()).toMatchObject({ error: { type: 'authentication_error', code: 'missing_api_key' } });
    await expect(threeDsAdapter.retrievePayment({ ...gw, credentials: {} }, 'pay_x')).rejects.toThrow(/api_key/);

    const s = expectKind(await threeDsAdapter.createPayment(gw, pay(THREEDS_CARDS.frictionless)), 'approved');
    const other = await gateway();
    expect(await threeDsAdapter.retrievePayment(other, s.paymentId)).toMatchObject({ kind: 'error', code: 'not_found', httpStatus: 404 });
    expect(await threeDsAdapter.cancel(other, { paymentId: s.paymentId, attemptId: 'v' })).toMatchObject({ kind: 'error', code: 'not_found' });
  });

  it('answers the documented JSON on the wire and refuses unknown or malformed fields', async () => {
    const gw = await gateway();
    const post = (body: unknown, raw?: string) =>
      fetch(`${base}/v1/payments`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.credentials.api_key}`, 'content-type': 'application/json' },
        body: raw ?? JSON.stringify(body),
      });
    const body = {
      amount: 1234,
      currency: 'eur',
      reference: 'att_wire',
      card: { number: THREEDS_CARDS.challenge, exp_month: 12, exp_year: 2030, cvc: '123' },
      customer: { email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace' },
      risk: { session_id: 'rs_1' },
      return_url: 'https://shop.test/r',
      cancel_url: 'https://shop.test/c',
      save_payment_method: false,
      merchant_initiated: false,
    };
    const res = await post(body);
    expect(res.status).toBe(200);
    const p = (await res.json()) as Record<string, unknown>;
    expect(Object.keys(p).sort()).toEqual(
      ['amount', 'amount_refunded', 'card', 'created', 'currency', 'id', 'livemode', 'merchant_initiated', 'next_action', 'object', 'reference', 'status', 'three_d_secure'].sort(),
    );
    expect(p).toMatchObject({
      object: 'payment',
      status: 'requires_action',
      amount: 1234,
      currency: 'EUR',
      reference: 'att_wire',
      amount_refunded: 0,
      merchant_initiated: false,
      card: { brand: 'visa', last4: '3220', exp_month: 12, exp_year: 2030 },
      three_d_secure: 'challenge_required',
      livemode: false,
      next_action: { type: 'redirect', url: `${base}/authenticate/${p.id as string}` },
    });
    expect(JSON.stringify(p)).not.toContain(THREEDS_CARDS.challenge);

    const bad = async (b: unknown, raw?: string) => {
      const r = await post(b, raw);
      expect(r.status, JSON.stringify(b)).toBe(400);
      const e = (await r.json()) as { error: { type: string; message: string } };
      expect(e.error.type).toBe('invalid_request_error');
      expect(e.error.message).not.toContain(THREEDS_CARDS.challenge);
    };
    await bad({ ...body, surprise: true });
    await bad({ ...body, amount: 12.5 });
    await bad({ ...body, currency: 'dollars' });
    await bad({ ...body, card: undefined });
    await bad({ ...body, payment_method: 'pm_x' });
    await bad({ ...body, return_url: 'javascript:alert(1)' });
    await bad({ ...body, original_payment_id: 'pay_x' });
    await bad(null, '{"amount": ');
    expect((await fetch(`${base}/v1/nothing`)).status).toBe(404);
    expect((await fetch(`${base}/authenticate/pay_nope`)).status).toBe(404);
    expect((await fetch(`${base}/authenticate/${p.id as string}/complete?result=maybe`, { redirect: 'manual' })).status).toBe(400);
  });
});

describe('3DS gateway lookups by reference (crash recovery)', () => {
  it('finds a payment by our attempt id as it is now, though a replay of the create still answers the first status', async () => {
    const gw = await gateway();
    const req = pay(THREEDS_CARDS.challenge);
    const first = expectKind(await threeDsAdapter.createPayment(gw, req), 'redirect');
    expect(await threeDsAdapter.findPaymentByReference(gw, req.attemptId)).toMatchObject({ kind: 'redirect', paymentId: first.paymentId, url: first.url, payment: { reference: req.attemptId } });
    await complete(first.url, 'success');
    const found = expectKind((await threeDsAdapter.findPaymentByReference(gw, req.attemptId)) as ThreeDsPaymentResult, 'approved');
    expect(found).toMatchObject({ paymentId: first.paymentId, payment: { status: 'succeeded', amount: 4999, currency: 'USD', reference: req.attemptId } });
    // The replay answers the stored first answer and creates nothing: the lookup is how to learn the end.
    expectKind(await threeDsAdapter.createPayment(gw, req), 'redirect');
    const list = await fetch(`${base}/v1/payments?reference=${req.attemptId}`, { headers: { authorization: `Bearer ${gw.credentials.api_key}` } });
    expect(list.status).toBe(200);
    const body = (await list.json()) as { object: string; data: { id: string; object: string; status: string }[]; has_more: boolean };
    expect(body).toMatchObject({ object: 'list', has_more: false, data: [{ id: first.paymentId, object: 'payment', status: 'succeeded' }] });
    expect((await ledger(gw)).payments).toHaveLength(1);
  });

  it('finds declined and saved-card payments, and answers not_found for a reference never sent or another account’s', async () => {
    const gw = await gateway();
    const d = pay(THREEDS_CARDS.insufficientFunds);
    expectKind(await threeDsAdapter.createPayment(gw, d), 'declined');
    expect(await threeDsAdapter.findPaymentByReference(gw, d.attemptId)).toMatchObject({ kind: 'declined', code: 'insufficient_funds', retryable: true, payment: { reference: d.attemptId } });

    const saved = expectKind(await threeDsAdapter.createPayment(gw, pay(THREEDS_CARDS.frictionless, { savePaymentMethod: true })), 'approved');
    const mit = pay(THREEDS_CARDS.frictionless, { card: undefined, paymentMethod: saved.paymentMethod!, merchantInitiated: { originalPaymentId: saved.paymentId } });
    const m = expectKind(await threeDsAdapter.createPayment(gw, mit), 'approved');
    expect(await threeDsAdapter.findPaymentByReference(gw, mit.attemptId)).toMatchObject({ kind: 'approved', paymentId: m.paymentId, paymentMethod: saved.paymentMethod, payment: { merchantInitiated: true } });

    expect(await threeDsAdapter.findPaymentByReference(gw, 'att_never_sent')).toEqual({ kind: 'not_found' });
    expect(await threeDsAdapter.findPaymentByReference(await gateway(), d.attemptId)).toEqual({ kind: 'not_found' });
  });

  it('finds a refund by our refund attempt id, sent as its reference', async () => {
    const gw = await gateway();
    const s = expectKind(await threeDsAdapter.createPayment(gw, pay(THREEDS_CARDS.frictionless, { amount: 5000 })), 'approved');
    const rf = await threeDsAdapter.refund(gw, { paymentId: s.paymentId, amount: 1200, attemptId: 'rf_recover_1' });
    expect(rf).toMatchObject({ kind: 'refunded' });
    const l = await ledger(gw);
    expect(l.refunds).toEqual([expect.objectContaining({ payment_id: s.paymentId, amount: 1200, reference: 'rf_recover_1' })]);
    expect(await threeDsAdapter.findRefundByReference(gw, 'rf_recover_1')).toEqual(rf);
    expect(await threeDsAdapter.findRefundByReference(gw, 'rf_never_sent')).toEqual({ kind: 'not_found' });
    expect(await threeDsAdapter.findRefundByReference(await gateway(), 'rf_recover_1')).toEqual({ kind: 'not_found' });
    // Refused (more than is left): nothing was created, so nothing is found.
    expect(await threeDsAdapter.refund(gw, { paymentId: s.paymentId, amount: 9999, attemptId: 'rf_recover_2' })).toMatchObject({ kind: 'error', gatewayCode: 'amount_too_large' });
    expect(await threeDsAdapter.findRefundByReference(gw, 'rf_recover_2')).toEqual({ kind: 'not_found' });

    const byPayment = await fetch(`${base}/v1/refunds?payment_id=${s.paymentId}`, { headers: { authorization: `Bearer ${gw.credentials.api_key}` } });
    expect(await byPayment.json()).toMatchObject({ object: 'list', data: [{ object: 'refund', reference: 'rf_recover_1', amount: 1200, status: 'succeeded' }] });
  });

  it('refuses a lookup without a reference or a key', async () => {
    const gw = await gateway();
    const auth = { authorization: `Bearer ${gw.credentials.api_key}` };
    expect((await fetch(`${base}/v1/payments`, { headers: auth })).status).toBe(400);
    expect((await fetch(`${base}/v1/refunds`, { headers: auth })).status).toBe(400);
    expect((await fetch(`${base}/v1/payments?reference=x&status=succeeded`, { headers: auth })).status).toBe(400);
    expect((await fetch(`${base}/v1/payments?reference=x`)).status).toBe(401);
    expect(await threeDsAdapter.findPaymentByReference({ ...gw, credentials: { api_key: 'sk_live_1' } }, 'x')).toMatchObject({ kind: 'error', code: 'authentication_failed' });
  });
});

describe('3DS gateway adapter transport failures', () => {
  let odd: http.Server;
  let oddUrl: string;

  beforeAll(async () => {
    odd = http.createServer((req, res) => {
      req.resume();
      if (req.url?.startsWith('/redirect/')) res.writeHead(307, { location: `${base}${req.url.slice('/redirect'.length)}` }).end();
      else if (req.url?.startsWith('/html/')) res.writeHead(200, { 'content-type': 'text/html' }).end('<html>Down for maintenance</html>');
      else if (req.url?.startsWith('/hang/')) setTimeout(() => res.writeHead(200).end('{}'), 1_000);
      else res.writeHead(502, { 'content-type': 'application/json' }).end('{"error":{"type":"api_error","code":"upstream","message":"bad gateway"}}');
    });
    await new Promise<void>((resolve) => odd.listen(0, '127.0.0.1', resolve));
    oddUrl = `http://127.0.0.1:${(odd.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    odd?.closeAllConnections();
    await new Promise((resolve) => odd?.close(resolve));
  });

  const at = (baseUrl: string): GatewayAccount => ({ baseUrl, credentials: { api_key: 'sk_test_transport' }, testMode: true });

  it('never follows a redirect, so the card is not re-posted', async () => {
    const r = await threeDsAdapter.createPayment(at(`${oddUrl}/redirect`), pay(THREEDS_CARDS.frictionless));
    expect(r).toMatchObject({ kind: 'error', code: 'bad_response', httpStatus: 307 });
    expect((await ledger(at(base))).payments).toHaveLength(0);
  });

  it('reads 5xx, non-JSON and unreachable gateways as errors that are safe to retry with the same key', async () => {
    expect(await threeDsAdapter.createPayment(at(`${oddUrl}/502`), pay(THREEDS_CARDS.frictionless))).toMatchObject({
      kind: 'error',
      code: 'gateway_error',
      gatewayCode: 'upstream',
      httpStatus: 502,
      safeToRetry: true,
    });
    expect(await threeDsAdapter.retrievePayment(at(`${oddUrl}/html`), 'pay_1')).toMatchObject({ kind: 'error', code: 'bad_response', safeToRetry: true });
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const r = await threeDsAdapter.createPayment(at(`http://127.0.0.1:${port}`), pay(THREEDS_CARDS.frictionless));
    expect(r).toMatchObject({ kind: 'error', code: 'network_error', safeToRetry: true });
    expect(JSON.stringify(r)).not.toContain(THREEDS_CARDS.frictionless);
  });

  it('times out without throwing', async () => {
    const impatient = new ThreeDsAdapter({ timeoutMs: 100 });
    const started = Date.now();
    const r = await impatient.retrievePayment(at(`${oddUrl}/hang`), 'pay_1');
    expect(Date.now() - started).toBeLessThan(900);
    expect(r).toMatchObject({ kind: 'error', code: 'timeout', safeToRetry: true });
  });
});
