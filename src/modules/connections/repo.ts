import type { Executor } from '../../db/database.ts';
import type { NewRow, Row, RowPatch } from '../../db/schema.ts';

export async function insertConnection(db: Executor, row: NewRow<'extpay_connections'>): Promise<Row<'extpay_connections'>> {
  return db.insertInto('extpay_connections').values(row).returningAll().executeTakeFirstOrThrow();
}

/** A live (not deleted) connection of the team. */
export async function findConnection(db: Executor, teamId: string, id: string): Promise<Row<'extpay_connections'> | undefined> {
  return db.selectFrom('extpay_connections').selectAll().where('team_id', '=', teamId).where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
}

export async function findActiveConnections(db: Executor, teamId: string): Promise<Row<'extpay_connections'>[]> {
  return db
    .selectFrom('extpay_connections')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('is_active', '=', true)
    .where('deleted_at', 'is', null)
    .orderBy('seq')
    .execute();
}

export async function updateConnection(db: Executor, teamId: string, id: string, patch: RowPatch<'extpay_connections'>): Promise<Row<'extpay_connections'> | undefined> {
  return db
    .updateTable('extpay_connections')
    .set({ ...patch, updated_at: new Date() })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

export async function listConnections(db: Executor, teamId: string, f: { limit: number; afterSeq: number | null }): Promise<Row<'extpay_connections'>[]> {
  let q = db.selectFrom('extpay_connections').selectAll().where('team_id', '=', teamId).where('deleted_at', 'is', null);
  if (f.afterSeq !== null) q = q.where('seq', '<', f.afterSeq);
  return q.orderBy('seq', 'desc').limit(f.limit + 1).execute();
}

/**
 * System lookup for inbound webhooks (every team): the live connections of one provider company,
 * optionally one environment. The delivery's signature decides which one sent it.
 */
export async function findByCompany(db: Executor, companyId: string, environment?: 'sandbox' | 'production'): Promise<Row<'extpay_connections'>[]> {
  let q = db.selectFrom('extpay_connections').selectAll().where('company_id', '=', companyId).where('deleted_at', 'is', null);
  if (environment) q = q.where('environment', '=', environment);
  return q.orderBy('seq').limit(50).execute();
}
