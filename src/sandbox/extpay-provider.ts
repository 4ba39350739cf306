import { createHash } from 'node:crypto';
import { z } from 'zod';
import { randomToken } from '../app/ids.ts';
import { cardBrand } from '../providers/card.ts';
import { currencyExponent, formatMajorAmount } from '../app/currency.ts';
import { luhnValid } from './cards.ts';
import { SandboxWebhookSender } from './webhook-sender.ts';
import { DEFAULT_WEBHOOK_API_VERSION_DATE, ExtpayWebhookOutbox, SANDBOX_API_VERSION_DATES, type SandboxWebhookEvent, type WebhookCompany, webhookIdOf } from './extpay-webhooks.ts';
import { EXTPAY_EVENT_TYPES } from '../providers/extpay/webhook.ts';

/**
 * The state and rules of the external checkout provider stand-in (Whop), apart from HTTP: two
 * separate environments (`sandbox`, `production`), each with its companies (`biz_…`), API keys and
 * their permissions, plans, checkout configurations, members, saved payment methods, payments,
 * memberships, refunds, disputes, setup intents and signed webhook events. In memory only; no card
 * number is kept (a payment remembers brand, last four and which test behaviour the card has).
 *
 * Written apart from the adapter (`src/providers/extpay/`): paths, field names and the signature are
 * spelled out here again, so a drift in either one fails the tests. Wire format: docs/sandbox.md.
 */

export const EXTPAY_ENVIRONMENTS = ['sandbox', 'production'] as const;
export type ExtpayEnv = (typeof EXTPAY_ENVIRONMENTS)[number];

/** Luhn-valid magic cards for the hosted purchase page. Any other Luhn-valid number is `paid`. */
export const EXTPAY_CARDS = {
  /** Paid at once. */
  paid: '4242424242424242',
  /** The money is held, not settled: `pending` until the settle control endpoint. */
  pending: '4000000000000077',
  /** Declined by the issuer: `payment.failed`. */
  failed: '4000000000000002',
  /** Denied by the provider's own fraud check before the card network: only `payment.created`. */
  fraudDenied: '4100000000000019',
  /** Paid at checkout, but off-session charges of the saved card (upsells) are declined. */
  offSessionDecline: '4000000000000341',
} as const;
export type ExtpayCardName = keyof typeof EXTPAY_CARDS;
const BEHAVIOUR_BY_NUMBER = new Map<string, ExtpayCardName>((Object.keys(EXTPAY_CARDS) as ExtpayCardName[]).map((n) => [EXTPAY_CARDS[n], n]));

/** The Whop permissions the sandbox knows; a key registered without a list has them all. */
export const EXTPAY_PERMISSIONS = [
  'checkout_configuration:create',
  'checkout_configuration:basic:read',
  'plan:create',
  'plan:basic:read',
  'access_pass:create',
  'access_pass:update',
  'access_pass:basic:read',
  'payment:basic:read',
  'payment:manage',
  'payment:charge',
  'payment:dispute:read',
  'member:basic:read',
  'member:email:read',
  'member:manage',
  'member:payment_methods:read',
  'developer:manage_webhook',
] as const;
export type ExtpayPermission = (typeof EXTPAY_PERMISSIONS)[number];

/** What each operation needs (from Whop's API reference "Required permissions", trimmed to what we model). */
const NEEDS = {
  // Whop's "Create checkout configuration" lists all five (docs.whop.com/api-reference/checkout-configurations).
  createCheckout: ['checkout_configuration:create', 'plan:create', 'access_pass:create', 'access_pass:update', 'checkout_configuration:basic:read'],
  readCheckout: ['checkout_configuration:basic:read'],
  readPlan: ['plan:basic:read'],
  readPayment: ['payment:basic:read'],
  charge: ['payment:charge'],
  chargeInlinePlan: ['payment:charge', 'plan:create', 'access_pass:create'],
  managePayment: ['payment:manage'],
  readDispute: ['payment:dispute:read'],
  readMembership: ['member:basic:read'],
  manageMembership: ['member:manage'],
  readPaymentMethods: ['member:payment_methods:read'],
  manageWebhooks: ['developer:manage_webhook'],
} as const satisfies Record<string, readonly ExtpayPermission[]>;

/** The kinds a company's webhook subscribes to unless told otherwise: the service's eleven (spec §6.1). */
export const DEFAULT_WEBHOOK_EVENTS = EXTPAY_EVENT_TYPES;

export const DEFAULT_WEBHOOK_RETRY_DELAYS_MS: readonly number[] = [0, 2_000, 10_000, 30_000];
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 5_000;
const DAY_MS = 86_400_000;

type PaymentStatus = 'pending' | 'paid' | 'open' | 'void';
type MembershipStatus = 'trialing' | 'active' | 'past_due' | 'canceled' | 'expired';
type RefundStatus = 'pending' | 'succeeded' | 'failed';
const DISPUTE_STATUSES = ['warning_needs_response', 'warning_under_review', 'warning_closed', 'needs_response', 'under_review', 'won', 'lost', 'closed', 'other'] as const;
type DisputeStatus = (typeof DISPUTE_STATUSES)[number];

/** The moves a payment may make, checked in one place (`move`). */
const PAYMENT_MOVES = {
  pending: ['paid', 'open', 'void'],
  paid: [],
  open: [],
  void: [],
} as const satisfies Record<PaymentStatus, readonly PaymentStatus[]>;

interface Company extends WebhookCompany {
  title: string;
  refunds: 'auto' | 'manual';
  chargeSettleMs: number;
}

interface ApiKey {
  key: string;
  companyId: string;
  permissions: Set<string>;
}

interface Product {
  id: string;
  companyId: string;
  title: string;
  externalIdentifier: string | null;
}

interface Plan {
  id: string;
  companyId: string;
  productId: string;
  title: string | null;
  planType: 'one_time' | 'renewal';
  /** Upper case ISO 4217. */
  currency: string;
  /** Minor units. */
  initialPrice: number;
  renewalPrice: number;
  billingPeriodDays: number | null;
  trialPeriodDays: number | null;
  visibility: string;
  /** Whop's private notes on a plan (Checkstand marks a saved-method charge's plan with its attempt id). */
  internalNotes: string | null;
  createdAt: string;
}

interface CheckoutConfiguration {
  id: string;
  companyId: string;
  planId: string;
  metadata: Record<string, unknown>;
  redirectUrl: string | null;
  affiliateCode: string | null;
  /** Fixed from the Host the configuration was created through. */
  purchaseUrl: string;
  createdAt: string;
}

interface Member {
  id: string;
  companyId: string;
  userId: string;
  email: string;
  name: string | null;
}

interface PaymentMethod {
  id: string;
  companyId: string;
  memberId: string;
  brand: string;
  last4: string;
  behaviour: ExtpayCardName;
  createdAt: string;
}

interface Payment {
  id: string;
  companyId: string;
  planId: string;
  memberId: string;
  membershipId: string | null;
  checkoutId: string | null;
  paymentMethodId: string | null;
  status: PaymentStatus;
  substatus: string;
  /** Minor units. */
  amount: number;
  currency: string;
  refunded: number;
  billingReason: 'one_time' | 'subscription_create' | 'subscription_cycle' | 'manual';
  failureMessage: string | null;
  card: { brand: string; last4: string };
  behaviour: ExtpayCardName;
  metadata: Record<string, unknown>;
  createdAt: string;
  paidAt: string | null;
  refundedAt: string | null;
  disputeAlertedAt: string | null;
}

