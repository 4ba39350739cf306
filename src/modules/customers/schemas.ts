import { z } from 'zod';
import { Timestamp } from '../../app/schemas.ts';

/** What customerView (service.ts) answers. */
export const Customer = z
  .object({
    object: z.literal('customer'),
    customer_number: z.string().describe('`cus_…`'),
    email: z.string(),
    first_name: z.string().nullable(),
    last_name: z.string().nullable(),
    phone: z.string().nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'CustomerRecord' });

/** What noteView (service.ts) answers. */
export const Note = z
  .object({
    object: z.literal('note'),
    id: z.string(),
    customer_number: z.string(),
    order_number: z.string().nullable().describe('The order the note is about (written on the order page, or a dispute of that order); null for a note of the customer only'),
    body: z.string(),
    author: z.string().describe('Who wrote it: `token:<id>`, `user:<id>` or `system`'),
    created_at: Timestamp,
  })
  .meta({ id: 'CustomerNote' });
