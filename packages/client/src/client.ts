import createClient, { type Client, type Middleware } from 'openapi-fetch';
import { CheckstandError } from './errors.ts';
import type { components, paths } from './schema.ts';

export type Schemas = components['schemas'];
export type Order = Schemas['Order'];
export type OrderDetail = Schemas['OrderDetail'];
export type PaymentResult = Schemas['PaymentResult'];
export type UpsellResult = Schemas['UpsellResult'];
export type Transaction = Schemas['Transaction'];

type Json<P extends keyof paths, M extends 'post' | 'get' | 'patch' | 'put' | 'delete'> = paths[P][M] extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
export type CreateLeadInput = Json<'/checkout/leads', 'post'>;
export type CreateOrderInput = Json<'/checkout/orders', 'post'>;
export type ProcessPaymentInput = Json<'/checkout/orders/payment', 'post'>;
export type CaptureInput = Json<'/checkout/orders/capture', 'post'>;
export type UpsellInput = Json<'/checkout/orders/upsell', 'post'>;
export type RefundInput = Json<'/v1/orders/{order_number}/refunds', 'post'>;
export type VoidInput = Json<'/v1/orders/{order_number}/void', 'post'>;

export interface CheckstandOptions {
  /** Where Checkstand answers, e.g. `https://pay.example.com` or `http://localhost:3000`. */
  baseUrl: string;
  /** An API token (`csk_…`). Leave it out in a browser signed in with a session cookie (see `credentials` and `csrfToken`). */
  token?: string;
  /** fetch's credentials mode: `include` (or `same-origin`) sends the `checkstand_session` cookie, as the dashboard does. */
  credentials?: 'omit' | 'same-origin' | 'include';
  /** A session's CSRF token (`csrf_token` of POST /v1/sessions), sent as `x-csrf-token` on every POST, PATCH, PUT and DELETE; a function is read at each call. */
  csrfToken?: string | (() => string | null | undefined);
  /** Retries of a 429, a 503 or a network error, for reads and for POSTs that carry an Idempotency-Key (default 2). */
  maxRetries?: number;
  /** The longest wait between retries, in ms, whatever Retry-After says (default 5,000). */
  maxRetryDelayMs?: number;
  /** A fetch of your own (tests, proxies, keep-alive agents). */
  fetch?: (input: Request) => Promise<Response>;
  /** Makes the Idempotency-Key of a money-moving POST that was given none (default: crypto.randomUUID). */
  newIdempotencyKey?: () => string;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** Give money-moving POSTs an Idempotency-Key when the call brings none (default true). */
  autoIdempotencyKeys?: boolean;
}

