import { type Exchange, fetchTransport, type ProviderTransport, undiciTransport } from '../transport.ts';
import { formatMajorAmount } from '../../app/currency.ts';
import { scrubPan } from '../../app/logger.ts';
import {
  type CardGatewayAdapter,
  type GatewayAccount,
  type GatewayResult,
  type GatewayQueriedTransaction,
  type GatewayQueryRequest,
  type GatewayQueryResult,
  type SaleRequest,
  type ValidateRequest,
} from '../card-gateway.ts';
import { classifyNmi } from './status.ts';
import { interpretNmiQuery, queryFailure } from './query.ts';

export { type XmlElement, interpretNmiQuery, nmiDateToIso, parseXml, readQueriedTransaction } from './query.ts';

/**
 * NMI's Direct Post API: a form-encoded POST to `{baseUrl}/api/transact.php`, answered with a query
 * string (`response=1&responsetext=SUCCESS&…`). The same code talks to https://secure.nmi.com and to
 * the sandbox (`src/sandbox/nmi.ts`).
 */
export const NMI_TRANSACT_PATH = '/api/transact.php';
/** NMI's Query API: `security_key` plus filters in, XML (`<nm_response>`) out. */
export const NMI_QUERY_PATH = '/api/query.php';
export const NMI_DEFAULT_TIMEOUT_MS = 30_000;

export interface NmiAdapterOptions {
  /** Covers the whole exchange, answer body included. */
  timeoutMs?: number;
  /** A fetch of the caller's (the unit tests' fakes); unset: undici's request (src/providers/transport.ts). */
  fetch?: typeof fetch;
}

/** "12/30", "1230" or "12/2030" → NMI's MMYY. Anything else is passed on for the gateway to refuse. */
export function toNmiExpiry(exp: string): string {
  const m = /^(\d{2})\s*\/?\s*(?:\d{2})?(\d{2})$/.exec(exp.trim());
  return m ? `${m[1]}${m[2]}` : exp.replace(/\D/g, '');
}

function securityKey(account: GatewayAccount): string {
  const key = account.credentials.security_key;
  // A gateway saved without its key is a configuration bug, not a decline.
  if (!key) throw new Error('NMI gateway account has no security_key credential');
  return key;
}

function setIfPresent(form: URLSearchParams, name: string, value: string | null | undefined) {
  if (value !== undefined && value !== null && value !== '') form.set(name, value);
}

/** The sale's form fields. Holds the card number in memory only; never log it. */
export function buildSaleForm(account: GatewayAccount, req: SaleRequest): URLSearchParams {
  if (!req.card === !req.vaultRef) throw new Error('an NMI sale needs exactly one of card or vaultRef');
  const form = new URLSearchParams();
  form.set('security_key', securityKey(account));
  form.set('type', 'sale');
  form.set('amount', formatMajorAmount(req.amount, req.currency));
  form.set('currency', req.currency.toUpperCase());
  form.set('orderid', req.attemptId);
  form.set('order_description', req.orderId);
  if (req.card) {
    form.set('ccnumber', req.card.number);
    form.set('ccexp', toNmiExpiry(req.card.exp));
    setIfPresent(form, 'cvv', req.card.cvv);
    if (req.saveCard) form.set('customer_vault', 'add_customer');
  } else if (req.vaultRef) {
    form.set('customer_vault_id', req.vaultRef);
  }
  setIfPresent(form, 'first_name', req.customer?.first_name);
  setIfPresent(form, 'last_name', req.customer?.last_name);
  setIfPresent(form, 'email', req.customer?.email);
  setIfPresent(form, 'address1', req.billing?.line1);
  setIfPresent(form, 'city', req.billing?.city);
  setIfPresent(form, 'state', req.billing?.state);
  setIfPresent(form, 'zip', req.billing?.postal_code);
  setIfPresent(form, 'country', req.billing?.country);
  setIfPresent(form, 'descriptor', account.descriptor);
  return form;
}

/**
 * NMI's account verification (`type=validate`, amount 0.00): the issuer checks the card and nothing
 * is charged; `customer_vault=add_customer` saves it, so the approved answer carries the
 * `customer_vault_id` later sales charge. Our attempt id is the `orderid`, as on a sale, so the Query
 * API finds it after a crash. Holds the card number in memory only.
 */
export function buildValidateForm(account: GatewayAccount, req: ValidateRequest): URLSearchParams {
  const form = buildSaleForm(account, { ...req, amount: 0, saveCard: true });
  form.set('type', 'validate');
  return form;
}

/**
 * Direct Post's refund names no currency: the amount is written in the charge's own currency exponent.
 * `orderid` is our refund attempt id: NMI records a refund as a transaction of its own, so the Query
 * API finds it by that order id after a crash.
 */
export function buildRefundForm(account: GatewayAccount, req: { transactionId: string; amount: number; currency: string; attemptId?: string }): URLSearchParams {
  const form = new URLSearchParams();
  form.set('security_key', securityKey(account));
  form.set('type', 'refund');
  form.set('transactionid', req.transactionId);
  form.set('amount', formatMajorAmount(req.amount, req.currency));
  setIfPresent(form, 'orderid', req.attemptId);
  return form;
}

/**
 * No `orderid` here: a void is an action on the original transaction, not a transaction of its own,
 * and an order id on it could at worst relabel the sale we find by its own attempt id. A void is
 * found by querying the sale's `transaction_id` (condition `canceled`, a `void` action).
 */
export function buildVoidForm(account: GatewayAccount, req: { transactionId: string }): URLSearchParams {
  const form = new URLSearchParams();
  form.set('security_key', securityKey(account));
  form.set('type', 'void');
  form.set('transactionid', req.transactionId);
  return form;
}

