import { sql } from 'kysely';
import type { Executor } from '../../db/database.ts';
import type { NewRow, Row, RowPatch } from '../../db/schema.ts';

export async function insertTransaction(db: Executor, row: NewRow<'transactions'>): Promise<Row<'transactions'>> {
  return db.insertInto('transactions').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateTransaction(db: Executor, teamId: string, id: string, patch: RowPatch<'transactions'>): Promise<Row<'transactions'>> {
  return db.updateTable('transactions').set(patch).where('team_id', '=', teamId).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

export async function findTransaction(db: Executor, teamId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<Row<'transactions'> | undefined> {
  let q = db.selectFrom('transactions').selectAll().where('team_id', '=', teamId).where('id', '=', id);
  if (opts.forUpdate) q = q.forUpdate();
  return q.executeTakeFirst();
}

export interface TransactionFilter {
  limit: number;
  afterSeq: number | null;
  orderId?: string | undefined;
  status?: string | undefined;
  type?: string | undefined;
  isTest?: boolean | undefined;
  createdGte?: Date | undefined;
  createdLte?: Date | undefined;
}

export async function listTransactions(db: Executor, teamId: string, f: TransactionFilter): Promise<Row<'transactions'>[]> {
  let q = db.selectFrom('transactions').selectAll().where('team_id', '=', teamId);
  if (f.afterSeq !== null) q = q.where('seq', '<', f.afterSeq);
  if (f.orderId) q = q.where('order_id', '=', f.orderId);
  if (f.status) q = q.where('status', '=', f.status);
  if (f.type) q = q.where('type', '=', f.type);
  if (f.isTest !== undefined) q = q.where('is_test', '=', f.isTest);
  if (f.createdGte) q = q.where('created_at', '>=', f.createdGte);
  if (f.createdLte) q = q.where('created_at', '<=', f.createdLte);
  return q.orderBy('seq', 'desc').limit(f.limit + 1).execute();
}

export async function listOrderTransactions(db: Executor, teamId: string, orderId: string): Promise<Row<'transactions'>[]> {
  return db.selectFrom('transactions').selectAll().where('team_id', '=', teamId).where('order_id', '=', orderId).orderBy('seq').execute();
}

/** Approved and in-flight refunds and voids against one sale: what is no longer refundable. */
export async function reversedAmount(db: Executor, teamId: string, saleId: string): Promise<{ refunded: number; voided: boolean }> {
  const r = await db
    .selectFrom('transactions')
    .select([
      sql<number>`coalesce(sum(amount) filter (where type = 'refund'), 0)`.as('refunded'),
      sql<number>`count(*) filter (where type = 'void')`.as('voids'),
    ])
    .where('team_id', '=', teamId)
    .where('parent_id', '=', saleId)
    .where('status', 'in', ['approved', 'pending'])
    .executeTakeFirstOrThrow();
  return { refunded: Number(r.refunded), voided: Number(r.voids) > 0 };
}

export async function insertPaymentMethod(db: Executor, row: NewRow<'payment_methods'>): Promise<Row<'payment_methods'>> {
  return db.insertInto('payment_methods').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function findPaymentMethod(db: Executor, teamId: string, id: string): Promise<Row<'payment_methods'> | undefined> {
  return db.selectFrom('payment_methods').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}

export async function findByProviderRef(db: Executor, teamId: string, gatewayId: string, providerRef: string): Promise<Row<'transactions'> | undefined> {
  return db
    .selectFrom('transactions')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('gateway_id', '=', gatewayId)
    .where('provider_ref', '=', providerRef)
    .where('type', '=', 'sale')
    .executeTakeFirst();
}

export async function insertInbound(db: Executor, row: NewRow<'inbound_webhooks'>): Promise<boolean> {
  const r = await db.insertInto('inbound_webhooks').values(row).onConflict((oc) => oc.columns(['source', 'event_id']).doNothing()).returning('id').executeTakeFirst();
  return r !== undefined;
}

/**
 * System scan for the reconciliation schedule (every team): first payments still pending at
 * their gateway since before `olderThan`, oldest first.
 */
export async function listStalePending(db: Executor, olderThan: Date, limit: number): Promise<Row<'transactions'>[]> {
  return db
    .selectFrom('transactions')
    .selectAll()
    .where('type', '=', 'sale')
    .where('status', '=', 'pending')
    .where('upsell_id', 'is', null)
    .where('provider_ref', 'is not', null)
    .where('created_at', '<', olderThan)
    .orderBy('created_at')
    .limit(limit)
    .execute();
}