export interface CallOptions {
  /** The Idempotency-Key to send (keep it to retry the same operation later); a random one by default. */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

/** POSTs that charge, refund, void or bill: each gets an Idempotency-Key unless the call brings one. */
export const MONEY_MOVING_POSTS: ReadonlySet<string> = new Set([
  '/checkout/orders',
  '/checkout/orders/payment',
  '/checkout/orders/reprocess',
  '/checkout/orders/capture',
  '/checkout/orders/complete',
  '/checkout/orders/upsell',
  '/v1/orders/{order_number}/refunds',
  '/v1/orders/{order_number}/void',
  '/v1/subscriptions/{id}/rebill',
  '/v1/subscriptions/{id}/payment-method',
]);

/** A first payment (Create Order, Process Payment, Reprocess), by HTTP status. A decline is an outcome, not an exception. */
export type PaymentOutcome =
  | { outcome: 'approved'; status: 200; message: string; order: PaymentResult }
  | { outcome: 'redirect'; status: 200; message: string; order: PaymentResult; redirectUrl: string }
  | { outcome: 'pending'; status: 202; message: string; order: PaymentResult }
  | { outcome: 'declined'; status: 402; message: string; order: PaymentResult; declineCode: string | null };

/**
 * Capture, by HTTP status: 200 captured (the order is completed); 202 the provider holds the money
 * and confirms later (not a decline: advance the customer); 422 the payment was not completed.
 */
export type CaptureOutcome =
  | { outcome: 'captured'; status: 200; message: string; order: Order }
  | { outcome: 'pending_external_confirmation'; status: 202; message: string; order: Order }
  | { outcome: 'not_completed'; status: 422; message: string; order: Order; code: string };

/** Process Upsell, by HTTP status: 200 added; 202 accepted by the provider, added when it confirms (not a decline); 402 declined. */
export type UpsellOutcome =
  | { outcome: 'added'; status: 200; message: string; order: UpsellResult }
  | { outcome: 'pending_external_confirmation'; status: 202; message: string; order: UpsellResult }
  | { outcome: 'declined'; status: 402; message: string; order: UpsellResult; declineCode: string | null };

/** The /v1 lists (GET answering `data[]` and `has_more`). */
export type ListPath = {
  [P in keyof paths]: paths[P] extends { get: { responses: { 200: { content: { 'application/json': { data: unknown[]; has_more: boolean } } } } } } ? P : never;
}[keyof paths];
type ListItem<P extends ListPath> = paths[P]['get']['responses'][200]['content']['application/json']['data'][number];
type ListParams<P extends ListPath> = paths[P]['get']['parameters'];
export type ListOptions<P extends ListPath> = {
  /** Filters and `limit` (the page size, 1–100); `starting_after` is managed by the iterator. */
  query?: Omit<NonNullable<ListParams<P>['query']>, 'starting_after'>;
} & (ListParams<P>['path'] extends Record<string, unknown> ? { path: ListParams<P>['path'] } : { path?: never });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function retryingFetch(base: (r: Request) => Promise<Response>, maxRetries: number, maxDelayMs: number) {
  return async (request: Request): Promise<Response> => {
    const retryable = request.method === 'GET' || request.headers.has('idempotency-key');
    for (let attempt = 0; ; attempt++) {
      const last = !retryable || attempt >= maxRetries;
      try {
        const res = await base(last ? request : request.clone());
        if (last || (res.status !== 429 && res.status !== 503)) return res;
        const after = Number(res.headers.get('retry-after'));
        await res.body?.cancel();
        await sleep(Math.min(maxDelayMs, Number.isFinite(after) && after > 0 ? after * 1000 : 250 * 2 ** attempt));
      } catch (err) {
        if (last || request.signal.aborted) throw err;
        await sleep(Math.min(maxDelayMs, 250 * 2 ** attempt));
      }
    }
  };
}

/**
 * A Checkstand API client: every path and body typed from the OpenAPI document (`api` is the
 * openapi-fetch client for any operation), plus the funnel's calls with their outcomes by HTTP
 * status, typed errors, automatic Idempotency-Keys and list iteration.
 */
export class Checkstand {
  /** Every operation, typed: `await cs.api.GET('/v1/orders/{order_number}', { params: { path: { order_number } } })`. */
  readonly api: Client<paths>;

  constructor(opts: CheckstandOptions) {
    const newKey = opts.newIdempotencyKey ?? (() => globalThis.crypto.randomUUID());
    this.api = createClient<paths>({
      baseUrl: opts.baseUrl.replace(/\/+$/, ''),
      fetch: retryingFetch(opts.fetch ?? ((r) => globalThis.fetch(r)), opts.maxRetries ?? 2, opts.maxRetryDelayMs ?? 5_000),
      headers: { ...opts.headers, ...(opts.token !== undefined ? { authorization: `Bearer ${opts.token}` } : {}), accept: 'application/json' },
      ...(opts.credentials ? { credentials: opts.credentials } : {}),
    });
    const csrfToken = opts.csrfToken;
    if (csrfToken !== undefined) {
      this.api.use({
        onRequest({ request }) {
          if (request.method === 'GET' || request.method === 'HEAD') return request;
          const value = typeof csrfToken === 'function' ? csrfToken() : csrfToken;
          if (value && !request.headers.has('x-csrf-token')) request.headers.set('x-csrf-token', value);
          return request;
        },
      });
    }
    const idempotency: Middleware = {
      onRequest({ request, schemaPath }) {
        if (request.method === 'POST' && MONEY_MOVING_POSTS.has(schemaPath) && !request.headers.has('idempotency-key')) {
          request.headers.set('idempotency-key', newKey());
        }
        return request;
      },
    };
    if (opts.autoIdempotencyKeys !== false) this.api.use(idempotency);
  }

