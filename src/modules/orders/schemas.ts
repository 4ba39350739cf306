import ipaddr from 'ipaddr.js';
import { z } from 'zod';
import { Address, Currency, Id } from '../../app/schemas.ts';
import { luhnValid } from '../../app/luhn.ts';
import { AffiliateBlock } from '../affiliates/service.ts';

export const MAX_LINES = 20;
export const MAX_QUANTITY = 100;

const CARD_FIELDS = ['card_number', 'card_exp', 'card_cvv'] as const;

/** MM/YY, valid through the last day of that month. */
export function cardExpired(exp: string, now = new Date()): boolean {
  const [mm, yy] = exp.split('/').map(Number) as [number, number];
  const endOfMonth = Date.UTC(2000 + yy, mm, 1); // first instant of the following month
  return endOfMonth <= now.getTime();
}

const HttpUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
  .max(2000);

// Messages never repeat the value: a card number must not come back in an error body.
export const PaymentInput = z
  .object({
    method: z.enum(['card', 'extpay']).default('card').describe('`card` (default) or `extpay`'),
    card_number: z
      .string({ error: 'must be a string of digits' })
      .transform((v) => v.replace(/[\s-]/g, ''))
      .refine((v) => /^\d{12,19}$/.test(v) && luhnValid(v), 'is not a valid card number')
      .optional(),
    card_exp: z
      .string({ error: 'must be MM/YY' })
      .regex(/^(0[1-9]|1[0-2])\/\d{2}$/, 'must be MM/YY')
      .refine((v) => !cardExpired(v), 'the card has expired')
      .optional(),
    card_cvv: z.string({ error: 'must be 3 or 4 digits' }).regex(/^\d{3,4}$/, 'must be 3 or 4 digits').optional(),
    return_url: HttpUrl.optional().describe('Required for extpay and for the 3-D Secure card gateway'),
    cancel_url: HttpUrl.optional().describe('Required for the 3-D Secure card gateway'),
    risk_session_id: z.string().min(1).max(200).optional().describe("From the 3-D Secure gateway's risk SDK"),
    external_payment_id: z.string().min(1).max(100).optional().describe('Pins a specific extpay connection'),
  })
  .strict()
  .superRefine((p, ctx) => {
    if (p.method === 'card') {
      for (const f of CARD_FIELDS) if (!p[f]) ctx.addIssue({ code: 'custom', path: [f], message: 'is required for card payments' });
    } else {
      for (const f of CARD_FIELDS)
        if (p[f] !== undefined) ctx.addIssue({ code: 'custom', path: [f], message: 'card fields are not accepted for extpay payments' });
      if (!p.return_url) ctx.addIssue({ code: 'custom', path: ['return_url'], message: 'is required for extpay payments' });
    }
  })
  .meta({ id: 'Payment' });
export type PaymentInput = z.infer<typeof PaymentInput>;

/** IPv4 or IPv6; an IPv4-mapped IPv6 address is read as the IPv4 one, so both count as one shopper. */
const IpAddress = z
  .union([z.ipv4(), z.ipv6()], { error: 'must be an IPv4 or IPv6 address' })
  .transform((v, ctx) => {
    try {
      return ipaddr.process(v).toString();
    } catch {
      ctx.issues.push({ code: 'custom', message: 'must be an IPv4 or IPv6 address', input: v });
      return z.NEVER;
    }
  });

export const CustomerInput = z
  .object({
    email: z.email({ error: 'must be a valid email address' }).max(254),
    first_name: z.string().trim().min(1).max(100).optional(),
    last_name: z.string().trim().min(1).max(100).optional(),
    ip_address: IpAddress.optional().describe(
      "The shopper's IP address, sent by the merchant's server (which stands between the shopper and this API and sees the shopper's connection). " +
        'Kept on the order; fraud velocity rules on `ip_address` count by it. The latest one sent for an order wins.',
    ),
  })
  .strict()
  .meta({ id: 'CustomerInput' });

const CustomerPatch = CustomerInput.partial();

export const LineInput = z
  .object({
    offer_id: Id('offer'),
    quantity: z.number().int().min(1).max(MAX_QUANTITY).default(1),
  })
  .strict();

const Products = z.array(LineInput).min(1).max(MAX_LINES);
const Phone = z.string().trim().regex(/^\+?[0-9 ().-]{5,30}$/, 'must be a phone number');