interface Membership {
  id: string;
  companyId: string;
  planId: string;
  memberId: string;
  paymentMethodId: string | null;
  status: MembershipStatus;
  cancelAtPeriodEnd: boolean;
  canceledAt: string | null;
  paused: boolean;
  periodStart: string | null;
  periodEnd: string | null;
  metadata: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

interface Refund {
  id: string;
  companyId: string;
  paymentId: string;
  requested: number;
  amount: number;
  currency: string;
  status: RefundStatus;
  /** refund.created has been sent; later changes send refund.updated. */
  announced: boolean;
  createdAt: string;
}

interface Dispute {
  id: string;
  companyId: string;
  paymentId: string;
  status: DisputeStatus;
  reason: string;
  amount: number;
  currency: string;
  createdAt: string;
  updatedAt: string;
}

type WebhookEvent = SandboxWebhookEvent;

interface EnvState {
  companies: Map<string, Company>;
  keys: Map<string, ApiKey>;
  products: Map<string, Product>;
  plans: Map<string, Plan>;
  checkouts: Map<string, CheckoutConfiguration>;
  members: Map<string, Member>;
  methods: Map<string, PaymentMethod>;
  payments: Map<string, Payment>;
  memberships: Map<string, Membership>;
  refunds: Map<string, Refund>;
  disputes: Map<string, Dispute>;
  events: Map<string, WebhookEvent>;
  idempotency: Map<string, { fingerprint: string; answer: Answer }>;
}

/** An HTTP answer, apart from Fastify. */
export interface Answer {
  status: number;
  body: unknown;
}

export interface ExtpaySandboxProviderOptions {
  /** Per delivery attempt. */
  webhookTimeoutMs?: number;
  fetch?: typeof fetch;
}

function error(status: number, type: string, code: string, message: string): Answer {
  return { status, body: { error: { type, code, message } } };
}
const invalid = (code: string, message: string) => error(400, 'invalid_request_error', code, message);
const notFound = (what: string, id: string) => error(404, 'invalid_request_error', 'resource_missing', `No such ${what}: '${id.slice(0, 80)}'`);

const nowIso = () => new Date().toISOString();
const plusDays = (iso: string, days: number) => new Date(Date.parse(iso) + days * DAY_MS).toISOString();
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const HttpUrl = z.url({ protocol: /^https?$/ }).max(2000);

/** Decimal major units → minor units, or null when negative or finer than the currency allows. */
function toMinor(value: number, currency: string): number | null {
  if (!Number.isFinite(value) || value < 0) return null;
  const scaled = value * 10 ** currencyExponent(currency);
  const m = Math.round(scaled);
  return Math.abs(scaled - m) > 1e-6 || !Number.isSafeInteger(m) ? null : m;
}
const toDecimal = (minor: number, currency: string) => Number(formatMajorAmount(minor, currency));

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

/** A `created_after`-style parameter: ISO 8601 or Unix seconds → epoch ms; null when absent. */
function parseTimeParam(v: unknown): number | null | 'invalid' {
  if (v === undefined || v === null || v === '') return null;
  if (typeof v !== 'string') return 'invalid';
  const ms = /^\d{1,12}$/.test(v) ? Number(v) * 1000 : Date.parse(v);
  return Number.isFinite(ms) ? ms : 'invalid';
}

function zodAnswer(err: z.ZodError): Answer {
  // Messages name fields, never echo values.
  const first = err.issues[0];
  const param = first?.path.join('.') || undefined;
  return invalid('parameter_invalid', `${param ? `${param}: ` : ''}${first?.message ?? 'invalid request'}`);
}

const Metadata = z
  .record(z.string().max(100), z.unknown())
  .refine((m) => Object.keys(m).length <= 50, 'at most 50 keys')
  .refine((m) => JSON.stringify(m).length <= 10_000, 'too large');

const PlanInput = z
  .object({
    company_id: z.string().min(1).max(100).optional(),
    currency: z.string().regex(/^[A-Za-z]{3}$/, 'must be a three-letter currency code'),
    plan_type: z.enum(['one_time', 'renewal']).optional(),
    initial_price: z.number().nonnegative().max(1_000_000).optional(),
    renewal_price: z.number().nonnegative().max(1_000_000).optional(),
    billing_period: z.number().int().min(1).max(3650).optional(),
    trial_period_days: z.number().int().min(0).max(3650).optional(),
    expiration_days: z.number().int().min(1).optional(),
    title: z.string().max(200).optional(),
    description: z.string().max(2000).optional(),
    internal_notes: z.string().max(2000).optional(),
    visibility: z.enum(['visible', 'hidden', 'archived', 'quick_link']).optional(),
    product_id: z.string().min(1).max(100).optional(),
    product: z.object({ external_identifier: z.string().min(1).max(200), title: z.string().min(1).max(200) }).optional(),
    force_create_new_plan: z.boolean().optional(),
  })
  .strict();
type PlanInput = z.infer<typeof PlanInput>;

const CreateCheckoutBody = z
  .object({
    plan: PlanInput.optional(),
    plan_id: z.string().min(1).max(100).optional(),
    metadata: Metadata.nullish(),
    redirect_url: HttpUrl.nullish(),
    affiliate_code: z.string().max(100).nullish(),
    mode: z.enum(['payment', 'setup']).nullish(),
  })
  .strict();

const CreatePaymentBody = z
  .object({
    company_id: z.string().min(1).max(100),
    member_id: z.string().min(1).max(100),
    payment_method_id: z.string().min(1).max(100),
    plan: PlanInput.omit({ company_id: true }).optional(),
    plan_id: z.string().min(1).max(100).optional(),
  })
  .strict();

const RefundBody = z.object({ partial_amount: z.number().positive().nullish() }).strict();
const CancelBody = z.object({ cancellation_mode: z.enum(['at_period_end', 'immediate']).nullish() }).strict();
const PauseBody = z.object({ void_payments: z.boolean().nullish() }).strict();

export const CompanySettingsBody = z
  .object({
    company_id: z.string().regex(/^biz_[A-Za-z0-9]{1,60}$/, 'must look like biz_…'),
    title: z.string().min(1).max(200).optional(),
    api_keys: z
      .array(z.object({ key: z.string().min(8).max(200), permissions: z.array(z.enum(EXTPAY_PERMISSIONS)).max(EXTPAY_PERMISSIONS.length).optional() }).strict())
      .max(20)
      .optional(),
    webhook_url: HttpUrl.nullable().optional(),
    webhook_secret: z.string().min(1).max(500).nullable().optional(),
    webhook_events: z.array(z.string().min(1).max(100)).max(200).optional(),
    webhook_retry_delays_ms: z.array(z.number().int().min(0).max(3_600_000)).min(1).max(20).optional(),
    refunds: z.enum(['auto', 'manual']).optional(),
    charge_settle_ms: z.number().int().min(0).max(86_400_000).optional(),
    /** Skews the company's signing clock (webhook-timestamp and the body's timestamp), in seconds. */
    clock_skew_seconds: z.number().int().min(-86_400).max(86_400).optional(),
    webhook_api_version_date: z.enum(SANDBOX_API_VERSION_DATES).optional(),
  })
  .strict();
export type CompanySettings = z.infer<typeof CompanySettingsBody>;

export const SettleBody = z.object({ result: z.enum(['paid', 'failed']).optional() }).strict();
export const FailRenewalBody = z.object({ final: z.boolean().optional() }).strict();
export const OpenDisputeBody = z.object({ status: z.enum(DISPUTE_STATUSES).optional(), reason: z.string().min(1).max(200).optional(), amount: z.number().positive().optional() }).strict();
export const UpdateDisputeBody = z.object({ status: z.enum(DISPUTE_STATUSES), reason: z.string().min(1).max(200).optional() }).strict();
export const SettleRefundBody = z.object({ amount: z.number().nonnegative().optional(), status: z.enum(['succeeded', 'failed']).optional() }).strict();

/** The caller of an API route: its key and company. */
export interface Caller {
  env: ExtpayEnv;
  key: ApiKey;
  company: Company;
}

/** The hosted purchase page's form, as strings. */
export interface PurchaseForm {
  session?: string;
  email?: string;
  name?: string;
  card_number?: string;
  setup_future_usage?: string;
  return_url?: string;
}

export type PurchaseResult =
  /** Nothing was created: the page shows the message again. */
  | { kind: 'invalid'; status: number; message: string }
  | { kind: 'completed'; paymentId: string; planId: string; status: 'paid' | 'pending'; returnUrl: string | null }
  | { kind: 'failed'; paymentId: string; planId: string; message: string; returnUrl: string | null };

function withQuery(url: string, params: Record<string, string>): string {
  const u = new URL(url);
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  return u.toString();
}

export class ExtpaySandboxProvider {
  private readonly envs: Record<ExtpayEnv, EnvState> = { sandbox: this.emptyEnv(), production: this.emptyEnv() };
  private readonly sender: SandboxWebhookSender;
  private readonly outbox: ExtpayWebhookOutbox;

  constructor(opts: ExtpaySandboxProviderOptions = {}) {
    const timeoutMs = opts.webhookTimeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS;
    this.sender = new SandboxWebhookSender({ fetch: opts.fetch, timeoutMs, userAgent: 'checkstand-extpay-sandbox/1' });
    this.outbox = new ExtpayWebhookOutbox(this.sender, opts.fetch ?? fetch, timeoutMs);
  }

  private emptyEnv(): EnvState {
    return {
      companies: new Map(),
      keys: new Map(),
      products: new Map(),
      plans: new Map(),
      checkouts: new Map(),
      members: new Map(),
      methods: new Map(),
      payments: new Map(),
      memberships: new Map(),
      refunds: new Map(),
      disputes: new Map(),
      events: new Map(),
      idempotency: new Map(),
    };
  }

  static isEnv(env: string): env is ExtpayEnv {
    return (EXTPAY_ENVIRONMENTS as readonly string[]).includes(env);
  }

  // ---- companies, keys, auth, permissions, idempotency ----

