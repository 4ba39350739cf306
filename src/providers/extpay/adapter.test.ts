import { describe, expect, it } from 'vitest';
import { ExtpayAdapter, FIND_PAYMENT_MAX_PAGES } from './adapter.ts';
import type { ExtpayConnection } from './types.ts';

const conn: ExtpayConnection = { baseUrl: 'https://api.whop.test/api/v1', apiKey: 'k', companyId: 'biz_1', environment: 'sandbox' };

/** An adapter over a fake Whop: `route(path with query)` answers [status, body]; every call is recorded. */
function whop(route: (path: string) => [number, unknown]) {
  const calls: string[] = [];
  const fake = (async (url: string | URL | Request) => {
    const path = String(url).slice(conn.baseUrl.length);
    calls.push(path);
    const [status, body] = route(path);
    return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  }) as typeof fetch;
  return { adapter: new ExtpayAdapter({ fetch: fake }), calls };
}

function payment(id: string, extra: Record<string, unknown> = {}) {
  return { id, status: 'paid', substatus: 'succeeded', total: 19.99, currency: 'usd', billing_reason: 'one_time', member: { id: 'mber_1' }, plan: { id: `plan_${id}` }, metadata: {}, created_at: '2026-01-02T10:00:00.000Z', ...extra };
}

const page = (data: unknown[], next: string | null = null) => ({ data, page_info: { end_cursor: next ?? (data.length ? (data.at(-1) as { id: string }).id : null), has_next_page: next !== null } });

describe('findPaymentByAttempt', () => {
  it('reads the company’s payments since createdAfter, and matches a charge by its plan’s internal notes', async () => {
    const { adapter, calls } = whop((path) => {
      if (path.startsWith('/payments?')) return [200, page([payment('pay_b'), payment('pay_a', { member: { id: 'mber_2' } }), payment('pay_c', { metadata: { attempt_id: 'att_other' } })])];
      if (path === '/plans/plan_pay_b') return [200, { id: 'plan_pay_b', internal_notes: 'checkstand:attempt_id=att_1' }];
      return [404, { error: { message: 'no' } }];
    });
    const r = await adapter.findPaymentByAttempt(conn, { attemptId: 'att_1', memberId: 'mber_1', createdAfter: '2026-01-02T09:59:00.000Z' });
    expect(r).toMatchObject({ kind: 'found', payment: { id: 'pay_b', amount: 1999, currency: 'USD' }, outcome: { kind: 'approved', paymentId: 'pay_b' }, duplicates: [] });
    const first = new URL(`https://x${calls[0]!}`);
    expect(first.pathname).toBe('/payments');
    expect(Object.fromEntries(first.searchParams)).toEqual({ account_id: 'biz_1', first: '100', created_after: '2026-01-02T09:59:00.000Z' });
    // Only the member's unmarked payment needed its plan read; the other member's and the marked one did not.
    expect(calls.filter((c) => c.startsWith('/plans/'))).toEqual(['/plans/plan_pay_b']);
  });

  it('matches a checkout’s payment by metadata.attempt_id, skips renewals that copied it, and reports duplicates', async () => {
    const { adapter, calls } = whop(() => [
      200,
      page([
        payment('pay_renewal', { billing_reason: 'subscription_cycle', metadata: { attempt_id: 'att_1' } }),
        payment('pay_failed', { status: 'open', substatus: 'failed', failure_message: 'Card 4111111111111111 declined', metadata: { attempt_id: 'att_1' }, created_at: '2026-01-02T10:00:01.000Z' }),
        payment('pay_paid', { metadata: { attempt_id: 'att_1' } }),
      ]),
    ]);
    const r = await adapter.findPaymentByAttempt(conn, { attemptId: 'att_1' });
    expect(r).toMatchObject({ kind: 'found', payment: { id: 'pay_paid' }, duplicates: [{ id: 'pay_failed' }] });
    expect(JSON.stringify(r)).not.toContain('4111111111111111');
    expect(calls.some((c) => c.startsWith('/plans/'))).toBe(false);
  });

  it('pages through the list, answers not_found when nothing matches, and inconclusive past its limits', async () => {
    const pages = whop((path) => {
      const after = new URL(`https://x${path}`).searchParams.get('after');
      if (path.startsWith('/plans/')) return [200, { id: 'p', internal_notes: null }];
      return [200, after === null ? page([payment('pay_1')], 'pay_1') : page([payment('pay_2', { metadata: { attempt_id: 'att_1' } })])];
    });
    expect(await pages.adapter.findPaymentByAttempt(conn, { attemptId: 'att_1' })).toMatchObject({ kind: 'found', payment: { id: 'pay_2' } });
    expect(pages.calls.filter((c) => c.startsWith('/payments?'))).toHaveLength(2);

    expect(await whop(() => [200, page([])]).adapter.findPaymentByAttempt(conn, { attemptId: 'att_1' })).toEqual({ kind: 'not_found' });
    const endless = whop(() => [200, page([payment(`pay_${Math.random()}`, { metadata: { attempt_id: 'x' } })], 'more')]);
    expect(await endless.adapter.findPaymentByAttempt(conn, { attemptId: 'att_1' })).toMatchObject({ kind: 'inconclusive' });
    expect(endless.calls).toHaveLength(FIND_PAYMENT_MAX_PAGES);
    const many = whop(() => [200, page(Array.from({ length: 30 }, (_, i) => payment(`pay_${i}`)))]);
    expect(await many.adapter.findPaymentByAttempt(conn, { attemptId: 'att_1' })).toMatchObject({ kind: 'inconclusive' });
  });

  it('passes errors on, never as not_found', async () => {
    expect(await whop(() => [401, { error: { code: 'invalid_api_key', message: 'bad key' } }]).adapter.findPaymentByAttempt(conn, { attemptId: 'a' })).toMatchObject({ kind: 'error', code: 'authentication_failed' });
    expect(await whop(() => [200, { nope: true }]).adapter.findPaymentByAttempt(conn, { attemptId: 'a' })).toMatchObject({ kind: 'error', code: 'bad_response' });
    const planGone = whop((path) => (path.startsWith('/plans/') ? [503, {}] : [200, page([payment('pay_1')])]));
    expect(await planGone.adapter.findPaymentByAttempt(conn, { attemptId: 'a' })).toMatchObject({ kind: 'error', code: 'provider_error', safeToRetry: true });
  });
});

