import { type InsertObject, type SqlBool, sql, type UpdateObject } from 'kysely';
import { deferWrite, type Executor } from '../../db/database.ts';
import { template } from '../../db/templates.ts';
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

/** New deliveries, each due at once (its `next_attempt_at` is the statement's `now()`). */
export async function insertDeliveries(db: Executor, rows: NewDelivery[]): Promise<void> {
  if (rows.length === 0) return;
  // No answer needed: sent with the transaction's next statement or its COMMIT (deferWrite).
  await deferWrite(db, insertDeliveriesQuery(db, rows));
}

type NewDelivery = Omit<InsertObject<DB, 'webhook_deliveries'>, 'next_attempt_at'>;

const insertDeliveriesQuery = template(['rows'], (db: Executor, rows: NewDelivery[]) =>
  db
    .insertInto('webhook_deliveries')
    .values(rows.map((row) => ({ ...row, next_attempt_at: sql<Date>`now()` })))
    .onConflict((oc) => oc.columns(['endpoint_id', 'event_id']).doNothing()),
);

/** A delivery claimed by one worker, with everything needed to send it. */
export interface ClaimedDelivery {
  id: string;
  team_id: string;
  endpoint_id: string;
  event_id: string;
  attempt_count: number;
  /** The lease: presented back when the outcome is recorded, to prove the claim is still this worker's. */
  locked_until: Date;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  is_active: boolean;
  event: Row<'events'>;
}

type ClaimRow = Omit<ClaimedDelivery, 'event'> & {
  event_seq: number;
  event_type: string;
  event_order_id: string | null;
  event_payload: Row<'events'>['payload'];
  event_created_at: Date;
};

/**
 * Claims up to `limit` due deliveries for one worker in a single statement, joined with their
 * endpoint and event: the inner SELECT skips rows another worker is claiming at this very moment,
 * and the lease written to `locked_until` keeps them from every other worker until it runs out. A
 * worker that dies mid-delivery loses nothing: its rows become due again when the lease expires.
 * The lease is truncated to milliseconds so the worker can present it back exactly (a JS Date has
 * no microseconds) when it records the outcome. One statement, so no transaction around it.
 */
export async function claimDueDeliveries(db: Executor, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
  const r = await sql<ClaimRow>`
    WITH claimed AS (
      UPDATE webhook_deliveries
      SET locked_until = date_trunc('milliseconds', now() + ${leaseMs}::int * interval '1 millisecond')
      WHERE id IN (
        SELECT id FROM webhook_deliveries
        WHERE status = 'pending' AND next_attempt_at <= now() AND (locked_until IS NULL OR locked_until < now())
        ORDER BY next_attempt_at, seq
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      )
      RETURNING id, team_id, endpoint_id, event_id, attempt_count, locked_until
    )
    SELECT c.id, c.team_id, c.endpoint_id, c.event_id, c.attempt_count, c.locked_until,
           e.url, e.secret, e.previous_secret, e.previous_secret_expires_at, e.is_active,
           ev.seq AS event_seq, ev.type AS event_type, ev.order_id AS event_order_id, ev.payload AS event_payload, ev.created_at AS event_created_at
    FROM claimed c
    JOIN webhook_endpoints e ON e.id = c.endpoint_id AND e.team_id = c.team_id
    JOIN events ev ON ev.id = c.event_id AND ev.team_id = c.team_id`.execute(db);
  return r.rows.map(({ event_seq, event_type, event_order_id, event_payload, event_created_at, ...d }) => ({
    ...d,
    event: { seq: event_seq, id: d.event_id, team_id: d.team_id, type: event_type, order_id: event_order_id, payload: event_payload, created_at: event_created_at },
  }));
}

export interface AttemptRecord {
  attemptId: string;
  teamId: string;
  deliveryId: string;
  /** The lease the claim wrote; the delivery is updated only while it still holds. */
  lease: Date;
  attempt: number;
  statusCode: number | null;
  durationMs: number;
  responseBody: string | null;
  error: string | null;
  /** `succeeded`, or pending again in `retryInMs`. */
  outcome: { kind: 'succeeded' } | { kind: 'retry'; retryInMs: number };
}

