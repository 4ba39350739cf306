/**
 * The columns migration 0018 adds to `fulfillments`, merged into the database types (src/db/schema.ts)
 * from here so this module's change stays in this module.
 */
import type { ColumnType } from 'kysely';

declare module '../../db/schema.ts' {
  interface FulfillmentsTable {
    tracking_url: ColumnType<string | null, string | null | undefined, string | null>;
    shipped_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  }
}
