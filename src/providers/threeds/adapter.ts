import { scrubPan } from '../../app/logger.ts';
import type { GatewayAccount } from '../card-gateway.ts';
import { paymentOutcome } from './status.ts';
import type {
  ThreeDsCancelRequest,
  ThreeDsCancelResult,
  ThreeDsError,
  ThreeDsErrorCode,
  ThreeDsGatewayAdapter,
  ThreeDsPayment,
  ThreeDsPaymentLookup,
  ThreeDsPaymentRequest,
  ThreeDsPaymentResult,
  ThreeDsRefundLookup,
  ThreeDsRefundRequest,
  ThreeDsRefundResult,
  ThreeDsWireStatus,
} from './types.ts';
import { WireError, WireList, WirePayment, WireRefund, buildPaymentBody, fromWirePayment } from './wire.ts';
import { exchangeJson } from '../http-json.ts';
import { fetchTransport, type ProviderTransport, undiciTransport } from '../transport.ts';

/**
 * The 3-D Secure card gateway over HTTP: JSON in and out, `Authorization: Bearer <api_key>`,
 * an `Idempotency-Key` on every POST. The same code talks to a real gateway of this shape and to the
 * sandbox (`src/sandbox/threeds.ts`, mounted at `{sandbox}/3ds`). Wire format: docs/sandbox.md.
 */
export const THREEDS_DEFAULT_TIMEOUT_MS = 30_000;

export interface ThreeDsAdapterOptions {
  /** Covers the whole exchange, answer body included. */
  timeoutMs?: number;
  /** A fetch of the caller's (the unit tests' fakes); unset: undici's request (src/providers/transport.ts). */
  fetch?: typeof fetch;
}

function apiKey(account: GatewayAccount): string {
  const key = account.credentials.api_key;
  // A gateway saved without its key is a configuration bug, not a decline.
  if (!key) throw new Error('3DS gateway account has no api_key credential');
  return key;
}

function failure(code: ThreeDsErrorCode, message: string, opts: { httpStatus?: number | null; gatewayCode?: string | null; safeToRetry: boolean }): ThreeDsError {
  return { kind: 'error', code, gatewayCode: opts.gatewayCode ?? null, message: scrubPan(message), httpStatus: opts.httpStatus ?? null, safeToRetry: opts.safeToRetry };
}

type Exchange = { ok: true; status: number; json: unknown } | { ok: false; error: ThreeDsError };

/**
 * A non-2xx answer → an error value. Retrying with the same Idempotency-Key is safe after a 5xx or
 * a 409 (the first request still running); a 4xx is the gateway refusing the request itself.
 */
function answerError(status: number, json: unknown): ThreeDsError {
  const parsed = WireError.safeParse(json);
  const e = parsed.success ? parsed.data.error : null;
  const gatewayCode = e?.code ?? null;
  const message = e?.message || `The gateway answered HTTP ${status}.`;
  if (status === 401 || status === 403) return failure('authentication_failed', message, { httpStatus: status, gatewayCode, safeToRetry: false });
  if (status === 404) return failure('not_found', message, { httpStatus: status, gatewayCode, safeToRetry: false });
  if (status === 409) return failure('in_progress', message, { httpStatus: status, gatewayCode, safeToRetry: true });
  if (e?.type === 'idempotency_error') return failure('idempotency_conflict', message, { httpStatus: status, gatewayCode, safeToRetry: false });
  if (status >= 400 && status < 500) return failure('invalid_request', message, { httpStatus: status, gatewayCode, safeToRetry: false });
  if (status >= 500) return failure('gateway_error', message, { httpStatus: status, gatewayCode, safeToRetry: true });
  // 1xx/3xx: a redirect is never followed (it would re-send the card to wherever it points).
  return failure('bad_response', `The gateway answered HTTP ${status}.`, { httpStatus: status, safeToRetry: true });
}

/**
 * When a reference matches more than one payment (created without our Idempotency-Key, or by hand),
 * the one that moved money speaks for the attempt: succeeded, then under review, then waiting for
 * authentication; among equals the newest.
 */
