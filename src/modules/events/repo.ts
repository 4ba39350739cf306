import { deferWrite, type Executor } from '../../db/database.ts';
import type { NewRow, Row } from '../../db/schema.ts';
import { template } from '../../db/templates.ts';

/** An event written in a transaction that reads nothing of it back (deferWrite: no round trip of its own). */
export async function writeEvent(db: Executor, row: NewRow<'events'>): Promise<void> {
  await deferWrite(db, insertEventQuery(db, row));
}

const insertEventQuery = template(['row'], (db: Executor, row: NewRow<'events'>) => db.insertInto('events').values(row));

export async function findEvent(db: Executor, teamId: string, id: string): Promise<Row<'events'> | undefined> {
  return db.selectFrom('events').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}

export async function findOrderEvent(db: Executor, teamId: string, orderId: string, type: string): Promise<Row<'events'> | undefined> {
  return db.selectFrom('events').selectAll().where('team_id', '=', teamId).where('order_id', '=', orderId).where('type', '=', type).executeTakeFirst();
}

export async function listEvents(
  db: Executor,
  teamId: string,
  f: { limit: number; afterSeq: number | null; type?: string | undefined; orderId?: string | undefined; createdGte?: Date | undefined; createdLte?: Date | undefined },
): Promise<Row<'events'>[]> {
  let q = db.selectFrom('events').selectAll().where('team_id', '=', teamId);
  if (f.afterSeq !== null) q = q.where('seq', '<', f.afterSeq);
  if (f.type) q = q.where('type', '=', f.type);
  if (f.orderId) q = q.where('order_id', '=', f.orderId);
  if (f.createdGte) q = q.where('created_at', '>=', f.createdGte);
  if (f.createdLte) q = q.where('created_at', '<=', f.createdLte);
  return q.orderBy('seq', 'desc').limit(f.limit + 1).execute();
}
