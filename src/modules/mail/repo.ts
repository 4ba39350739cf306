import { sql } from 'kysely';
import { deferWrite, type Executor } from '../../db/database.ts';
import type { NewRow, Row } from '../../db/schema.ts';
import { template } from '../../db/templates.ts';

/**
 * A mail queued in the transaction of the event that asks for it; a second insert for the same
 * (event, kind) is a no-op. Nothing is read back: it goes out with the transaction's next
 * statement or its COMMIT (deferWrite).
 */
export async function insertMailOnce(db: Executor, row: NewRow<'mail_messages'>): Promise<void> {
  await deferWrite(db, insertMailOnceQuery(db, row));
}

const insertMailOnceQuery = template(['row'], (db: Executor, row: NewRow<'mail_messages'>) =>
  db.insertInto('mail_messages').values(row).onConflict((oc) => oc.columns(['event_id', 'kind']).doNothing()),
);

/**
 * Claims up to `limit` due mails for one worker: a lease in `locked_until`, taken in a single
 * statement whose inner SELECT skips rows another worker is claiming at this moment. A row
 * whose lease is still running is not due, so a claimed mail is never taken twice.
 */
export async function claimDueMail(db: Executor, limit: number, leaseMs: number): Promise<Row<'mail_messages'>[]> {
  const r = await sql<Row<'mail_messages'>>`
    UPDATE mail_messages SET locked_until = now() + make_interval(secs => ${leaseMs / 1000}), updated_at = now()
    WHERE id IN (
      SELECT id FROM mail_messages
      WHERE status = 'pending' AND next_attempt_at <= now() AND (locked_until IS NULL OR locked_until <= now())
      ORDER BY next_attempt_at, seq
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    )
    RETURNING *`.execute(db);
  return r.rows;
}

/**
 * The mails of one claim that went out, recorded in one statement (their transport is the same;
 * each keeps its own Message-ID). A row no longer pending (cancelled meanwhile) is left as it is.
 */
export async function markMailsSent(db: Executor, transport: string, sent: readonly { id: string; ref: string }[]): Promise<void> {
  if (sent.length === 0) return;
  await sql`
    UPDATE mail_messages m SET status = 'sent', attempt_count = m.attempt_count + 1, transport = ${transport},
      transport_ref = s.ref, sent_at = now(), next_attempt_at = NULL, locked_until = NULL, last_error = NULL, updated_at = now()
    FROM unnest(${sent.map((x) => x.id)}::text[], ${sent.map((x) => x.ref)}::text[]) AS s(id, ref)
    WHERE m.id = s.id AND m.status = 'pending'`.execute(db);
}

/** A check of the mail's kind said not to send it: it is never sent, and `last_error` says why. */
export async function markMailCancelled(db: Executor, id: string, reason: string): Promise<void> {
  await db
    .updateTable('mail_messages')
    .set({ status: 'cancelled', next_attempt_at: null, locked_until: null, last_error: reason, updated_at: sql`now()` })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .execute();
}

/** `retryInMs` null: no attempts left, the mail is failed. */
export async function markMailAttemptFailed(db: Executor, id: string, f: { transport: string; error: string; retryInMs: number | null }): Promise<void> {
  await db
    .updateTable('mail_messages')
    .set({
      status: f.retryInMs === null ? 'failed' : 'pending',
      attempt_count: sql`attempt_count + 1`,
      transport: f.transport,
      next_attempt_at: f.retryInMs === null ? null : sql`now() + make_interval(secs => ${f.retryInMs / 1000})`,
      locked_until: null,
      last_error: f.error,
      updated_at: sql`now()`,
    })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .execute();
}

export async function findMail(db: Executor, teamId: string, id: string): Promise<Row<'mail_messages'> | undefined> {
  return db.selectFrom('mail_messages').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}

export async function listMail(
  db: Executor,
  teamId: string,
  f: { limit: number; afterSeq: number | null; status?: string | undefined; orderId?: string | undefined; createdGte?: Date | undefined; createdLte?: Date | undefined },
): Promise<Row<'mail_messages'>[]> {
  let q = db.selectFrom('mail_messages').selectAll().where('team_id', '=', teamId);
  if (f.afterSeq !== null) q = q.where('seq', '<', f.afterSeq);
  if (f.status) q = q.where('status', '=', f.status as Row<'mail_messages'>['status']);
  if (f.orderId) q = q.where('order_id', '=', f.orderId);
  if (f.createdGte) q = q.where('created_at', '>=', f.createdGte);
  // The API shows created_at to the millisecond; compare below the next one so an item's own time includes it.
  if (f.createdLte) q = q.where('created_at', '<', new Date(f.createdLte.getTime() + 1));
  return q.orderBy('seq', 'desc').limit(f.limit + 1).execute();
}
