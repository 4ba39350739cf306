import { sql } from 'kysely';
import type { Executor } from '../../db/database.ts';
import type { NewRow, Row } from '../../db/schema.ts';

/** A lead the scan found due; `cursor` is its last change as the database prints it (exact, for keyset paging). */
export interface DueLead {
  order_id: string;
  team_id: string;
  cursor: string;
}

/** Where the previous batch of a run ended: its last lead's (updated_at, order id). */
export interface ScanCursor {
  at: string;
  orderId: string;
}

/**
 * Open leads (status `lead`) of campaigns with the follow-up on, idle past their campaign's delay at
 * `now`, changed after the follow-up was switched on and within `windowSecs` past the delay, and
 * not followed up yet: oldest change first, after `after`. A read: the claim decides.
 *
 * This is the one statement of the module that reads the orders and campaigns tables directly
 * (the per-campaign delay needs the join); everything that acts goes through their services.
 */
export async function findDueLeads(db: Executor, f: { now: Date; windowSecs: number; after: ScanCursor | null; limit: number }): Promise<DueLead[]> {
  const afterAt = f.after?.at ?? '-infinity';
  const afterId = f.after?.orderId ?? '';
  const r = await sql<DueLead>`
    SELECT o.id AS order_id, o.team_id, o.updated_at::text AS cursor
    FROM campaigns c
    CROSS JOIN LATERAL (
      SELECT o.id, o.team_id, o.updated_at
      FROM orders o
      WHERE o.campaign_id = c.id AND o.team_id = c.team_id AND o.status = 'lead'
        AND o.updated_at <= ${f.now}::timestamptz - make_interval(mins => c.abandonment_delay_minutes)
        AND o.updated_at >= GREATEST(c.abandonment_enabled_at, ${f.now}::timestamptz - make_interval(mins => c.abandonment_delay_minutes, secs => ${f.windowSecs}))
        AND (o.updated_at, o.id) > (${afterAt}::timestamptz, ${afterId}::text)
        AND NOT EXISTS (SELECT 1 FROM lead_followups l WHERE l.order_id = o.id)
      ORDER BY o.updated_at, o.id
      LIMIT ${f.limit}
    ) o
    WHERE c.abandonment_enabled AND c.abandonment_enabled_at IS NOT NULL
    ORDER BY o.updated_at, o.id
    LIMIT ${f.limit}`.execute(db);
  return r.rows;
}

export async function findFollowUp(db: Executor, orderId: string): Promise<Row<'lead_followups'> | undefined> {
  return db.selectFrom('lead_followups').selectAll().where('order_id', '=', orderId).executeTakeFirst();
}

/** The primary key (order id) keeps a lead to one follow-up whatever races: a second insert fails and its transaction rolls back. */
export async function insertFollowUp(db: Executor, row: NewRow<'lead_followups'>): Promise<Row<'lead_followups'>> {
  return db.insertInto('lead_followups').values(row).returningAll().executeTakeFirstOrThrow();
}
