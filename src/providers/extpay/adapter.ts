import { scrubPan } from '../../app/logger.ts';
import { paymentOutcome } from './status.ts';
import type {
  ExtpayCancelMode,
  ExtpayChargeRequest,
  ExtpayCheckoutRequest,
  ExtpayCheckoutResult,
  ExtpayConnection,
  ExtpayConnectionTest,
  ExtpayError,
  ExtpayErrorCode,
  ExtpayFindPaymentQuery,
  ExtpayFindRefundQuery,
  ExtpayListPaymentsQuery,
  ExtpayPayment,
  ExtpayPaymentLookup,
  ExtpayRefund,
  ExtpayRefundAttemptLookup,
  ExtpayMembershipResult,
  ExtpayPaymentList,
  ExtpayPaymentMethodsResult,
  ExtpayPaymentResult,
  ExtpayProviderAdapter,
  ExtpayRefundLookup,
  ExtpayDisputeLookup,
  ExtpayRefundRequest,
  ExtpayRefundResult,
  ExtpayVoidResult,
  ExtpayProbe,
} from './types.ts';
import { EXTPAY_API_VERSION_DATE, EXTPAY_CHECKOUT_PERMISSIONS, accountScoped } from './types.ts';
import {
  WireCheckoutConfiguration,
  WireDispute,
  WireMembership,
  WirePayment,
  WirePaymentMethod,
  WirePlanNotes,
  WireRefund,
  attemptIdOfNote,
  buildChargeBody,
  buildCheckoutBody,
  fromWireCheckout,
  fromWireDispute,
  fromWireMembership,
  fromWirePayment,
  fromWirePaymentMethod,
  fromWireRefund,
  missingPermissionsOf,
  readWireError,
  toWireAmount,
  wireList,
} from './wire.ts';
import { exchangeJson } from '../http-json.ts';
import { fetchTransport, type ProviderTransport, undiciTransport } from '../transport.ts';

/**
 * Whop's REST API v1 over HTTP: JSON in and out, `Authorization: Bearer <company API key>`, an
 * `Idempotency-Key` on POSTs that move money or create things (when the caller gives one). The same
 * code talks to Whop (`WHOP_API_BASE_URLS`) and to `checkstand sandbox`
 * (`${sandbox}/extpay/{sandbox|production}/api/v1`). Paths and shapes: docs/sandbox.md.
 */
export const EXTPAY_DEFAULT_TIMEOUT_MS = 30_000;

export interface ExtpayAdapterOptions {
  /** Covers the whole exchange, answer body included. */
  timeoutMs?: number;
  /** A fetch of the caller's (the unit tests' fakes); unset: undici's request (src/providers/transport.ts). */
  fetch?: typeof fetch;
}

type Exchange = ExtpayProbe;

/** The list parameter naming the connection's company in its pinned version (`account_id` in dated ones). */
const accountParam = (conn: ExtpayConnection) => (accountScoped(conn) ? 'account_id' : 'company_id');

function failure(code: ExtpayErrorCode, message: string, opts: { httpStatus?: number | null; providerCode?: string | null; safeToRetry: boolean }): ExtpayError {
  return { kind: 'error', code, providerCode: opts.providerCode ?? null, message: scrubPan(message), httpStatus: opts.httpStatus ?? null, safeToRetry: opts.safeToRetry };
}

/** A non-2xx answer → an error value. 5xx, 409 and 429 may be retried with the same Idempotency-Key. */
function answerError(status: number, json: unknown): ExtpayError {
  const e = readWireError(json);
  const providerCode = e.code;
  const message = e.message || `The provider answered HTTP ${status}.`;
  const opts = (safeToRetry: boolean) => ({ httpStatus: status, providerCode, safeToRetry });
  if (status === 401) return failure('authentication_failed', message, opts(false));
  if (status === 403) return failure('forbidden', message, opts(false));
  if (status === 404) return failure('not_found', message, opts(false));
  if (status === 409) return failure('in_progress', message, opts(true));
  if (status === 429) return failure('rate_limited', message, opts(true));
  if (providerCode === 'idempotency_key_reused') return failure('idempotency_conflict', message, opts(false));
  if (status >= 400 && status < 500) return failure('invalid_request', message, opts(false));
  if (status >= 500) return failure('provider_error', message, opts(true));
  // 1xx/3xx: a redirect is never followed (it would re-send the API key to wherever it points).
  return failure('bad_response', `The provider answered HTTP ${status}.`, opts(true));
}

