import { deferWrite, type Executor, sendWithNext } from '../../db/database.ts';
import type { NewRow, Row } from '../../db/schema.ts';
import { allRows, template } from '../../db/templates.ts';

/*
 * An order's lines (order_lines): a new order's with its first timeline rows, an upsell's added
 * line, the reads of them. Part of the orders module's repo (repo.ts re-exports it).
 */

/**
 * Lines and timeline rows of a new order in one statement. `withNext`: sent with the transaction's
 * next statement or its COMMIT (sendWithNext), the promise resolving when that is answered.
 */
export async function insertLinesWithEvents(db: Executor, lines: NewRow<'order_lines'>[], events: NewRow<'order_events'>[], opts: { withNext?: boolean } = {}): Promise<Row<'order_lines'>[]> {
  if (lines.length === 0) {
    if (events.length === 0) return [];
    const timeline = db.insertInto('order_events').values(events);
    await (opts.withNext ? sendWithNext(db, timeline) : timeline.execute());
    return [];
  }
  const q = events.length === 0 ? insertLinesQuery(db, lines) : db.with('timeline', (t) => t.insertInto('order_events').values(events)).insertInto('order_lines').values(lines).returningAll();
  return opts.withNext ? sendWithNext(db, q) : q.execute();
}

export async function replaceLines(db: Executor, teamId: string, orderId: string, lines: NewRow<'order_lines'>[]): Promise<Row<'order_lines'>[]> {
  await db.deleteFrom('order_lines').where('team_id', '=', teamId).where('order_id', '=', orderId).where('upsell_id', 'is', null).execute();
  if (lines.length === 0) return [];
  return db.insertInto('order_lines').values(lines).returningAll().execute();
}

export async function insertLines(db: Executor, lines: NewRow<'order_lines'>[]): Promise<Row<'order_lines'>[]> {
  if (lines.length === 0) return [];
  return insertLinesQuery(db, lines).execute();
}

/** Inserting lines (`lines` not empty), returning them. */
export function insertLinesQuery(db: Executor, lines: NewRow<'order_lines'>[]) {
  return db.insertInto('order_lines').values(lines).returningAll();
}

/**
 * One line added to an order and all the order's lines after it, in one statement: the insert as
 * a data-modifying CTE, and the order's lines as the statement found them (its snapshot, taken
 * after the caller's lock on the order was granted: every line another transaction committed
 * before) with the new one from the insert's RETURNING, since the parts of one statement do not
 * see each other's rows; in `seq` order.
 */
export async function addLineReadingLines(db: Executor, teamId: string, line: NewRow<'order_lines'>): Promise<{ added: Row<'order_lines'>; lines: Row<'order_lines'>[] }> {
  return withAdded(line.id!, await allRows(db, addLineReadingLinesQuery(db, line, teamId, line.order_id)));
}

/** The statement's lines, and among them the one it added. */
function withAdded(id: string, lines: Row<'order_lines'>[]): { added: Row<'order_lines'>; lines: Row<'order_lines'>[] } {
  return { added: lines.find((l) => l.id === id)!, lines };
}

/**
 * addLineReadingLines sent with the transaction's next statement (sendWithNext): for a caller that
 * adds the line before it knows it may (an upsell's approved answer, sent with the attempt's UPDATE
 * that tells whether this answer is the one recorded), and drops it with dropLine() if not.
 */
export function addLineReadingLinesWithNext(db: Executor, teamId: string, line: NewRow<'order_lines'>): Promise<{ added: Row<'order_lines'>; lines: Row<'order_lines'>[] }> {
  const read = sendWithNext(db, addLineReadingLinesQuery(db, line, teamId, line.order_id)).then((lines) => withAdded(line.id!, lines));
  // As sendWithNext's own promise: a transaction that fails first does not also leave an unhandled rejection.
  read.catch(() => {});
  return read;
}

/**
 * One line added to an order, sent with the transaction's next statement or its COMMIT (deferWrite),
 * nothing read back: for a caller that holds the order's other lines already (OrdersService.addLineAtCommit).
 */
export async function insertLineAtCommit(db: Executor, line: NewRow<'order_lines'>): Promise<void> {
  await deferWrite(db, insertLineQuery(db, line));
}

const insertLineQuery = template(['row'], (db: Executor, line: NewRow<'order_lines'>) => db.insertInto('order_lines').values(line));

/** Takes back a line this transaction added (addLineReadingLinesWithNext) and may not keep. */
export async function dropLine(db: Executor, teamId: string, id: string): Promise<void> {
  await db.deleteFrom('order_lines').where('team_id', '=', teamId).where('id', '=', id).execute();
}

const addLineReadingLinesQuery = template(['row', 'value', 'value'], (db: Executor, line: NewRow<'order_lines'>, teamId: string, orderId: string) =>
  db
    .with('added', (w) => w.insertInto('order_lines').values(line).returningAll())
    .selectFrom('order_lines')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('order_id', '=', orderId)
    .unionAll((eb) => eb.selectFrom('added').selectAll())
    .orderBy('seq'),
);

export async function linesOf(db: Executor, teamId: string, orderIds: readonly string[]): Promise<Row<'order_lines'>[]> {
  if (orderIds.length === 0) return [];
  return allRows(db, linesQuery(db, teamId, orderIds));
}

/** The lines of some orders, as a query to send with others (readTogether); `orderIds` not empty. */
export const linesQuery = template(['value', 'list'], (db: Executor, teamId: string, orderIds: readonly string[]) =>
  db.selectFrom('order_lines').selectAll().where('team_id', '=', teamId).where('order_id', 'in', orderIds).orderBy('seq'),
);
