import { z } from 'zod';
import { ListQuery, Timestamp } from '../../app/schemas.ts';
import { EVENT_TYPES } from '../events/catalogue.ts';

export const MAX_GRACE_SECONDS = 7 * 86_400;
export const DEFAULT_GRACE_SECONDS = 86_400;

export const IdParams = z.object({ id: z.string().max(100).describe('The object id') });

const TargetUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
  .max(2000)
  .describe('Where deliveries are POSTed. Loopback, private, link-local and other non-public addresses are refused unless the operator allows them.');

const EventTypes = z
  .array(z.string())
  .min(1, 'must list at least one event type, or ["*"] for all')
  .max(EVENT_TYPES.length)
  .superRefine((types, ctx) => {
    if (types.includes('*') && types.length > 1) ctx.addIssue({ code: 'custom', message: '"*" subscribes to every type and cannot be combined with others' });
    const seen = new Set<string>();
    types.forEach((t, i) => {
      if (t !== '*' && !(EVENT_TYPES as readonly string[]).includes(t)) {
        ctx.addIssue({ code: 'custom', path: [i], message: `is not an event type (see GET /v1/event-types): ${t.slice(0, 100)}` });
      }
      if (seen.has(t)) ctx.addIssue({ code: 'custom', path: [i], message: 'is listed twice' });
      seen.add(t);
    });
  })
  .describe(`Event types to receive (${EVENT_TYPES.join(', ')}), or ["*"] for all`);

const Description = z.string().trim().min(1).max(500).nullable();

export const CreateEndpoint = z
  .object({
    url: TargetUrl,
    description: Description.optional(),
    event_types: EventTypes,
  })
  .strict()
  .meta({ id: 'CreateWebhookEndpoint' });
export type CreateEndpoint = z.infer<typeof CreateEndpoint>;

export const UpdateEndpoint = z
  .object({
    url: TargetUrl.optional(),
    description: Description.optional(),
    event_types: EventTypes.optional(),
    is_active: z
      .boolean()
      .optional()
      .describe('false stops deliveries and cancels pending ones; true re-enables a disabled endpoint and resets its failure count'),
  })
  .strict()
  .meta({ id: 'UpdateWebhookEndpoint' });
export type UpdateEndpoint = z.infer<typeof UpdateEndpoint>;

export const RotateSecret = z
  .object({
    grace_seconds: z
      .number()
      .int('must be a whole number of seconds')
      .min(0)
      .max(MAX_GRACE_SECONDS, `must be at most ${MAX_GRACE_SECONDS} (7 days)`)
      .default(DEFAULT_GRACE_SECONDS)
      .describe('How long the previous secret keeps signing beside the new one; 0 drops it at once. Default 86400 (24 h).'),
  })
  .strict()
  .meta({ id: 'RotateWebhookSecret' });
export type RotateSecret = z.infer<typeof RotateSecret>;

export const Endpoint = z
  .object({
    object: z.literal('webhook_endpoint'),
    id: z.string(),
    url: z.string(),
    description: z.string().nullable(),
    event_types: z.array(z.string()),
    is_active: z.boolean(),
    disabled_at: Timestamp.nullable(),
    disabled_reason: z.string().nullable().describe('Why the endpoint stopped receiving deliveries (410 Gone, repeated failures, the merchant)'),
    consecutive_failures: z.number().int().describe('Deliveries that failed for good since the last success'),
    secret_hint: z.string().describe('The last characters of the signing secret; the secret itself is shown only when created or rotated'),
    previous_secret_expires_at: Timestamp.nullable().describe('While in the future, deliveries carry a second signature made with the previous secret'),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'WebhookEndpoint' });
export type Endpoint = z.infer<typeof Endpoint>;

export const EndpointWithSecret = Endpoint.extend({
  secret: z.string().describe('`whsec_` + base64 key for Standard Webhooks verification. Shown once: store it now.'),
}).meta({ id: 'WebhookEndpointWithSecret' });
export type EndpointWithSecret = z.infer<typeof EndpointWithSecret>;

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'cancelled'] as const;

export const Delivery = z
  .object({
    object: z.literal('webhook_delivery'),
    id: z.string().describe('The delivery of one event to one endpoint (`msg_…`)'),
    endpoint_id: z.string(),
    event_id: z.string().describe('Also the `webhook-id` header of every attempt'),
    event_type: z.string(),
    status: z.enum(DELIVERY_STATUSES),
    attempt_count: z.number().int(),
    next_attempt_at: Timestamp.nullable(),
    last_status_code: z.number().int().nullable(),
    last_error: z.string().nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'WebhookDelivery' });
export type Delivery = z.infer<typeof Delivery>;

export const Attempt = z
  .object({
    object: z.literal('webhook_attempt'),
    id: z.string(),
    attempt: z.number().int(),
    status_code: z.number().int().nullable().describe('null when no HTTP answer came (connection refused, timeout, refused target)'),
    duration_ms: z.number().int(),
    response_body: z.string().nullable().describe('The first 2 KB of the answer'),
    error: z.string().nullable(),
    created_at: Timestamp,
  })
  .meta({ id: 'WebhookAttempt' });
export type Attempt = z.infer<typeof Attempt>;

export const DeliveryWithAttempts = Delivery.extend({ attempts: z.array(Attempt).describe('Oldest first') }).meta({ id: 'WebhookDeliveryWithAttempts' });
export type DeliveryWithAttempts = z.infer<typeof DeliveryWithAttempts>;

export const StrictListQuery = ListQuery.strict();

export const DeliveriesQuery = ListQuery.extend({
  status: z.enum(DELIVERY_STATUSES).optional(),
}).strict();
export type DeliveriesQuery = z.infer<typeof DeliveriesQuery>;

export const OrderDeliveriesQuery = DeliveriesQuery.extend({
  order_number: z
    .string()
    .regex(/^ord_\w+$/, 'must be an order number (ord_…)')
    .max(100)
    .describe("The order whose events' deliveries are listed (to every endpoint)"),
}).strict();
export type OrderDeliveriesQuery = z.infer<typeof OrderDeliveriesQuery>;