const badShape = (what: string, status: number) => failure('bad_response', `The provider answered with an unrecognised ${what}.`, { httpStatus: status, safeToRetry: true });

function requireConnection(conn: ExtpayConnection): void {
  // A connection saved without its key or company is a configuration bug, not a decline.
  if (!conn.apiKey) throw new Error('extpay connection has no API key');
  if (!conn.companyId) throw new Error('extpay connection has no company id');
  if (!conn.baseUrl) throw new Error('extpay connection has no API base URL');
}

const seg = (id: string) => encodeURIComponent(id);

/** How far `findPaymentByAttempt` reads: pages of 100 payments, and plans read back for their notes. */
export const FIND_PAYMENT_MAX_PAGES = 10;
export const FIND_PAYMENT_MAX_PLAN_READS = 25;

/** Among payments of one attempt, the one that moved money answers: paid, then held, then the rest; oldest first among equals. */
const LOOKUP_RANK: Readonly<Record<string, number>> = { paid: 0, pending: 1 };

const RENEWAL_REASONS: ReadonlySet<string> = new Set(['subscription_cycle', 'subscription_update', 'subscription']);

function byCreated(a: { createdAt: string | null }, b: { createdAt: string | null }): number {
  return Date.parse(a.createdAt ?? '') - Date.parse(b.createdAt ?? '') || 0;
}

export class ExtpayAdapter implements ExtpayProviderAdapter {
  readonly kind = 'extpay' as const;
  private readonly timeoutMs: number;
  private readonly transport: ProviderTransport;

  constructor(opts: ExtpayAdapterOptions = {}) {
    this.timeoutMs = opts.timeoutMs ?? EXTPAY_DEFAULT_TIMEOUT_MS;
    this.transport = opts.fetch ? fetchTransport(opts.fetch) : undiciTransport;
  }

  /**
   * Spec §2.7's connection test, without creating anything: (1) a one-item payment list for the
   * company proves the key and the company id belong together in this environment; (2) a checkout
   * configuration whose inline plan lacks its currency proves the key may create checkouts — a key
   * without the permission is refused (401/403), one with it gets a validation error (400/422).
   *
   * Within the spec's three outcomes: a read refused for a named permission (a working key without
   * `payment:basic:read`) is `cannot_create_checkouts` naming it, after the checkout probe adds any
   * more; a refused Api-Version-Date is `failed_to_authenticate` with `cause: 'api_version'`; any other
   * 4xx on the read (401, another company's key) is `failed_to_authenticate`. A 403 on the checkout
   * probe that names no permission (wording not Whop's or the sandbox's) lists all five, `exact: false`.
   */
  async testConnection(conn: ExtpayConnection): Promise<ExtpayConnectionTest> {
    requireConnection(conn);
    if (!conn.companyId.startsWith('biz_')) return { kind: 'failed_to_authenticate', message: 'The company id must start with biz_.' };
    const read = await this.exchange(conn, 'GET', `/payments?${new URLSearchParams({ [accountParam(conn)]: conn.companyId, first: '1' })}`, null, null);
    let readMissing: string[] = [];
    if (!read.ok) {
      const e = read.error;
      if (e.providerCode === 'api_version_invalid') return { kind: 'failed_to_authenticate', message: e.message, cause: 'api_version' };
      if (e.httpStatus === 403 && e.providerCode !== 'company_forbidden') readMissing = missingPermissionsOf(e.message);
      if (readMissing.length === 0) {
        if (e.httpStatus !== null && e.httpStatus >= 400 && e.httpStatus < 500 && e.httpStatus !== 409 && e.httpStatus !== 429) return { kind: 'failed_to_authenticate', message: e.message };
        return e;
      }
    }
    const probeBody = accountScoped(conn) ? { company_id: conn.companyId, plan: {} } : { plan: { company_id: conn.companyId } };
    const probe = await this.exchange(conn, 'POST', '/checkout_configurations', probeBody, null);
    const refused = !probe.ok && (probe.error.httpStatus === 401 || probe.error.httpStatus === 403);
    if (!probe.ok && !refused && probe.error.httpStatus !== 400 && probe.error.httpStatus !== 422) return probe.error;
    const named = refused ? missingPermissionsOf(probe.error.message) : [];
    const checkoutMissing = refused ? (named.length > 0 ? named : [...EXTPAY_CHECKOUT_PERMISSIONS]) : [];
    const missing = [...new Set([...readMissing, ...checkoutMissing])];
    if (missing.length === 0) return { kind: 'connected' };
    const message = refused ? probe.error.message : !read.ok ? read.error.message : '';
    return { kind: 'cannot_create_checkouts', message, missing, exact: !refused || named.length > 0 };
  }

