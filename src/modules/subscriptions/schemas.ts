import { z } from 'zod';
import { Envelope } from '../../app/envelope.ts';
import { Id, ListQuery, Timestamp } from '../../app/schemas.ts';
import { SUBSCRIPTION_STATUSES } from './service.ts';

export const SubscriptionParams = z.object({ id: Id('sub') }).strict();

export const SubscriptionsQuery = ListQuery.extend({
  status: z.enum(SUBSCRIPTION_STATUSES).optional(),
  customer_number: Id('cus').optional(),
  order_number: Id('ord').optional(),
}).strict();

export const CancelSubscriptionBody = z
  .object({
    at_period_end: z
      .boolean()
      .optional()
      .describe('false (default): cancel at once. true: keep the subscription until the end of the period already paid for, then end it (status `cancel_at_period_end` until then).'),
  })
  .strict()
  .meta({ id: 'CancelSubscription' })
  // A POST without a body arrives as null.
  .nullish();

/** PATCH /v1/subscriptions/{id}: a card subscription's next billing date, quantity or offer. */
export const UpdateSubscriptionBody = z
  .object({
    next_billing_at: z
      .union([z.iso.date(), z.iso.datetime({ offset: true })], { error: 'must be a date (2027-01-31) or an ISO 8601 date-time with an offset' })
      .optional()
      .describe(
        "The day the next cycle is due, in the future: a date is that day in the team's time zone, a date-time the day it falls on there; " +
          'billed at the rebill hour. Later cycles count from it (a 31st is billed on the last day of shorter months and on the 31st again after them). ' +
          'On a `past_due` subscription it moves the retry of the unpaid cycle to that day; its dunning count is kept.',
      ),
    quantity: z
      .number()
      .int()
      .min(1)
      .max(100)
      .optional()
      .describe(
        "1 to 100; `recurring_price` becomes the offer's recurring price × quantity + its recurring shipping from the next cycle " +
          '(a `past_due` cycle already ordered is retried at its own amount).',
      ),
    offer_id: Id('offer')
      .optional()
      .describe(
        "Another active recurring or trial offer of the campaign the subscription's order was sold in (same currency): its interval and price apply " +
          'from the next cycle, which stays due when it was; the cycles after it count from it in the new interval.',
      ),
  })
  .strict()
  .refine((b) => b.next_billing_at !== undefined || b.quantity !== undefined || b.offer_id !== undefined, {
    error: 'send at least one of next_billing_at, quantity, offer_id',
  })
  .meta({ id: 'UpdateSubscription' });

/** The other actions take no fields: an empty object, or no body at all (which arrives as null). */
export const NoFieldsBody = z.object({}).strict().nullish();

export const Subscription = z
  .object({
    object: z.literal('subscription'),
    id: z.string().describe('`sub_…`'),
    order_number: z.string().describe('The order that started it'),
    customer_number: z.string(),
    offer_id: z.string(),
    status: z
      .string()
      .describe(
        `One of ${SUBSCRIPTION_STATUSES.map((s) => `\`${s}\``).join(', ')}. For an externally managed subscription it mirrors the provider's membership.`,
      ),
    interval_unit: z.string(),
    interval_count: z.number().int(),
    quantity: z.number().int().describe("Units billed each cycle: `recurring_price` is the offer's recurring price × quantity + its recurring shipping"),
    recurring_price: z.number().int().describe('Minor units, charged each cycle'),
    currency: z.string(),
    next_billing_at: Timestamp.nullable().describe(
      "Card: when the next cycle (`cycle` + 1) is due, computed by the schedule — its day in the team's time zone at the rebill hour; for `cancel_at_period_end`, " +
        'when it ends instead; for `past_due`, the unpaid cycle\'s due day (see `retry_at`); null while `paused` and once ended. ' +
        "Externally managed: the membership's renewal period end, mirrored, never computed; null until the membership is known.",
    ),
    cycle: z.number().int().describe('Cycles billed so far after the first payment (0 until the first rebill)'),
    payment_method: z
      .object({ brand: z.string(), last4: z.string(), exp: z.string().describe('MM/YY') })
      .nullable()
      .describe('The saved card a card subscription charges: brand, last 4 digits and expiry only. Null when none is known (externally managed subscriptions)'),
    retry_count: z.number().int().describe('Failed charges of the current unpaid cycle (dunning)'),
    retry_at: Timestamp.nullable().describe('`past_due`: when the unpaid cycle is charged again'),
    ended_at: Timestamp.nullable().describe('When a card subscription ended (cancelled now, or by the rebill engine); null while live'),
    end_reason: z.string().nullable().describe('Why it ended, e.g. `cancelled_by_merchant`; null while live'),
    externally_managed: z.boolean().describe('Billed by an external provider (extpay); every change is made at the provider first'),
    membership_ref: z.string().nullable().describe("The provider's membership (`mem_…`); null until known, see Sync from Provider"),
    created_at: Timestamp.nullable(),
    updated_at: Timestamp.nullable(),
  })
  .meta({ id: 'Subscription' });

export const SubscriptionEnvelope = Envelope(Subscription);

/** Rebill Now's answer (200, and the data of its 402 and 502): the subscription, the cycle billed and its rebill order. */
export const RebillData = z
  .object({
    subscription: Subscription,
    cycle: z.number().int(),
    order_number: z.string().describe('The rebill order'),
    transaction_id: z.string().nullable(),
  })
  .meta({ id: 'RebillResult' });
export const RebillAnswer = z.object({ success: z.literal(true), message: z.string(), data: RebillData });
export const RebillRefused = z
  .object({
    success: z.literal(false),
    message: z.string(),
    data: RebillData,
    error: z.object({ type: z.string(), code: z.string().describe('`payment_declined` (402) or `payment_outcome_unknown` (502)'), decline_code: z.string().nullable().optional() }),
  })
  .meta({ id: 'RebillRefused' });

export const RebillBody = z
  .object({
    cycle: z.number().int().min(1).max(100_000).optional().describe('The cycle you mean to bill (`cycle` of the subscription + 1); a repeat for a cycle already paid is refused instead of billing the next one.'),
  })
  .strict()
  .meta({ id: 'RebillNow' })
  .nullish();