  configureCompany(env: ExtpayEnv, s: CompanySettings): Answer {
    const st = this.envs[env];
    for (const k of s.api_keys ?? []) {
      const owner = st.keys.get(k.key);
      if (owner && owner.companyId !== s.company_id) return error(409, 'invalid_request_error', 'api_key_in_use', 'That API key belongs to another company in this environment.');
    }
    let c = st.companies.get(s.company_id);
    if (!c) {
      c = {
        id: s.company_id,
        title: s.title ?? s.company_id,
        webhookUrl: null,
        webhookSecret: null,
        events: new Set(DEFAULT_WEBHOOK_EVENTS),
        retryDelaysMs: [...DEFAULT_WEBHOOK_RETRY_DELAYS_MS],
        refunds: 'auto',
        chargeSettleMs: 0,
        clockSkewSeconds: 0,
        webhookApiVersionDate: DEFAULT_WEBHOOK_API_VERSION_DATE,
      };
      st.companies.set(c.id, c);
    }
    if (s.title !== undefined) c.title = s.title;
    if (s.webhook_url !== undefined) c.webhookUrl = s.webhook_url;
    if (s.webhook_secret !== undefined) c.webhookSecret = s.webhook_secret;
    if (s.webhook_events !== undefined) c.events = new Set(s.webhook_events);
    if (s.webhook_retry_delays_ms !== undefined) c.retryDelaysMs = [...s.webhook_retry_delays_ms];
    if (s.refunds !== undefined) c.refunds = s.refunds;
    if (s.charge_settle_ms !== undefined) c.chargeSettleMs = s.charge_settle_ms;
    if (s.clock_skew_seconds !== undefined) c.clockSkewSeconds = s.clock_skew_seconds;
    if (s.webhook_api_version_date !== undefined) c.webhookApiVersionDate = s.webhook_api_version_date;
    for (const k of s.api_keys ?? []) st.keys.set(k.key, { key: k.key, companyId: c.id, permissions: new Set(k.permissions ?? EXTPAY_PERMISSIONS) });
    return { status: 200, body: this.companyView(env, c) };
  }

  private companyView(env: ExtpayEnv, c: Company) {
    // Secrets and keys are write-only: the view says whether they are set.
    return {
      environment: env,
      company_id: c.id,
      title: c.title,
      api_keys: [...this.envs[env].keys.values()].filter((k) => k.companyId === c.id).map((k) => ({ key_suffix: k.key.slice(-4), permissions: [...k.permissions] })),
      webhook_url: c.webhookUrl,
      webhook_secret_set: c.webhookSecret !== null,
      webhook_events: [...c.events],
      webhook_retry_delays_ms: c.retryDelaysMs,
      refunds: c.refunds,
      charge_settle_ms: c.chargeSettleMs,
      clock_skew_seconds: c.clockSkewSeconds,
      webhook_api_version_date: c.webhookApiVersionDate,
    };
  }

  /**
   * `Authorization: Bearer <key>` → the caller, or 401. A key of the other environment, or of no
   * company, does not exist here.
   */
  authenticate(env: ExtpayEnv, authorization: string | undefined): Caller | Answer {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!m) return error(401, 'authentication_error', 'missing_api_key', 'Send your API key as Authorization: Bearer <api_key>.');
    const st = this.envs[env];
    const key = st.keys.get(m[1]!);
    const company = key ? st.companies.get(key.companyId) : undefined;
    if (!key || !company) return error(401, 'authentication_error', 'invalid_api_key', `Invalid API key for the ${env} environment.`);
    return { env, key, company };
  }

  /** A company id other than the key's own is refused without saying whether it exists. */
  private companyAccess(caller: Caller, companyId: string | undefined): Answer | null {
    if (companyId !== undefined && companyId !== caller.company.id) return error(403, 'permission_error', 'company_forbidden', 'You are not authorized to access this company.');
    return null;
  }

  private permitted(caller: Caller, needs: readonly string[]): Answer | null {
    const missing = needs.filter((p) => !caller.key.permissions.has(p));
    return missing.length === 0 ? null : error(403, 'permission_error', 'missing_permissions', `This API key is missing the permissions: ${missing.join(', ')}.`);
  }

  /**
   * Runs a POST once per (environment, api key, Idempotency-Key): the same key with the same request
   * replays the first answer; with another request it is refused. 5xx answers are not kept.
   */
  idempotent(caller: Caller, key: string | undefined, request: { method: string; path: string; body: unknown }, run: () => Answer): Answer & { replayed: boolean } {
    if (key === undefined || key === '') return { ...run(), replayed: false };
    if (key.length > 255) return { ...invalid('idempotency_key_invalid', 'Idempotency-Key may be at most 255 characters.'), replayed: false };
    const store = this.envs[caller.env].idempotency;
    const scoped = `${caller.key.key}\u0000${key}`;
    const fingerprint = createHash('sha256').update(`${request.method} ${request.path} ${canonical(request.body)}`).digest('hex');
    const seen = store.get(scoped);
    if (seen) {
      if (seen.fingerprint !== fingerprint) return { ...invalid('idempotency_key_reused', 'This Idempotency-Key was already used with a different request.'), replayed: false };
      return { ...seen.answer, replayed: true };
    }
    const answer = run();
    if (answer.status < 500) store.set(scoped, { fingerprint, answer: { status: answer.status, body: structuredClone(answer.body) } });
    return { ...answer, replayed: false };
  }

  // ---- plans and checkout configurations ----

  private makePlan(env: ExtpayEnv, companyId: string, p: Omit<PlanInput, 'company_id'>): Plan | Answer {
    const st = this.envs[env];
    const currency = p.currency.toUpperCase();
    const planType = p.plan_type ?? (p.billing_period ? 'renewal' : 'one_time');
    const initialPrice = toMinor(p.initial_price ?? 0, currency);
    const renewalPrice = toMinor(p.renewal_price ?? 0, currency);
    if (initialPrice === null) return invalid('parameter_invalid', 'plan.initial_price: too many decimals for the currency');
    if (renewalPrice === null) return invalid('parameter_invalid', 'plan.renewal_price: too many decimals for the currency');
    if (planType === 'renewal' && (!p.billing_period || renewalPrice <= 0))
      return invalid('parameter_missing', 'plan: a renewal plan needs billing_period and a renewal_price above zero');
    let productId: string;
    if (p.product_id) {
      const prod = st.products.get(p.product_id);
      if (!prod || prod.companyId !== companyId) return invalid('resource_missing', 'plan.product_id: no such product');
      productId = prod.id;
    } else {
      const ext = p.product?.external_identifier ?? '__checkstand_default__';
      let prod = [...st.products.values()].find((x) => x.companyId === companyId && x.externalIdentifier === ext);
      if (!prod) {
        prod = { id: `prod_${randomToken(14)}`, companyId, title: p.product?.title ?? 'Checkout', externalIdentifier: ext };
        st.products.set(prod.id, prod);
      } else if (p.product?.title) prod.title = p.product.title;
      productId = prod.id;
    }
    const plan: Plan = {
      id: `plan_${randomToken(14)}`,
      companyId,
      productId,
      title: p.title ?? null,
      planType,
      currency,
      initialPrice,
      renewalPrice: planType === 'renewal' ? renewalPrice : 0,
      billingPeriodDays: planType === 'renewal' ? (p.billing_period ?? null) : null,
      trialPeriodDays: planType === 'renewal' && p.trial_period_days ? p.trial_period_days : null,
      visibility: p.visibility ?? 'visible',
      internalNotes: p.internal_notes ?? null,
      createdAt: nowIso(),
    };
    st.plans.set(plan.id, plan);
    return plan;
  }

  /** `POST /checkout_configurations`. Auth, company and permissions are checked before the body is validated. */
  createCheckout(caller: Caller, rawBody: unknown, hostedBase: string): Answer {
    const st = this.envs[caller.env];
    const loose = (rawBody ?? {}) as { plan?: { company_id?: unknown }; plan_id?: unknown };
    const claimed = typeof loose.plan?.company_id === 'string' ? loose.plan.company_id : undefined;
    const denied = this.companyAccess(caller, claimed) ?? this.permitted(caller, NEEDS.createCheckout);
    if (denied) return denied;
    const parsed = CreateCheckoutBody.safeParse(rawBody ?? {});
    if (!parsed.success) return zodAnswer(parsed.error);
    const b = parsed.data;
    if (b.mode === 'setup') return invalid('parameter_invalid', 'mode: setup checkouts are not modelled by the sandbox');
    if (!b.plan === !b.plan_id) return invalid('parameter_invalid', 'Send exactly one of plan and plan_id.');
    let plan: Plan;
    if (b.plan) {
      if (!b.plan.company_id) return invalid('parameter_missing', 'plan.company_id: required');
      const made = this.makePlan(caller.env, caller.company.id, b.plan);
      if ('status' in made) return made;
      plan = made;
    } else {
      const found = st.plans.get(b.plan_id!);
      if (!found || found.companyId !== caller.company.id) return invalid('resource_missing', 'plan_id: no such plan');
      plan = found;
    }
    const id = `ch_${randomToken(14)}`;
    const co: CheckoutConfiguration = {
      id,
      companyId: caller.company.id,
      planId: plan.id,
      metadata: b.metadata ?? {},
      redirectUrl: b.redirect_url ?? null,
      affiliateCode: b.affiliate_code ?? null,
      purchaseUrl: `${hostedBase}/checkout/${plan.id}?session=${id}`,
      createdAt: nowIso(),
    };
    st.checkouts.set(co.id, co);
    return { status: 200, body: this.checkoutView(caller.env, co) };
  }