const LOOKUP_PRIORITY: Readonly<Record<ThreeDsWireStatus, number>> = { succeeded: 0, processing: 1, requires_action: 2, canceled: 3, declined: 4 };

export function pickByReference(payments: ThreeDsPayment[]): ThreeDsPayment | null {
  return [...payments].sort((a, b) => LOOKUP_PRIORITY[a.status] - LOOKUP_PRIORITY[b.status] || b.created - a.created)[0] ?? null;
}

function outcomeOf(payment: ThreeDsPayment): ThreeDsPaymentResult {
  if (payment.message) payment.message = scrubPan(payment.message);
  return paymentOutcome(payment);
}

const REFUND_PRIORITY: Readonly<Record<WireRefund['status'], number>> = { succeeded: 0, pending: 1, failed: 2 };

function refundResult(w: WireRefund): ThreeDsRefundResult {
  const base = { refundId: w.id, paymentId: w.payment_id };
  switch (w.status) {
    case 'succeeded':
      return { kind: 'refunded', ...base, amount: w.amount, currency: w.currency.toUpperCase() };
    case 'pending':
      return { kind: 'refund_pending', ...base, amount: w.amount, currency: w.currency.toUpperCase() };
    case 'failed':
      return { kind: 'refund_failed', ...base, message: scrubPan(w.message ?? 'The refund failed.') };
  }
}

export class ThreeDsAdapter implements ThreeDsGatewayAdapter {
  readonly kind = 'threeds' as const;
  private readonly timeoutMs: number;
  private readonly transport: ProviderTransport;

  constructor(opts: ThreeDsAdapterOptions = {}) {
    this.timeoutMs = opts.timeoutMs ?? THREEDS_DEFAULT_TIMEOUT_MS;
    this.transport = opts.fetch ? fetchTransport(opts.fetch) : undiciTransport;
  }

  async createPayment(account: GatewayAccount, req: ThreeDsPaymentRequest): Promise<ThreeDsPaymentResult> {
    const body = buildPaymentBody(req);
    const r = await this.exchange(account, 'POST', '/v1/payments', body, req.idempotencyKey ?? req.attemptId);
    return r.ok ? this.readPayment(r) : r.error;
  }

  async retrievePayment(account: GatewayAccount, paymentId: string): Promise<ThreeDsPaymentResult> {
    const r = await this.exchange(account, 'GET', `/v1/payments/${encodeURIComponent(paymentId)}`, null, null);
    return r.ok ? this.readPayment(r) : r.error;
  }

  async refund(account: GatewayAccount, req: ThreeDsRefundRequest): Promise<ThreeDsRefundResult> {
    if (req.amount !== undefined && (!Number.isSafeInteger(req.amount) || req.amount <= 0))
      throw new RangeError(`refund amount must be a positive integer in minor units, got ${req.amount}`);
    // The reference lets the refund be found again by our attempt id if this answer is lost.
    const body: Record<string, unknown> = { payment_id: req.paymentId, reference: req.attemptId };
    if (req.amount !== undefined) body.amount = req.amount;
    const r = await this.exchange(account, 'POST', '/v1/refunds', body, req.attemptId);
    if (!r.ok) return r.error;
    const parsed = WireRefund.safeParse(r.json);
    if (!parsed.success) return failure('bad_response', 'The gateway answered with an unrecognised refund.', { httpStatus: r.status, safeToRetry: true });
    return refundResult(parsed.data);
  }

  async findPaymentByReference(account: GatewayAccount, reference: string): Promise<ThreeDsPaymentLookup> {
    const r = await this.exchange(account, 'GET', `/v1/payments?${new URLSearchParams({ reference })}`, null, null);
    if (!r.ok) return r.error;
    const items = this.readList(r, WirePayment, 'payment');
    if (!Array.isArray(items)) return items;
    // Only exact matches count: a gateway that matched loosely must not hand us another attempt's payment.
    const payment = pickByReference(items.map(fromWirePayment).filter((p) => p.reference === reference));
    return payment ? outcomeOf(payment) : { kind: 'not_found' };
  }

