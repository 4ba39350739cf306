import { type SqlBool, sql } from 'kysely';
import { deferWrite, type Executor } from '../../db/database.ts';
import type { NewRow, Row, RowPatch } from '../../db/schema.ts';

export interface ListWindow {
  afterSeq: number | null;
  limit: number;
  createdGte?: Date | undefined;
  createdLte?: Date | undefined;
}

// ---- rules

export async function insertRule(db: Executor, row: NewRow<'fraud_rules'>): Promise<Row<'fraud_rules'>> {
  return db.insertInto('fraud_rules').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function findRule(db: Executor, teamId: string, id: string): Promise<Row<'fraud_rules'> | undefined> {
  return db.selectFrom('fraud_rules').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}

export async function updateRule(db: Executor, teamId: string, id: string, patch: RowPatch<'fraud_rules'>): Promise<Row<'fraud_rules'> | undefined> {
  return db
    .updateTable('fraud_rules')
    .set({ ...patch, updated_at: sql`now()` })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** Its keys and counted events go with it (ON DELETE CASCADE). */
export async function deleteRule(db: Executor, teamId: string, id: string): Promise<Row<'fraud_rules'> | undefined> {
  return db.deleteFrom('fraud_rules').where('team_id', '=', teamId).where('id', '=', id).returningAll().executeTakeFirst();
}

/** Newest first, strictly after the cursor row, `limit + 1` rows. */
export async function listRules(db: Executor, teamId: string, w: ListWindow): Promise<Row<'fraud_rules'>[]> {
  let q = db.selectFrom('fraud_rules').selectAll().where('team_id', '=', teamId);
  if (w.afterSeq !== null) q = q.where('seq', '<', w.afterSeq);
  if (w.createdGte) q = q.where('created_at', '>=', w.createdGte);
  // created_at is shown to the millisecond and kept to the microsecond (as the other lists do).
  if (w.createdLte) q = q.where('created_at', '<', new Date(w.createdLte.getTime() + 1));
  return q.orderBy('seq', 'desc').limit(w.limit + 1).execute();
}

/** The rules a payment is screened against, in a fixed order so concurrent screenings lock keys in the same order. */
export async function enabledRules(db: Executor, teamId: string): Promise<Row<'fraud_rules'>[]> {
  return db.selectFrom('fraud_rules').selectAll().where('team_id', '=', teamId).where('is_enabled', '=', true).orderBy('id').execute();
}

// ---- velocity

/**
 * Locks the (rule, key) row, creating it on first sight; held until the transaction ends. It must be
 * its own statement: a count in the same statement would read the snapshot taken before the wait.
 * False when the rule is gone (deleted since the caller's cached list was read): nothing to count.
 */
export async function lockKey(db: Executor, teamId: string, ruleId: string, keyHash: string): Promise<boolean> {
  const locked = await db
    .insertInto('fraud_rule_keys')
    .columns(['rule_id', 'key_hash', 'team_id'])
    .expression((eb) =>
      eb
        .selectFrom('fraud_rules')
        .select((s) => ['id', s.val(keyHash).as('key_hash'), 'team_id'])
        .where('team_id', '=', teamId)
        .where('id', '=', ruleId),
    )
    .onConflict((oc) => oc.columns(['rule_id', 'key_hash']).doUpdateSet({ checked_at: sql`now()` }))
    .returning('rule_id')
    .executeTakeFirst();
  return locked !== undefined;
}

/** Events that fell out of the window are never counted again (holds stay until their payment settles). */
export async function pruneKey(db: Executor, ruleId: string, keyHash: string, windowSeconds: number): Promise<void> {
  await db
    .deleteFrom('fraud_events')
    .where('rule_id', '=', ruleId)
    .where('key_hash', '=', keyHash)
    .where('kind', '<>', 'hold')
    .where(sql<SqlBool>`created_at <= now() - make_interval(secs => ${windowSeconds})`)
    .execute();
}

/**
 * What the rule counts for the key right now: attempts within the window; or declines within the
 * window plus the holds of payments with an attempt at a gateway in flight, whatever their age (one
 * may still decline). A hold whose payment has none in flight can no longer become a decline: it
 * is not counted, so a hold its settlement missed never blocks a key for good.
 */
export async function countKey(db: Executor, rule: Pick<Row<'fraud_rules'>, 'id' | 'metric' | 'window_seconds'>, keyHash: string): Promise<number> {
  const inWindow = sql<SqlBool>`fraud_events.created_at > now() - make_interval(secs => ${rule.window_seconds})`;
  const inFlight = sql<SqlBool>`exists (select 1 from transactions t where t.team_id = fraud_events.team_id and t.order_id = fraud_events.order_id and t.step = 'first_payment' and t.in_flight)`;
  const r = await db
    .selectFrom('fraud_events')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('rule_id', '=', rule.id)
    .where('key_hash', '=', keyHash)
    .where((eb) =>
      rule.metric === 'attempts'
        ? eb.and([eb('kind', '=', 'attempt'), inWindow])
        : eb.or([eb.and([eb('kind', '=', 'hold'), inFlight]), eb.and([eb('kind', '=', 'decline'), inWindow])]),
    )
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

export async function insertEvents(db: Executor, rows: NewRow<'fraud_events'>[]): Promise<void> {
  if (rows.length === 0) return;
  await db.insertInto('fraud_events').values(rows).execute();
}

/** A declined payment's holds become declines, counted from now. */
export async function holdsToDeclines(db: Executor, teamId: string, orderId: string): Promise<void> {
  await db
    .updateTable('fraud_events')
    .set({ kind: 'decline', created_at: sql`now()` })
    .where('team_id', '=', teamId)
    .where('order_id', '=', orderId)
    .where('kind', '=', 'hold')
    .execute();
}

export async function dropHolds(db: Executor, teamId: string, orderId: string): Promise<void> {
  await deferWrite(db, db.deleteFrom('fraud_events').where('team_id', '=', teamId).where('order_id', '=', orderId).where('kind', '=', 'hold'));
}