  retrieveCheckout(caller: Caller, id: string): Answer {
    const denied = this.permitted(caller, NEEDS.readCheckout);
    if (denied) return denied;
    const co = this.envs[caller.env].checkouts.get(id);
    if (!co || co.companyId !== caller.company.id) return notFound('checkout configuration', id);
    return { status: 200, body: this.checkoutView(caller.env, co) };
  }

  retrievePlan(caller: Caller, id: string, hostedBase: string): Answer {
    const denied = this.permitted(caller, NEEDS.readPlan);
    if (denied) return denied;
    const p = this.envs[caller.env].plans.get(id);
    if (!p || p.companyId !== caller.company.id) return notFound('plan', id);
    return { status: 200, body: { ...this.planView(p), company: { id: p.companyId, title: caller.company.title }, product: this.productRef(caller.env, p.productId), purchase_url: `${hostedBase}/checkout/${p.id}`, created_at: p.createdAt, updated_at: p.createdAt } };
  }

  // ---- payments ----

  retrievePayment(caller: Caller, id: string): Answer {
    const denied = this.permitted(caller, NEEDS.readPayment);
    if (denied) return denied;
    const p = this.envs[caller.env].payments.get(id);
    if (!p || p.companyId !== caller.company.id) return notFound('payment', id);
    return { status: 200, body: this.paymentView(caller.env, p) };
  }

  /** `GET /payments?company_id=…`: newest first, `first` (1–100, default 10), `after` = the last id seen. */
  listPayments(caller: Caller, query: Record<string, unknown>): Answer {
    const one = (v: unknown) => (Array.isArray(v) ? v[0] : v);
    const many = (...vs: unknown[]) => vs.flatMap((v) => (v === undefined ? [] : Array.isArray(v) ? v : [v])).filter((v): v is string => typeof v === 'string');
    const companyId = one(query.company_id);
    if (typeof companyId !== 'string' || companyId === '') return invalid('parameter_missing', 'company_id: required');
    const denied = this.companyAccess(caller, companyId) ?? this.permitted(caller, NEEDS.readPayment);
    if (denied) return denied;
    const firstRaw = one(query.first);
    const first = firstRaw === undefined ? 10 : Number(firstRaw);
    if (!Number.isInteger(first) || first < 1 || first > 100) return invalid('parameter_invalid', 'first: must be an integer from 1 to 100');
    const planIds = new Set(many(query.plan_ids, query['plan_ids[]']));
    const statuses = new Set(many(query.statuses, query['statuses[]']));
    const createdAfter = parseTimeParam(one(query.created_after));
    if (createdAfter === 'invalid') return invalid('parameter_invalid', 'created_after: must be an ISO 8601 date-time or Unix seconds');
    let rows = [...this.envs[caller.env].payments.values()].filter((p) => p.companyId === caller.company.id).reverse();
    if (planIds.size > 0) rows = rows.filter((p) => planIds.has(p.planId));
    if (statuses.size > 0) rows = rows.filter((p) => statuses.has(p.status));
    if (createdAfter !== null) rows = rows.filter((p) => Date.parse(p.createdAt) >= createdAfter);
    const after = one(query.after);
    if (typeof after === 'string' && after !== '') {
      const i = rows.findIndex((p) => p.id === after);
      rows = i >= 0 ? rows.slice(i + 1) : [];
    }
    const page = rows.slice(0, first);
    return {
      status: 200,
      body: {
        data: page.map((p) => this.paymentView(caller.env, p)),
        page_info: { start_cursor: page[0]?.id ?? null, end_cursor: page.at(-1)?.id ?? null, has_next_page: rows.length > first, has_previous_page: false },
      },
    };
  }

  /**
   * `POST /payments`: an off-session charge of a member's saved payment method. Answers `pending`
   * and settles after the company's `charge_settle_ms` (`payment.succeeded`); a saved
   * `offSessionDecline` card is declined at once (`payment.failed`).
   */
  chargeSavedMethod(caller: Caller, rawBody: unknown): Answer {
    const st = this.envs[caller.env];
    const loose = (rawBody ?? {}) as { company_id?: unknown; plan?: unknown };
    const denied = this.companyAccess(caller, typeof loose.company_id === 'string' ? loose.company_id : undefined) ?? this.permitted(caller, loose.plan ? NEEDS.chargeInlinePlan : NEEDS.charge);
    if (denied) return denied;
    const parsed = CreatePaymentBody.safeParse(rawBody ?? {});
    if (!parsed.success) return zodAnswer(parsed.error);
    const b = parsed.data;
    if (!b.plan === !b.plan_id) return invalid('parameter_invalid', 'Send exactly one of plan and plan_id.');
    const member = st.members.get(b.member_id);
    if (!member || member.companyId !== caller.company.id) return invalid('resource_missing', 'member_id: no such member');
    const method = st.methods.get(b.payment_method_id);
    if (!method || method.memberId !== member.id) return invalid('resource_missing', 'payment_method_id: no such payment method for this member');
    let plan: Plan;
    if (b.plan) {
      const made = this.makePlan(caller.env, caller.company.id, b.plan);
      if ('status' in made) return made;
      plan = made;
    } else {
      const found = st.plans.get(b.plan_id!);
      if (!found || found.companyId !== caller.company.id) return invalid('resource_missing', 'plan_id: no such plan');
      plan = found;
    }
    const amount = this.chargeToday(plan);
    if (amount <= 0) return invalid('parameter_invalid', 'plan: an off-session charge must be for more than zero');
    const p = this.newPayment(caller.env, {
      company: caller.company,
      plan,
      member,
      amount,
      billingReason: 'one_time',
      card: { brand: method.brand, last4: method.last4 },
      behaviour: method.behaviour,
      paymentMethodId: method.id,
      checkoutId: null,
      metadata: {},
    });
    this.emitPayment(caller.env, 'payment.created', p);
    if (method.behaviour === 'offSessionDecline') {
      this.fail(caller.env, p, 'Your card was declined for this off-session charge.');
    } else {
      const env = caller.env;
      this.sender.later(caller.company.chargeSettleMs, () => {
        if (p.status === 'pending') this.succeed(env, p);
      });
    }
    return { status: 200, body: this.paymentView(caller.env, p) };
  }

  listPaymentMethods(caller: Caller, query: Record<string, unknown>): Answer {
    const memberId = Array.isArray(query.member_id) ? query.member_id[0] : query.member_id;
    const companyId = Array.isArray(query.company_id) ? query.company_id[0] : query.company_id;
    const denied = this.companyAccess(caller, typeof companyId === 'string' ? companyId : undefined) ?? this.permitted(caller, NEEDS.readPaymentMethods);
    if (denied) return denied;
    if (typeof memberId !== 'string' || memberId === '') return invalid('parameter_missing', 'member_id: required');
    const st = this.envs[caller.env];
    const member = st.members.get(memberId);
    if (!member || member.companyId !== caller.company.id) return notFound('member', memberId);
    const data = [...st.methods.values()].filter((m) => m.memberId === member.id).map((m) => this.methodView(m));
    return { status: 200, body: { data, page_info: { start_cursor: data[0]?.id ?? null, end_cursor: data.at(-1)?.id ?? null, has_next_page: false, has_previous_page: false } } };
  }

  /**
   * `POST /payments/{id}/refund`: a refund of `partial_amount` (or what is left). It starts
   * `pending`; with the company's `refunds: "auto"` it settles at once for the full amount
   * (`refund.created`), with `"manual"` it waits for the settle control endpoint.
   */
  refundPayment(caller: Caller, id: string, rawBody: unknown): Answer {
    const denied = this.permitted(caller, NEEDS.managePayment);
    if (denied) return denied;
    const st = this.envs[caller.env];
    const p = st.payments.get(id);
    if (!p || p.companyId !== caller.company.id) return notFound('payment', id);
    const parsed = RefundBody.safeParse(rawBody ?? {});
    if (!parsed.success) return zodAnswer(parsed.error);
    if (p.status !== 'paid') return invalid('payment_not_refundable', `A payment with status ${p.status} cannot be refunded.`);
    const outstanding = [...st.refunds.values()].filter((r) => r.paymentId === p.id && r.status === 'pending').reduce((s, r) => s + r.requested, 0);
    const left = p.amount - p.refunded - outstanding;
    if (left <= 0) return invalid('charge_already_refunded', 'This payment has already been refunded in full.');
    let amount = left;
    if (parsed.data.partial_amount != null) {
      const m = toMinor(parsed.data.partial_amount, p.currency);
      if (m === null || m === 0) return invalid('parameter_invalid', 'partial_amount: not a valid amount for the currency');
      if (m > left) return invalid('amount_too_large', `partial_amount is greater than what is left to refund (${toDecimal(left, p.currency)}).`);
      amount = m;
    }
    const r: Refund = { id: `rfnd_${randomToken(14)}`, companyId: p.companyId, paymentId: p.id, requested: amount, amount, currency: p.currency, status: 'pending', announced: false, createdAt: nowIso() };
    st.refunds.set(r.id, r);
    if (caller.company.refunds === 'auto') this.settleRefundNow(caller.env, r, amount, 'succeeded');
    return { status: 200, body: this.paymentView(caller.env, p) };
  }

