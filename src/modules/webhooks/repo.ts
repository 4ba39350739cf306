import { type InsertObject, type SqlBool, sql, type UpdateObject } from 'kysely';
import type { Executor } from '../../db/database.ts';
import type { DB, NewRow, Row, RowPatch } from '../../db/schema.ts';

/** One page of a list: rows strictly after the cursor row, newest first, `limit + 1` of them. */
export interface ListWindow {
  afterSeq: number | null;
  limit: number;
  createdGte?: Date | undefined;
  createdLte?: Date | undefined;
}

// ---- endpoints

export async function insertEndpoint(db: Executor, row: NewRow<'webhook_endpoints'>): Promise<Row<'webhook_endpoints'>> {
  return db.insertInto('webhook_endpoints').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function findEndpoint(db: Executor, teamId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<Row<'webhook_endpoints'> | undefined> {
  let q = db.selectFrom('webhook_endpoints').selectAll().where('team_id', '=', teamId).where('id', '=', id);
  if (opts.forUpdate) q = q.forUpdate();
  return q.executeTakeFirst();
}

export async function updateEndpoint(db: Executor, teamId: string, id: string, patch: RowPatch<'webhook_endpoints'>): Promise<Row<'webhook_endpoints'> | undefined> {
  return db
    .updateTable('webhook_endpoints')
    .set({ ...patch, updated_at: sql`now()` })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export async function listEndpoints(db: Executor, teamId: string, w: ListWindow): Promise<Row<'webhook_endpoints'>[]> {
  let q = db.selectFrom('webhook_endpoints').selectAll().where('team_id', '=', teamId);
  if (w.afterSeq !== null) q = q.where('seq', '<', w.afterSeq);
  if (w.createdGte) q = q.where('created_at', '>=', w.createdGte);
  // The API shows created_at to the millisecond; the column keeps microseconds.
  if (w.createdLte) q = q.where('created_at', '<', new Date(w.createdLte.getTime() + 1));
  return q.orderBy('seq', 'desc').limit(w.limit + 1).execute();
}

/** The team's active endpoints subscribed to the type, or to everything (`["*"]`). */
export async function subscribedEndpoints(db: Executor, teamId: string, type: string): Promise<Row<'webhook_endpoints'>[]> {
  return db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('is_active', '=', true)
    .where(sql<SqlBool>`(event_types @> ${JSON.stringify([type])}::jsonb OR event_types @> '["*"]'::jsonb)`)
    .orderBy('seq')
    .execute();
}

/** Counts one more delivery that failed for good; answers the new count. */
export async function addEndpointFailure(db: Executor, teamId: string, id: string): Promise<number> {
  const r = await db
    .updateTable('webhook_endpoints')
    .set({ consecutive_failures: sql`consecutive_failures + 1`, updated_at: sql`now()` })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returning('consecutive_failures')
    .executeTakeFirst();
  return r?.consecutive_failures ?? 0;
}

export async function clearEndpointFailures(db: Executor, teamId: string, id: string): Promise<void> {
  await db
    .updateTable('webhook_endpoints')
    .set({ consecutive_failures: 0, updated_at: sql`now()` })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .where('is_active', '=', true)
    .where('consecutive_failures', '>', 0)
    .execute();
}

/** When the oldest of the endpoint's `count` most recently failed deliveries was created: how long it has been failing. */
export async function failingSince(db: Executor, teamId: string, endpointId: string, count: number): Promise<Date | null> {
  const r = await sql<{ since: Date | null }>`
    SELECT min(created_at) AS since FROM (
      SELECT created_at FROM webhook_deliveries
      WHERE team_id = ${teamId} AND endpoint_id = ${endpointId} AND status = 'failed'
      ORDER BY updated_at DESC
      LIMIT ${count}
    ) streak`.execute(db);
  return r.rows[0]?.since ?? null;
}

// ---- deliveries

export async function insertDeliveries(db: Executor, rows: InsertObject<DB, 'webhook_deliveries'>[]): Promise<void> {
  if (rows.length === 0) return;
  await db
    .insertInto('webhook_deliveries')
    .values(rows)
    .onConflict((oc) => oc.columns(['endpoint_id', 'event_id']).doNothing())
    .execute();
}

/**
 * Claims up to `limit` due deliveries for one worker in a single statement: the inner SELECT
 * skips rows another worker is claiming at this very moment, and the lease written to
 * `locked_until` keeps them from every other worker until it runs out. A worker that dies
 * mid-delivery loses nothing: its rows become due again when the lease expires. The lease is
 * truncated to milliseconds so the worker can present it back exactly (a JS Date has no
 * microseconds) when it records the outcome.
 */
export async function claimDueDeliveries(db: Executor, limit: number, leaseMs: number): Promise<Row<'webhook_deliveries'>[]> {
  const r = await sql<Row<'webhook_deliveries'>>`
    UPDATE webhook_deliveries
    SET locked_until = date_trunc('milliseconds', now() + ${leaseMs}::int * interval '1 millisecond')
    WHERE id IN (
      SELECT id FROM webhook_deliveries
      WHERE status = 'pending' AND next_attempt_at <= now() AND (locked_until IS NULL OR locked_until < now())
      ORDER BY next_attempt_at, seq
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    )
    RETURNING *`.execute(db);
  return r.rows;
}

/** What a worker needs to send one claimed delivery. */
export interface DeliveryJob {
  delivery_id: string;
  team_id: string;
  endpoint_id: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  is_active: boolean;
  event: Row<'events'>;
}

export async function loadDeliveryJobs(db: Executor, deliveryIds: readonly string[]): Promise<Map<string, DeliveryJob>> {
  if (deliveryIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_endpoints as e', (j) => j.onRef('e.id', '=', 'd.endpoint_id').onRef('e.team_id', '=', 'd.team_id'))
    .innerJoin('events as ev', (j) => j.onRef('ev.id', '=', 'd.event_id').onRef('ev.team_id', '=', 'd.team_id'))
    .select([
      'd.id as delivery_id',
      'd.team_id',
      'd.endpoint_id',
      'e.url',
      'e.secret',
      'e.previous_secret',
      'e.previous_secret_expires_at',
      'e.is_active',
      'ev.seq as event_seq',
      'ev.id as event_id',
      'ev.type as event_type',
      'ev.order_id as event_order_id',
      'ev.payload as event_payload',
      'ev.created_at as event_created_at',
    ])
    .where('d.id', 'in', deliveryIds)
    .execute();
  return new Map(
    rows.map((r) => [
      r.delivery_id,
      {
        delivery_id: r.delivery_id,
        team_id: r.team_id,
        endpoint_id: r.endpoint_id,
        url: r.url,
        secret: r.secret,
        previous_secret: r.previous_secret,
        previous_secret_expires_at: r.previous_secret_expires_at,
        is_active: r.is_active,
        event: {
          seq: r.event_seq,
          id: r.event_id,
          team_id: r.team_id,
          type: r.event_type,
          order_id: r.event_order_id,
          payload: r.event_payload,
          created_at: r.event_created_at,
        },
      },
    ]),
  );
}

export type DeliveryWithType = Row<'webhook_deliveries'> & { event_type: string };

function deliveriesWithType(db: Executor) {
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('events as ev', (j) => j.onRef('ev.id', '=', 'd.event_id').onRef('ev.team_id', '=', 'd.team_id'))
    .selectAll('d')
    .select('ev.type as event_type');
}

export async function findDelivery(db: Executor, teamId: string, id: string): Promise<DeliveryWithType | undefined> {
  return deliveriesWithType(db).where('d.team_id', '=', teamId).where('d.id', '=', id).executeTakeFirst();
}

/** The row locked, with whether a worker's lease on it is still running (by the database clock). */
export async function lockDelivery(db: Executor, teamId: string, id: string): Promise<(Row<'webhook_deliveries'> & { in_flight: boolean }) | undefined> {
  return db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .select(sql<boolean>`coalesce(locked_until > now(), false)`.as('in_flight'))
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

export async function listDeliveries(
  db: Executor,
  teamId: string,
  endpointId: string,
  w: ListWindow & { status?: Row<'webhook_deliveries'>['status'] | undefined },
): Promise<DeliveryWithType[]> {
  let q = deliveriesWithType(db).where('d.team_id', '=', teamId).where('d.endpoint_id', '=', endpointId);
  if (w.status) q = q.where('d.status', '=', w.status);
  if (w.afterSeq !== null) q = q.where('d.seq', '<', w.afterSeq);
  if (w.createdGte) q = q.where('d.created_at', '>=', w.createdGte);
  if (w.createdLte) q = q.where('d.created_at', '<', new Date(w.createdLte.getTime() + 1));
  return q.orderBy('d.seq', 'desc').limit(w.limit + 1).execute();
}

export async function updateDelivery(db: Executor, teamId: string, id: string, patch: UpdateObject<DB, 'webhook_deliveries'>): Promise<Row<'webhook_deliveries'> | undefined> {
  return db
    .updateTable('webhook_deliveries')
    .set({ ...patch, updated_at: sql`now()` })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** `now() + ms`, by the database clock (the one the claim compares against). */
export function dueIn(ms: number) {
  return sql<Date>`now() + ${Math.max(0, Math.round(ms))}::int * interval '1 millisecond'`;
}

/** Pending deliveries of an endpoint that stopped receiving are cancelled; a worker already sending one still records its attempt. */
export async function cancelPendingDeliveries(db: Executor, teamId: string, endpointId: string, reason: string): Promise<number> {
  const r = await db
    .updateTable('webhook_deliveries')
    .set({ status: 'cancelled', next_attempt_at: null, last_error: reason, updated_at: sql`now()` })
    .where('team_id', '=', teamId)
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

// ---- attempts

export async function insertAttempt(db: Executor, row: NewRow<'webhook_attempts'>): Promise<void> {
  await db.insertInto('webhook_attempts').values(row).execute();
}

export async function listAttempts(db: Executor, teamId: string, deliveryId: string): Promise<Row<'webhook_attempts'>[]> {
  return db.selectFrom('webhook_attempts').selectAll().where('team_id', '=', teamId).where('delivery_id', '=', deliveryId).orderBy('seq').execute();
}
