import { createHash, createHmac } from 'node:crypto';
import { z } from 'zod';
import { randomToken } from '../app/ids.ts';
import { cardBrand } from '../providers/card.ts';
import { luhnValid } from './cards.ts';
import { type DeliveryAttempt, type DeliveryTarget, SandboxWebhookSender } from './webhook-sender.ts';

/**
 * The state and rules of the 3-D Secure gateway stand-in, apart from HTTP: accounts (one per test
 * api key), their payments, refunds, saved payment methods, webhook events and idempotency keys. In
 * memory only, and no card number is kept: a payment remembers the card's brand, last four digits,
 * expiry and which test behaviour it has.
 *
 * Written apart from the adapter (`src/providers/threeds/`): field names and the signature are
 * spelled out here again, so a drift in either one fails the tests.
 */

/** Luhn-valid magic cards. Any other Luhn-valid number behaves like `challenge`: 3DS is mandatory. */
export const THREEDS_CARDS = {
  /** 3DS completes without a challenge: succeeds at once. */
  frictionless: '4000000000003055',
  /** `requires_action`: the customer must pass the hosted 3DS page. */
  challenge: '4000000000003220',
  /** A challenge, then `processing` (under review) after authentication, settled later. */
  challengeThenReview: '4000000000003246',
  /** Declined by the issuer before 3DS: `do_not_honor`. */
  decline: '4000000000000002',
  /** Declined by the issuer before 3DS: `insufficient_funds`. */
  insufficientFunds: '4000000000009953',
  /** Frictionless when the customer pays; its merchant-initiated charges (rebills) decline `insufficient_funds` (soft). */
  rebillSoftDecline: '4000000000033052',
  /** Frictionless when the customer pays; its merchant-initiated charges (rebills) decline `stop_recurring` (hard). */
  rebillHardDecline: '4000000000033268',
} as const;

export type ThreeDsCardName = keyof typeof THREEDS_CARDS;

const BEHAVIOUR_BY_NUMBER = new Map<string, ThreeDsCardName>((Object.keys(THREEDS_CARDS) as ThreeDsCardName[]).map((name) => [THREEDS_CARDS[name], name]));

export const DEFAULT_WEBHOOK_RETRY_DELAYS_MS: readonly number[] = [0, 2_000, 10_000, 30_000];
export const DEFAULT_REVIEW_MS = 10_000;
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 5_000;
export const SIGNATURE_HEADER = 'x-gateway-signature';

export type PaymentStatus = 'succeeded' | 'declined' | 'requires_action' | 'processing' | 'canceled';

/** The moves a payment may make, checked in one place (`move`). */
const PAYMENT_MOVES = {
  requires_action: ['succeeded', 'declined', 'processing', 'canceled'],
  processing: ['succeeded', 'declined', 'canceled'],
  succeeded: ['canceled'],
  declined: [],
  canceled: [],
} as const satisfies Record<PaymentStatus, readonly PaymentStatus[]>;

export type ThreeDsResult = 'not_required' | 'frictionless' | 'challenge_required' | 'authenticated' | 'failed' | 'abandoned';

