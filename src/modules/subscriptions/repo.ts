import type { Executor } from '../../db/database.ts';
import type { NewRow, Row } from '../../db/schema.ts';

export async function insertSubscription(db: Executor, row: NewRow<'subscriptions'>): Promise<Row<'subscriptions'>> {
  return db.insertInto('subscriptions').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function findSubscription(db: Executor, teamId: string, id: string): Promise<Row<'subscriptions'> | undefined> {
  return db.selectFrom('subscriptions').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}

export async function listSubscriptions(
  db: Executor,
  teamId: string,
  f: {
    limit: number;
    afterSeq: number | null;
    status?: string | undefined;
    customerId?: string | undefined;
    orderId?: string | undefined;
    createdGte?: Date | undefined;
    createdLte?: Date | undefined;
  },
): Promise<Row<'subscriptions'>[]> {
  let q = db.selectFrom('subscriptions').selectAll().where('team_id', '=', teamId);
  if (f.afterSeq !== null) q = q.where('seq', '<', f.afterSeq);
  if (f.status) q = q.where('status', '=', f.status);
  if (f.customerId) q = q.where('customer_id', '=', f.customerId);
  if (f.orderId) q = q.where('order_id', '=', f.orderId);
  if (f.createdGte) q = q.where('created_at', '>=', f.createdGte);
  if (f.createdLte) q = q.where('created_at', '<=', f.createdLte);
  return q.orderBy('seq', 'desc').limit(f.limit + 1).execute();
}