  async createCheckout(conn: ExtpayConnection, req: ExtpayCheckoutRequest): Promise<ExtpayCheckoutResult> {
    requireConnection(conn);
    const body = buildCheckoutBody(conn, req);
    const r = await this.exchange(conn, 'POST', '/checkout_configurations', body, req.idempotencyKey ?? null);
    if (!r.ok) return r.error;
    const parsed = WireCheckoutConfiguration.safeParse(r.json);
    if (!parsed.success) return badShape('checkout configuration', r.status);
    return { kind: 'created', checkout: fromWireCheckout(parsed.data, req.currency) };
  }

  async retrievePayment(conn: ExtpayConnection, paymentId: string): Promise<ExtpayPaymentResult> {
    requireConnection(conn);
    const r = await this.exchange(conn, 'GET', `/payments/${seg(paymentId)}`, null, null);
    return r.ok ? this.readPayment(r) : r.error;
  }

  async listPayments(conn: ExtpayConnection, query: ExtpayListPaymentsQuery = {}): Promise<ExtpayPaymentList | ExtpayError> {
    requireConnection(conn);
    const q = new URLSearchParams({ [accountParam(conn)]: conn.companyId, first: String(Math.min(100, Math.max(1, query.first ?? 25))) });
    if (query.after) q.set('after', query.after);
    if (query.createdAfter) q.set('created_after', query.createdAfter);
    for (const id of query.planIds ?? []) q.append('plan_ids[]', id);
    for (const s of query.statuses ?? []) q.append('statuses[]', s);
    const r = await this.exchange(conn, 'GET', `/payments?${q}`, null, null);
    if (!r.ok) return r.error;
    const parsed = wireList(WirePayment).safeParse(r.json);
    if (!parsed.success) return badShape('payment list', r.status);
    return {
      kind: 'list',
      payments: parsed.data.data.map(fromWirePayment),
      hasNextPage: parsed.data.page_info?.has_next_page ?? false,
      endCursor: parsed.data.page_info?.end_cursor ?? null,
    };
  }

  /**
   * `POST /payments`: Whop answers with the payment at once and settles it in the background, so
   * the usual outcome is `pending` (then `payment.succeeded` or `payment.failed` by webhook); a
   * decline the processor gives at once comes back as `declined`.
   */
  async chargeSavedPaymentMethod(conn: ExtpayConnection, req: ExtpayChargeRequest): Promise<ExtpayPaymentResult> {
    requireConnection(conn);
    const body = buildChargeBody(conn, req);
    const r = await this.exchange(conn, 'POST', '/payments', body, req.idempotencyKey ?? null);
    return r.ok ? this.readPayment(r) : r.error;
  }

  async listPaymentMethods(conn: ExtpayConnection, memberId: string): Promise<ExtpayPaymentMethodsResult> {
    requireConnection(conn);
    const q = new URLSearchParams({ member_id: memberId, [accountParam(conn)]: conn.companyId, first: '100' });
    const r = await this.exchange(conn, 'GET', `/payment_methods?${q}`, null, null);
    if (!r.ok) return r.error;
    const parsed = wireList(WirePaymentMethod).safeParse(r.json);
    if (!parsed.success) return badShape('payment method list', r.status);
    return { kind: 'list', methods: parsed.data.data.map(fromWirePaymentMethod) };
  }

