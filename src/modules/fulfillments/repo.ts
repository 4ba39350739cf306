import { deferWrite, type Executor } from '../../db/database.ts';
import type { NewRow, Row } from '../../db/schema.ts';
import { firstRow, template } from '../../db/templates.ts';

export async function insertFulfillment(db: Executor, row: NewRow<'fulfillments'>): Promise<Row<'fulfillments'>> {
  return db.insertInto('fulfillments').values(row).returningAll().executeTakeFirstOrThrow();
}

/**
 * A new order's fulfillment, sent with the transaction's next statement or its COMMIT (deferWrite):
 * for the order's completion, under its row lock, when no fulfillment can exist yet. The unique
 * index on the order is the backstop: a second one fails the statement it rides in, and nothing of
 * the transaction commits.
 */
export async function insertFulfillmentWithNext(db: Executor, row: NewRow<'fulfillments'>): Promise<void> {
  await deferWrite(db, insertFulfillmentQuery(db, row));
}

const insertFulfillmentQuery = template(['row'], (db: Executor, row: NewRow<'fulfillments'>) => db.insertInto('fulfillments').values(row));

/** One fulfillment per order (unique index): a second completion path inserts nothing. */
export async function insertFulfillmentOnce(db: Executor, row: NewRow<'fulfillments'>): Promise<Row<'fulfillments'> | undefined> {
  return firstRow(db, insertFulfillmentOnceQuery(db, row));
}

const insertFulfillmentOnceQuery = template(['row'], (db: Executor, row: NewRow<'fulfillments'>) =>
  db.insertInto('fulfillments').values(row).onConflict((oc) => oc.column('order_id').doNothing()).returningAll(),
);

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

export async function lockFulfillment(db: Executor, teamId: string, id: string): Promise<Row<'fulfillments'> | undefined> {
  return db.selectFrom('fulfillments').selectAll().where('team_id', '=', teamId).where('id', '=', id).forUpdate().executeTakeFirst();
}

export async function markShipped(
  db: Executor,
  teamId: string,
  id: string,
  s: { carrier: string; tracking_number: string; tracking_url: string | null; shipped_at: Date },
): Promise<Row<'fulfillments'>> {
  return db
    .updateTable('fulfillments')
    .set({ status: 'shipped', ...s, updated_at: new Date() })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** A fulfillment with what a warehouse needs from its order and customer (the CSV export). */
export interface ExportRow {
  seq: number;
  id: string;
  order_id: string;
  status: string;
  lines: unknown;
  created_at: Date;
  shipping_address: unknown;
  phone: string | null;
  email: string;
  first_name: string | null;
  last_name: string | null;
}

/** One batch of the export, oldest first (the order a warehouse works in), after `afterSeq`. */
export async function exportBatch(
  db: Executor,
  teamId: string,
  f: { afterSeq: number; batch: number; status: string; createdGte?: Date | undefined; createdLte?: Date | undefined },
): Promise<ExportRow[]> {
  let q = db
    .selectFrom('fulfillments as f')
    .innerJoin('orders as o', (j) => j.onRef('o.id', '=', 'f.order_id').onRef('o.team_id', '=', 'f.team_id'))
    .innerJoin('customers as c', (j) => j.onRef('c.id', '=', 'o.customer_id').onRef('c.team_id', '=', 'o.team_id'))
    .select(['f.seq', 'f.id', 'f.order_id', 'f.status', 'f.lines', 'f.created_at', 'o.shipping_address', 'o.phone', 'c.email', 'c.first_name', 'c.last_name'])
    .where('f.team_id', '=', teamId)
    .where('f.status', '=', f.status)
    .where('f.seq', '>', f.afterSeq);
  if (f.createdGte) q = q.where('f.created_at', '>=', f.createdGte);
  if (f.createdLte) q = q.where('f.created_at', '<=', f.createdLte);
  return q.orderBy('f.seq', 'asc').limit(f.batch).execute() as Promise<ExportRow[]>;
}
