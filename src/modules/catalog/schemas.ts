import { z } from 'zod';
import { ID_PREFIX } from '../../app/ids.ts';
import { Currency, Id, ListQuery, Money, Timestamp } from '../../app/schemas.ts';
import { CHECKOUT_URL_PLACEHOLDERS, checkoutUrlProblem } from '../leads/checkout-link.ts';

const Name = z.string().trim().min(1).max(200);
/**
 * A gateway or payment orchestrator of the team, checked by the service when the campaign is
 * written (unknown or another team's: 422 on the field); null clears it.
 */
const ProviderRef = z.string().trim().min(1).max(100).nullable();
const requiredOr = (message: string) => (iss: { input?: unknown }) => (iss.input === undefined ? 'is required' : message);
const IntervalUnit = z.enum(['day', 'week', 'month', 'year'], { error: requiredOr('must be day, week, month or year') });
const PositiveInt = z.number({ error: requiredOr('must be a whole number') }).int('must be a whole number').min(1, 'must be at least 1');

export const IdParams = z.object({ id: z.string().max(100).describe('The object id') });

export const ByCampaignListQuery = ListQuery.extend({
  campaign_id: Id(ID_PREFIX.campaign).optional().describe('Only items of this campaign'),
});

// ---- campaigns

export const DEFAULT_ABANDONMENT_DELAY_MINUTES = 60;

const CheckoutUrlTemplate = z
  .string()
  .trim()
  .min(1)
  .max(2000)
  .superRefine((t, ctx) => {
    const problem = checkoutUrlProblem(t);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .describe(
    `The merchant's checkout the abandonment mail links back to, with placeholders (URL-encoded) after the host: ${Object.entries(CHECKOUT_URL_PLACEHOLDERS)
      .map(([n, d]) => `\`{${n}}\` ${d}`)
      .join('; ')}. E.g. \`https://shop.example/checkout?order={order_number}&email={email}\``,
  );

/**
 * Abandoned-lead follow-up. Every field is optional: on create the defaults apply, on update the
 * fields sent replace the campaign's and the rest stay.
 */
const AbandonmentInput = z
  .object({
    enabled: z.boolean().optional().describe('Follow up leads of this campaign that stay unpaid (a `lead.abandoned` event); default false'),
    delay_minutes: z
      .number({ error: 'must be a whole number of minutes' })
      .int('must be a whole number of minutes')
      .min(1, 'must be at least 1')
      .max(43_200, 'must be at most 43200 (30 days)')
      .optional()
      .describe(`Minutes a lead stays unpaid after its last change before it counts as abandoned; default ${DEFAULT_ABANDONMENT_DELAY_MINUTES}`),
    checkout_url: CheckoutUrlTemplate.nullable().optional(),
    mail: z
      .object({
        enabled: z.boolean().optional().describe('Also e-mail the customer (requires `checkout_url`); default false'),
        subject: z.string().trim().min(1).max(200).nullable().optional().describe('Template (`{{variable}}`s as in the purchase e-mail, plus `{{checkout_url}}`); null: the default'),
        body: z.string().min(1).max(20_000).nullable().optional().describe('Template, plain text; null: the default'),
      })
      .strict()
      .optional(),
  })
  .strict();
export type AbandonmentInput = z.infer<typeof AbandonmentInput>;

export const Abandonment = z.object({
  enabled: z.boolean(),
  delay_minutes: z.number().int(),
  checkout_url: z.string().nullable(),
  mail: z.object({ enabled: z.boolean(), subject: z.string().nullable(), body: z.string().nullable() }),
});
export type Abandonment = z.infer<typeof Abandonment>;

export const CreateCampaign = z
  .object({
    name: Name,
    currency: Currency.describe('ISO 4217 code every price of this campaign is in; fixed once created'),
    gateway_id: ProviderRef.optional().describe('A gateway of the team (`gw_…`)'),
    payment_orchestrator_id: ProviderRef.optional().describe('A payment orchestrator of the team (`po_…`); wins over `gateway_id`'),
    abandonment: AbandonmentInput.optional(),
  })
  .strict()
  .meta({ id: 'CreateCampaign' });
