import type { Executor } from '../../db/database.ts';
import type { NewRow, Row } from '../../db/schema.ts';

/** Inserts the in-flight marker; returns false when the key is already taken. */
export async function claimKey(db: Executor, row: NewRow<'idempotency_keys'>): Promise<boolean> {
  const inserted = await db
    .insertInto('idempotency_keys')
    .values(row)
    .onConflict((oc) => oc.columns(['team_id', 'key']).doNothing())
    .returning('key')
    .executeTakeFirst();
  return inserted !== undefined;
}

export async function findKey(db: Executor, teamId: string, key: string): Promise<Row<'idempotency_keys'> | undefined> {
  return db.selectFrom('idempotency_keys').selectAll().where('team_id', '=', teamId).where('key', '=', key).executeTakeFirst();
}

/** Stores the response; with `createdAt`, only on the claim made then (not on a later claimant's). */
export async function completeKey(db: Executor, teamId: string, key: string, status: number, body: string, createdAt?: Date): Promise<void> {
  let q = db.updateTable('idempotency_keys').set({ state: 'done', response_status: status, response_body: body }).where('team_id', '=', teamId).where('key', '=', key);
  if (createdAt) q = q.where('created_at', '=', createdAt);
  await q.execute();
}

/** Deletes the key if it is still the row we saw (same creation time), so a racing claimant is not disturbed. */
export async function releaseKey(db: Executor, teamId: string, key: string, createdAt?: Date): Promise<void> {
  let q = db.deleteFrom('idempotency_keys').where('team_id', '=', teamId).where('key', '=', key);
  if (createdAt) q = q.where('created_at', '=', createdAt);
  await q.execute();
}

export async function deleteExpiredKeys(db: Executor, now: Date): Promise<number> {
  const r = await db.deleteFrom('idempotency_keys').where('expires_at', '<', now).executeTakeFirst();
  return Number(r.numDeletedRows);
}

