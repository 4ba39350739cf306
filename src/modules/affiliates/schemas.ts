import { z } from 'zod';
import { Id, ListQuery, Money } from '../../app/schemas.ts';
import { PLACEHOLDERS, placeholderBeforePath, unknownPlaceholders } from './render.ts';

/** The merchant chooses an affiliate's id: letters, digits, `_`, `-` and `.`, as affiliate networks name them. */
export const AffiliateId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'must be 1 to 64 letters, digits, _, - or . (starting with a letter or digit)')
  .describe("The affiliate's id, chosen by the merchant (e.g. the id the affiliate network uses)");

const SubId = z.string().trim().min(1).max(255);

/**
 * The affiliate block of Create Lead, Create Order, Process Payment and Reprocess Payment.
 * Kept on the order (first touch wins unless the team's attribution is `last_touch`).
 */
export const AffiliateBlock = z
  .object({
    affiliate_id: AffiliateId,
    click_id: z.string().trim().min(1).max(255).optional().describe("The affiliate network's click id (returned in postbacks as `{click_id}`)"),
    sub1: SubId.optional().describe('Sub id 1 (the affiliate\'s own tracking value; `{sub1}` in postbacks)'),
    sub2: SubId.optional(),
    sub3: SubId.optional(),
    sub4: SubId.optional(),
    sub5: SubId.optional(),
  })
  .strict()
  .meta({
    id: 'AffiliateBlock',
    description:
      'Attribution: the affiliate (an id created with POST /v1/affiliates; an unknown id is a 422), the click id and up to five sub ids. ' +
      'Stored on the order and shown as `affiliate` on order views. The first block an order receives wins (first touch) unless the team\'s ' +
      'affiliate settings say `last_touch`; nothing changes it once the first payment is approved (the conversion).',
  });
export type AffiliateBlock = z.infer<typeof AffiliateBlock>;

/** A percentage 0–100 with at most two decimals (stored as basis points). */
const Percent = z
  .number()
  .min(0)
  .max(100)
  .refine((v) => Math.abs(v * 100 - Math.round(v * 100)) < 1e-6, 'at most two decimals');

const PostbackEvent = z.enum(['conversion', 'upsell', 'rebill', 'refund']);

