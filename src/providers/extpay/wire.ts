import { z } from 'zod';
import { currencyExponent, formatMajorAmount } from '../../app/currency.ts';
import {
  EXTPAY_DISPUTE_STATUSES,
  EXTPAY_MEMBERSHIP_STATUSES,
  EXTPAY_PAYMENT_STATUSES,
  EXTPAY_REFUND_STATUSES,
  type ExtpayChargeRequest,
  type ExtpayCheckout,
  type ExtpayCheckoutRequest,
  type ExtpayConnection,
  type ExtpayDispute,
  type ExtpayEmbedCheckout,
  type ExtpayMembership,
  type ExtpayPayment,
  type ExtpayPaymentMethod,
  type ExtpayPaymentStatus,
  type ExtpayPlan,
  type ExtpayPlanInput,
  type ExtpayRefund,
  type ExtpaySetupIntent,
  accountScoped,
} from './types.ts';

/**
 * Whop's JSON, read leniently (fields we do not use are dropped; Whop adds fields over time) but typed
 * strictly where we decide on a value. The one place snake_case becomes camelCase and decimal major
 * units become integer minor units for this provider.
 */

// ---- amounts and times ----

/** Minor units → Whop's decimal number: 4999 USD → 49.99, 500 JPY → 500. */
export function toWireAmount(minor: number, currency: string): number {
  return Number(formatMajorAmount(minor, currency));
}

/**
 * Whop's decimal amount (a number, or a numeric string) → minor units; null when it is not a
 * finite non-negative amount with at most the currency's decimals (beyond float noise).
 */
export function fromWireAmount(value: unknown, currency: string): number | null {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) return null;
  const scaled = n * 10 ** currencyExponent(currency);
  const minor = Math.round(scaled);
  if (Math.abs(scaled - minor) > 1e-6 || !Number.isSafeInteger(minor)) return null;
  return minor;
}

/** ISO strings, Unix seconds (number or numeric string) or milliseconds → ISO 8601; null when unreadable. */
export function toIsoTime(value: unknown): string | null {
  if (value === null || value === undefined || value === '') return null;
  let ms: number;
  if (typeof value === 'number' || (typeof value === 'string' && /^\d+(\.\d+)?$/.test(value))) {
    const n = Number(value);
    ms = n < 1e12 ? n * 1000 : n;
  } else if (typeof value === 'string') {
    ms = Date.parse(value);
  } else return null;
  return Number.isFinite(ms) ? new Date(ms).toISOString() : null;
}

// ---- schemas ----

const str = z.string().nullish().transform((v) => v ?? null);
const time = z.union([z.string(), z.number()]).nullish();
const amount = z.union([z.number(), z.string()]).nullish();
const ref = z.object({ id: z.string() }).nullish();
const metadata = z
  .record(z.string(), z.unknown())
  .nullish()
  .transform((v) => v ?? {});

export const WirePlan = z.object({
  id: z.string().min(1),
  plan_type: z.enum(['one_time', 'renewal']).nullish(),
  currency: str,
  initial_price: amount,
  renewal_price: amount,
  billing_period: z.number().int().nullish(),
  trial_period_days: z.number().int().nullish(),
});
export type WirePlan = z.infer<typeof WirePlan>;

export const WireCheckoutConfiguration = z.object({
  id: z.string().min(1),
  company_id: str,
  plan: WirePlan,
  purchase_url: z.string().min(1),
  redirect_url: str,
  metadata,
});
export type WireCheckoutConfiguration = z.infer<typeof WireCheckoutConfiguration>;