  /** `POST /payments/{id}/refund` with `partial_amount` (decimal) for a partial refund. */
  async refundPayment(conn: ExtpayConnection, req: ExtpayRefundRequest): Promise<ExtpayRefundResult> {
    requireConnection(conn);
    if (req.amount !== undefined && (!Number.isSafeInteger(req.amount) || req.amount <= 0))
      throw new RangeError(`refund amount must be a positive integer in minor units, got ${req.amount}`);
    let body: Record<string, unknown> = {};
    if (req.amount !== undefined) {
      // The amount is in the payment's currency, which only the payment knows: read it first.
      const current = await this.exchange(conn, 'GET', `/payments/${seg(req.paymentId)}`, null, null);
      if (!current.ok) return current.error;
      const parsed = WirePayment.safeParse(current.json);
      if (!parsed.success) return badShape('payment', current.status);
      body = { partial_amount: toWireAmount(req.amount, fromWirePayment(parsed.data).currency) };
    }
    const r = await this.exchange(conn, 'POST', `/payments/${seg(req.paymentId)}/refund`, body, req.idempotencyKey ?? null);
    if (!r.ok) return r.error;
    const parsed = WirePayment.safeParse(r.json);
    if (!parsed.success) return badShape('payment', r.status);
    return { kind: 'refund_requested', paymentId: parsed.data.id, requestedAmount: req.amount ?? null, payment: fromWirePayment(parsed.data) };
  }

  /**
   * The payment one of our attempts created, found without its id. Reads the company's payments since
   * `createdAfter` (newest first, Whop's `created_after`), keeps the member's when `memberId` is given,
   * and matches our attempt id in the payment's `metadata.attempt_id` (payments of our checkouts, which
   * copy the checkout's metadata) or in its plan's `internal_notes` (saved-method charges, whose plan
   * is made for that charge alone: `attemptNote`). Reads only; safe to repeat.
   */
  async findPaymentByAttempt(conn: ExtpayConnection, query: ExtpayFindPaymentQuery): Promise<ExtpayPaymentLookup> {
    requireConnection(conn);
    const matches: ExtpayPayment[] = [];
    const unmarked: ExtpayPayment[] = [];
    let after: string | null = null;
    for (let page = 0; ; page++) {
      if (page === FIND_PAYMENT_MAX_PAGES)
        return { kind: 'inconclusive', message: `More than ${FIND_PAYMENT_MAX_PAGES * 100} payments to look through; give the member or an earlier createdAfter bound.` };
      const list = await this.listPayments(conn, { first: 100, after, createdAfter: query.createdAfter ?? null });
      if (list.kind === 'error') return list;
      for (const p of list.payments) {
        if (query.memberId && p.memberId !== query.memberId) continue;
        // Renewals copy the membership's metadata (the first attempt's id) but no attempt of ours made them.
        if (RENEWAL_REASONS.has(p.billingReason ?? '')) continue;
        const marked = p.metadata.attempt_id;
        if (marked === query.attemptId) matches.push(p);
        // A checkout's payment names its own attempt; only a payment without one may be a saved-method charge.
        else if (marked === undefined && p.planId) unmarked.push(p);
      }
      if (!list.hasNextPage || !list.endCursor) break;
      after = list.endCursor;
    }
    if (unmarked.length > FIND_PAYMENT_MAX_PLAN_READS)
      return { kind: 'inconclusive', message: `${unmarked.length} payments could be the charge; give the member or a later createdAfter bound.` };
    for (const p of unmarked) {
      const r = await this.exchange(conn, 'GET', `/plans/${seg(p.planId!)}`, null, null);
      if (!r.ok) return r.error;
      const plan = WirePlanNotes.safeParse(r.json);
      if (!plan.success) return badShape('plan', r.status);
      if (attemptIdOfNote(plan.data.internal_notes) === query.attemptId) matches.push(p);
    }
    if (matches.length === 0) return { kind: 'not_found' };
    for (const p of matches) if (p.failureMessage) p.failureMessage = scrubPan(p.failureMessage);
    const [payment, ...duplicates] = matches.sort((a, b) => (LOOKUP_RANK[a.status ?? ''] ?? 2) - (LOOKUP_RANK[b.status ?? ''] ?? 2) || byCreated(a, b));
    return { kind: 'found', payment: payment!, outcome: paymentOutcome(payment!), duplicates };
  }