describe('findRefundByAttempt', () => {
  const refund = (id: string, created: string, extra: Record<string, unknown> = {}) => ({ id, status: 'succeeded', amount: 5, currency: 'usd', payment: { id: 'pay_1' }, created_at: created, ...extra });

  it('asks for the payment’s refunds since the attempt began and takes the earliest as ours', async () => {
    const { adapter, calls } = whop(() => [200, page([refund('rfnd_late', '2026-01-02T10:05:00.000Z'), refund('rfnd_ours', '2026-01-02T10:01:00.000Z'), refund('rfnd_old', '2026-01-01T00:00:00.000Z'), refund('rfnd_other', '2026-01-02T10:02:00.000Z', { payment: { id: 'pay_2' } })])]);
    const r = await adapter.findRefundByAttempt(conn, { paymentId: 'pay_1', createdAfter: '2026-01-02T10:00:00.000Z' });
    expect(r).toEqual({
      kind: 'found',
      refund: { id: 'rfnd_ours', status: 'succeeded', amount: 500, currency: 'USD', paymentId: 'pay_1', createdAt: '2026-01-02T10:01:00.000Z' },
      later: [{ id: 'rfnd_late', status: 'succeeded', amount: 500, currency: 'USD', paymentId: 'pay_1', createdAt: '2026-01-02T10:05:00.000Z' }],
    });
    expect(Object.fromEntries(new URL(`https://x${calls[0]!}`).searchParams)).toEqual({ payment_id: 'pay_1', created_after: '2026-01-02T10:00:00.000Z', first: '100' });
  });

  it('answers not_found for no refunds, and errors as errors', async () => {
    expect(await whop(() => [200, page([])]).adapter.findRefundByAttempt(conn, { paymentId: 'pay_1', createdAfter: '2026-01-02T10:00:00.000Z' })).toEqual({ kind: 'not_found' });
    expect(await whop(() => [404, { error: { message: 'No such payment' } }]).adapter.findRefundByAttempt(conn, { paymentId: 'pay_x', createdAfter: '2026-01-02T10:00:00.000Z' })).toMatchObject({ kind: 'error', code: 'not_found' });
    expect(await whop(() => [200, page([{ id: 'rfnd_1', status: 'weird' }])]).adapter.findRefundByAttempt(conn, { paymentId: 'pay_1', createdAfter: '2026-01-02T10:00:00.000Z' })).toMatchObject({ kind: 'error', code: 'bad_response' });
  });
});