export const WirePayment = z.object({
  id: z.string().min(1),
  // An unknown status is kept as null rather than refused: the substatus still tells the story.
  status: z.string().nullish(),
  substatus: str,
  total: amount,
  subtotal: amount,
  currency: str,
  refunded_amount: amount,
  billing_reason: str,
  failure_message: str,
  company: ref,
  plan: ref,
  product: ref,
  membership: z.object({ id: z.string(), status: z.string().nullish() }).nullish(),
  member: ref,
  user: z.object({ id: z.string(), email: z.string().nullish() }).nullish(),
  card_brand: str,
  card_last4: str,
  metadata,
  refundable: z.boolean().nullish(),
  voidable: z.boolean().nullish(),
  created_at: time,
  paid_at: time,
  dispute_alerted_at: time,
});
export type WirePayment = z.infer<typeof WirePayment>;

export const WireMembership = z.object({
  id: z.string().min(1),
  status: z.enum(EXTPAY_MEMBERSHIP_STATUSES),
  cancel_at_period_end: z.boolean().nullish(),
  payment_collection_paused: z.boolean().nullish(),
  plan: ref,
  member: ref,
  company: ref,
  renewal_period_start: time,
  renewal_period_end: time,
  canceled_at: time,
  metadata,
});
export type WireMembership = z.infer<typeof WireMembership>;

export const WireRefund = z.object({
  id: z.string().min(1),
  status: z.enum(EXTPAY_REFUND_STATUSES),
  amount: z.union([z.number(), z.string()]),
  currency: str,
  payment: ref,
  created_at: time,
});
export type WireRefund = z.infer<typeof WireRefund>;

export const WireDispute = z.object({
  id: z.string().min(1),
  status: z.enum(EXTPAY_DISPUTE_STATUSES),
  reason: str,
  amount: z.union([z.number(), z.string()]),
  currency: str,
  payment: ref,
  created_at: time,
});
export type WireDispute = z.infer<typeof WireDispute>;

export const WireSetupIntent = z.object({
  id: z.string().min(1),
  status: z.string(),
  payment_method: z
    .object({ id: z.string(), card: z.object({ brand: z.string().nullish(), last4: z.string().nullish() }).nullish() })
    .nullish(),
  member: ref,
  checkout_configuration: ref,
  metadata,
});
export type WireSetupIntent = z.infer<typeof WireSetupIntent>;

export const WirePaymentMethod = z.object({
  id: z.string().min(1),
  payment_method_type: str,
  card: z.object({ brand: z.string().nullish(), last4: z.string().nullish() }).nullish(),
  created_at: time,
});

/** A plan read back for the `internal_notes` a saved-method charge wrote into it. */
export const WirePlanNotes = z.object({ id: z.string().min(1), internal_notes: str });

/**
 * The mark a saved-method charge leaves on its own inline plan (Whop's `internal_notes`, not shown to
 * customers): the one place on that payment our attempt id can live, since the create-payment body
 * takes no metadata.
 */
export function attemptNote(attemptId: string): string {
  return `checkstand:attempt_id=${attemptId}`;
}

/** The attempt id of an `attemptNote`, or null when the notes are something else. */
export function attemptIdOfNote(notes: string | null | undefined): string | null {
  const m = /^checkstand:attempt_id=(\S+)$/.exec(notes?.trim() ?? '');
  return m ? m[1]! : null;
}

/** Whop's cursor pages: `{ data: [...], page_info: { end_cursor, has_next_page, … } }`. */
export function wireList<T extends z.ZodTypeAny>(item: T) {
  return z.object({
    data: z.array(item),
    page_info: z.object({ end_cursor: z.string().nullish(), has_next_page: z.boolean().nullish() }).nullish(),
  });
}

/** The permission names a 403 lists ("… missing the permissions: a, b."), as Whop and the sandbox word it. */
export function missingPermissionsOf(message: string | null | undefined): string[] {
  const m = /permissions?:?\s*([a-z_:,\s]+?)\.?$/i.exec(message ?? '');
  if (!m) return [];
  return m[1]!.split(/[,\s]+/).filter((x) => /^[a-z_]+(:[a-z_]+)+$/.test(x));
}