  /**
   * The refund a refund attempt requested, found without its id: Whop answers a refund request with
   * the payment, and a refund carries neither metadata nor our Idempotency-Key. Lists the payment's
   * refunds created since the attempt began (`GET /refunds?payment_id=…&created_after=…`); the
   * earliest is ours, since a payment has at most one refund attempt open at a time.
   */
  async findRefundByAttempt(conn: ExtpayConnection, query: ExtpayFindRefundQuery): Promise<ExtpayRefundAttemptLookup> {
    requireConnection(conn);
    const refunds: ExtpayRefund[] = [];
    let after: string | null = null;
    for (let page = 0; page < FIND_PAYMENT_MAX_PAGES; page++) {
      const q = new URLSearchParams({ payment_id: query.paymentId, created_after: query.createdAfter, first: '100' });
      if (after) q.set('after', after);
      const r = await this.exchange(conn, 'GET', `/refunds?${q}`, null, null);
      if (!r.ok) return r.error;
      const parsed = wireList(WireRefund).safeParse(r.json);
      if (!parsed.success) return badShape('refund list', r.status);
      for (const w of parsed.data.data) {
        const refund = fromWireRefund(w);
        if (!refund) return badShape('refund', r.status);
        // A provider that ignored either filter must not hand us another payment's or an older refund.
        if (refund.paymentId !== null && refund.paymentId !== query.paymentId) continue;
        if (refund.createdAt && Date.parse(refund.createdAt) < Date.parse(query.createdAfter)) continue;
        refunds.push(refund);
      }
      const info = parsed.data.page_info;
      if (!info?.has_next_page || !info.end_cursor) break;
      after = info.end_cursor;
    }
    if (refunds.length === 0) return { kind: 'not_found' };
    const [refund, ...later] = refunds.sort(byCreated);
    return { kind: 'found', refund: refund!, later };
  }

  async voidPayment(conn: ExtpayConnection, req: { paymentId: string; idempotencyKey?: string | null }): Promise<ExtpayVoidResult> {
    requireConnection(conn);
    const r = await this.exchange(conn, 'POST', `/payments/${seg(req.paymentId)}/void`, {}, req.idempotencyKey ?? null);
    if (!r.ok) return r.error;
    const parsed = WirePayment.safeParse(r.json);
    if (!parsed.success) return badShape('payment', r.status);
    const payment = fromWirePayment(parsed.data);
    if (payment.status !== 'void') return failure('bad_response', `The provider answered a void with status ${payment.status ?? 'unknown'}.`, { httpStatus: r.status, safeToRetry: false });
    return { kind: 'voided', paymentId: payment.id, payment };
  }

  async retrieveRefund(conn: ExtpayConnection, refundId: string): Promise<ExtpayRefundLookup> {
    requireConnection(conn);
    const r = await this.exchange(conn, 'GET', `/refunds/${seg(refundId)}`, null, null);
    if (!r.ok) return r.error;
    const parsed = WireRefund.safeParse(r.json);
    const refund = parsed.success ? fromWireRefund(parsed.data) : null;
    return refund ? { kind: 'refund', refund } : badShape('refund', r.status);
  }

  async retrieveDispute(conn: ExtpayConnection, disputeId: string): Promise<ExtpayDisputeLookup> {
    requireConnection(conn);
    const r = await this.exchange(conn, 'GET', `/disputes/${seg(disputeId)}`, null, null);
    if (!r.ok) return r.error;
    const parsed = WireDispute.safeParse(r.json);
    const dispute = parsed.success ? fromWireDispute(parsed.data) : null;
    return dispute ? { kind: 'dispute', dispute } : badShape('dispute', r.status);
  }

