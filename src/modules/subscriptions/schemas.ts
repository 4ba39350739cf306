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
    recurring_price: z.number().int().describe('Minor units'),
    currency: z.string(),
    next_billing_at: Timestamp.nullable().describe("Externally managed: the membership's renewal period end, mirrored, never computed; null until the membership is known"),
    externally_managed: z.boolean().describe('Billed by an external provider (extpay); every change is made at the provider first'),
    membership_ref: z.string().nullable().describe("The provider's membership (`mem_…`); null until known, see Sync from Provider"),
    created_at: Timestamp.nullable(),
    updated_at: Timestamp.nullable(),
  })
  .meta({ id: 'Subscription' });

export const SubscriptionEnvelope = Envelope(Subscription);

export const RebillBody = z
  .object({
    cycle: z.number().int().min(1).max(100_000).optional().describe('The cycle you mean to bill (`cycle` of the subscription + 1); a repeat for a cycle already paid is refused instead of billing the next one.'),
  })
  .strict()
  .meta({ id: 'RebillNow' })
  .nullish();