/**
 * The error of a non-2xx answer, whichever of the usual shapes it has: `{ error: { type, code,
 * message } }`, `{ error: "…" }` or `{ message: "…" }`. Whop's error body is not in its OpenAPI spec.
 */
export function readWireError(json: unknown): { code: string | null; message: string | null } {
  if (!json || typeof json !== 'object') return { code: null, message: null };
  const o = json as Record<string, unknown>;
  const e = o.error;
  const s = (v: unknown) => (typeof v === 'string' && v !== '' ? v.slice(0, 500) : null);
  if (e && typeof e === 'object') {
    const eo = e as Record<string, unknown>;
    return { code: s(eo.code) ?? s(eo.type), message: s(eo.message) };
  }
  return { code: null, message: s(e) ?? s(o.message) };
}

// ---- wire → ours ----

function knownPaymentStatus(s: string | null | undefined): ExtpayPaymentStatus | null {
  return s && (EXTPAY_PAYMENT_STATUSES as readonly string[]).includes(s) ? (s as ExtpayPaymentStatus) : null;
}

export function fromWirePlan(w: WirePlan, fallbackCurrency?: string): ExtpayPlan {
  const currency = (w.currency ?? fallbackCurrency ?? '').toUpperCase();
  return {
    id: w.id,
    planType: w.plan_type ?? (w.billing_period ? 'renewal' : 'one_time'),
    currency,
    initialPrice: fromWireAmount(w.initial_price ?? 0, currency) ?? 0,
    renewalPrice: fromWireAmount(w.renewal_price ?? 0, currency) ?? 0,
    billingPeriodDays: w.billing_period ?? null,
    trialPeriodDays: w.trial_period_days ?? null,
  };
}

export function fromWireCheckout(w: WireCheckoutConfiguration, fallbackCurrency?: string): ExtpayCheckout {
  return {
    id: w.id,
    companyId: w.company_id,
    plan: fromWirePlan(w.plan, fallbackCurrency),
    purchaseUrl: w.purchase_url,
    redirectUrl: w.redirect_url,
    metadata: w.metadata,
  };
}

export function fromWirePayment(w: WirePayment): ExtpayPayment {
  const currency = (w.currency ?? '').toUpperCase();
  return {
    id: w.id,
    status: knownPaymentStatus(w.status),
    substatus: w.substatus,
    amount: fromWireAmount(w.total ?? w.subtotal ?? 0, currency) ?? 0,
    currency,
    refundedAmount: fromWireAmount(w.refunded_amount ?? 0, currency) ?? 0,
    billingReason: w.billing_reason,
    failureMessage: w.failure_message,
    companyId: w.company?.id ?? null,
    planId: w.plan?.id ?? null,
    productId: w.product?.id ?? null,
    membershipId: w.membership?.id ?? null,
    membershipStatus: w.membership?.status ?? null,
    memberId: w.member?.id ?? null,
    userId: w.user?.id ?? null,
    email: w.user?.email ?? null,
    cardBrand: w.card_brand,
    cardLast4: w.card_last4,
    metadata: w.metadata,
    refundable: w.refundable ?? false,
    voidable: w.voidable ?? false,
    createdAt: toIsoTime(w.created_at),
    paidAt: toIsoTime(w.paid_at),
    disputeAlertedAt: toIsoTime(w.dispute_alerted_at),
  };
}

export function fromWireMembership(w: WireMembership): ExtpayMembership {
  return {
    id: w.id,
    status: w.status,
    cancelAtPeriodEnd: w.cancel_at_period_end ?? false,
    paused: w.payment_collection_paused ?? false,
    planId: w.plan?.id ?? null,
    memberId: w.member?.id ?? null,
    companyId: w.company?.id ?? null,
    renewalPeriodStart: toIsoTime(w.renewal_period_start),
    renewalPeriodEnd: toIsoTime(w.renewal_period_end),
    canceledAt: toIsoTime(w.canceled_at),
    metadata: w.metadata,
  };
}