/**
 * The common outcomes of attempts, any number of them in one statement: each attempt's row, its
 * delivery's next state (succeeded, or pending again after the delay; one cancelled while in
 * flight stays cancelled) and, on success, the endpoint's failure count cleared. A delivery
 * changes only while the worker's lease on it holds; the answer is the deliveries that did (one
 * left out: another worker took it over after the lease ran out, and owns its state; its attempt
 * row is written all the same).
 */
export async function recordAttempts(db: Executor, records: readonly AttemptRecord[]): Promise<Set<string>> {
  if (records.length === 0) return new Set();
  const col = <T>(f: (a: AttemptRecord) => T) => records.map(f);
  const r = await sql<{ id: string }>`
    WITH input AS (
      SELECT * FROM unnest(
        ${col((a) => a.attemptId)}::text[], ${col((a) => a.teamId)}::text[], ${col((a) => a.deliveryId)}::text[], ${col((a) => a.lease)}::timestamptz[],
        ${col((a) => a.attempt)}::int[], ${col((a) => a.statusCode)}::int[], ${col((a) => a.durationMs)}::int[], ${col((a) => a.responseBody)}::text[],
        ${col((a) => a.error)}::text[], ${col((a) => a.outcome.kind === 'succeeded')}::boolean[],
        ${col((a) => (a.outcome.kind === 'retry' ? Math.max(0, Math.round(a.outcome.retryInMs)) : 0))}::int[]
      ) AS i(attempt_id, team_id, delivery_id, lease, attempt, status_code, duration_ms, response_body, error, succeeded, retry_in_ms)
    ), attempt AS (
      INSERT INTO webhook_attempts (id, team_id, delivery_id, attempt, status_code, duration_ms, response_body, error)
      SELECT attempt_id, team_id, delivery_id, attempt, status_code, duration_ms, response_body, error FROM input
    ), delivery AS (
      UPDATE webhook_deliveries d
      SET attempt_count = i.attempt, last_status_code = i.status_code, last_error = i.error, locked_until = NULL, updated_at = now(),
          status = CASE WHEN i.succeeded THEN 'succeeded' ELSE d.status END,
          next_attempt_at = CASE WHEN i.succeeded OR d.status <> 'pending' THEN NULL ELSE now() + i.retry_in_ms * interval '1 millisecond' END
      FROM input i
      WHERE d.team_id = i.team_id AND d.id = i.delivery_id AND d.locked_until = i.lease
      RETURNING d.id, d.team_id, d.endpoint_id, i.succeeded
    ), failing_endpoint AS (
      -- Locked in one order (team, id): two workers' statements clearing the same endpoints cannot deadlock.
      SELECT e.team_id, e.id FROM webhook_endpoints e
      WHERE e.is_active AND e.consecutive_failures > 0
        AND (e.team_id, e.id) IN (SELECT team_id, endpoint_id FROM delivery WHERE succeeded)
      ORDER BY e.team_id, e.id
      FOR UPDATE
    ), endpoint AS (
      UPDATE webhook_endpoints e SET consecutive_failures = 0, updated_at = now()
      FROM failing_endpoint f WHERE e.team_id = f.team_id AND e.id = f.id
    )
    SELECT id FROM delivery`.execute(db);
  return new Set(r.rows.map((x) => x.id));
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

/** The deliveries, to every endpoint, of the events about one order (`events.order_id`), newest first. */
export async function listOrderDeliveries(
  db: Executor,
  teamId: string,
  orderId: string,
  w: ListWindow & { status?: Row<'webhook_deliveries'>['status'] | undefined },
): Promise<DeliveryWithType[]> {
  let q = deliveriesWithType(db).where('d.team_id', '=', teamId).where('ev.order_id', '=', orderId);
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
