import { z } from 'zod';
import { Timestamp } from '../../app/schemas.ts';

/** What eventView (service.ts) answers: the body a webhook delivery carries. */
export const Event = z
  .object({
    object: z.literal('event'),
    id: z.string().describe('`ev_…`'),
    type: z.string().describe('A type of the catalogue (GET /v1/event-types), e.g. `order.completed`'),
    created_at: Timestamp.nullable(),
    data: z.record(z.string(), z.unknown()).describe('`object`: the resource as the API answers it (an order, a subscription, …)'),
  })
  .meta({ id: 'Event' });

export const EventType = z.object({ type: z.string(), description: z.string() }).meta({ id: 'EventType' });