export type CreateCampaign = z.infer<typeof CreateCampaign>;

export const UpdateCampaign = z
  .object({
    name: Name.optional(),
    gateway_id: ProviderRef.optional().describe('A gateway of the team (`gw_…`); null clears it'),
    payment_orchestrator_id: ProviderRef.optional().describe('A payment orchestrator of the team (`po_…`); null clears it'),
    is_active: z.boolean().optional(),
    abandonment: AbandonmentInput.optional(),
  })
  .strict()
  .meta({ id: 'UpdateCampaign' });
export type UpdateCampaign = z.infer<typeof UpdateCampaign>;

export const Campaign = z
  .object({
    object: z.literal('campaign'),
    id: z.string(),
    name: z.string(),
    currency: z.string(),
    gateway_id: z.string().nullable(),
    payment_orchestrator_id: z.string().nullable(),
    is_active: z.boolean(),
    abandonment: Abandonment,
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Campaign' });
export type Campaign = z.infer<typeof Campaign>;

// ---- products

const Sku = z.string().trim().min(1).max(100).describe('Unique within the team');
const Description = z.string().max(5000);

export const CreateProduct = z
  .object({
    name: Name,
    sku: Sku.nullable().optional(),
    description: Description.nullable().optional(),
  })
  .strict()
  .meta({ id: 'CreateProduct' });
export type CreateProduct = z.infer<typeof CreateProduct>;

export const UpdateProduct = z
  .object({
    name: Name.optional(),
    sku: Sku.nullable().optional(),
    description: Description.nullable().optional(),
  })
  .strict()
  .meta({ id: 'UpdateProduct' });
export type UpdateProduct = z.infer<typeof UpdateProduct>;

export const Product = z
  .object({
    object: z.literal('product'),
    id: z.string(),
    name: z.string(),
    sku: z.string().nullable(),
    description: z.string().nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Product' });
export type Product = z.infer<typeof Product>;

// ---- offers

const offerCommon = {
  campaign_id: Id(ID_PREFIX.campaign),
  product_id: Id(ID_PREFIX.product),
  name: Name,
  price: Money.describe('First charge, in minor units of the campaign currency'),
  shipping: Money.default(0),
  fulfillment_type: z.enum(['physical', 'digital']),
};

const renewal = {
  interval_unit: IntervalUnit,
  interval_count: PositiveInt.max(365).describe('Renews every `interval_count` `interval_unit`s'),
  recurring_price: Money.describe('Charged on every renewal, in minor units'),
  recurring_shipping: Money.default(0),
};

/**
 * The billing type decides which fields are required; the other billing types' fields are
 * refused as unknown, so an offer never carries a renewal it will not bill.
 */
export const CreateOffer = z
  .discriminatedUnion('billing', [
    z.object({ ...offerCommon, billing: z.literal('one_time') }).strict(),
    z.object({ ...offerCommon, billing: z.literal('recurring'), ...renewal }).strict(),
    z
      .object({
        ...offerCommon,
        billing: z.literal('trial'),
        ...renewal,
        trial_days: PositiveInt.max(365).describe('Days before the first renewal'),
      })
      .strict(),
  ])
  .meta({ id: 'CreateOffer' });
export type CreateOffer = z.infer<typeof CreateOffer>;

export const UpdateOffer = z
  .object({
    name: Name.optional(),
    price: Money.optional(),
    shipping: Money.optional(),
    is_active: z.boolean().optional(),
  })
  .strict()
  .meta({ id: 'UpdateOffer' });
export type UpdateOffer = z.infer<typeof UpdateOffer>;

export const Offer = z
  .object({
    object: z.literal('offer'),
    id: z.string(),
    campaign_id: z.string(),
    product_id: z.string(),
    name: z.string(),
    price: z.number().int(),
    shipping: z.number().int(),
    billing: z.enum(['one_time', 'recurring', 'trial']),
    interval_unit: IntervalUnit.nullable(),
    interval_count: z.number().int().nullable(),
    trial_days: z.number().int().nullable(),
    recurring_price: z.number().int().nullable(),
    recurring_shipping: z.number().int().nullable(),
    fulfillment_type: z.enum(['physical', 'digital']),
    is_active: z.boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Offer' });
export type Offer = z.infer<typeof Offer>;

// ---- upsells

const Step = PositiveInt.max(100).describe('Position in the funnel after the first purchase, from 1');

export const CreateUpsell = z
  .object({
    campaign_id: Id(ID_PREFIX.campaign),
    offer_id: Id(ID_PREFIX.offer).describe('An offer of the same campaign'),
    step: Step,
    name: Name,
  })
  .strict()
  .meta({ id: 'CreateUpsell' });
export type CreateUpsell = z.infer<typeof CreateUpsell>;

export const UpdateUpsell = z
  .object({
    name: Name.optional(),
    step: Step.optional(),
    is_active: z.boolean().optional(),
  })
  .strict()
  .meta({ id: 'UpdateUpsell' });
export type UpdateUpsell = z.infer<typeof UpdateUpsell>;

export const Upsell = z
  .object({
    object: z.literal('upsell'),
    id: z.string(),
    campaign_id: z.string(),
    offer_id: z.string(),
    step: z.number().int(),
    name: z.string(),
    is_active: z.boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Upsell' });
export type Upsell = z.infer<typeof Upsell>;

// ---- coupons

const ExpiresAt = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time, e.g. 2030-01-31T23:59:59Z' });
const MaxRedemptions = PositiveInt.max(1_000_000_000);

export const CreateCoupon = z
  .object({
    code: z
      .string()
      .trim()
      .min(1)
      .max(64)
      .regex(/^[A-Za-z0-9_-]+$/, 'may contain only letters, digits, "-" and "_"')
      .describe('What the customer types; unique within the team regardless of case'),
    campaign_id: Id(ID_PREFIX.campaign).nullable().optional().describe('Limits the coupon to one campaign'),
    percent_off: z.number().int().min(1).max(100).optional().describe('Either this or `amount_off`'),
    amount_off: Money.min(1).optional().describe('Either this or `percent_off`; in minor units of `currency`'),
    currency: Currency.optional().describe('Required with `amount_off`'),
    max_redemptions: MaxRedemptions.nullable().optional(),
    expires_at: ExpiresAt.nullable().optional(),
  })
  .strict()
  .superRefine((c, ctx) => {
    const hasPercent = c.percent_off !== undefined;
    const hasAmount = c.amount_off !== undefined;
    if (hasPercent && hasAmount) {
      ctx.addIssue({ code: 'custom', path: ['amount_off'], message: 'send either percent_off or amount_off, not both' });
    } else if (!hasPercent && !hasAmount) {
      ctx.addIssue({ code: 'custom', path: ['percent_off'], message: 'send either percent_off or amount_off' });
    }
    if (hasAmount && c.currency === undefined) ctx.addIssue({ code: 'custom', path: ['currency'], message: 'is required with amount_off' });
    if (!hasAmount && c.currency !== undefined) ctx.addIssue({ code: 'custom', path: ['currency'], message: 'is only accepted with amount_off' });
  })
  .meta({ id: 'CreateCoupon' });
export type CreateCoupon = z.infer<typeof CreateCoupon>;

export const UpdateCoupon = z
  .object({
    max_redemptions: MaxRedemptions.nullable().optional(),
    expires_at: ExpiresAt.nullable().optional(),
    is_active: z.boolean().optional(),
  })
  .strict()
  .meta({ id: 'UpdateCoupon' });
export type UpdateCoupon = z.infer<typeof UpdateCoupon>;

export const Coupon = z
  .object({
    object: z.literal('coupon'),
    id: z.string(),
    code: z.string(),
    campaign_id: z.string().nullable(),
    percent_off: z.number().int().nullable(),
    amount_off: z.number().int().nullable(),
    currency: z.string().nullable(),
    max_redemptions: z.number().int().nullable(),
    times_redeemed: z.number().int(),
    expires_at: Timestamp.nullable(),
    is_active: z.boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Coupon' });
export type Coupon = z.infer<typeof Coupon>;
