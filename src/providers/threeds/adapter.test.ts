import { describe, expect, it } from 'vitest';
import type { GatewayAccount } from '../card-gateway.ts';
import { ThreeDsAdapter, pickByReference } from './adapter.ts';
import type { ThreeDsPayment } from './types.ts';

const account: GatewayAccount = { baseUrl: 'https://gw.test/', credentials: { api_key: 'sk_test_1' }, testMode: true };

/** An adapter whose gateway answers every call with `status` and `body`, recording what was asked. */
function answering(status: number, body: unknown) {
  const calls: { url: string; method: string; body: string | null }[] = [];
  const fake = (async (url: string | URL | Request, init?: RequestInit) => {
    calls.push({ url: String(url), method: init?.method ?? 'GET', body: typeof init?.body === 'string' ? init.body : null });
    return new Response(typeof body === 'string' ? body : JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  }) as typeof fetch;
  return { adapter: new ThreeDsAdapter({ fetch: fake }), calls };
}

function wirePayment(id: string, status: string, extra: Record<string, unknown> = {}) {
  return { id, object: 'payment', status, amount: 4999, currency: 'usd', reference: 'att_1', amount_refunded: 0, created: 1_750_000_000, ...extra };
}

const list = (data: unknown[]) => ({ object: 'list', data, has_more: false });

describe('3DS lookups by reference', () => {
  it('asks GET /v1/payments?reference=… and reads the payment as retrievePayment does', async () => {
    const { adapter, calls } = answering(200, list([wirePayment('pay_1', 'succeeded', { payment_method: 'pm_1', reference: 'att 1&x' })]));
    expect(await adapter.findPaymentByReference(account, 'att 1&x')).toMatchObject({ kind: 'approved', paymentId: 'pay_1', paymentMethod: 'pm_1', payment: { currency: 'USD' } });
    expect(calls).toEqual([{ url: 'https://gw.test/v1/payments?reference=att+1%26x', method: 'GET', body: null }]);
  });

  it('answers not_found for an empty list, and for payments of other references', async () => {
    expect(await answering(200, list([])).adapter.findPaymentByReference(account, 'att_1')).toEqual({ kind: 'not_found' });
    expect(await answering(200, list([wirePayment('pay_1', 'succeeded', { reference: 'att_10' })])).adapter.findPaymentByReference(account, 'att_1')).toEqual({ kind: 'not_found' });
  });

  it('lets the payment that moved money speak when one reference matches several', async () => {
    const { adapter } = answering(200, list([wirePayment('pay_d', 'declined', { decline_code: 'do_not_honor' }), wirePayment('pay_s', 'succeeded'), wirePayment('pay_r', 'requires_action', { next_action: { type: 'redirect', url: 'https://gw.test/a' } })]));
    expect(await adapter.findPaymentByReference(account, 'att_1')).toMatchObject({ kind: 'approved', paymentId: 'pay_s' });
    const p = (id: string, status: ThreeDsPayment['status'], created: number) => ({ id, status, created }) as ThreeDsPayment;
    expect(pickByReference([p('a', 'declined', 3), p('b', 'processing', 1), p('c', 'requires_action', 2)])?.id).toBe('b');
    expect(pickByReference([p('a', 'declined', 1), p('b', 'declined', 2)])?.id).toBe('b');
    expect(pickByReference([])).toBeNull();
  });

  it('reads errors and unreadable lists as errors, never as not_found', async () => {
    expect(await answering(401, { error: { type: 'authentication_error', code: 'invalid_api_key', message: 'Invalid API key' } }).adapter.findPaymentByReference(account, 'a')).toMatchObject({
      kind: 'error',
      code: 'authentication_failed',
      safeToRetry: false,
    });
    expect(await answering(503, {}).adapter.findPaymentByReference(account, 'a')).toMatchObject({ kind: 'error', code: 'gateway_error', safeToRetry: true });
    for (const body of [{ data: 'nope' }, list([{ id: 'pay_1', status: 'weird' }]), '<html>', {}]) {
      expect(await answering(200, body).adapter.findPaymentByReference(account, 'a'), JSON.stringify(body)).toMatchObject({ kind: 'error', code: 'bad_response' });
      expect(await answering(200, body).adapter.findRefundByReference(account, 'a'), JSON.stringify(body)).toMatchObject({ kind: 'error', code: 'bad_response' });
    }
  });

  it('finds a refund by its reference, preferring a succeeded one', async () => {
    const refund = (id: string, status: string, reference = 'rf_1') => ({ id, object: 'refund', payment_id: 'pay_1', reference, amount: 500, currency: 'usd', status, created: 1 });
    const { adapter, calls } = answering(200, list([refund('re_f', 'failed'), refund('re_s', 'succeeded'), refund('re_o', 'succeeded', 'rf_2')]));
    expect(await adapter.findRefundByReference(account, 'rf_1')).toEqual({ kind: 'refunded', refundId: 're_s', paymentId: 'pay_1', amount: 500, currency: 'USD' });
    expect(calls[0]!.url).toBe('https://gw.test/v1/refunds?reference=rf_1');
    expect(await answering(200, list([refund('re_p', 'pending')])).adapter.findRefundByReference(account, 'rf_1')).toMatchObject({ kind: 'refund_pending', refundId: 're_p' });
    expect(await answering(200, list([refund('re_f', 'failed')])).adapter.findRefundByReference(account, 'rf_1')).toMatchObject({ kind: 'refund_failed', refundId: 're_f' });
    expect(await answering(200, list([])).adapter.findRefundByReference(account, 'rf_1')).toEqual({ kind: 'not_found' });
  });

  it('sends our refund attempt id as the refund’s reference and its Idempotency-Key', async () => {
    const { adapter, calls } = answering(200, { id: 're_1', object: 'refund', payment_id: 'pay_1', reference: 'rf_9', amount: 100, currency: 'usd', status: 'succeeded' });
    expect(await adapter.refund(account, { paymentId: 'pay_1', amount: 100, attemptId: 'rf_9' })).toMatchObject({ kind: 'refunded', refundId: 're_1' });
    expect(JSON.parse(calls[0]!.body!)).toEqual({ payment_id: 'pay_1', reference: 'rf_9', amount: 100 });
  });
});