  /** `POST /payments/{id}/void`: only a payment whose money is held (`pending`). */
  voidPayment(caller: Caller, id: string): Answer {
    const denied = this.permitted(caller, NEEDS.managePayment);
    if (denied) return denied;
    const p = this.envs[caller.env].payments.get(id);
    if (!p || p.companyId !== caller.company.id) return notFound('payment', id);
    if (p.status !== 'pending') return invalid('payment_not_voidable', `A payment with status ${p.status} cannot be voided.`);
    this.move(p, 'void');
    p.substatus = 'canceled';
    return { status: 200, body: this.paymentView(caller.env, p) };
  }

  /**
   * `GET /refunds?payment_id=…`: the payment's refunds (pending, settled or failed), newest first,
   * `created_after` (ISO 8601 or Unix seconds) and cursor pages (`first`, `after`) as for payments.
   */
  listRefunds(caller: Caller, query: Record<string, unknown>): Answer {
    const one = (v: unknown) => (Array.isArray(v) ? v[0] : v);
    const denied = this.permitted(caller, NEEDS.readPayment);
    if (denied) return denied;
    const paymentId = one(query.payment_id);
    if (typeof paymentId !== 'string' || paymentId === '') return invalid('parameter_missing', 'payment_id: required');
    const st = this.envs[caller.env];
    const p = st.payments.get(paymentId);
    if (!p || p.companyId !== caller.company.id) return notFound('payment', paymentId);
    const firstRaw = one(query.first);
    const first = firstRaw === undefined ? 10 : Number(firstRaw);
    if (!Number.isInteger(first) || first < 1 || first > 100) return invalid('parameter_invalid', 'first: must be an integer from 1 to 100');
    const createdAfter = parseTimeParam(one(query.created_after));
    if (createdAfter === 'invalid') return invalid('parameter_invalid', 'created_after: must be an ISO 8601 date-time or Unix seconds');
    let rows = [...st.refunds.values()].filter((r) => r.paymentId === p.id).reverse();
    if (createdAfter !== null) rows = rows.filter((r) => Date.parse(r.createdAt) >= createdAfter);
    const after = one(query.after);
    if (typeof after === 'string' && after !== '') {
      const i = rows.findIndex((r) => r.id === after);
      rows = i >= 0 ? rows.slice(i + 1) : [];
    }
    const page = rows.slice(0, first);
    return {
      status: 200,
      body: {
        data: page.map((r) => this.refundView(caller.env, r)),
        page_info: { start_cursor: page[0]?.id ?? null, end_cursor: page.at(-1)?.id ?? null, has_next_page: rows.length > first, has_previous_page: false },
      },
    };
  }

  retrieveRefund(caller: Caller, id: string): Answer {
    const denied = this.permitted(caller, NEEDS.readPayment);
    if (denied) return denied;
    const r = this.envs[caller.env].refunds.get(id);
    if (!r || r.companyId !== caller.company.id) return notFound('refund', id);
    return { status: 200, body: this.refundView(caller.env, r) };
  }

  retrieveDispute(caller: Caller, id: string): Answer {
    const denied = this.permitted(caller, NEEDS.readDispute);
    if (denied) return denied;
    const d = this.envs[caller.env].disputes.get(id);
    if (!d || d.companyId !== caller.company.id) return notFound('dispute', id);
    return { status: 200, body: this.disputeView(caller.env, d) };
  }

  // ---- memberships ----

  private callerMembership(caller: Caller, id: string, needs: readonly string[]): Membership | Answer {
    const denied = this.permitted(caller, needs);
    if (denied) return denied;
    const m = this.envs[caller.env].memberships.get(id);
    if (!m || m.companyId !== caller.company.id) return notFound('membership', id);
    return m;
  }

  retrieveMembership(caller: Caller, id: string): Answer {
    const m = this.callerMembership(caller, id, NEEDS.readMembership);
    return 'planId' in m ? { status: 200, body: this.membershipView(caller.env, m) } : m;
  }

  private isValid(m: Membership): boolean {
    return m.status === 'trialing' || m.status === 'active' || m.status === 'past_due';
  }

  /** `POST /memberships/{id}/cancel`: at period end (default; `cancel_at_period_end_changed`) or at once (`deactivated`). */
  cancelMembership(caller: Caller, id: string, rawBody: unknown): Answer {
    const found = this.callerMembership(caller, id, NEEDS.manageMembership);
    if (!('planId' in found)) return found;
    const m = found;
    const parsed = CancelBody.safeParse(rawBody ?? {});
    if (!parsed.success) return zodAnswer(parsed.error);
    if (!this.isValid(m)) return invalid('membership_not_cancelable', `A membership with status ${m.status} cannot be canceled.`);
    const mode = parsed.data.cancellation_mode ?? 'at_period_end';
    if (mode === 'immediate') {
      this.deactivate(caller.env, m, 'canceled');
    } else if (!m.cancelAtPeriodEnd) {
      m.cancelAtPeriodEnd = true;
      m.canceledAt = nowIso();
      this.touch(m);
      this.emitMembership(caller.env, 'membership.cancel_at_period_end_changed', m, { cancel_at_period_end: false });
    }
    return { status: 200, body: this.membershipView(caller.env, m) };
  }

  /** `POST /memberships/{id}/uncancel`: undoes a cancel scheduled at period end. */
  uncancelMembership(caller: Caller, id: string): Answer {
    const found = this.callerMembership(caller, id, NEEDS.manageMembership);
    if (!('planId' in found)) return found;
    const m = found;
    if (!this.isValid(m) || !m.cancelAtPeriodEnd) return invalid('membership_not_uncancelable', 'Only a membership scheduled to cancel at period end can be uncanceled.');
    m.cancelAtPeriodEnd = false;
    m.canceledAt = null;
    this.touch(m);
    this.emitMembership(caller.env, 'membership.cancel_at_period_end_changed', m, { cancel_at_period_end: true });
    return { status: 200, body: this.membershipView(caller.env, m) };
  }

  /** `POST /memberships/{id}/pause` and `/resume`: payment collection only (no event among the subscribed kinds). */
  setPaused(caller: Caller, id: string, paused: boolean, rawBody: unknown): Answer {
    const found = this.callerMembership(caller, id, NEEDS.manageMembership);
    if (!('planId' in found)) return found;
    const m = found;
    if (paused) {
      const parsed = PauseBody.safeParse(rawBody ?? {});
      if (!parsed.success) return zodAnswer(parsed.error);
    }
    if (!this.isValid(m)) return invalid(paused ? 'membership_not_pausable' : 'membership_not_resumable', `A membership with status ${m.status} cannot be ${paused ? 'paused' : 'resumed'}.`);
    if (m.paused !== paused) {
      m.paused = paused;
      this.touch(m);
    }
    return { status: 200, body: this.membershipView(caller.env, m) };
  }

  // ---- webhooks (Whop's webhooks API, and the sandbox's test delivery) ----

  /** `GET /webhooks`: the company's webhook (read by the connection doctor). */
  listWebhooks(caller: Caller, companyId: string | undefined): Answer {
    if (!companyId) return invalid('parameter_missing', 'company_id: required');
    return this.companyAccess(caller, companyId) ?? this.permitted(caller, NEEDS.manageWebhooks) ?? this.outbox.list(caller.company);
  }

  /** `POST /webhooks/{id}/test`: one signed delivery of a test event, now; answers what the receiver said. */
  async testWebhook(caller: Caller, id: string, type: string | undefined): Promise<Answer> {
    const denied = this.permitted(caller, NEEDS.manageWebhooks);
    if (denied) return denied;
    if (id !== webhookIdOf(caller.company.id) || !caller.company.webhookUrl) return notFound('webhook', id);
    return this.outbox.sendTest(caller.env, caller.company, type);
  }

  // ---- the hosted purchase page ----

  /** What the hosted page shows; public (its address is the plan and session id). */
  hostedCheckout(env: ExtpayEnv, planId: string, session: string | undefined) {
    const st = this.envs[env];
    const plan = st.plans.get(planId);
    if (!plan) return null;
    const co = session ? st.checkouts.get(session) : undefined;
    if (session && (!co || co.planId !== plan.id)) return null;
    const company = st.companies.get(plan.companyId);
    return {
      plan: { id: plan.id, title: plan.title, planType: plan.planType, currency: plan.currency, trialDays: plan.trialPeriodDays, billingDays: plan.billingPeriodDays, renewal: plan.renewalPrice },
      chargeToday: this.chargeToday(plan),
      companyTitle: company?.title ?? plan.companyId,
      session: co?.id ?? null,
      redirectUrl: co?.redirectUrl ?? null,
    };
  }