  retrieveMembership(conn: ExtpayConnection, membershipId: string): Promise<ExtpayMembershipResult> {
    return this.membership(conn, 'GET', `/memberships/${seg(membershipId)}`, null);
  }

  /** Whop's default is `at_period_end`; the spec's Cancel is sent to the provider first (§3.2). */
  cancelMembership(conn: ExtpayConnection, membershipId: string, mode: ExtpayCancelMode = 'at_period_end'): Promise<ExtpayMembershipResult> {
    return this.membership(conn, 'POST', `/memberships/${seg(membershipId)}/cancel`, { cancellation_mode: mode });
  }

  uncancelMembership(conn: ExtpayConnection, membershipId: string): Promise<ExtpayMembershipResult> {
    return this.membership(conn, 'POST', `/memberships/${seg(membershipId)}/uncancel`, {});
  }

  pauseMembership(conn: ExtpayConnection, membershipId: string): Promise<ExtpayMembershipResult> {
    return this.membership(conn, 'POST', `/memberships/${seg(membershipId)}/pause`, {});
  }

  resumeMembership(conn: ExtpayConnection, membershipId: string): Promise<ExtpayMembershipResult> {
    return this.membership(conn, 'POST', `/memberships/${seg(membershipId)}/resume`, {});
  }

  private async membership(conn: ExtpayConnection, method: 'GET' | 'POST', path: string, body: unknown): Promise<ExtpayMembershipResult> {
    requireConnection(conn);
    const r = await this.exchange(conn, method, path, body, null);
    if (!r.ok) return r.error;
    const parsed = WireMembership.safeParse(r.json);
    if (!parsed.success) return badShape('membership', r.status);
    return { kind: 'membership', membership: fromWireMembership(parsed.data) };
  }

  private readPayment(r: { status: number; json: unknown }): ExtpayPaymentResult {
    const parsed = WirePayment.safeParse(r.json);
    if (!parsed.success) return badShape('payment', r.status);
    const payment = fromWirePayment(parsed.data);
    if (payment.failureMessage) payment.failureMessage = scrubPan(payment.failureMessage);
    return paymentOutcome(payment);
  }

  /**
   * One read-only or test call for the connection doctor (`doctor.ts`): the answer as it came, or the
   * error value. Nothing the doctor calls moves money or changes settings.
   */
  async probe(conn: ExtpayConnection, method: 'GET' | 'POST', path: string, body: unknown = null): Promise<Exchange> {
    requireConnection(conn);
    return this.exchange(conn, method, path, body, null);
  }

  /** Never throws for transport trouble; the API key never leaves this function except in the header. */
  private async exchange(conn: ExtpayConnection, method: 'GET' | 'POST', path: string, body: unknown, idempotencyKey: string | null): Promise<Exchange> {
    const headers: Record<string, string> = { authorization: `Bearer ${conn.apiKey}`, 'api-version-date': conn.apiVersionDate ?? EXTPAY_API_VERSION_DATE };
    if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
    const r = await exchangeJson(this.transport, conn.baseUrl.replace(/\/+$/, '') + path, { method, headers, body, timeoutMs: this.timeoutMs });
    if (r.kind === 'timeout')
      return { ok: false, error: failure('timeout', `The provider did not answer within ${this.timeoutMs} ms; the request may have gone through.`, { safeToRetry: true }) };
    if (r.kind === 'network') return { ok: false, error: failure('network_error', `Could not reach the provider${r.code ? ` (${r.code})` : ''}.`, { safeToRetry: true }) };
    if (r.status < 200 || r.status >= 300) return { ok: false, error: answerError(r.status, r.json) };
    if (r.json === null) return { ok: false, error: failure('bad_response', 'The provider answered with a body that is not JSON.', { httpStatus: r.status, safeToRetry: true }) };
    return { ok: true, status: r.status, json: r.json };
  }
}

export const extpayAdapter: ExtpayProviderAdapter = new ExtpayAdapter();