const Routing = {
  gateway_id: z.string().min(1).max(100).optional().describe('Explicit gateway: overrides the campaign router and gateway'),
  payment_orchestrator_id: z.string().min(1).max(100).optional().describe('Explicit payment router: overrides the campaign router and gateway'),
};

const oneRoute = (b: { gateway_id?: string | undefined; payment_orchestrator_id?: string | undefined }, ctx: z.RefinementCtx) => {
  if (b.gateway_id && b.payment_orchestrator_id)
    ctx.addIssue({ code: 'custom', path: ['payment_orchestrator_id'], message: 'send gateway_id or payment_orchestrator_id, not both' });
};

export const CreateLeadBody = z
  .object({
    order_number: Id('ord').optional().describe('Send to update an existing lead'),
    campaign_id: Id('cmp').optional(),
    customer: CustomerPatch.optional(),
    phone: Phone.optional(),
    shipping_address: Address.optional(),
    products: Products.optional(),
    is_throttle: z.boolean().optional(),
    coupon_code: z.string().trim().min(1).max(64).optional().describe('A coupon of the team: discounts the products of the first purchase'),
    affiliate: AffiliateBlock.optional(),
  })
  .strict()
  .superRefine((b, ctx) => {
    if (b.order_number) return;
    if (!b.campaign_id) ctx.addIssue({ code: 'custom', path: ['campaign_id'], message: 'is required for a new lead' });
    if (!b.customer?.email) ctx.addIssue({ code: 'custom', path: ['customer', 'email'], message: 'is required for a new lead' });
  })
  .meta({ id: 'CreateLead', description: '`billing` is not accepted here (spec 2.1); send it with Process Payment or Create Order.' });
export type CreateLeadBody = z.infer<typeof CreateLeadBody>;

/** The fields Create Order and Process Payment share: addresses, routing, throttle, coupon, the payment. */
const PaymentRequest = {
  billing: Address.optional(),
  shipping_address: Address.optional(),
  phone: Phone.optional(),
  ...Routing,
  is_throttle: z.boolean().optional(),
  coupon_code: z.string().trim().min(1).max(64).optional().describe('A coupon of the team: discounts the products of the first purchase'),
  affiliate: AffiliateBlock.optional(),
  payment: PaymentInput,
};

export const CreateOrderBody = z
  .object({
    campaign_id: Id('cmp'),
    currency: Currency,
    customer: CustomerInput,
    products: Products,
    ...PaymentRequest,
  })
  .strict()
  .superRefine(oneRoute)
  .meta({ id: 'CreateOrder' });
export type CreateOrderBody = z.infer<typeof CreateOrderBody>;

export const ProcessPaymentBody = z
  .object({
    order_number: Id('ord'),
    campaign_id: Id('cmp').optional(),
    currency: Currency.optional(),
    customer: CustomerPatch.optional(),
    products: Products.optional().describe("Replaces the lead's products; omit to pay for the products already on the order"),
    ...PaymentRequest,
  })
  .strict()
  .superRefine(oneRoute)
  .meta({ id: 'ProcessPayment' });
export type ProcessPaymentBody = z.infer<typeof ProcessPaymentBody>;

export const OrderParams = z.object({ order_number: Id('ord') }).strict();

export const UpsellBody = z
  .object({
    order_number: Id('ord'),
    upsell_id: Id('ups'),
    quantity: z.number().int().min(1).max(MAX_QUANTITY),
    payment: z
      .object({ method: z.enum(['card', 'extpay']).optional() })
      .strict()
      .optional()
      .describe('Upsells charge the payment method saved with the first payment: card fields are refused'),
  })
  .strict()
  .meta({ id: 'ProcessUpsell' });
export type UpsellBody = z.infer<typeof UpsellBody>;

export const RefundBody = z
  .object({
    amount: z.number().int().min(1).optional().describe('Minor units; defaults to the whole refundable balance of the charge'),
    transaction_id: Id('txn').optional().describe('The charge to refund; required when the order has several'),
    reason: z.string().max(500).optional(),
  })
  .strict()
  .meta({ id: 'Refund' });
export type RefundBody = z.infer<typeof RefundBody>;

export const VoidBody = z
  .object({
    transaction_id: Id('txn').optional().describe('The charge to void; required when the order has several'),
    reason: z.string().max(500).optional(),
  })
  .strict()
  .meta({ id: 'Void' });
export type VoidBody = z.infer<typeof VoidBody>;