export const EVENT_TYPES = ['PAYMENT_SUCCEEDED', 'PAYMENT_FAILED', 'PAYMENT_UNDER_REVIEW'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

const DECLINE_TEXT = {
  missing_customer_details: 'billing email, first name and last name must be present',
  risk_session_missing: 'The risk session is missing: send risk.session_id from the risk SDK.',
  authentication_required: '3D Secure is required: return_url and cancel_url must be provided',
  incorrect_number: 'The card number is incorrect.',
  expired_card: 'The card has expired.',
  do_not_honor: 'Do not honor.',
  insufficient_funds: 'Insufficient funds.',
  authentication_failed: 'The cardholder failed 3D Secure authentication.',
  review_declined: 'The payment was declined after review.',
  stop_recurring: 'The cardholder asked to stop all recurring payments to this merchant.',
} as const;
type DeclineCode = keyof typeof DECLINE_TEXT;

/** How the rebill cards answer a merchant-initiated charge; every other saved card succeeds. */
const REBILL_DECLINES: Partial<Record<ThreeDsCardName, DeclineCode>> = {
  rebillSoftDecline: 'insufficient_funds',
  rebillHardDecline: 'stop_recurring',
};

interface CardSummary {
  brand: string;
  last4: string;
  exp_month: number;
  exp_year: number;
}

interface Payment {
  id: string;
  apiKey: string;
  status: PaymentStatus;
  amount: number;
  currency: string;
  reference: string;
  amountRefunded: number;
  card: CardSummary;
  behaviour: ThreeDsCardName;
  savePaymentMethod: boolean;
  paymentMethod: string | null;
  merchantInitiated: boolean;
  originalPaymentId: string | null;
  declineCode: DeclineCode | null;
  threeDSecure: ThreeDsResult | null;
  returnUrl: string | null;
  cancelUrl: string | null;
  created: number;
  /** The hosted page's address, fixed when the payment asks for authentication. */
  authenticateUrl: string | null;
}

interface SavedMethod {
  id: string;
  card: CardSummary;
  behaviour: ThreeDsCardName;
  /** The authenticated payment that saved it: merchant-initiated charges chain to it. */
  paymentId: string;
}

interface Refund {
  id: string;
  payment_id: string;
  /** Our refund attempt id, when the merchant sent one: what `GET /v1/refunds?reference=` finds it by. */
  reference: string | null;
  amount: number;
  currency: string;
  status: 'succeeded';
  created: number;
}

interface WebhookEvent {
  id: string;
  apiKey: string;
  type: EventType;
  paymentId: string;
  created: number;
  /** The JSON body, fixed when the event happened: every attempt sends the same bytes. */
  body: string;
  attempts: DeliveryAttempt[];
  delivered: boolean;
}

interface StoredAnswer {
  fingerprint: string;
  answer: Answer;
}

interface Account {
  apiKey: string;
  webhookUrl: string | null;
  webhookSecret: string | null;
  retryDelaysMs: number[];
  reviewMs: number | null;
  /** The kinds the account's webhook sends; an event of another kind is recorded, never delivered. */
  webhookEvents: Set<EventType>;
  /** Added to the account's signing clock (`t=` of the signature, `signed_at`, `created`): a gateway whose clock is off. */
  clockSkewSeconds: number;
  /** The key was revoked: every API call with it answers 401. */
  apiKeyRevoked: boolean;
  payments: Payment[];
  refunds: Refund[];
  methods: Map<string, SavedMethod>;
  events: WebhookEvent[];
  idempotency: Map<string, StoredAnswer>;
}

/** An HTTP answer, apart from Fastify. */
export interface Answer {
  status: number;
  body: unknown;
}

export interface AccountSettings {
  webhook_url?: string | null;
  webhook_secret?: string | null;
  webhook_retry_delays_ms?: number[];
  review_ms?: number | null;
  webhook_events?: EventType[];
  clock_skew_seconds?: number;
  api_key_revoked?: boolean;
}

export interface ThreeDsSandboxGatewayOptions {
  /** Per attempt. */
  webhookTimeoutMs?: number;
  fetch?: typeof fetch;
}

function error(status: number, type: string, code: string, message: string, param?: string): Answer {
  return { status, body: { error: { type, code, message, ...(param ? { param } : {}) } } };
}

const invalid = (code: string, message: string, param?: string) => error(400, 'invalid_request_error', code, message, param);
const notFound = (what: string, id: string) => error(404, 'invalid_request_error', 'resource_missing', `No such ${what}: '${id.slice(0, 80)}'`, 'id');

const now = () => Math.floor(Date.now() / 1000);
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

const HttpUrl = z.url({ protocol: /^https?$/ }).max(2000);

const CreatePaymentBody = z
  .object({
    amount: z.number().int().nonnegative().max(99_999_999),
    currency: z.string().regex(/^[A-Za-z]{3}$/, 'must be a three-letter ISO 4217 code'),
    reference: z.string().min(1).max(200),
    card: z
      .object({
        number: z.string().min(1).max(30),
        exp_month: z.number().int(),
        exp_year: z.number().int(),
        cvc: z.string().regex(/^\d{3,4}$/, 'must be 3 or 4 digits').optional(),
      })
      .strict()
      .optional(),
    payment_method: z.string().min(1).max(100).optional(),
    customer: z
      .object({ email: z.string().max(300).optional(), first_name: z.string().max(200).optional(), last_name: z.string().max(200).optional() })
      .strict()
      .optional(),
    risk: z.object({ session_id: z.string().max(200).optional() }).strict().optional(),
    return_url: HttpUrl.optional(),
    cancel_url: HttpUrl.optional(),
    save_payment_method: z.boolean().optional(),
    merchant_initiated: z.boolean().optional(),
    original_payment_id: z.string().min(1).max(100).optional(),
  })
  .strict();

const CreateRefundBody = z
  .object({ payment_id: z.string().min(1).max(100), amount: z.number().int().positive().optional(), reference: z.string().min(1).max(200).optional() })
  .strict();

/** The lookups by reference: `reference` is required (the sandbox lists nothing else). */
export const PaymentListQuery = z.object({ reference: z.string().min(1).max(200) }).strict();
export const RefundListQuery = z
  .object({ reference: z.string().min(1).max(200).optional(), payment_id: z.string().min(1).max(100).optional() })
  .strict()
  .refine((q) => q.reference !== undefined || q.payment_id !== undefined, 'send reference or payment_id');

export const AccountSettingsBody = z
  .object({
    api_key: z.string().startsWith('sk_test_', 'the sandbox takes only test keys (sk_test_…)').max(200),
    webhook_url: HttpUrl.nullable().optional(),
    webhook_secret: z.string().min(1).max(500).nullable().optional(),
    webhook_retry_delays_ms: z.array(z.number().int().min(0).max(3_600_000)).min(1).max(20).optional(),
    review_ms: z.number().int().min(0).max(86_400_000).nullable().optional(),
    webhook_events: z.array(z.enum(EVENT_TYPES)).max(EVENT_TYPES.length).optional(),
    clock_skew_seconds: z.number().int().min(-86_400).max(86_400).optional(),
    api_key_revoked: z.boolean().optional(),
  })
  .strict();

function zodAnswer(err: z.ZodError): Answer {
  // Messages name fields, never echo values (a card number stays out of the answer).
  const first = err.issues[0];
  const param = first?.path.join('.') || undefined;
  return invalid('parameter_invalid', `${param ? `${param}: ` : ''}${first?.message ?? 'invalid request'}`, param);
}

/** Stable JSON (sorted keys) so the same body in another key order is the same request. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value) ?? 'null';
}

function withPaymentId(url: string, paymentId: string): string {
  const u = new URL(url);
  u.searchParams.set('payment_id', paymentId);
  return u.toString();
}

export class ThreeDsSandboxGateway {
  private accounts = new Map<string, Account>();
  /** Every payment and event by id, for the hosted page and the control endpoints. */
  private payments = new Map<string, Payment>();
  private events = new Map<string, WebhookEvent>();
  private readonly sender: SandboxWebhookSender;

  constructor(opts: ThreeDsSandboxGatewayOptions = {}) {
    this.sender = new SandboxWebhookSender({ fetch: opts.fetch, timeoutMs: opts.webhookTimeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS, userAgent: 'checkstand-3ds-sandbox/1' });
  }

  // ---- accounts, auth, idempotency ----

  /** `Authorization: Bearer sk_test_…` → the api key, or the 401 answer. */
  authenticate(authorization: string | undefined): { apiKey: string } | Answer {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!m) return error(401, 'authentication_error', 'missing_api_key', 'Send your API key as Authorization: Bearer <api_key>.');
    const key = m[1]!;
    if (!key.startsWith('sk_test_') || key.length > 200) return error(401, 'authentication_error', 'invalid_api_key', 'Invalid API key: the sandbox accepts only test keys (sk_test_…).');
    if (this.accounts.get(key)?.apiKeyRevoked) return error(401, 'authentication_error', 'api_key_revoked', 'This API key was revoked.');
    return { apiKey: key };
  }

  private account(apiKey: string): Account {
    let a = this.accounts.get(apiKey);
    if (!a) {
      a = {
        apiKey,
        webhookUrl: null,
        webhookSecret: null,
        retryDelaysMs: [...DEFAULT_WEBHOOK_RETRY_DELAYS_MS],
        reviewMs: DEFAULT_REVIEW_MS,
        webhookEvents: new Set(EVENT_TYPES),
        clockSkewSeconds: 0,
        apiKeyRevoked: false,
        payments: [],
        refunds: [],
        methods: new Map(),
        events: [],
        idempotency: new Map(),
      };
      this.accounts.set(apiKey, a);
    }
    return a;
  }

  configureAccount(apiKey: string, s: AccountSettings) {
    const a = this.account(apiKey);
    if (s.webhook_url !== undefined) a.webhookUrl = s.webhook_url;
    if (s.webhook_secret !== undefined) a.webhookSecret = s.webhook_secret;
    if (s.webhook_retry_delays_ms !== undefined) a.retryDelaysMs = [...s.webhook_retry_delays_ms];
    if (s.review_ms !== undefined) a.reviewMs = s.review_ms;
    if (s.webhook_events !== undefined) a.webhookEvents = new Set(s.webhook_events);
    if (s.clock_skew_seconds !== undefined) a.clockSkewSeconds = s.clock_skew_seconds;
    if (s.api_key_revoked !== undefined) a.apiKeyRevoked = s.api_key_revoked;
    return this.accountView(a);
  }

  private accountView(a: Account) {
    // The secret is write-only: the view says whether one is set.
    return {
      api_key: a.apiKey,
      webhook_url: a.webhookUrl,
      webhook_secret_set: a.webhookSecret !== null,
      webhook_retry_delays_ms: a.retryDelaysMs,
      review_ms: a.reviewMs,
      webhook_events: [...a.webhookEvents],
      clock_skew_seconds: a.clockSkewSeconds,
      api_key_revoked: a.apiKeyRevoked,
    };
  }

  /**
   * Runs a POST once per (api key, Idempotency-Key): the same key with the same request replays the
   * first answer; with another request it is refused. 5xx answers are not kept.
   */
  idempotent(apiKey: string, key: string | undefined, request: { method: string; path: string; body: unknown }, run: () => Answer): Answer & { replayed: boolean } {
    if (key === undefined || key === '') return { ...run(), replayed: false };
    if (key.length > 255) return { ...invalid('idempotency_key_invalid', 'Idempotency-Key may be at most 255 characters.'), replayed: false };
    const acct = this.account(apiKey);
    const fingerprint = createHash('sha256').update(`${request.method} ${request.path} ${canonical(request.body)}`).digest('hex');
    const seen = acct.idempotency.get(key);
    if (seen) {
      if (seen.fingerprint !== fingerprint)
        return { ...error(400, 'idempotency_error', 'idempotency_key_reused', 'This Idempotency-Key was already used with a different request.'), replayed: false };
      return { ...seen.answer, replayed: true };
    }
    const answer = run();
    if (answer.status < 500) acct.idempotency.set(key, { fingerprint, answer: { status: answer.status, body: structuredClone(answer.body) } });
    return { ...answer, replayed: false };
  }

  // ---- the API ----

  /** POST /v1/payments. `hostedBase` is the sandbox's public prefix (e.g. http://127.0.0.1:3100/3ds). */
  createPayment(apiKey: string, rawBody: unknown, hostedBase: string): Answer {
    const parsed = CreatePaymentBody.safeParse(rawBody ?? {});
    if (!parsed.success) return zodAnswer(parsed.error);
    const b = parsed.data;
    if (!b.card === !b.payment_method) return invalid('parameter_invalid', 'Send exactly one of card and payment_method.', b.card ? 'payment_method' : 'card');
    const mit = b.merchant_initiated === true;
    if (mit && (!b.payment_method || !b.original_payment_id))
      return invalid('parameter_missing', 'A merchant_initiated payment needs payment_method and original_payment_id.', b.payment_method ? 'original_payment_id' : 'payment_method');
    if (!mit && b.original_payment_id) return invalid('parameter_invalid', 'original_payment_id applies only to merchant_initiated payments.', 'original_payment_id');
    // A zero amount is a setup: a new card authenticated and saved, nothing charged.
    if (b.amount === 0 && (mit || !b.card || b.save_payment_method !== true))
      return invalid('parameter_invalid', 'amount: must be greater than 0, except for a setup (a new card with save_payment_method true, not merchant_initiated).', 'amount');

    const acct = this.account(apiKey);
    let card: CardSummary;
    let behaviour: ThreeDsCardName;
    let pan: string | null = null;
    let saved: SavedMethod | null = null;
    if (b.payment_method) {
      saved = acct.methods.get(b.payment_method) ?? null;
      if (!saved) return error(400, 'invalid_request_error', 'resource_missing', `No such payment_method: '${b.payment_method.slice(0, 80)}'`, 'payment_method');
      card = saved.card;
      behaviour = saved.behaviour;
    } else {
      const c = b.card!;
      pan = c.number.replace(/[\s-]/g, '');
      const digits = /^\d+$/.test(pan) ? pan : '';
      card = { brand: cardBrand(digits), last4: digits.slice(-4), exp_month: c.exp_month, exp_year: c.exp_year };
      behaviour = BEHAVIOUR_BY_NUMBER.get(pan) ?? 'challenge';
    }

    if (mit) {
      const original = this.payments.get(b.original_payment_id!);
      // Chained to the customer-initiated payment that authenticated and saved the card, as card
      // networks chain merchant-initiated charges to the initial transaction; never to another rebill.
      if (!original || original.apiKey !== apiKey || original.id !== saved!.paymentId || original.status !== 'succeeded')
        return invalid('parameter_invalid', 'original_payment_id must be the succeeded payment that saved this payment_method.', 'original_payment_id');
    }

    const payment: Payment = {
      id: `pay_${randomToken(24)}`,
      apiKey,
      status: 'requires_action',
      amount: b.amount,
      currency: b.currency.toUpperCase(),
      reference: b.reference,
      amountRefunded: 0,
      card,
      behaviour,
      savePaymentMethod: b.save_payment_method === true,
      // A saved card charged again keeps its id on the payment.
      paymentMethod: saved ? saved.id : null,
      merchantInitiated: mit,
      originalPaymentId: mit ? b.original_payment_id! : null,
      declineCode: null,
      threeDSecure: null,
      returnUrl: b.return_url ?? null,
      cancelUrl: b.cancel_url ?? null,
      created: now(),
      authenticateUrl: null,
    };
    acct.payments.push(payment);
    this.payments.set(payment.id, payment);

    // A new payment takes its first status here; later changes go through `move`.
    const decline = (code: DeclineCode): Answer => {
      payment.status = 'declined';
      payment.declineCode = code;
      this.emit(acct, 'PAYMENT_FAILED', payment);
      return { status: 200, body: this.paymentView(payment) };
    };
    const succeed = (threeDSecure: ThreeDsResult): Answer => {
      payment.status = 'succeeded';
      payment.threeDSecure = threeDSecure;
      this.saveMethod(acct, payment);
      this.emit(acct, 'PAYMENT_SUCCEEDED', payment);
      return { status: 200, body: this.paymentView(payment) };
    };

    // Rebills and upsells on a saved card: chained to the authenticated payment, no 3DS.
    if (mit) {
      const rebillDecline = REBILL_DECLINES[behaviour];
      return rebillDecline ? decline(rebillDecline) : succeed('not_required');
    }

    const c = b.customer;
    if (!c?.first_name?.trim() || !c.last_name?.trim() || !EMAIL.test(c.email?.trim() ?? '')) return decline('missing_customer_details');
    if (!b.risk?.session_id?.trim()) return decline('risk_session_missing');
    // 3DS is mandatory here: without both URLs there is nowhere to send the customer back to.
    if (!b.return_url || !b.cancel_url) return decline('authentication_required');
    if (pan !== null) {
      if (!/^\d{12,19}$/.test(pan) || !luhnValid(pan)) return decline('incorrect_number');
      if (b.card!.exp_month < 1 || b.card!.exp_month > 12) return decline('expired_card');
      const d = new Date();
      const nowMonth = d.getUTCFullYear() * 12 + d.getUTCMonth() + 1;
      if (b.card!.exp_year * 12 + b.card!.exp_month < nowMonth) return decline('expired_card');
    }
    switch (behaviour) {
      case 'decline':
        return decline('do_not_honor');
      case 'insufficientFunds':
        return decline('insufficient_funds');
      case 'frictionless':
      case 'rebillSoftDecline':
      case 'rebillHardDecline':
        return succeed('frictionless');
      case 'challenge':
      case 'challengeThenReview':
        payment.threeDSecure = 'challenge_required';
        payment.authenticateUrl = `${hostedBase}/authenticate/${payment.id}`;
        return { status: 200, body: this.paymentView(payment) };
    }
  }

  retrievePayment(apiKey: string, id: string): Answer {
    const p = this.payments.get(id);
    // Another account's payment does not exist for this key.
    if (!p || p.apiKey !== apiKey) return notFound('payment', id);
    return { status: 200, body: this.paymentView(p) };
  }

  /** POST /v1/payments/{id}/cancel: voids a payment not yet settled (the sandbox settles nothing). */
  cancelPayment(apiKey: string, id: string): Answer {
    const p = this.payments.get(id);
    if (!p || p.apiKey !== apiKey) return notFound('payment', id);
    if (p.amountRefunded > 0 || !this.canMove(p, 'canceled'))
      return invalid('payment_not_cancelable', `A payment with status ${p.status}${p.amountRefunded > 0 ? ' and refunds' : ''} cannot be canceled.`);
    this.move(p, 'canceled');
    return { status: 200, body: this.paymentView(p) };
  }

  createRefund(apiKey: string, rawBody: unknown): Answer {
    const parsed = CreateRefundBody.safeParse(rawBody ?? {});
    if (!parsed.success) return zodAnswer(parsed.error);
    const acct = this.account(apiKey);
    const p = this.payments.get(parsed.data.payment_id);
    if (!p || p.apiKey !== apiKey) return error(400, 'invalid_request_error', 'resource_missing', `No such payment: '${parsed.data.payment_id.slice(0, 80)}'`, 'payment_id');
    if (p.status !== 'succeeded') return invalid('payment_not_refundable', `A payment with status ${p.status} cannot be refunded.`, 'payment_id');
    if (p.amount === 0) return invalid('payment_not_refundable', 'A setup (amount 0) charged nothing to refund.', 'payment_id');
    const left = p.amount - p.amountRefunded;
    if (left === 0) return invalid('charge_already_refunded', 'This payment has already been refunded in full.', 'payment_id');
    const amount = parsed.data.amount ?? left;
    if (amount > left) return invalid('amount_too_large', `Refund amount (${amount}) is greater than what is left to refund (${left}).`, 'amount');
    p.amountRefunded += amount;
    const refund: Refund = { id: `re_${randomToken(24)}`, payment_id: p.id, reference: parsed.data.reference ?? null, amount, currency: p.currency, status: 'succeeded', created: now() };
    acct.refunds.push(refund);
    return { status: 200, body: { object: 'refund', ...refund } };
  }

  /**
   * `GET /v1/payments?reference=…`: this account's payments created with that reference, newest first,
   * declined and canceled ones too; an empty list when there are none (never a 404).
   */
  listPayments(apiKey: string, reference: string): Answer {
    const a = this.accounts.get(apiKey);
    const data = (a?.payments ?? []).filter((p) => p.reference === reference).reverse().map((p) => this.paymentView(p));
    return { status: 200, body: { object: 'list', data, has_more: false } };
  }

  /** `GET /v1/refunds?reference=…` (or `payment_id=…`): this account's matching refunds, newest first. */
  listRefunds(apiKey: string, q: { reference?: string; payment_id?: string }): Answer {
    const a = this.accounts.get(apiKey);
    const data = (a?.refunds ?? [])
      .filter((r) => (q.reference === undefined || r.reference === q.reference) && (q.payment_id === undefined || r.payment_id === q.payment_id))
      .reverse()
      .map((r) => ({ object: 'refund', ...r }));
    return { status: 200, body: { object: 'list', data, has_more: false } };
  }

  // ---- the hosted 3DS page ----

  /** The payment behind a hosted page, from any account (the page's address is the secret). */
  hostedPayment(id: string) {
    const p = this.payments.get(id);
    if (!p) return null;
    return { id: p.id, status: p.status, amount: p.amount, currency: p.currency, reference: p.reference, last4: p.card.last4, brand: p.card.brand, awaiting: p.status === 'requires_action' };
  }

  /**
   * The customer's answer on the hosted page → where to send the browser. A page answered twice (the
   * back button) sends the browser where the payment's state says, changing nothing.
   */
  completeAuthentication(id: string, result: 'success' | 'fail' | 'abandon'): { redirect: string } | null {
    const p = this.payments.get(id);
    if (!p || !p.returnUrl || !p.cancelUrl) return null;
    const acct = this.account(p.apiKey);
    const back = (ok: boolean) => ({ redirect: withPaymentId(ok ? p.returnUrl! : p.cancelUrl!, p.id) });
    if (p.status !== 'requires_action') return back(p.status === 'succeeded' || p.status === 'processing');
    switch (result) {
      case 'success':
        p.threeDSecure = 'authenticated';
        if (p.behaviour === 'challengeThenReview') {
          this.move(p, 'processing');
          this.emit(acct, 'PAYMENT_UNDER_REVIEW', p);
          if (acct.reviewMs !== null) this.sender.later(acct.reviewMs, () => this.resolveReview(p.id, 'succeeded'));
        } else {
          this.move(p, 'succeeded');
          this.saveMethod(acct, p);
          this.emit(acct, 'PAYMENT_SUCCEEDED', p);
        }
        return back(true);
      case 'fail':
        p.threeDSecure = 'failed';
        p.declineCode = 'authentication_failed';
        this.move(p, 'declined');
        this.emit(acct, 'PAYMENT_FAILED', p);
        return back(false);
      case 'abandon':
        // The customer walked away: nothing is decided, the page still works if they come back.
        p.threeDSecure = 'abandoned';
        return back(false);
    }
  }

  // ---- control endpoints ----

  /** Settles a payment under review (the control endpoint, or the account's `review_ms` timer). */
  resolveReview(id: string, result: 'succeeded' | 'declined'): Answer {
    const p = this.payments.get(id);
    if (!p) return notFound('payment', id);
    if (p.status !== 'processing') return error(409, 'invalid_request_error', 'payment_not_under_review', `The payment is ${p.status}, not under review.`);
    const acct = this.account(p.apiKey);
    if (result === 'succeeded') {
      this.move(p, 'succeeded');
      this.saveMethod(acct, p);
      this.emit(acct, 'PAYMENT_SUCCEEDED', p);
    } else {
      p.declineCode = 'review_declined';
      this.move(p, 'declined');
      this.emit(acct, 'PAYMENT_FAILED', p);
    }
    return { status: 200, body: this.paymentView(p) };
  }

  ledger(apiKey: string) {
    const a = this.accounts.get(apiKey);
    const summary = { payments: 0, succeeded: 0, declined: 0, requires_action: 0, processing: 0, canceled: 0, charged_minor: 0, refunded_minor: 0 };
    if (!a) return { account: null, payments: [], refunds: [], events: [], summary };
    for (const p of a.payments) {
      summary.payments += 1;
      summary[p.status] += 1;
      if (p.status === 'succeeded') summary.charged_minor += p.amount;
      summary.refunded_minor += p.amountRefunded;
    }
    return {
      account: this.accountView(a),
      payments: a.payments.map((p) => this.paymentView(p)),
      refunds: a.refunds.map((r) => ({ object: 'refund', ...r })),
      events: a.events.map((e) => this.eventView(e)),
      summary,
    };
  }

  reset(apiKey?: string): void {
    const drop = apiKey === undefined ? [...this.accounts.values()] : [this.accounts.get(apiKey)].filter((a): a is Account => a !== undefined);
    for (const a of drop) {
      for (const p of a.payments) this.payments.delete(p.id);
      for (const e of a.events) this.events.delete(e.id);
      this.accounts.delete(a.apiKey);
    }
  }

  /** One more delivery attempt of an event, now, to the account's current URL and secret. */
  async redeliver(eventId: string): Promise<Answer> {
    const e = this.events.get(eventId);
    if (!e) return notFound('event', eventId);
    const acct = this.account(e.apiKey);
    if (!acct.webhookUrl) return error(409, 'invalid_request_error', 'no_webhook_url', 'The account has no webhook_url.');
    const attempt = await this.sender.attempt(this.target(acct, e), e);
    return { status: 200, body: { event: this.eventView(e), attempt } };
  }

  /** `GET /v1/webhook_endpoints` (a sandbox extension the connection doctor reads): where the account's events go. */
  webhookEndpoints(apiKey: string): Answer {
    const a = this.account(apiKey);
    const data = a.webhookUrl ? [{ id: 'we_default', url: a.webhookUrl, enabled: true, events: [...a.webhookEvents], secret_set: a.webhookSecret !== null }] : [];
    return { status: 200, body: { object: 'list', data } };
  }

  /** `POST /v1/webhook_endpoints/test`: one signed `WEBHOOK_TEST` event, now, to the account's URL; answers what the receiver said. */
  async testWebhook(apiKey: string): Promise<Answer> {
    const a = this.account(apiKey);
    if (!a.webhookUrl) return error(409, 'invalid_request_error', 'no_webhook_url', 'The account has no webhook_url.');
    const signedAt = now() + a.clockSkewSeconds;
    const body = JSON.stringify({ id: `evt_${randomToken(24)}`, type: 'WEBHOOK_TEST', created: signedAt, data: {} });
    let statusCode: number | null = null;
    let text: string | null = null;
    try {
      const res = await fetch(a.webhookUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(a.webhookSecret ? { [SIGNATURE_HEADER]: this.sign(a.webhookSecret, body, signedAt) } : {}) },
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(DEFAULT_WEBHOOK_TIMEOUT_MS),
      });
      statusCode = res.status;
      text = (await res.text()).slice(0, 2048);
    } catch (e) {
      text = String((e as Error).message).slice(0, 200);
    }
    return { status: 200, body: { object: 'webhook_test_delivery', url: a.webhookUrl, signed_at: signedAt, status_code: statusCode, response_body: text } };
  }

  /** Stops review timers and retries, and cuts deliveries short; nothing runs after this. */
  close(): void {
    this.sender.close();
  }

  // ---- internals ----

  private canMove(p: Payment, to: PaymentStatus): boolean {
    return (PAYMENT_MOVES[p.status] as readonly PaymentStatus[]).includes(to);
  }

  private move(p: Payment, to: PaymentStatus): void {
    if (!this.canMove(p, to)) throw new Error(`sandbox payment ${p.id} cannot move from ${p.status} to ${to}`);
    p.status = to;
  }

  private saveMethod(acct: Account, p: Payment): void {
    if (!p.savePaymentMethod || p.paymentMethod) return;
    const m: SavedMethod = { id: `pm_${randomToken(24)}`, card: p.card, behaviour: p.behaviour, paymentId: p.id };
    acct.methods.set(m.id, m);
    p.paymentMethod = m.id;
  }

  paymentView(p: Payment): Record<string, unknown> {
    const view: Record<string, unknown> = {
      id: p.id,
      object: 'payment',
      status: p.status,
      amount: p.amount,
      currency: p.currency,
      reference: p.reference,
      amount_refunded: p.amountRefunded,
      merchant_initiated: p.merchantInitiated,
      card: p.card,
      three_d_secure: p.threeDSecure,
      livemode: false,
      created: p.created,
    };
    if (p.paymentMethod) view.payment_method = p.paymentMethod;
    if (p.originalPaymentId) view.original_payment_id = p.originalPaymentId;
    if (p.status === 'declined' && p.declineCode) {
      view.decline_code = p.declineCode;
      view.message = DECLINE_TEXT[p.declineCode];
    }
    if (p.status === 'requires_action' && p.authenticateUrl) view.next_action = { type: 'redirect', url: p.authenticateUrl };
    return view;
  }

  private eventView(e: WebhookEvent) {
    return { id: e.id, type: e.type, payment_id: e.paymentId, created: e.created, delivered: e.delivered, attempts: e.attempts };
  }

  /** Records the event and, when the account has a webhook URL subscribed to its kind, delivers it on the retry schedule. */
  private emit(acct: Account, type: EventType, p: Payment): void {
    const id = `evt_${randomToken(24)}`;
    const created = now() + acct.clockSkewSeconds;
    const body = JSON.stringify({ id, type, created, data: { payment: this.paymentView(p) } });
    const e: WebhookEvent = { id, apiKey: acct.apiKey, type, paymentId: p.id, created, body, attempts: [], delivered: false };
    acct.events.push(e);
    this.events.set(id, e);
    if (acct.webhookUrl && acct.webhookEvents.has(type)) this.sender.deliver(this.target(acct, e), e);
  }

  /** Signs at `t` (the account's clock): `t=<unix>,v1=hex(HMAC-SHA256(secret, "<t>.<body>"))`. */
  private sign(secret: string, body: string, t: number): string {
    return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;
  }

  /** Where an account's events go, signed with its current secret and a fresh timestamp per attempt. */
  private target(acct: Account, e: WebhookEvent): DeliveryTarget {
    return {
      url: () => acct.webhookUrl,
      retryDelaysMs: () => acct.retryDelaysMs,
      // An account without a secret gets unsigned deliveries, which a receiver must refuse.
      headers: (): Record<string, string> => (acct.webhookSecret ? { [SIGNATURE_HEADER]: this.sign(acct.webhookSecret, e.body, now() + acct.clockSkewSeconds) } : {}),
    };
  }
}