  /** The hosted page's Pay button. */
  purchase(env: ExtpayEnv, planId: string, form: PurchaseForm): PurchaseResult {
    const st = this.envs[env];
    const plan = st.plans.get(planId);
    if (!plan) return { kind: 'invalid', status: 404, message: 'This checkout does not exist.' };
    const co = form.session ? st.checkouts.get(form.session) : undefined;
    if (form.session && (!co || co.planId !== plan.id)) return { kind: 'invalid', status: 404, message: 'This checkout session does not exist.' };
    const company = st.companies.get(plan.companyId);
    if (!company) return { kind: 'invalid', status: 404, message: 'This checkout does not exist.' };
    const email = (form.email ?? '').trim().toLowerCase();
    if (!EMAIL.test(email) || email.length > 300) return { kind: 'invalid', status: 400, message: 'Enter a valid email address.' };
    const pan = (form.card_number ?? '').replace(/[\s-]/g, '');
    if (!/^\d{12,19}$/.test(pan) || !luhnValid(pan)) return { kind: 'invalid', status: 400, message: 'Your card number is incorrect.' };
    let returnUrl: string | null = co?.redirectUrl ?? null;
    if (form.return_url) {
      const u = HttpUrl.safeParse(form.return_url);
      if (!u.success) return { kind: 'invalid', status: 400, message: 'The return URL is not valid.' };
      returnUrl = u.data;
    }
    const behaviour = BEHAVIOUR_BY_NUMBER.get(pan) ?? 'paid';
    const member = this.memberFor(env, company.id, email, form.name);
    const card = { brand: cardBrand(pan), last4: pan.slice(-4) };
    const p = this.newPayment(env, {
      company,
      plan,
      member,
      amount: this.chargeToday(plan),
      billingReason: plan.planType === 'renewal' ? 'subscription_create' : 'one_time',
      card,
      behaviour,
      paymentMethodId: null,
      checkoutId: co?.id ?? null,
      metadata: co?.metadata ?? {},
    });

    if (behaviour === 'fraudDenied') {
      // Refused before the card network: the payment exists, already failed, and payment.created is
      // the only event (spec §3.2).
      this.move(p, 'open');
      p.substatus = 'failed';
      p.failureMessage = 'This payment was blocked by the provider’s fraud checks.';
      this.emitPayment(env, 'payment.created', p);
      return { kind: 'failed', paymentId: p.id, planId: plan.id, message: p.failureMessage, returnUrl };
    }
    this.emitPayment(env, 'payment.created', p);
    if (behaviour === 'failed') {
      this.fail(env, p, 'Your card was declined.');
      return { kind: 'failed', paymentId: p.id, planId: plan.id, message: p.failureMessage!, returnUrl };
    }
    if (form.setup_future_usage === 'off_session') this.saveMethod(env, p, member, co ?? null);
    if (behaviour === 'pending') {
      // The card is authorized and the money held, not captured: Whop's payment.authorized.
      this.emitPayment(env, 'payment.authorized', p);
      return { kind: 'completed', paymentId: p.id, planId: plan.id, status: 'pending', returnUrl };
    }
    this.succeed(env, p);
    return { kind: 'completed', paymentId: p.id, planId: plan.id, status: 'paid', returnUrl };
  }

  /** Where the browser goes after a purchase: the return URL with `status` and `payment_id`. */
  static returnTo(result: PurchaseResult): string | null {
    if (result.kind === 'invalid' || !result.returnUrl) return null;
    return withQuery(result.returnUrl, { status: result.kind === 'completed' ? 'success' : 'error', payment_id: result.paymentId });
  }

  // ---- control endpoints ----

  /** Settles a held (`pending`) payment: `paid` (default) or `failed`. */
  settlePayment(env: ExtpayEnv, id: string, result: 'paid' | 'failed' = 'paid'): Answer {
    const p = this.envs[env].payments.get(id);
    if (!p) return notFound('payment', id);
    if (p.status !== 'pending') return error(409, 'invalid_request_error', 'payment_not_pending', `The payment is ${p.status}, not pending.`);
    if (result === 'paid') this.succeed(env, p);
    else this.fail(env, p, 'The held payment could not be captured.');
    return { status: 200, body: this.paymentView(env, p) };
  }

  /**
   * The end of a membership's billing period: a renewal payment (`payment.created`,
   * `payment.succeeded`) and the next period; a membership set to cancel at period end ends instead
   * (`membership.deactivated`).
   */
  renewMembership(env: ExtpayEnv, id: string): Answer {
    const st = this.envs[env];
    const m = st.memberships.get(id);
    if (!m) return notFound('membership', id);
    if (!this.isValid(m)) return error(409, 'invalid_request_error', 'membership_not_renewable', `The membership is ${m.status}.`);
    if (m.cancelAtPeriodEnd) {
      this.deactivate(env, m, 'canceled');
      return { status: 200, body: { membership: this.membershipView(env, m), payment: null } };
    }
    if (m.paused) return error(409, 'invalid_request_error', 'payment_collection_paused', 'Payment collection is paused for this membership.');
    const plan = st.plans.get(m.planId)!;
    const p = this.renewalPayment(env, m, plan);
    this.emitPayment(env, 'payment.created', p);
    this.move(p, 'paid');
    p.substatus = 'succeeded';
    p.paidAt = nowIso();
    const start = m.periodEnd ?? nowIso();
    m.periodStart = start;
    m.periodEnd = plusDays(start, plan.billingPeriodDays ?? 30);
    m.status = 'active';
    this.touch(m);
    this.emitPayment(env, 'payment.succeeded', p);
    return { status: 200, body: { membership: this.membershipView(env, m), payment: this.paymentView(env, p) } };
  }

  /** A failed renewal: `payment.failed`, the membership `past_due`; `final` ends it (`membership.deactivated`). */
  failRenewal(env: ExtpayEnv, id: string, final = false): Answer {
    const st = this.envs[env];
    const m = st.memberships.get(id);
    if (!m) return notFound('membership', id);
    if (!this.isValid(m)) return error(409, 'invalid_request_error', 'membership_not_renewable', `The membership is ${m.status}.`);
    const plan = st.plans.get(m.planId)!;
    const p = this.renewalPayment(env, m, plan);
    this.emitPayment(env, 'payment.created', p);
    m.status = 'past_due';
    this.touch(m);
    this.fail(env, p, 'The renewal payment was declined.');
    if (final) this.deactivate(env, m, 'canceled');
    return { status: 200, body: { membership: this.membershipView(env, m), payment: this.paymentView(env, p) } };
  }

  openDispute(env: ExtpayEnv, paymentId: string, b: z.infer<typeof OpenDisputeBody>): Answer {
    const st = this.envs[env];
    const p = st.payments.get(paymentId);
    if (!p) return notFound('payment', paymentId);
    if (p.status !== 'paid') return error(409, 'invalid_request_error', 'payment_not_disputable', `A payment with status ${p.status} cannot be disputed.`);
    let amount = p.amount;
    if (b.amount !== undefined) {
      const m = toMinor(b.amount, p.currency);
      if (m === null || m === 0 || m > p.amount) return invalid('parameter_invalid', 'amount: not a valid amount for this payment');
      amount = m;
    }
    const now = nowIso();
    const d: Dispute = { id: `dspt_${randomToken(14)}`, companyId: p.companyId, paymentId: p.id, status: b.status ?? 'warning_needs_response', reason: b.reason ?? 'fraudulent', amount, currency: p.currency, createdAt: now, updatedAt: now };
    st.disputes.set(d.id, d);
    p.disputeAlertedAt ??= now;
    p.substatus = d.status.startsWith('warning_') ? 'dispute_warning' : 'open_dispute';
    this.emitDispute(env, 'dispute.created', d);
    return { status: 200, body: this.disputeView(env, d) };
  }

  updateDispute(env: ExtpayEnv, id: string, b: z.infer<typeof UpdateDisputeBody>): Answer {
    const st = this.envs[env];
    const d = st.disputes.get(id);
    if (!d) return notFound('dispute', id);
    const previous = { status: d.status };
    d.status = b.status;
    if (b.reason) d.reason = b.reason;
    d.updatedAt = nowIso();
    const p = st.payments.get(d.paymentId);
    if (p) p.substatus = d.status.startsWith('warning_') ? 'dispute_warning' : 'open_dispute';
    this.emitDispute(env, 'dispute.updated', d, previous);
    return { status: 200, body: this.disputeView(env, d) };
  }

