import type { Executor } from '../../db/database.ts';
import type { NewRow, Row } from '../../db/schema.ts';

export async function insertFulfillment(db: Executor, row: NewRow<'fulfillments'>): Promise<Row<'fulfillments'>> {
  return db.insertInto('fulfillments').values(row).returningAll().executeTakeFirstOrThrow();
}

/** One fulfillment per order (unique index): a second completion path inserts nothing. */
export async function insertFulfillmentOnce(db: Executor, row: NewRow<'fulfillments'>): Promise<Row<'fulfillments'> | undefined> {
  return db.insertInto('fulfillments').values(row).onConflict((oc) => oc.column('order_id').doNothing()).returningAll().executeTakeFirst();
}

export async function findFulfillment(db: Executor, teamId: string, id: string): Promise<Row<'fulfillments'> | undefined> {
  return db.selectFrom('fulfillments').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}

export async function listFulfillments(
  db: Executor,
  teamId: string,
  f: { limit: number; afterSeq: number | null; orderId?: string | undefined; status?: string | undefined; createdGte?: Date | undefined; createdLte?: Date | undefined },
): Promise<Row<'fulfillments'>[]> {
  let q = db.selectFrom('fulfillments').selectAll().where('team_id', '=', teamId);
  if (f.afterSeq !== null) q = q.where('seq', '<', f.afterSeq);
  if (f.orderId) q = q.where('order_id', '=', f.orderId);
  if (f.status) q = q.where('status', '=', f.status);
  if (f.createdGte) q = q.where('created_at', '>=', f.createdGte);
  if (f.createdLte) q = q.where('created_at', '<=', f.createdLte);
  return q.orderBy('seq', 'desc').limit(f.limit + 1).execute();
}

export async function findOrderFulfillment(db: Executor, teamId: string, orderId: string): Promise<Row<'fulfillments'> | undefined> {
  return db.selectFrom('fulfillments').selectAll().where('team_id', '=', teamId).where('order_id', '=', orderId).forUpdate().executeTakeFirst();
}

export async function setFulfillmentLines(db: Executor, teamId: string, id: string, lines: unknown[]): Promise<void> {
  await db.updateTable('fulfillments').set({ lines: JSON.stringify(lines), updated_at: new Date() }).where('team_id', '=', teamId).where('id', '=', id).execute();
}