export function fromWireRefund(w: WireRefund): ExtpayRefund | null {
  const currency = (w.currency ?? '').toUpperCase();
  const amt = fromWireAmount(w.amount, currency);
  if (amt === null) return null;
  return { id: w.id, status: w.status, amount: amt, currency, paymentId: w.payment?.id ?? null, createdAt: toIsoTime(w.created_at) };
}

export function fromWireDispute(w: WireDispute): ExtpayDispute | null {
  const currency = (w.currency ?? '').toUpperCase();
  const amt = fromWireAmount(w.amount, currency);
  if (amt === null) return null;
  return { id: w.id, status: w.status, reason: w.reason, amount: amt, currency, paymentId: w.payment?.id ?? null, createdAt: toIsoTime(w.created_at) };
}

export function fromWireSetupIntent(w: WireSetupIntent): ExtpaySetupIntent {
  return {
    id: w.id,
    status: w.status,
    paymentMethodId: w.payment_method?.id ?? null,
    cardBrand: w.payment_method?.card?.brand ?? null,
    cardLast4: w.payment_method?.card?.last4 ?? null,
    memberId: w.member?.id ?? null,
    checkoutConfigurationId: w.checkout_configuration?.id ?? null,
    metadata: w.metadata,
  };
}

export function fromWirePaymentMethod(w: z.infer<typeof WirePaymentMethod>): ExtpayPaymentMethod {
  return { id: w.id, type: w.payment_method_type, cardBrand: w.card?.brand ?? null, cardLast4: w.card?.last4 ?? null, createdAt: toIsoTime(w.created_at) };
}

// ---- ours → wire ----

function minor(name: string, v: number, allowZero = true): number {
  if (!Number.isSafeInteger(v) || v < 0 || (!allowZero && v === 0)) throw new RangeError(`${name} must be a ${allowZero ? 'non-negative' : 'positive'} integer in minor units, got ${v}`);
  return v;
}

function days(name: string, v: number, min: number): number {
  if (!Number.isSafeInteger(v) || v < min || v > 3650) throw new RangeError(`${name} must be a whole number of days ≥ ${min}, got ${v}`);
  return v;
}

/** The inline `plan` object Whop takes on checkout configurations and payments. */
export function buildPlanBody(
  plan: ExtpayPlanInput,
  currency: string,
  extra: { companyId?: string | undefined; title?: string | null; product?: { externalIdentifier: string; title: string } | null; internalNotes?: string | null },
): Record<string, unknown> {
  if (!/^[A-Za-z]{3}$/.test(currency)) throw new RangeError('currency must be a three-letter ISO 4217 code');
  const body: Record<string, unknown> = {};
  if (extra.companyId) body.company_id = extra.companyId;
  body.currency = currency.toLowerCase();
  body.plan_type = plan.planType;
  body.initial_price = toWireAmount(minor('initialPrice', plan.initialPrice), currency);
  if (plan.planType === 'renewal') {
    body.renewal_price = toWireAmount(minor('renewalPrice', plan.renewalPrice, false), currency);
    body.billing_period = days('billingPeriodDays', plan.billingPeriodDays, 1);
    if (plan.trialPeriodDays) body.trial_period_days = days('trialPeriodDays', plan.trialPeriodDays, 1);
  }
  // Not listed on the company's store page; still purchasable through the checkout.
  body.visibility = 'hidden';
  if (extra.title) body.title = extra.title.slice(0, 100);
  if (extra.product) body.product = { external_identifier: extra.product.externalIdentifier, title: extra.product.title };
  if (extra.internalNotes) {
    body.internal_notes = extra.internalNotes;
    // A plan Whop reused by its attributes would carry another attempt's notes.
    body.force_create_new_plan = true;
  }
  return body;
}