  async findRefundByReference(account: GatewayAccount, reference: string): Promise<ThreeDsRefundLookup> {
    const r = await this.exchange(account, 'GET', `/v1/refunds?${new URLSearchParams({ reference })}`, null, null);
    if (!r.ok) return r.error;
    const items = this.readList(r, WireRefund, 'refund');
    if (!Array.isArray(items)) return items;
    const refund = items.filter((w) => w.reference === reference).sort((a, b) => REFUND_PRIORITY[a.status] - REFUND_PRIORITY[b.status])[0];
    return refund ? refundResult(refund) : { kind: 'not_found' };
  }

  async cancel(account: GatewayAccount, req: ThreeDsCancelRequest): Promise<ThreeDsCancelResult> {
    const r = await this.exchange(account, 'POST', `/v1/payments/${encodeURIComponent(req.paymentId)}/cancel`, {}, req.attemptId);
    if (!r.ok) return r.error;
    const parsed = WirePayment.safeParse(r.json);
    if (!parsed.success) return failure('bad_response', 'The gateway answered with an unrecognised payment.', { httpStatus: r.status, safeToRetry: true });
    const payment = fromWirePayment(parsed.data);
    if (payment.status !== 'canceled')
      return failure('bad_response', `The gateway answered a cancel with status ${payment.status}.`, { httpStatus: r.status, safeToRetry: false });
    return { kind: 'canceled', paymentId: payment.id, payment };
  }

  private readPayment(r: { status: number; json: unknown }): ThreeDsPaymentResult {
    const parsed = WirePayment.safeParse(r.json);
    if (!parsed.success) return failure('bad_response', 'The gateway answered with an unrecognised payment.', { httpStatus: r.status, safeToRetry: true });
    return outcomeOf(fromWirePayment(parsed.data));
  }

  /** A list answer's items, each read with `item`; one unreadable item makes the whole answer unreadable. */
  private readList<T extends typeof WirePayment | typeof WireRefund>(r: { status: number; json: unknown }, item: T, what: string): ReturnType<T['parse']>[] | ThreeDsError {
    const list = WireList.safeParse(r.json);
    const bad = () => failure('bad_response', `The gateway answered with an unrecognised ${what} list.`, { httpStatus: r.status, safeToRetry: true });
    if (!list.success) return bad();
    const out: ReturnType<T['parse']>[] = [];
    for (const raw of list.data.data) {
      const parsed = item.safeParse(raw);
      if (!parsed.success) return bad();
      out.push(parsed.data as ReturnType<T['parse']>);
    }
    return out;
  }

  /** Never throws for transport trouble; the body (card data) never leaves this function except on the wire. */
  private async exchange(account: GatewayAccount, method: 'GET' | 'POST', path: string, body: unknown, idempotencyKey: string | null): Promise<Exchange> {
    const headers: Record<string, string> = { authorization: `Bearer ${apiKey(account)}` };
    if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
    const r = await exchangeJson(this.transport, account.baseUrl.replace(/\/+$/, '') + path, { method, headers, body, timeoutMs: this.timeoutMs });
    if (r.kind === 'timeout')
      return { ok: false, error: failure('timeout', `The gateway did not answer within ${this.timeoutMs} ms; the request may have gone through.`, { safeToRetry: true }) };
    if (r.kind === 'network') return { ok: false, error: failure('network_error', `Could not reach the gateway${r.code ? ` (${r.code})` : ''}.`, { safeToRetry: true }) };
    if (r.status < 200 || r.status >= 300) return { ok: false, error: answerError(r.status, r.json) };
    if (r.json === null) return { ok: false, error: failure('bad_response', 'The gateway answered with a body that is not JSON.', { httpStatus: r.status, safeToRetry: true }) };
    return { ok: true, status: r.status, json: r.json };
  }
}

export const threeDsAdapter: ThreeDsGatewayAdapter = new ThreeDsAdapter();