describe('testConnection: the spec’s three outcomes whatever the provider’s wording', () => {
  const five = ['checkout_configuration:create', 'plan:create', 'access_pass:create', 'access_pass:update', 'checkout_configuration:basic:read'];

  it('a checkout 403 that names no permission (another wording) is cannot_create_checkouts with all five as candidates', async () => {
    const { adapter } = whop((path) => (path.startsWith('/payments?') ? [200, page([])] : [403, { error: { type: 'forbidden', message: 'Access denied for this resource' } }]));
    expect(await adapter.testConnection(conn)).toEqual({ kind: 'cannot_create_checkouts', message: 'Access denied for this resource', missing: five, exact: false });
    const plain = whop((path) => (path.startsWith('/payments?') ? [200, page([])] : [403, { message: 'Forbidden' }]));
    expect(await plain.adapter.testConnection(conn)).toMatchObject({ kind: 'cannot_create_checkouts', missing: five, exact: false });
  });

  it('Whop’s wording names exactly what is missing', async () => {
    const { adapter } = whop((path) => (path.startsWith('/payments?') ? [200, page([])] : [403, { error: { message: 'This API key is missing the permissions: plan:create, access_pass:update.' } }]));
    expect(await adapter.testConnection(conn)).toMatchObject({ kind: 'cannot_create_checkouts', missing: ['plan:create', 'access_pass:update'], exact: true });
  });

  it('a working key without payment:basic:read: cannot_create_checkouts naming it (and any checkout permission the probe finds missing)', async () => {
    const readRefused = [403, { error: { code: 'missing_permissions', message: 'This API key is missing the permissions: payment:basic:read.' } }] as [number, unknown];
    const valid = whop((path) => (path.startsWith('/payments?') ? readRefused : [422, { error: { message: 'currency is required' } }]));
    expect(await valid.adapter.testConnection(conn)).toMatchObject({ kind: 'cannot_create_checkouts', missing: ['payment:basic:read'], exact: true });
    const both = whop((path) => (path.startsWith('/payments?') ? readRefused : [403, { error: { message: 'This API key is missing the permissions: plan:create.' } }]));
    expect(await both.adapter.testConnection(conn)).toMatchObject({ kind: 'cannot_create_checkouts', missing: ['payment:basic:read', 'plan:create'] });
  });

  it('an unknown pinned version is failed_to_authenticate with its cause; another company or a bad key stays failed_to_authenticate', async () => {
    const version = whop(() => [400, { error: { code: 'api_version_invalid', message: "Unknown Api-Version-Date '2031-01-01'." } }]);
    expect(await version.adapter.testConnection(conn)).toEqual({ kind: 'failed_to_authenticate', message: "Unknown Api-Version-Date '2031-01-01'.", cause: 'api_version' });
    expect(version.calls).toHaveLength(1);
    expect(await whop(() => [403, { error: { code: 'company_forbidden', message: 'You are not authorized to access this company.' } }]).adapter.testConnection(conn)).toMatchObject({ kind: 'failed_to_authenticate' });
    expect(await whop(() => [403, { error: { message: 'Forbidden' } }]).adapter.testConnection(conn)).toMatchObject({ kind: 'failed_to_authenticate' });
    expect(await whop(() => [401, { error: { message: 'bad key' } }]).adapter.testConnection(conn)).toMatchObject({ kind: 'failed_to_authenticate' });
  });
});