  /**
   * Settles a refund: `succeeded` for `amount` (decimal, at most what was asked; default all of it)
   * or `failed`. The first settlement sends `refund.created`, later ones `refund.updated`.
   */
  settleRefund(env: ExtpayEnv, id: string, b: z.infer<typeof SettleRefundBody>): Answer {
    const r = this.envs[env].refunds.get(id);
    if (!r) return notFound('refund', id);
    const status = b.status ?? 'succeeded';
    let amount = r.requested;
    if (b.amount !== undefined) {
      const m = toMinor(b.amount, r.currency);
      if (m === null || m > r.requested) return invalid('parameter_invalid', 'amount: at most the amount requested');
      amount = m;
    }
    if (r.status === 'succeeded' && status === 'succeeded') return error(409, 'invalid_request_error', 'refund_already_settled', 'The refund has already settled.');
    this.settleRefundNow(env, r, amount, status);
    return { status: 200, body: this.refundView(env, r) };
  }

  ledger(env: ExtpayEnv, companyId: string) {
    const st = this.envs[env];
    const c = st.companies.get(companyId);
    const mine = <T extends { companyId: string }>(m: Map<string, T>) => [...m.values()].filter((x) => x.companyId === companyId);
    const payments = mine(st.payments);
    const summary = { payments: payments.length, paid: 0, pending: 0, failed: 0, void: 0, charged: 0, refunded: 0 };
    for (const p of payments) {
      if (p.status === 'paid') {
        summary.paid += 1;
        summary.charged += p.amount;
      } else if (p.status === 'pending') summary.pending += 1;
      else if (p.status === 'open') summary.failed += 1;
      else summary.void += 1;
      summary.refunded += p.refunded;
    }
    const currency = payments[0]?.currency ?? 'USD';
    return {
      company: c ? this.companyView(env, c) : null,
      checkout_configurations: mine(st.checkouts).map((co) => this.checkoutView(env, co)),
      payments: payments.map((p) => this.paymentView(env, p)),
      memberships: mine(st.memberships).map((m) => this.membershipView(env, m)),
      refunds: mine(st.refunds).map((r) => ({ ...this.refundView(env, r), requested_amount: toDecimal(r.requested, r.currency) })),
      disputes: mine(st.disputes).map((d) => this.disputeView(env, d)),
      payment_methods: mine(st.methods).map((m) => ({ ...this.methodView(m), member_id: m.memberId })),
      events: mine(st.events).map((e) => ({ id: e.id, type: e.type, subject: e.subject, created: e.created, delivered: e.delivered, attempts: e.attempts })),
      summary: { ...summary, charged: toDecimal(summary.charged, currency), refunded: toDecimal(summary.refunded, currency) },
    };
  }

  /** One more delivery attempt of an event, now, to the company's current URL and secret. */
  async redeliver(env: ExtpayEnv, eventId: string): Promise<Answer> {
    const e = this.envs[env].events.get(eventId);
    if (!e) return notFound('event', eventId);
    const c = this.envs[env].companies.get(e.companyId);
    if (!c?.webhookUrl) return error(409, 'invalid_request_error', 'no_webhook_url', 'The company has no webhook_url.');
    const attempt = await this.outbox.redeliver(c, e);
    return { status: 200, body: { event: { id: e.id, type: e.type, delivered: e.delivered }, attempt } };
  }

  /** Forgets one company (with everything of it), or the whole environment. */
  reset(env: ExtpayEnv, companyId?: string): void {
    if (companyId === undefined) {
      this.envs[env] = this.emptyEnv();
      return;
    }
    const st = this.envs[env];
    for (const m of [st.keys, st.products, st.plans, st.checkouts, st.members, st.methods, st.payments, st.memberships, st.refunds, st.disputes, st.events] as Map<string, { companyId: string }>[])
      for (const [k, v] of m) if (v.companyId === companyId) m.delete(k);
    st.companies.delete(companyId);
  }

  /** Stops timers and retries and cuts deliveries short; nothing runs after this. */
  close(): void {
    this.sender.close();
  }

  // ---- internals ----

  /** What a checkout of this plan charges now (see `ExtpayPlanInput` in the adapter's types). */
  private chargeToday(plan: Plan): number {
    if (plan.planType === 'one_time') return plan.initialPrice;
    return plan.initialPrice + (plan.trialPeriodDays ? 0 : plan.renewalPrice);
  }

  private memberFor(env: ExtpayEnv, companyId: string, email: string, name: string | undefined): Member {
    const st = this.envs[env];
    let m = [...st.members.values()].find((x) => x.companyId === companyId && x.email === email);
    if (!m) {
      m = { id: `mber_${randomToken(14)}`, companyId, userId: `user_${randomToken(14)}`, email, name: name?.trim() || null };
      st.members.set(m.id, m);
    }
    return m;
  }

  private newPayment(
    env: ExtpayEnv,
    a: {
      company: Company;
      plan: Plan;
      member: Member;
      amount: number;
      billingReason: Payment['billingReason'];
      card: { brand: string; last4: string };
      behaviour: ExtpayCardName;
      paymentMethodId: string | null;
      checkoutId: string | null;
      metadata: Record<string, unknown>;
    },
  ): Payment {
    const p: Payment = {
      id: `pay_${randomToken(14)}`,
      companyId: a.company.id,
      planId: a.plan.id,
      memberId: a.member.id,
      membershipId: null,
      checkoutId: a.checkoutId,
      paymentMethodId: a.paymentMethodId,
      status: 'pending',
      substatus: 'pending',
      amount: a.amount,
      currency: a.plan.currency,
      refunded: 0,
      billingReason: a.billingReason,
      failureMessage: null,
      card: a.card,
      behaviour: a.behaviour,
      metadata: structuredClone(a.metadata),
      createdAt: nowIso(),
      paidAt: null,
      refundedAt: null,
      disputeAlertedAt: null,
    };
    this.envs[env].payments.set(p.id, p);
    return p;
  }

  private renewalPayment(env: ExtpayEnv, m: Membership, plan: Plan): Payment {
    const st = this.envs[env];
    const method = m.paymentMethodId ? st.methods.get(m.paymentMethodId) : undefined;
    const first = [...st.payments.values()].find((x) => x.membershipId === m.id);
    const p = this.newPayment(env, {
      company: st.companies.get(m.companyId)!,
      plan,
      member: st.members.get(m.memberId)!,
      amount: plan.renewalPrice,
      billingReason: 'subscription_cycle',
      card: method ? { brand: method.brand, last4: method.last4 } : (first?.card ?? { brand: 'visa', last4: '4242' }),
      behaviour: method?.behaviour ?? 'paid',
      paymentMethodId: m.paymentMethodId,
      checkoutId: null,
      metadata: m.metadata,
    });
    p.membershipId = m.id;
    return p;
  }

  private canMove(p: Payment, to: PaymentStatus): boolean {
    return (PAYMENT_MOVES[p.status] as readonly PaymentStatus[]).includes(to);
  }

  private move(p: Payment, to: PaymentStatus): void {
    if (!this.canMove(p, to)) throw new Error(`sandbox payment ${p.id} cannot move from ${p.status} to ${to}`);
    p.status = to;
  }

  /** A pending payment is paid: its membership starts (renewal plans) and `payment.succeeded` goes out. */
  private succeed(env: ExtpayEnv, p: Payment): void {
    this.move(p, 'paid');
    p.substatus = 'succeeded';
    p.paidAt = nowIso();
    const plan = this.envs[env].plans.get(p.planId)!;
    if (plan.planType === 'renewal' && !p.membershipId) {
      const now = nowIso();
      const trial = plan.trialPeriodDays ?? 0;
      const m: Membership = {
        id: `mem_${randomToken(14)}`,
        companyId: p.companyId,
        planId: plan.id,
        memberId: p.memberId,
        paymentMethodId: p.paymentMethodId,
        status: trial > 0 ? 'trialing' : 'active',
        cancelAtPeriodEnd: false,
        canceledAt: null,
        paused: false,
        periodStart: now,
        periodEnd: plusDays(now, trial > 0 ? trial : (plan.billingPeriodDays ?? 30)),
        metadata: structuredClone(p.metadata),
        createdAt: now,
        updatedAt: now,
      };
      this.envs[env].memberships.set(m.id, m);
      p.membershipId = m.id;
      this.emitMembership(env, 'membership.activated', m);
    }
    this.emitPayment(env, 'payment.succeeded', p);
  }

  private fail(env: ExtpayEnv, p: Payment, message: string): void {
    this.move(p, 'open');
    p.substatus = 'failed';
    p.failureMessage = message;
    this.emitPayment(env, 'payment.failed', p);
  }

  private deactivate(env: ExtpayEnv, m: Membership, status: MembershipStatus): void {
    m.status = status;
    m.cancelAtPeriodEnd = false;
    m.canceledAt ??= nowIso();
    this.touch(m);
    this.emitMembership(env, 'membership.deactivated', m);
  }

  private touch(m: Membership): void {
    m.updatedAt = nowIso();
  }