  // ---- the funnel

  /** Create Lead: a new lead (`created` true, 201) or the open lead of the same email + campaign, updated (200). */
  async createLead(body: CreateLeadInput, opts: CallOptions = {}): Promise<{ created: boolean; order: Order }> {
    const r = await this.api.POST('/checkout/leads', { body, ...init(opts) });
    const data = ok(r);
    return { created: r.response.status === 201, order: data.data };
  }

  /** Create Order: the order and its first payment in one call. */
  async createOrder(body: CreateOrderInput, opts: CallOptions = {}): Promise<PaymentOutcome> {
    return paymentOutcome(await this.api.POST('/checkout/orders', { body, ...init(opts) }));
  }

  /** Process Payment: pays a lead (or a declined order). */
  async processPayment(body: ProcessPaymentInput, opts: CallOptions = {}): Promise<PaymentOutcome> {
    return paymentOutcome(await this.api.POST('/checkout/orders/payment', { body, ...init(opts) }));
  }

  /** Reprocess Payment: pays a declined order again. */
  async reprocessPayment(body: ProcessPaymentInput, opts: CallOptions = {}): Promise<PaymentOutcome> {
    return paymentOutcome(await this.api.POST('/checkout/orders/reprocess', { body, ...init(opts) }));
  }

  /** Capture: after a redirect (3-D Secure, extpay). Branch on `outcome` (the HTTP status), never treat 202 as a decline. */
  async capture(body: CaptureInput, opts: CallOptions = {}): Promise<CaptureOutcome> {
    const r = await this.api.POST('/checkout/orders/capture', { body, ...init(opts) });
    const status = r.response.status;
    if (status === 422 && r.error && isOrder(r.error.data) && r.error.error.code !== 'validation_failed') {
      return { outcome: 'not_completed', status: 422, message: r.error.message, order: r.error.data as Order, code: r.error.error.code };
    }
    const data = ok(r);
    if (status === 202) return { outcome: 'pending_external_confirmation', status: 202, message: data.message, order: data.data };
    return { outcome: 'captured', status: 200, message: data.message, order: data.data };
  }

  /** Complete Order: creates the fulfillment and subscriptions and sends the order webhooks; a repeat answers the same. */
  async completeOrder(orderNumber: string, opts: CallOptions = {}): Promise<Order> {
    return ok(await this.api.POST('/checkout/orders/complete', { body: { order_number: orderNumber }, ...init(opts) })).data;
  }

  /** Process Upsell (one click on the saved payment method). */
  async upsell(body: UpsellInput, opts: CallOptions = {}): Promise<UpsellOutcome> {
    const r = await this.api.POST('/checkout/orders/upsell', { body, ...init(opts) });
    const status = r.response.status;
    if (status === 402 && r.error && 'error' in r.error && isOrder(r.error.data)) {
      const d = r.error as Schemas['UpsellDeclined'];
      return { outcome: 'declined', status: 402, message: d.message, order: d.data, declineCode: d.error.decline_code };
    }
    const data = ok(r);
    if (status === 202) return { outcome: 'pending_external_confirmation', status: 202, message: data.message, order: data.data };
    return { outcome: 'added', status: 200, message: data.message, order: data.data };
  }

  /** Refunds a charge of the order (all of what is left by default). The gateway's refusal throws CheckstandError `refund_declined`. */
  async refund(orderNumber: string, body: RefundInput = {}, opts: CallOptions = {}): Promise<{ refund: Transaction; order: Order }> {
    return ok(await this.api.POST('/v1/orders/{order_number}/refunds', { params: { path: { order_number: orderNumber } }, body, ...init(opts) })).data;
  }

