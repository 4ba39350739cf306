import { z } from 'zod';

export const Id = (prefix: string) =>
  z
    .string()
    .regex(new RegExp(`^${prefix}_[0-9A-Za-z]{1,64}$`), `must be an id starting ${prefix}_`)
    .describe(`Id (\`${prefix}_…\`)`);

export const Currency = z
  .string()
  .regex(/^[A-Z]{3}$/, 'must be a three-letter ISO 4217 code in capitals, e.g. USD')
  .describe('ISO 4217 currency code');

/** An amount in minor units (cents). Never a float. */
export const Money = z.number().int('must be an integer in minor units (cents)').min(0).max(100_000_000_00);

export const Timestamp = z.string().describe('ISO 8601 timestamp');

export const ListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20).describe('1 to 100, default 20'),
  starting_after: z.string().max(100).optional().describe('An id from the previous page: items after it are returned'),
  created_gte: z.coerce.date().optional().describe('Only items created at or after this ISO 8601 time'),
  created_lte: z.coerce.date().optional().describe('Only items created at or before this ISO 8601 time'),
});
export type ListQuery = z.infer<typeof ListQuery>;

export const BoolQuery = z
  .enum(['true', 'false'])
  .transform((v) => v === 'true')
  .optional();

export const Address = z
  .object({
    first_name: z.string().max(100).optional(),
    last_name: z.string().max(100).optional(),
    line1: z.string().max(200).optional(),
    line2: z.string().max(200).optional(),
    city: z.string().max(100).optional(),
    state: z.string().max(100).optional(),
    postal_code: z.string().max(20).optional(),
    country: z.string().regex(/^[A-Z]{2}$/, 'must be an ISO 3166-1 alpha-2 code, e.g. US').optional(),
  })
  .strict()
  .meta({ id: 'Address' });

export function iso(d: Date | null | undefined): string | null {
  return d ? d.toISOString() : null;
}
