import { newId } from '../../app/ids.ts';
import type { TransitionEvent } from '../../app/state-machine.ts';
import type { Executor } from '../../db/database.ts';
import type { NewRow, Row, RowPatch } from '../../db/schema.ts';

export async function insertSubscription(db: Executor, row: NewRow<'subscriptions'>): Promise<Row<'subscriptions'>> {
  return db.insertInto('subscriptions').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function findSubscription(db: Executor, teamId: string, id: string): Promise<Row<'subscriptions'> | undefined> {
  return db.selectFrom('subscriptions').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}

/** The row under lock, so a state check and the change it allows happen in one transaction. */
export async function lockSubscription(db: Executor, teamId: string, id: string): Promise<Row<'subscriptions'> | undefined> {
  return db.selectFrom('subscriptions').selectAll().where('team_id', '=', teamId).where('id', '=', id).forUpdate().executeTakeFirst();
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

export async function findByMembership(db: Executor, teamId: string, membershipRef: string): Promise<Row<'subscriptions'>[]> {
  return db.selectFrom('subscriptions').selectAll().where('team_id', '=', teamId).where('membership_ref', '=', membershipRef).orderBy('seq').forUpdate().execute();
}

export async function findByOrder(db: Executor, teamId: string, orderId: string): Promise<Row<'subscriptions'>[]> {
  return db.selectFrom('subscriptions').selectAll().where('team_id', '=', teamId).where('order_id', '=', orderId).orderBy('seq').forUpdate().execute();
}

export async function updateSubscription(db: Executor, teamId: string, id: string, patch: RowPatch<'subscriptions'>): Promise<Row<'subscriptions'>> {
  return db
    .updateTable('subscriptions')
    .set({ ...patch, updated_at: new Date() })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * A subscription's status change on its order's timeline (order_events), in the caller's
 * transaction. The subscriptions module is built before the orders module, so it writes the row
 * itself rather than through OrdersService.recordEvents; the row is the same shape.
 */
export async function insertOrderEvent(db: Executor, e: TransitionEvent): Promise<void> {
  await db
    .insertInto('order_events')
    .values({ id: newId('orderEvent'), team_id: e.teamId, order_id: e.orderId, type: e.type, data: JSON.stringify(e.data ?? {}) })
    .execute();
}

/** The card subscriptions a billing run may take now: SKIP LOCKED, and a lease set in the same statement. */
export async function claimDue(db: Executor, now: Date, leaseUntil: Date, limit: number): Promise<Array<{ id: string; team_id: string }>> {
  return db
    .updateTable('subscriptions')
    .set({ billing_lease_until: leaseUntil })
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('subscriptions')
        .select('id')
        .where('externally_managed', '=', false)
        .where((w) =>
          w.or([
            w.and([w('status', 'in', ['trialing', 'active', 'cancel_at_period_end']), w('next_billing_at', '<=', now)]),
            w.and([w('status', '=', 'past_due'), w('retry_at', '<=', now)]),
          ]),
        )
        .where((w) => w.or([w('billing_lease_until', 'is', null), w('billing_lease_until', '<', now)]))
        .orderBy('next_billing_at')
        .limit(limit)
        .forUpdate()
        .skipLocked(),
    )
    .returning(['id', 'team_id'])
    .execute();
}

/** A team's card subscriptions that still bill on a schedule, locked (a time-zone change reschedules them). */
export async function lockLiveCardSubscriptions(db: Executor, teamId: string): Promise<Row<'subscriptions'>[]> {
  return db
    .selectFrom('subscriptions')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('externally_managed', '=', false)
    .where('status', 'in', ['trialing', 'active', 'cancel_at_period_end'])
    .orderBy('seq')
    .forUpdate()
    .execute();
}
