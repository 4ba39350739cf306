import { z } from 'zod';
import { Timestamp } from '../../app/schemas.ts';

/** What fulfillmentView (service.ts) answers. */
export const Fulfillment = z
  .object({
    object: z.literal('fulfillment'),
    id: z.string().describe('`ful_…`'),
    order_number: z.string(),
    status: z.string().describe('`pending`, `shipped`, `delivered` or `cancelled`'),
    lines: z
      .array(z.object({ line_id: z.string(), offer_id: z.string(), product_id: z.string(), name: z.string(), quantity: z.number().int() }))
      .describe('The physical lines to ship'),
    tracking_number: z.string().nullable(),
    carrier: z.string().nullable(),
    tracking_url: z.string().nullable(),
    shipped_at: Timestamp.nullable().describe('When it left the warehouse (POST /v1/fulfillments/{id}/ship)'),
    created_at: Timestamp.nullable(),
    updated_at: Timestamp.nullable(),
  })
  .meta({ id: 'Fulfillment' });
