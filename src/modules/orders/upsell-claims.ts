import { sql } from 'kysely';
import { deferWrite, type Executor } from '../../db/database.ts';
import type { NewRow, Row, RowPatch } from '../../db/schema.ts';
import { firstRow, template } from '../../db/templates.ts';

/*
 * An order's claims on its upsells (order_upsells): one per order and upsell, taken before the
 * upsell's charge and moved with its outcome. Part of the orders module's repo (repo.ts re-exports it).
 */

export async function findOrderUpsell(db: Executor, teamId: string, orderId: string, upsellId: string): Promise<Row<'order_upsells'> | undefined> {
  return firstRow(db, orderUpsellQuery(db, teamId, orderId, upsellId));
}

/** An order's claim on one upsell, as a query to send with others (readTogether). */
export const orderUpsellQuery = template(['value', 'value', 'value'], (db: Executor, teamId: string, orderId: string, upsellId: string) =>
  db.selectFrom('order_upsells').selectAll().where('team_id', '=', teamId).where('order_id', '=', orderId).where('upsell_id', '=', upsellId),
);

export async function insertOrderUpsell(db: Executor, row: NewRow<'order_upsells'>): Promise<void> {
  await deferWrite(db, insertOrderUpsellQuery(db, row));
}

const insertOrderUpsellQuery = template(['row'], (db: Executor, row: NewRow<'order_upsells'>) => db.insertInto('order_upsells').values(row));

/**
 * Moves an upsell claim to a new status only from one of `from` (its table's sources for that
 * status), sent with the transaction's next statement or its COMMIT (deferWrite): the statement
 * checks its own row count (checkstand_expect_rows, migration 0020) and fails with SQLSTATE CS409
 * and `refusal` when the claim was in none, aborting the transaction; `mapError` names that failure.
 */
export async function moveOrderUpsellWithNext(
  db: Executor,
  teamId: string,
  id: string,
  from: ReadonlyArray<Row<'order_upsells'>['status']>,
  patch: RowPatch<'order_upsells'> & { status: Row<'order_upsells'>['status'] },
  refusal: { message: string; mapError: (err: unknown) => unknown },
): Promise<void> {
  const moved = moveOrderUpsellQuery(db, { ...patch, updated_at: new Date() }, teamId, id, from, refusal.message);
  await deferWrite(db, moved, { mapError: refusal.mapError });
}

const moveOrderUpsellQuery = template(
  ['row', 'value', 'value', 'list', 'value'],
  (db: Executor, set: RowPatch<'order_upsells'>, teamId: string, id: string, from: ReadonlyArray<Row<'order_upsells'>['status']>, refusal: string) =>
    db
      .with('moved', (w) => w.updateTable('order_upsells').set(set).where('team_id', '=', teamId).where('id', '=', id).where('status', 'in', from).returning('id'))
      .selectFrom('moved')
      .select(sql<number>`checkstand_expect_rows(count(*), 1, ${refusal})`.as('moved')),
);

/** False when the claim is gone (released as an orphan): the caller must not charge for it. */
export async function finishOrderUpsell(db: Executor, teamId: string, id: string, patch: RowPatch<'order_upsells'>): Promise<boolean> {
  const r = await db
    .updateTable('order_upsells')
    .set({ ...patch, updated_at: new Date() })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function deleteOrderUpsell(db: Executor, teamId: string, id: string): Promise<void> {
  await db.deleteFrom('order_upsells').where('team_id', '=', teamId).where('id', '=', id).execute();
}

/**
 * Upsell claims taken before any attempt was written (the external provider's upsell asks the
 * provider which method to charge first) whose request then died: no money moved for them, so
 * they are released and the upsell can be tried again.
 */
export async function releaseOrphanUpsellClaims(db: Executor, olderThan: Date): Promise<number> {
  const r = await db
    .deleteFrom('order_upsells')
    .where('status', '=', 'in_flight')
    .where('transaction_id', 'is', null)
    .where('created_at', '<', olderThan)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

export async function findOrderUpsellByTransaction(db: Executor, teamId: string, transactionId: string): Promise<Row<'order_upsells'> | undefined> {
  return db.selectFrom('order_upsells').selectAll().where('team_id', '=', teamId).where('transaction_id', '=', transactionId).forUpdate().executeTakeFirst();
}