  private saveMethod(env: ExtpayEnv, p: Payment, member: Member, co: CheckoutConfiguration | null): void {
    const st = this.envs[env];
    const pm: PaymentMethod = { id: `payt_${randomToken(14)}`, companyId: p.companyId, memberId: member.id, brand: p.card.brand, last4: p.card.last4, behaviour: p.behaviour, createdAt: nowIso() };
    st.methods.set(pm.id, pm);
    p.paymentMethodId = pm.id;
    const company = st.companies.get(p.companyId);
    const intent = {
      id: `sint_${randomToken(14)}`,
      status: 'succeeded',
      created_at: pm.createdAt,
      error_message: null,
      three_ds_verified: false,
      checkout_configuration: co ? { id: co.id } : null,
      company: { id: p.companyId },
      member: { id: member.id, user: { id: member.userId, email: member.email, name: member.name, username: member.email.split('@')[0] } },
      metadata: structuredClone(p.metadata),
      payment_method: { ...this.methodView(pm), mailing_address: null },
    };
    if (company) this.emit(env, company, 'setup_intent.succeeded', intent, intent.id);
  }

  private settleRefundNow(env: ExtpayEnv, r: Refund, amount: number, status: 'succeeded' | 'failed'): void {
    const st = this.envs[env];
    const p = st.payments.get(r.paymentId)!;
    const previous = { status: r.status, amount: toDecimal(r.amount, r.currency) };
    if (r.status === 'succeeded') p.refunded -= r.amount;
    r.status = status;
    r.amount = status === 'succeeded' ? amount : r.requested;
    if (status === 'succeeded') {
      p.refunded += amount;
      p.refundedAt = nowIso();
    }
    if (!p.substatus.includes('dispute')) p.substatus = p.refunded === 0 ? 'succeeded' : p.refunded >= p.amount ? 'refunded' : 'partially_refunded';
    const company = st.companies.get(r.companyId);
    const type = r.announced ? 'refund.updated' : 'refund.created';
    r.announced = true;
    if (company) this.emit(env, company, type, this.refundView(env, r), r.id, type === 'refund.updated' ? previous : null);
  }

  // ---- views (the wire shapes) ----

  private productRef(env: ExtpayEnv, productId: string) {
    const prod = this.envs[env].products.get(productId);
    return prod ? { id: prod.id, title: prod.title, route: prod.id } : null;
  }

  private planView(p: Plan) {
    return {
      id: p.id,
      visibility: p.visibility,
      plan_type: p.planType,
      release_method: 'buy_now',
      currency: p.currency.toLowerCase(),
      billing_period: p.billingPeriodDays,
      expiration_days: null,
      initial_price: toDecimal(p.initialPrice, p.currency),
      renewal_price: toDecimal(p.renewalPrice, p.currency),
      trial_period_days: p.trialPeriodDays,
      title: p.title,
      internal_notes: p.internalNotes,
    };
  }

  private checkoutView(env: ExtpayEnv, co: CheckoutConfiguration) {
    const plan = this.envs[env].plans.get(co.planId)!;
    return {
      id: co.id,
      company_id: co.companyId,
      mode: 'payment',
      currency: plan.currency.toLowerCase(),
      plan: this.planView(plan),
      affiliate_code: co.affiliateCode,
      metadata: co.metadata,
      redirect_url: co.redirectUrl,
      purchase_url: co.purchaseUrl,
    };
  }

  paymentView(env: ExtpayEnv, p: Payment): Record<string, unknown> {
    const st = this.envs[env];
    const company = st.companies.get(p.companyId);
    const member = st.members.get(p.memberId);
    const membership = p.membershipId ? st.memberships.get(p.membershipId) : undefined;
    const plan = st.plans.get(p.planId);
    const total = toDecimal(p.amount, p.currency);
    return {
      id: p.id,
      status: p.status,
      substatus: p.substatus,
      created_at: p.createdAt,
      paid_at: p.paidAt,
      last_payment_attempt: p.createdAt,
      dispute_alerted_at: p.disputeAlertedAt,
      currency: p.currency.toLowerCase(),
      subtotal: total,
      total,
      usd_total: p.currency === 'USD' ? total : null,
      amount_after_fees: total,
      refunded_amount: toDecimal(p.refunded, p.currency),
      refunded_at: p.refundedAt,
      auto_refunded: false,
      billing_reason: p.billingReason,
      card_brand: p.card.brand,
      card_last4: p.card.last4,
      payment_method_type: 'card',
      failure_message: p.failureMessage,
      refundable: p.status === 'paid' && p.refunded < p.amount,
      voidable: p.status === 'pending',
      retryable: false,
      company: company ? { id: company.id, title: company.title, route: company.id } : null,
      member: member ? { id: member.id, phone: null } : null,
      membership: membership ? { id: membership.id, status: membership.status } : null,
      plan: { id: p.planId },
      product: plan ? this.productRef(env, plan.productId) : null,
      promo_code: null,
      user: member ? { id: member.userId, email: member.email, name: member.name, username: member.email.split('@')[0] } : null,
      billing_address: null,
      metadata: p.metadata,
    };
  }

  private membershipView(env: ExtpayEnv, m: Membership) {
    const st = this.envs[env];
    const company = st.companies.get(m.companyId);
    const member = st.members.get(m.memberId);
    const plan = st.plans.get(m.planId);
    return {
      id: m.id,
      status: m.status,
      cancel_at_period_end: m.cancelAtPeriodEnd,
      canceled_at: m.canceledAt,
      cancellation_reason: null,
      cancel_option: null,
      company: { id: m.companyId, title: company?.title ?? m.companyId },
      created_at: m.createdAt,
      updated_at: m.updatedAt,
      currency: plan ? plan.currency.toLowerCase() : null,
      license_key: null,
      manage_url: null,
      member: { id: m.memberId },
      metadata: m.metadata,
      payment_collection_paused: m.paused,
      plan: { id: m.planId },
      product: plan ? this.productRef(env, plan.productId) : null,
      promo_code: null,
      renewal_period_start: m.periodStart,
      renewal_period_end: m.periodEnd,
      user: member ? { id: member.userId, email: member.email, name: member.name, username: member.email.split('@')[0] } : null,
    };
  }

  private paymentSummary(env: ExtpayEnv, paymentId: string) {
    const p = this.envs[env].payments.get(paymentId);
    if (!p) return null;
    const full = this.paymentView(env, p);
    const keep = ['id', 'billing_reason', 'card_brand', 'card_last4', 'created_at', 'currency', 'dispute_alerted_at', 'member', 'membership', 'paid_at', 'payment_method_type', 'subtotal', 'total', 'usd_total', 'user', 'metadata'];
    return Object.fromEntries(keep.map((k) => [k, full[k]]));
  }

  private refundView(env: ExtpayEnv, r: Refund) {
    return {
      id: r.id,
      amount: toDecimal(r.amount, r.currency),
      created_at: r.createdAt,
      currency: r.currency.toLowerCase(),
      status: r.status,
      provider: 'stripe',
      provider_created_at: r.status === 'pending' ? null : r.createdAt,
      reference_status: null,
      reference_type: null,
      reference_value: null,
      payment: this.paymentSummary(env, r.paymentId),
    };
  }

  private disputeView(env: ExtpayEnv, d: Dispute) {
    const st = this.envs[env];
    const p = st.payments.get(d.paymentId);
    const plan = p ? st.plans.get(p.planId) : undefined;
    return {
      id: d.id,
      amount: toDecimal(d.amount, d.currency),
      currency: d.currency.toLowerCase(),
      status: d.status,
      reason: d.reason,
      created_at: d.createdAt,
      editable: d.status === 'needs_response' || d.status === 'warning_needs_response',
      needs_response_by: plusDays(d.createdAt, 7),
      visa_rdr: false,
      company: { id: d.companyId, title: st.companies.get(d.companyId)?.title ?? d.companyId },
      payment: this.paymentSummary(env, d.paymentId),
      plan: plan ? { id: plan.id } : null,
      product: plan ? this.productRef(env, plan.productId) : null,
    };
  }

  private methodView(m: PaymentMethod) {
    return { id: m.id, typename: 'CardPaymentMethod', created_at: m.createdAt, payment_method_type: 'card', card: { brand: m.brand, last4: m.last4, exp_month: 12, exp_year: 2030 } };
  }

  // ---- webhooks ----

  private emitPayment(env: ExtpayEnv, type: string, p: Payment): void {
    const c = this.envs[env].companies.get(p.companyId);
    if (c) this.emit(env, c, type, this.paymentView(env, p), p.id);
  }

  private emitMembership(env: ExtpayEnv, type: string, m: Membership, previous?: Record<string, unknown>): void {
    const c = this.envs[env].companies.get(m.companyId);
    if (c) this.emit(env, c, type, this.membershipView(env, m), m.id, previous);
  }

  private emitDispute(env: ExtpayEnv, type: string, d: Dispute, previous?: Record<string, unknown>): void {
    const c = this.envs[env].companies.get(d.companyId);
    if (c) this.emit(env, c, type, this.disputeView(env, d), d.id, previous);
  }

  private emit(env: ExtpayEnv, c: Company, type: string, data: unknown, subject: string, previous?: Record<string, unknown> | null): void {
    this.outbox.emit(this.envs[env].events, env, c, type, data, subject, previous);
  }

}