  /** Voids an unsettled charge. The gateway's refusal throws CheckstandError `void_declined`. */
  async void(orderNumber: string, body: VoidInput = {}, opts: CallOptions = {}): Promise<{ void: Transaction; order: Order }> {
    return ok(await this.api.POST('/v1/orders/{order_number}/void', { params: { path: { order_number: orderNumber } }, body, ...init(opts) })).data;
  }

  /** The order with its lines, transactions, disputes and timeline. */
  async getOrder(orderNumber: string): Promise<OrderDetail> {
    return ok(await this.api.GET('/v1/orders/{order_number}', { params: { path: { order_number: orderNumber } } })).data;
  }

  // ---- lists

  /**
   * Every item of a /v1 list, newest first, fetched a page at a time (`limit`, `starting_after`,
   * `has_more`): `for await (const order of cs.list('/v1/orders', { query: { status: 'completed' } })) …`
   */
  async *list<P extends ListPath>(path: P, options?: ListOptions<P>): AsyncGenerator<ListItem<P>, void, undefined> {
    let startingAfter: string | undefined;
    for (;;) {
      const query = { ...(options?.query ?? {}), ...(startingAfter ? { starting_after: startingAfter } : {}) };
      const get = this.api.GET as unknown as (p: string, init: unknown) => Promise<{ data?: { data: ListItem<P>[]; has_more: boolean }; error?: unknown; response: Response }>;
      const page = ok(await get(path, { params: { query, path: options?.path } }));
      for (const item of page.data) yield item;
      const last = page.data.at(-1) as Record<string, unknown> | undefined;
      if (!page.has_more || !last) return;
      startingAfter = String(last.id ?? last.order_number ?? last.customer_number);
    }
  }

  /** A whole list in memory (mind the size): `await cs.listAll('/v1/transactions', { query: { order_number } })`. */
  async listAll<P extends ListPath>(path: P, options?: ListOptions<P>): Promise<ListItem<P>[]> {
    const items: ListItem<P>[] = [];
    for await (const item of this.list(path, options)) items.push(item);
    return items;
  }
}

function init(opts: CallOptions): { headers?: Record<string, string>; signal?: AbortSignal } {
  return { ...(opts.idempotencyKey ? { headers: { 'idempotency-key': opts.idempotencyKey } } : {}), ...(opts.signal ? { signal: opts.signal } : {}) };
}

function isOrder(data: unknown): boolean {
  return !!data && typeof data === 'object' && (data as { object?: unknown }).object === 'order';
}

/** The 2xx body, or a CheckstandError for anything else. */
export function ok<T>(r: { data?: T; error?: unknown; response: Response }): T {
  if (r.response.ok && r.data !== undefined) return r.data;
  throw new CheckstandError(r.response.status, r.error ?? r.data, r.response.headers);
}

function paymentOutcome(r: { data?: Schemas['PaymentAnswer']; error?: unknown; response: Response }): PaymentOutcome {
  const status = r.response.status;
  if (status === 402 && isDeclined(r.error)) {
    return { outcome: 'declined', status: 402, message: r.error.message, order: r.error.data, declineCode: r.error.error.decline_code };
  }
  const body = ok(r);
  if (status === 202) return { outcome: 'pending', status: 202, message: body.message, order: body.data };
  if (body.data.redirect_required && body.data.redirect_url) {
    return { outcome: 'redirect', status: 200, message: body.message, order: body.data, redirectUrl: body.data.redirect_url };
  }
  return { outcome: 'approved', status: 200, message: body.message, order: body.data };
}

function isDeclined(e: unknown): e is Schemas['PaymentDeclined'] {
  return !!e && typeof e === 'object' && isOrder((e as { data?: unknown }).data) && !!(e as { error?: unknown }).error;
}
