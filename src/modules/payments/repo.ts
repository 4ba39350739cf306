import type { Executor } from '../../db/database.ts';
import type { NewRow, Row } from '../../db/schema.ts';

export async function insertTransaction(db: Executor, row: NewRow<'transactions'>): Promise<Row<'transactions'>> {
  return db.insertInto('transactions').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function findTransaction(db: Executor, teamId: string, id: string): Promise<Row<'transactions'> | undefined> {
  return db.selectFrom('transactions').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
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
