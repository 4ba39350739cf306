import { z } from 'zod';
import { THREEDS_WIRE_STATUSES, type ThreeDsPayment, type ThreeDsPaymentRequest } from './types.ts';

/**
 * The gateway's JSON, read leniently (fields we do not know are dropped, not refused: a real gateway
 * adds fields over time) but typed strictly where we decide on a value. The one place snake_case
 * becomes camelCase for this gateway.
 */

const nullableString = z.string().nullish().transform((v) => v ?? null);

export const WirePayment = z.object({
  id: z.string().min(1),
  status: z.enum(THREEDS_WIRE_STATUSES),
  amount: z.number().int().nonnegative(),
  currency: z.string().min(1),
  reference: nullableString,
  amount_refunded: z.number().int().nonnegative().nullish(),
  payment_method: nullableString,
  merchant_initiated: z.boolean().nullish(),
  original_payment_id: nullableString,
  decline_code: nullableString,
  message: nullableString,
  next_action: z.object({ type: z.string(), url: z.string().nullish() }).nullish(),
  card: z
    .object({ brand: z.string(), last4: z.string(), exp_month: z.number().int(), exp_year: z.number().int() })
    .nullish(),
  created: z.number().int().nullish(),
});
export type WirePayment = z.infer<typeof WirePayment>;

export const WireRefund = z.object({
  id: z.string().min(1),
  payment_id: z.string().min(1),
  reference: nullableString,
  amount: z.number().int().nonnegative(),
  currency: z.string().min(1),
  status: z.enum(['succeeded', 'pending', 'failed']),
  message: nullableString,
});
export type WireRefund = z.infer<typeof WireRefund>;

/** `GET /v1/payments?reference=…` and `GET /v1/refunds?reference=…`: `{ object: "list", data: [...], has_more }`. */
export const WireList = z.object({ data: z.array(z.unknown()), has_more: z.boolean().nullish() });
export type WireList = z.infer<typeof WireList>;

export const WireError = z.object({
  error: z.object({ type: z.string().nullish(), code: z.string().nullish(), message: z.string().nullish(), param: z.string().nullish() }),
});
export type WireError = z.infer<typeof WireError>;

export function fromWirePayment(w: WirePayment): ThreeDsPayment {
  return {
    id: w.id,
    status: w.status,
    amount: w.amount,
    currency: w.currency.toUpperCase(),
    reference: w.reference,
    amountRefunded: w.amount_refunded ?? 0,
    paymentMethod: w.payment_method,
    merchantInitiated: w.merchant_initiated ?? false,
    originalPaymentId: w.original_payment_id,
    declineCode: w.decline_code,
    message: w.message,
    redirectUrl: w.next_action?.type === 'redirect' ? (w.next_action.url ?? null) : null,
    card: w.card ? { brand: w.card.brand, last4: w.card.last4, expMonth: w.card.exp_month, expYear: w.card.exp_year } : null,
    created: w.created ?? 0,
  };
}

/** "12/30", "12/2030" or "1230" → { exp_month: 12, exp_year: 2030 }; anything else is left for the gateway to refuse. */
export function toWireExpiry(exp: string): { exp_month: number; exp_year: number } {
  const m = /^(\d{1,2})\s*\/?\s*(\d{2}|\d{4})$/.exec(exp.trim());
  if (!m) return { exp_month: 0, exp_year: 0 };
  const year = Number(m[2]);
  return { exp_month: Number(m[1]), exp_year: year < 100 ? 2000 + year : year };
}

function present(v: string | null | undefined): string | undefined {
  const t = v?.trim();
  return t ? t : undefined;
}

/**
 * The body of POST /v1/payments. Holds the card number in memory only; never log it. Empty customer
 * fields are left out so the gateway, not we, decides what is missing (its decline text is what
 * the spec shows the merchant).
 */
export function buildPaymentBody(req: ThreeDsPaymentRequest): Record<string, unknown> {
  if (!req.card === !req.paymentMethod) throw new Error('a 3DS gateway payment needs exactly one of card or paymentMethod');
  if (req.merchantInitiated && !req.paymentMethod) throw new Error('a merchant-initiated 3DS gateway payment needs a saved paymentMethod');
  // Zero only for a setup: a new card saved without a charge ($0 first payments).
  const setup = req.amount === 0 && req.card !== undefined && req.savePaymentMethod && !req.merchantInitiated;
  if (!Number.isSafeInteger(req.amount) || (req.amount <= 0 && !setup)) throw new RangeError(`amount must be a positive integer in minor units (0 only for a setup saving a new card), got ${req.amount}`);
  const body: Record<string, unknown> = {
    amount: req.amount,
    currency: req.currency.toUpperCase(),
    reference: req.attemptId,
  };
  if (req.card) {
    const card: Record<string, unknown> = { number: req.card.number.replace(/[\s-]/g, ''), ...toWireExpiry(req.card.exp) };
    if (req.card.cvv) card.cvc = req.card.cvv;
    body.card = card;
  } else {
    body.payment_method = req.paymentMethod;
  }
  const customer: Record<string, string> = {};
  const email = present(req.customer?.email);
  const firstName = present(req.customer?.first_name);
  const lastName = present(req.customer?.last_name);
  if (email) customer.email = email;
  if (firstName) customer.first_name = firstName;
  if (lastName) customer.last_name = lastName;
  if (Object.keys(customer).length > 0) body.customer = customer;
  const riskSession = present(req.riskSessionId);
  if (riskSession) body.risk = { session_id: riskSession };
  const returnUrl = present(req.returnUrl);
  const cancelUrl = present(req.cancelUrl);
  if (returnUrl) body.return_url = returnUrl;
  if (cancelUrl) body.cancel_url = cancelUrl;
  body.save_payment_method = req.savePaymentMethod;
  body.merchant_initiated = Boolean(req.merchantInitiated);
  if (req.merchantInitiated) body.original_payment_id = req.merchantInitiated.originalPaymentId;
  return body;
}