function failure(responseCode: 'network_error' | 'timeout' | 'bad_response', responseText: string): GatewayResult {
  // None of these is retried on another gateway: the request may have reached NMI and charged the card.
  return { kind: 'error', transactionId: null, responseCode, responseText, retryable: false };
}

/** An NMI answer body (a query string) → our result. Unparsable answers are errors, never approvals. */
export function interpretNmiAnswer(body: string): GatewayResult {
  const a = new URLSearchParams(body.trim());
  const response = a.get('response');
  const transactionId = a.get('transactionid') || null;
  const rawCode = a.get('response_code')?.trim() || '';
  const gatewayText = scrubPan(a.get('responsetext')?.trim() ?? '');
  switch (response) {
    case '1': {
      if (!transactionId) return failure('bad_response', 'The gateway approved without a transaction id.');
      return {
        kind: 'approved',
        transactionId,
        authCode: a.get('authcode') || null,
        responseCode: rawCode || '100',
        responseText: gatewayText || 'Approved',
        vaultRef: a.get('customer_vault_id') || null,
      };
    }
    case '2': {
      // Without a code NMI's generic "declined by processor" (200) is the honest reading.
      const responseCode = rawCode || '200';
      const status = classifyNmi(responseCode);
      return {
        kind: 'declined',
        transactionId,
        responseCode,
        responseText: gatewayText || status.text,
        retryable: status.outcome === 'soft_decline' && status.retryable,
        hard: status.outcome === 'hard_decline',
      };
    }
    case '3': {
      const responseCode = rawCode || '300';
      const status = classifyNmi(responseCode);
      return { kind: 'error', transactionId, responseCode, responseText: gatewayText || status.text, retryable: status.outcome === 'error' && status.retryable };
    }
    default:
      return failure('bad_response', 'The gateway answered with an unrecognised body.');
  }
}

// ---- the Query API ----

export function buildQueryForm(account: GatewayAccount, req: GatewayQueryRequest): URLSearchParams {
  if (!req.orderId && !req.transactionId) throw new Error('an NMI query needs an orderId or a transactionId');
  const form = new URLSearchParams();
  form.set('security_key', securityKey(account));
  setIfPresent(form, 'order_id', req.orderId);
  setIfPresent(form, 'transaction_id', req.transactionId);
  return form;
}

export class NmiAdapter implements CardGatewayAdapter {
  readonly kind = 'nmi';
  private readonly timeoutMs: number;
  private readonly transport: ProviderTransport;

  constructor(opts: NmiAdapterOptions = {}) {
    this.timeoutMs = opts.timeoutMs ?? NMI_DEFAULT_TIMEOUT_MS;
    this.transport = opts.fetch ? fetchTransport(opts.fetch) : undiciTransport;
  }

  sale(account: GatewayAccount, req: SaleRequest): Promise<GatewayResult> {
    return this.transact(account, buildSaleForm(account, req));
  }

  validate(account: GatewayAccount, req: ValidateRequest): Promise<GatewayResult> {
    return this.transact(account, buildValidateForm(account, req));
  }

  refund(account: GatewayAccount, req: { transactionId: string; amount: number; currency: string; attemptId: string }): Promise<GatewayResult> {
    return this.transact(account, buildRefundForm(account, req));
  }

  void(account: GatewayAccount, req: { transactionId: string; attemptId: string }): Promise<GatewayResult> {
    return this.transact(account, buildVoidForm(account, req));
  }

  /**
   * NMI's Query API by our attempt id (`order_id`) or NMI's `transaction_id`: what the gateway did with
   * an attempt whose answer was lost. Reads only; safe to repeat. NMI's reporting may trail a charge by
   * a few seconds, so a `not_found` is final only for an attempt older than that.
   */
  async query(account: GatewayAccount, req: GatewayQueryRequest): Promise<GatewayQueryResult> {
    const r = await this.post(account, NMI_QUERY_PATH, buildQueryForm(account, req), 'text/xml, application/xml, */*');
    if (!r.ok)
      return r.kind === 'timeout'
        ? queryFailure('timeout', `The gateway did not answer the query within ${this.timeoutMs} ms.`)
        : queryFailure('network_error', `Could not reach the gateway${r.code ? ` (${r.code})` : ''}.`);
    if (r.status !== 200) return queryFailure('bad_response', `The gateway answered the query with HTTP ${r.status}.`);
    return interpretNmiQuery(r.body, req);
  }

  /** Never throws for transport trouble; the form (card data) never leaves this function except on the wire. */
  private async transact(account: GatewayAccount, form: URLSearchParams): Promise<GatewayResult> {
    const r = await this.post(account, NMI_TRANSACT_PATH, form, 'text/plain, */*');
    if (!r.ok)
      return r.kind === 'timeout'
        ? failure('timeout', `The gateway did not answer within ${this.timeoutMs} ms; the charge may have gone through.`)
        : failure('network_error', `Could not reach the gateway${r.code ? ` (${r.code})` : ''}.`);
    if (r.status !== 200) return failure('bad_response', `The gateway answered HTTP ${r.status}.`);
    return interpretNmiAnswer(r.body);
  }

  private post(account: GatewayAccount, path: string, form: URLSearchParams, accept: string): Promise<Exchange> {
    const url = account.baseUrl.replace(/\/+$/, '') + path;
    return this.transport(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', accept }, body: form.toString(), timeoutMs: this.timeoutMs });
  }
}

/** NMI's names for the query types (the same shapes every card gateway answers with). */
export type NmiQueriedTransaction = GatewayQueriedTransaction;
export type NmiQueryResult = GatewayQueryResult;

export const nmiAdapter: CardGatewayAdapter = new NmiAdapter();