const UrlTemplate = z
  .string()
  .max(2000)
  .superRefine((v, ctx) => {
    const unknown = unknownPlaceholders(v);
    if (unknown.length) ctx.addIssue({ code: 'custom', message: `unknown placeholders: ${unknown.map((u) => `{${u}}`).join(', ')}` });
    if (placeholderBeforePath(v)) ctx.addIssue({ code: 'custom', message: 'may use placeholders only after the host (in the path, query or fragment)' });
    const sample = v.replace(/\{[a-z0-9_]+\}/g, 'x');
    let url: URL | null = null;
    try {
      url = new URL(sample);
    } catch {
      /* reported below */
    }
    if (!url || !/^https?:$/.test(url.protocol)) ctx.addIssue({ code: 'custom', message: 'must be an http(s) URL' });
  })
  .describe(`The postback URL template; placeholders (values URL-encoded) only after the host: ${PLACEHOLDERS.map((p) => `\`{${p}}\``).join(', ')}`);

const Commission = z
  .object({
    type: z.enum(['none', 'fixed', 'percent']).describe('`fixed`: `amount` per conversion; `percent`: `percent` of the first payment; `none`: no commission'),
    amount: Money.optional().describe('Minor units of the order currency, for `fixed`'),
    percent: Percent.optional().describe('0–100, for `percent`'),
    on_upsells: z.boolean().optional().describe('Also earn on upsell charges (the same rule applied to each charge)'),
    on_rebills: z.boolean().optional().describe('Also earn on rebill (renewal) charges'),
    hold_days: z.number().int().min(0).max(365).nullable().optional().describe("Days a commission stays pending before it is payable; null: the team's default"),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.type === 'fixed' && c.amount === undefined) ctx.addIssue({ code: 'custom', path: ['amount'], message: 'is required for a fixed commission' });
    if (c.type === 'percent' && c.percent === undefined) ctx.addIssue({ code: 'custom', path: ['percent'], message: 'is required for a percent commission' });
  });

const AffiliateFields = {
  name: z.string().trim().min(1).max(200),
  status: z.enum(['active', 'paused']).describe('`paused`: orders are still attributed and conversions counted, but no postback, pixel or commission'),
  throttle_rate: Percent.nullable().describe('Share of this affiliate\'s conversions to throttle, 0–100 (%); null: no throttling configured'),
  campaign_throttle_rates: z
    .record(Id('cmp'), Percent)
    .describe('Per-campaign rates (campaign id → %), each counted on its own; other campaigns use `throttle_rate`'),
  automatic_throttling: z.boolean().describe('Throttle automatically up to the rate (spec 2.3)'),
  commission: Commission,
  postback_url: UrlTemplate.nullable(),
  postback_events: z.array(PostbackEvent).max(4).describe('Which events call the postback URL: `conversion` (default), `upsell`, `rebill`, `refund` (a reversal)'),
  pixel_html: z.string().max(20_000).nullable().describe('HTML for the thank-you page, same placeholders as the postback URL; served only for orders that are not throttled'),
};

export const CreateAffiliate = z
  .object({
    id: AffiliateId,
    ...AffiliateFields,
    status: AffiliateFields.status.default('active'),
    throttle_rate: AffiliateFields.throttle_rate.default(null),
    campaign_throttle_rates: AffiliateFields.campaign_throttle_rates.default({}),
    automatic_throttling: AffiliateFields.automatic_throttling.default(false),
    commission: Commission.default({ type: 'none' }),
    postback_url: AffiliateFields.postback_url.default(null),
    postback_events: AffiliateFields.postback_events.default(['conversion']),
    pixel_html: AffiliateFields.pixel_html.default(null),
  })
  .strict()
  .meta({ id: 'CreateAffiliate' });
export type CreateAffiliate = z.infer<typeof CreateAffiliate>;

export const UpdateAffiliate = z
  .object({
    name: AffiliateFields.name.optional(),
    status: AffiliateFields.status.optional(),
    throttle_rate: AffiliateFields.throttle_rate.optional(),
    campaign_throttle_rates: AffiliateFields.campaign_throttle_rates.optional(),
    automatic_throttling: AffiliateFields.automatic_throttling.optional(),
    commission: Commission.optional(),
    postback_url: AffiliateFields.postback_url.optional(),
    postback_events: AffiliateFields.postback_events.optional(),
    pixel_html: AffiliateFields.pixel_html.optional(),
  })
  .strict()
  .meta({ id: 'UpdateAffiliate' });
export type UpdateAffiliate = z.infer<typeof UpdateAffiliate>;

export const AffiliateParams = z.object({ id: AffiliateId }).strict();
export const PostbackParams = z.object({ id: Id('pb') }).strict();
export const OrderNumberParams = z.object({ order_number: Id('ord') }).strict();

export const AffiliateSettings = z
  .object({
    attribution: z.enum(['first_touch', 'last_touch']).optional().describe('Which affiliate block an order keeps: the first it received (default) or the latest before its conversion'),
    commission_hold_days: z.number().int().min(0).max(365).optional().describe('Default hold before a commission is payable (days; default 30)'),
  })
  .strict()
  .meta({ id: 'AffiliateSettings' });
export type AffiliateSettings = z.infer<typeof AffiliateSettings>;

export const AffiliatesQuery = ListQuery.pick({ limit: true, starting_after: true }).extend({ status: z.enum(['active', 'paused']).optional() }).strict();

export const ThrottleLedgerQuery = ListQuery.extend({
  campaign_id: Id('cmp').optional(),
  reason: z.enum(['requested', 'automatic', 'none']).optional(),
}).strict();
export type ThrottleLedgerQuery = z.infer<typeof ThrottleLedgerQuery>;

export const SimulateBody = z
  .object({
    throttle_rate: Percent.nullable().describe('The rate to replay with (%); null: no throttling configured'),
    automatic_throttling: z.boolean().default(true),
    created_gte: z.coerce.date().optional().describe('Replay conversions from this time (default: all)'),
    created_lte: z.coerce.date().optional(),
    campaign_id: Id('cmp').optional().describe('Only this campaign\'s conversions'),
    include_decisions: z.boolean().default(false).describe('Answer each conversion\'s decision too (at most 10,000)'),
  })
  .strict()
  .meta({ id: 'ThrottleSimulation' });
export type SimulateBody = z.infer<typeof SimulateBody>;

export const AffiliateOrdersQuery = ListQuery.extend({
  affiliate_id: AffiliateId.optional(),
  status: z.enum(['processing', 'completed', 'refunded', 'cancelled']).optional(),
  campaign_id: Id('cmp').optional(),
}).strict();
export type AffiliateOrdersQuery = z.infer<typeof AffiliateOrdersQuery>;

export const CommissionsQuery = ListQuery.extend({
  affiliate_id: AffiliateId.optional(),
  order_number: Id('ord').optional(),
  status: z.enum(['pending', 'payable', 'reversed']).optional(),
}).strict();
export type CommissionsQuery = z.infer<typeof CommissionsQuery>;

export const PostbacksQuery = ListQuery.extend({
  affiliate_id: AffiliateId.optional(),
  order_number: Id('ord').optional(),
  status: z.enum(['pending', 'succeeded', 'failed']).optional(),
}).strict();
export type PostbacksQuery = z.infer<typeof PostbacksQuery>;

export const ReportQuery = z
  .object({
    created_gte: z.coerce.date().optional().describe('Period start (inclusive); default: all time'),
    created_lte: z.coerce.date().optional().describe('Period end (inclusive)'),
    affiliate_id: AffiliateId.optional(),
    group_by: z.enum(['affiliate', 'sub1', 'sub2', 'sub3', 'sub4', 'sub5']).default('affiliate').describe('One row per affiliate (default), or per affiliate and the value of one sub id'),
  })
  .strict();
export type ReportQuery = z.infer<typeof ReportQuery>;

// ---- answers (what views.ts builds), for the OpenAPI document and the contract check

const Ts = z.string().describe('ISO 8601 timestamp');
const SubIdsOut = { sub1: z.string().nullable(), sub2: z.string().nullable(), sub3: z.string().nullable(), sub4: z.string().nullable(), sub5: z.string().nullable() };

/** The affiliate block as order views show it (`affiliate`, null for an order without one). */
export const OrderAffiliate = z.object({ affiliate_id: z.string(), click_id: z.string().nullable(), ...SubIdsOut }).meta({ id: 'OrderAffiliate' });

export const AffiliateOut = z
  .object({
    object: z.literal('affiliate'),
    id: z.string(),
    name: z.string(),
    status: z.enum(['active', 'paused']),
    commission: z.object({
      type: z.enum(['none', 'fixed', 'percent']),
      amount: z.number().nullable(),
      percent: z.number().nullable(),
      on_upsells: z.boolean(),
      on_rebills: z.boolean(),
      hold_days: z.number().nullable(),
    }),
    postback_url: z.string().nullable(),
    postback_events: z.array(z.string()),
    pixel_html: z.string().nullable(),
    created_at: Ts,
    updated_at: Ts,
    throttle_rate: z.number().nullable().optional().describe('Merchant only'),
    campaign_throttle_rates: z.record(z.string(), z.number()).optional().describe('Merchant only'),
    automatic_throttling: z.boolean().optional().describe('Merchant only'),
    deleted: z.boolean().optional(),
  })
  .meta({ id: 'Affiliate' });

export const AffiliateSettingsOut = z
  .object({ object: z.literal('affiliate_settings'), attribution: z.enum(['first_touch', 'last_touch']), commission_hold_days: z.number() })
  .meta({ id: 'AffiliateSettingsView' });

export const ThrottleDecisionOut = z
  .object({
    object: z.literal('throttle_decision'),
    id: z.string(),
    order_number: z.string(),
    affiliate_id: z.string(),
    campaign_id: z.string(),
    transaction_id: z.string().nullable(),
    counted_in: z.enum(['affiliate', 'campaign']),
    conversions_before: z.number(),
    throttled_before: z.number(),
    rate: z.number().nullable(),
    automatic_throttling: z.boolean(),
    requested: z.boolean(),
    throttled: z.boolean(),
    reason: z.enum(['requested', 'automatic', 'none']),
    amount: z.number(),
    currency: z.string(),
    created_at: Ts,
  })
  .meta({ id: 'ThrottleDecision' });

export const SimulationOut = z
  .object({
    throttle_rate: z.number().nullable(),
    automatic_throttling: z.boolean(),
    conversions: z.number(),
    requested: z.number(),
    automatic: z.number(),
    throttled: z.number(),
    throttled_share: z.number().describe('% of the conversions'),
    decisions: z
      .array(z.object({ order_number: z.string(), requested: z.boolean(), throttled: z.boolean(), reason: z.enum(['requested', 'automatic', 'none']), conversions_before: z.number(), throttled_before: z.number() }))
      .optional(),
    actual: z.object({ throttled: z.number(), requested: z.number(), automatic: z.number() }).describe('What was really decided for these conversions'),
  })
  .meta({ id: 'ThrottleSimulationResult' });

export const CommissionOut = z
  .object({
    object: z.literal('affiliate_commission'),
    id: z.string(),
    affiliate_id: z.string(),
    order_number: z.string(),
    kind: z.enum(['conversion', 'upsell', 'rebill']),
    transaction_id: z.string(),
    amount: z.number(),
    currency: z.string(),
    status: z.enum(['pending', 'payable', 'reversed']),
    payable_at: Ts,
    reversed_at: Ts.nullable(),
    reversal_reason: z.string().nullable(),
    ...SubIdsOut,
    created_at: Ts,
  })
  .meta({ id: 'AffiliateCommission' });

const postbackFields = {
  object: z.literal('affiliate_postback'),
  id: z.string(),
  affiliate_id: z.string(),
  order_number: z.string(),
  event: z.enum(['conversion', 'upsell', 'rebill', 'refund']),
  url: z.string(),
  status: z.enum(['pending', 'succeeded', 'failed']),
  attempt_count: z.number(),
  next_attempt_at: Ts.nullable(),
  last_status_code: z.number().nullable(),
  last_error: z.string().nullable(),
  created_at: Ts,
  updated_at: Ts,
};
export const PostbackOut = z.object(postbackFields).meta({ id: 'AffiliatePostback' });
export const PostbackWithAttemptsOut = z
  .object({
    ...postbackFields,
    attempts: z.array(
      z.object({
        object: z.literal('affiliate_postback_attempt'),
        id: z.string(),
        attempt: z.number(),
        status_code: z.number().nullable(),
        duration_ms: z.number(),
        response_body: z.string().nullable(),
        error: z.string().nullable(),
        created_at: Ts,
      }),
    ),
  })
  .meta({ id: 'AffiliatePostbackWithAttempts' });

export const OrderPixelsOut = z
  .object({
    object: z.literal('order_pixels'),
    order_number: z.string(),
    affiliate_id: z.string().nullable(),
    fire: z.boolean(),
    pixels: z.array(z.object({ affiliate_id: z.string(), html: z.string() })),
  })
  .meta({ id: 'OrderPixels' });

export const ReportRowOut = z
  .object({
    affiliate_id: z.string(),
    sub_id: z.string().nullable(),
    currency: z.string(),
    leads: z.number(),
    conversions: z.number(),
    conversion_rate: z.number(),
    revenue: z.number(),
    upsell_revenue: z.number(),
    rebill_revenue: z.number(),
    refunds: z.number(),
    chargebacks: z.number(),
    chargeback_amount: z.number(),
    commission: z.number(),
    epc: z.number(),
    throttled: z.object({ conversions: z.number(), revenue: z.number() }).optional().describe('Merchant only'),
  })
  .meta({ id: 'AffiliateReportRow' });