/** The body of `POST /checkout_configurations` with an inline plan for the connection's company. */
export function buildCheckoutBody(conn: ExtpayConnection, req: ExtpayCheckoutRequest): Record<string, unknown> {
  // Dated versions take the company at the top level; the original one inside the inline plan.
  const top = accountScoped(conn);
  const body: Record<string, unknown> = {
    ...(top ? { company_id: conn.companyId } : {}),
    plan: buildPlanBody(req.plan, req.currency, { companyId: top ? undefined : conn.companyId, title: req.title ?? null, product: req.product ?? null }),
  };
  if (req.metadata && Object.keys(req.metadata).length > 0) body.metadata = { ...req.metadata };
  if (req.redirectUrl) body.redirect_url = req.redirectUrl;
  return body;
}

/**
 * The body of `POST /payments`: an off-session charge of a member's saved payment method (an upsell),
 * on an inline plan of its own whose `internal_notes` name our attempt (`attemptNote`).
 */
export function buildChargeBody(conn: ExtpayConnection, req: ExtpayChargeRequest): Record<string, unknown> {
  if (!req.memberId || !req.paymentMethodId) throw new Error('an extpay charge needs the member id and the saved payment method id');
  const attemptId = req.attemptId ?? req.idempotencyKey ?? null;
  return {
    company_id: conn.companyId,
    member_id: req.memberId,
    payment_method_id: req.paymentMethodId,
    plan: buildPlanBody({ planType: 'one_time', initialPrice: minor('amount', req.amount, false) }, req.currency, {
      title: req.title ?? null,
      product: req.product ?? null,
      internalNotes: attemptId ? attemptNote(attemptId) : null,
    }),
  };
}

/**
 * A cart → the one plan of its checkout (spec §4.1 rule 10, §8), under the `ExtpayPlanInput` rules:
 *
 * - nothing recurring: a one-time plan for what is charged today;
 * - a trial: a renewal plan charging `chargeToday` now and `renewalAmount` every `intervalDays` once
 *   the `trialDays` are over (the trial's length is sent, so the first renewal is delayed);
 * - no trial, `chargeToday` at least one period: `initial_price` is the part above the first period;
 * - no trial and less than one period today (an introductory price): the first period is sent as a
 *   trial of `intervalDays`, so the customer pays `chargeToday` now and the renewal price one period on.
 *
 * The caller picks the shortest interval when several recurring offers differ and passes the renewal
 * amount already multiplied by quantity, shipping included.
 */
export function renewalPlanFor(cart: { chargeToday: number; recurring?: { renewalAmount: number; intervalDays: number } | null; trialDays?: number | null }): ExtpayPlanInput {
  const today = minor('chargeToday', cart.chargeToday);
  if (!cart.recurring) return { planType: 'one_time', initialPrice: today };
  const renewal = minor('renewalAmount', cart.recurring.renewalAmount, false);
  const interval = days('intervalDays', cart.recurring.intervalDays, 1);
  const trial = cart.trialDays ? days('trialDays', cart.trialDays, 1) : 0;
  if (trial > 0) return { planType: 'renewal', initialPrice: today, renewalPrice: renewal, billingPeriodDays: interval, trialPeriodDays: trial };
  if (today >= renewal) return { planType: 'renewal', initialPrice: today - renewal, renewalPrice: renewal, billingPeriodDays: interval };
  return { planType: 'renewal', initialPrice: today, renewalPrice: renewal, billingPeriodDays: interval, trialPeriodDays: interval };
}

/** `data.checkout` of a Create Order answer (spec §2.4): what the funnel passes to the embed. */
export function embedCheckout(conn: Pick<ExtpayConnection, 'environment'>, checkout: ExtpayCheckout, prefill: { email?: string | null; name?: string | null } = {}): ExtpayEmbedCheckout {
  return {
    provider: 'extpay',
    session_id: checkout.id,
    plan_id: checkout.plan.id,
    environment: conn.environment,
    setup_future_usage: 'off_session',
    purchase_url: checkout.purchaseUrl,
    prefill: { email: prefill.email ?? '', name: prefill.name ?? '' },
  };
}
