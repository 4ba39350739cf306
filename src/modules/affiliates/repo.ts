import { sql } from 'kysely';
import type { Executor } from '../../db/database.ts';
import type { NewRow, Row, RowPatch } from '../../db/schema.ts';

// ---- affiliates and settings

export async function findAffiliate(db: Executor, teamId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<Row<'affiliates'> | undefined> {
  let q = db.selectFrom('affiliates').selectAll().where('team_id', '=', teamId).where('id', '=', id).where('deleted_at', 'is', null);
  if (opts.forUpdate) q = q.forUpdate();
  return q.executeTakeFirst();
}

/** Any affiliate row with this id, deleted ones included (ids are never reused). */
export async function affiliateIdTaken(db: Executor, teamId: string, id: string): Promise<boolean> {
  return (await db.selectFrom('affiliates').select('id').where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst()) !== undefined;
}

export async function listAffiliates(db: Executor, teamId: string, f: { ids: readonly string[] | null; status?: string | undefined; limit: number; afterSeq: number | null }): Promise<Row<'affiliates'>[]> {
  let q = db.selectFrom('affiliates').selectAll().where('team_id', '=', teamId).where('deleted_at', 'is', null);
  if (f.ids) q = f.ids.length ? q.where('id', 'in', [...f.ids]) : q.where(sql<boolean>`false`);
  if (f.status) q = q.where('status', '=', f.status as 'active');
  if (f.afterSeq !== null) q = q.where('seq', '<', f.afterSeq);
  return q.orderBy('seq', 'desc').limit(f.limit + 1).execute();
}

/** Every affiliate id of the team, deleted ones included (their orders stay theirs). */
export async function affiliateIds(db: Executor, teamId: string): Promise<string[]> {
  return (await db.selectFrom('affiliates').select('id').where('team_id', '=', teamId).execute()).map((r) => r.id);
}

export async function insertAffiliate(db: Executor, row: NewRow<'affiliates'>): Promise<Row<'affiliates'>> {
  return db.insertInto('affiliates').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateAffiliate(db: Executor, teamId: string, id: string, patch: RowPatch<'affiliates'>): Promise<Row<'affiliates'>> {
  return db.updateTable('affiliates').set({ ...patch, updated_at: sql`now()` }).where('team_id', '=', teamId).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

export async function findSettings(db: Executor, teamId: string): Promise<Row<'affiliate_settings'> | undefined> {
  return db.selectFrom('affiliate_settings').selectAll().where('team_id', '=', teamId).executeTakeFirst();
}

export async function upsertSettings(db: Executor, teamId: string, patch: { attribution?: 'first_touch' | 'last_touch'; commission_hold_days?: number }): Promise<Row<'affiliate_settings'>> {
  return db
    .insertInto('affiliate_settings')
    .values({ team_id: teamId, ...patch })
    .onConflict((oc) => oc.column('team_id').doUpdateSet({ ...patch, updated_at: sql`now()` }))
    .returningAll()
    .executeTakeFirstOrThrow();
}

// ---- throttle counters and the conversion ledger (always under the affiliate's row lock)

export async function counterOf(db: Executor, teamId: string, affiliateId: string, scope: string): Promise<{ conversions: number; throttled: number }> {
  const r = await db
    .selectFrom('affiliate_throttle_counters')
    .select(['conversions', 'throttled'])
    .where('team_id', '=', teamId)
    .where('affiliate_id', '=', affiliateId)
    .where('scope', '=', scope)
    .executeTakeFirst();
  return r ?? { conversions: 0, throttled: 0 };
}

export async function countConversion(db: Executor, teamId: string, affiliateId: string, scope: string, throttled: boolean): Promise<void> {
  const t = throttled ? 1 : 0;
  await db
    .insertInto('affiliate_throttle_counters')
    .values({ team_id: teamId, affiliate_id: affiliateId, scope, conversions: 1, throttled: t })
    .onConflict((oc) =>
      oc.columns(['team_id', 'affiliate_id', 'scope']).doUpdateSet((eb) => ({
        conversions: eb('affiliate_throttle_counters.conversions', '+', 1),
        throttled: eb('affiliate_throttle_counters.throttled', '+', t),
      })),
    )
    .execute();
}

/** A scope's rate was set again: its count starts over (null scopes: every scope of the affiliate). */
export async function resetCounters(db: Executor, teamId: string, affiliateId: string, scopes: string[] | null): Promise<void> {
  let q = db.deleteFrom('affiliate_throttle_counters').where('team_id', '=', teamId).where('affiliate_id', '=', affiliateId);
  if (scopes) {
    if (scopes.length === 0) return;
    q = q.where('scope', 'in', scopes);
  }
  await q.execute();
}

export async function insertConversion(db: Executor, row: NewRow<'affiliate_conversions'>): Promise<Row<'affiliate_conversions'> | undefined> {
  return db.insertInto('affiliate_conversions').values(row).onConflict((oc) => oc.columns(['team_id', 'order_id']).doNothing()).returningAll().executeTakeFirst();
}

export async function findConversion(db: Executor, teamId: string, orderId: string): Promise<Row<'affiliate_conversions'> | undefined> {
  return db.selectFrom('affiliate_conversions').selectAll().where('team_id', '=', teamId).where('order_id', '=', orderId).executeTakeFirst();
}

export interface ConversionFilter {
  affiliateId: string;
  afterSeq?: number | null;
  limit?: number;
  order?: 'asc' | 'desc';
  campaignId?: string | undefined;
  reason?: string | undefined;
  createdGte?: Date | undefined;
  createdLte?: Date | undefined;
}

export async function listConversions(db: Executor, teamId: string, f: ConversionFilter): Promise<Row<'affiliate_conversions'>[]> {
  const desc = (f.order ?? 'desc') === 'desc';
  let q = db.selectFrom('affiliate_conversions').selectAll().where('team_id', '=', teamId).where('affiliate_id', '=', f.affiliateId);
  if (f.afterSeq != null) q = q.where('seq', desc ? '<' : '>', f.afterSeq);
  if (f.campaignId) q = q.where('campaign_id', '=', f.campaignId);
  if (f.reason) q = q.where('reason', '=', f.reason as 'none');
  if (f.createdGte) q = q.where('created_at', '>=', f.createdGte);
  if (f.createdLte) q = q.where('created_at', '<=', f.createdLte);
  q = q.orderBy('seq', desc ? 'desc' : 'asc');
  if (f.limit !== undefined) q = q.limit(f.limit);
  return q.execute();
}

// ---- activity after the conversion

export async function insertActivity(db: Executor, row: NewRow<'affiliate_activity'>): Promise<boolean> {
  const r = await db.insertInto('affiliate_activity').values(row).onConflict((oc) => oc.columns(['team_id', 'kind', 'transaction_id']).doNothing()).returning('id').executeTakeFirst();
  return r !== undefined;
}

// ---- commissions

export async function insertCommission(db: Executor, row: NewRow<'affiliate_commissions'>): Promise<Row<'affiliate_commissions'> | undefined> {
  return db.insertInto('affiliate_commissions').values(row).onConflict((oc) => oc.columns(['team_id', 'kind', 'transaction_id']).doNothing()).returningAll().executeTakeFirst();
}

/** Pending commissions whose hold has run out become payable (run before every read of the ledger). */
export async function promotePayable(db: Executor, teamId: string): Promise<void> {
  await db.updateTable('affiliate_commissions').set({ status: 'payable' }).where('team_id', '=', teamId).where('status', '=', 'pending').where('payable_at', '<=', sql<Date>`now()`).execute();
}

/** Reverses the order's commissions earned on these charges (null: every charge of the order). */
export async function reverseCommissions(db: Executor, teamId: string, orderId: string, transactionIds: string[] | null, reason: string): Promise<Row<'affiliate_commissions'>[]> {
  let q = db
    .updateTable('affiliate_commissions')
    .set({ status: 'reversed', reversed_at: sql`now()`, reversal_reason: reason })
    .where('team_id', '=', teamId)
    .where('order_id', '=', orderId)
    .where('status', '!=', 'reversed');
  if (transactionIds) q = q.where('transaction_id', 'in', transactionIds);
  return q.returningAll().execute();
}

export async function listCommissions(
  db: Executor,
  teamId: string,
  f: { ids: readonly string[] | null; affiliateId?: string | undefined; orderId?: string | undefined; status?: string | undefined; createdGte?: Date | undefined; createdLte?: Date | undefined; afterSeq: number | null; limit: number },
): Promise<Row<'affiliate_commissions'>[]> {
  let q = db.selectFrom('affiliate_commissions').selectAll().where('team_id', '=', teamId);
  if (f.ids) q = f.ids.length ? q.where('affiliate_id', 'in', [...f.ids]) : q.where(sql<boolean>`false`);
  if (f.affiliateId) q = q.where('affiliate_id', '=', f.affiliateId);
  if (f.orderId) q = q.where('order_id', '=', f.orderId);
  if (f.status) q = q.where('status', '=', f.status as 'pending');
  if (f.createdGte) q = q.where('created_at', '>=', f.createdGte);
  if (f.createdLte) q = q.where('created_at', '<=', f.createdLte);
  if (f.afterSeq !== null) q = q.where('seq', '<', f.afterSeq);
  return q.orderBy('seq', 'desc').limit(f.limit + 1).execute();
}

// ---- postbacks

export async function insertPostback(db: Executor, row: NewRow<'affiliate_postbacks'>): Promise<boolean> {
  const r = await db.insertInto('affiliate_postbacks').values(row).onConflict((oc) => oc.columns(['team_id', 'event', 'source_id']).doNothing()).returning('id').executeTakeFirst();
  return r !== undefined;
}

export async function claimDuePostbacks(db: Executor, limit: number, leaseMs: number): Promise<Row<'affiliate_postbacks'>[]> {
  const r = await sql<Row<'affiliate_postbacks'>>`
    UPDATE affiliate_postbacks
    SET locked_until = date_trunc('milliseconds', now() + ${leaseMs}::int * interval '1 millisecond')
    WHERE id IN (
      SELECT id FROM affiliate_postbacks
      WHERE status = 'pending' AND next_attempt_at <= now() AND (locked_until IS NULL OR locked_until < now())
      ORDER BY next_attempt_at, seq
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    )
    RETURNING *`.execute(db);
  return r.rows;
}

export async function lockPostback(db: Executor, teamId: string, id: string): Promise<Row<'affiliate_postbacks'> | undefined> {
  return db.selectFrom('affiliate_postbacks').selectAll().where('team_id', '=', teamId).where('id', '=', id).forUpdate().executeTakeFirst();
}

export async function findPostback(db: Executor, teamId: string, id: string): Promise<Row<'affiliate_postbacks'> | undefined> {
  return db.selectFrom('affiliate_postbacks').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}

export async function updatePostback(db: Executor, teamId: string, id: string, patch: RowPatch<'affiliate_postbacks'>): Promise<Row<'affiliate_postbacks'>> {
  return db.updateTable('affiliate_postbacks').set({ ...patch, updated_at: sql`now()` }).where('team_id', '=', teamId).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

export async function insertPostbackAttempt(db: Executor, row: NewRow<'affiliate_postback_attempts'>): Promise<void> {
  await db.insertInto('affiliate_postback_attempts').values(row).execute();
}

export async function attemptsOf(db: Executor, teamId: string, postbackId: string): Promise<Row<'affiliate_postback_attempts'>[]> {
  return db.selectFrom('affiliate_postback_attempts').selectAll().where('team_id', '=', teamId).where('postback_id', '=', postbackId).orderBy('attempt').execute();
}

export async function listPostbacks(
  db: Executor,
  teamId: string,
  f: { ids: readonly string[] | null; affiliateId?: string | undefined; orderId?: string | undefined; status?: string | undefined; createdGte?: Date | undefined; createdLte?: Date | undefined; afterSeq: number | null; limit: number },
): Promise<Row<'affiliate_postbacks'>[]> {
  let q = db.selectFrom('affiliate_postbacks').selectAll().where('team_id', '=', teamId);
  if (f.ids) q = f.ids.length ? q.where('affiliate_id', 'in', [...f.ids]) : q.where(sql<boolean>`false`);
  if (f.affiliateId) q = q.where('affiliate_id', '=', f.affiliateId);
  if (f.orderId) q = q.where('order_id', '=', f.orderId);
  if (f.status) q = q.where('status', '=', f.status as 'pending');
  if (f.createdGte) q = q.where('created_at', '>=', f.createdGte);
  if (f.createdLte) q = q.where('created_at', '<=', f.createdLte);
  if (f.afterSeq !== null) q = q.where('seq', '<', f.afterSeq);
  return q.orderBy('seq', 'desc').limit(f.limit + 1).execute();
}
