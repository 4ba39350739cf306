import {
  type Compilable,
  type CompiledQuery,
  type Kysely,
  type RawBuilder,
  type DatabaseConnection,
  type Driver,
  PostgresDialect,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import type pg from 'pg';
import type { ConnectionGate } from './connection-gate.ts';
import { PipelinedConnection, RELEASE } from './pipelined-connection.ts';
import { DEFERRED, EARLY } from './statement-marks.ts';
import { describeOnce } from './row-shapes.ts';
import { protocolTransactionsAvailable } from './protocol-transactions.ts';
import { ConnectionStatements, type StatementNames } from './statement-names.ts';

/**
 * Kysely's PostgreSQL dialect with one round trip less per transaction: BEGIN is not sent on its
 * own and awaited, it is written with the transaction's first statement, in one socket write,
 * on a client in node-postgres's pipeline mode (`new pg.Pool({ pipeline: true })`). Both stores
 * use it: PostgreSQL over its socket, and the embedded database through its stream
 * (pglite-socket.ts), where one write is one call into PGlite. PostgreSQL
 * runs them in order, each with its own Sync: the statement runs inside the transaction exactly
 * as if BEGIN had been awaited first. A transaction that sends no statement sends no BEGIN and
 * no COMMIT.
 *
 * Why the statement cannot escape the transaction: BEGIN can only fail when the connection does
 * (a healthy session that is not in a transaction always accepts it; ours never is, since every
 * transaction ends with COMMIT or ROLLBACK before the client goes back to the pool), and then the
 * statement written behind it fails too. The BEGIN's own answer is still checked: if it failed,
 * the transaction fails with its error, and the pool drops the dead client.
 *
 * A service's transaction sends no BEGIN and no COMMIT at all where it may: its statements go with
 * Flush and its commit is a Sync (protocol-transactions.ts, chosen per transaction by the
 * connection); the BEGIN above is for the ones that keep them (a script, a snapshot, or
 * DATABASE_PROTOCOL_TRANSACTIONS=false).
 *
 * More ways to save round trips, below: deferWrite() (a write sent with the next statement),
 * sendWithNext() (a statement answered later) and readTogether() (independent reads sent at once);
 * the connection that carries them out is pipelined-connection.ts. Statements are prepared under
 * names (statement-names.ts) unless `names` is null. Everything else (results mapped as Kysely's
 * PostgresDriver maps them) is as in Kysely's own driver.
 */
export class PipelinedPostgresDialect extends PostgresDialect {
  constructor(
    private readonly gate: ConnectionGate,
    private readonly names: StatementNames | null,
    /** Transactions without BEGIN and COMMIT statements where they may (protocol-transactions.ts). */
    private readonly protocolTransactions = true,
    /** This handle's transactions take a free connection ahead of the other handle's (connection-gate.ts). */
    private readonly ahead = false,
  ) {
    super({ pool: gate.pool });
  }

  override createDriver(): Driver {
    return new PipelinedPostgresDriver(this.gate, this.names, this.protocolTransactions, this.ahead);
  }
}

class PipelinedPostgresDriver implements Driver {
  private destroyed = false;

  constructor(
    private readonly gate: ConnectionGate,
    private readonly names: StatementNames | null,
    private readonly protocolTransactions: boolean,
    private readonly ahead: boolean,
  ) {}

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    const client = await this.gate.connect(this.ahead);
    if (this.destroyed) {
      client.release();
      this.gate.release();
      throw new Error('driver has already been destroyed');
    }
    const connections = this.gate.connections;
    let connection = connections.get(client);
    if (!connection) {
      const protocol = this.protocolTransactions && protocolTransactionsAvailable(client);
      connection = new PipelinedConnection(client, this.names ? new ConnectionStatements(this.names) : null, protocol);
      // A named statement's result columns, described on its first execution on this client only (row-shapes.ts).
      if (this.names) describeOnce(client);
      connections.set(client, connection);
    }
    return connection;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    let begin = 'begin';
    if (settings.isolationLevel || settings.accessMode) {
      begin = 'start transaction';
      if (settings.isolationLevel) begin += ` isolation level ${settings.isolationLevel}`;
      if (settings.accessMode) begin += ` ${settings.accessMode}`;
    }
    (connection as PipelinedConnection).deferBegin(begin);
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as PipelinedConnection).end('commit');
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as PipelinedConnection).end('rollback');
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as PipelinedConnection)[RELEASE]();
    this.gate.release();
  }

  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    await this.gate.end();
  }
}

/**
 * A write whose answer the transaction does not need (an insert with no RETURNING whose failure
 * can only abort the transaction): on a pipelined connection it is written to the connection with the next
 * statement that is awaited, or with the COMMIT, in the same socket write, instead of costing a
 * round trip of its own. Its answer is still checked: if it failed, the statement after it and
 * the COMMIT fail with its own error (PostgreSQL aborted the transaction at it), so nothing of the
 * transaction commits, as if it had been awaited. Outside a transaction (or on a connection that
 * is not pipelined) it is simply executed and awaited.
 */
export async function deferWrite(trx: Kysely<any>, query: Compilable | RawBuilder<unknown>, opts: DeferOptions = {}): Promise<void> {
  const compiled = compileWith(trx, query);
  const mapError = opts.mapError ?? null;
  DEFERRED.set(compiled, mapError);
  try {
    await trx.executeQuery(compiled);
  } catch (err) {
    // Run at once (outside a transaction): its own failure, translated.
    throw mapError ? mapError(err) : err;
  }
}

export interface DeferOptions {
  /**
   * The error the transaction fails with when this write fails, given the database's: a write
   * whose SQL refuses what it must not do (a guard that raises) names that refusal to the caller,
   * whether it is answered at once (outside a transaction) or with the statement after it or the
   * COMMIT. Other statements' failures are not passed to it.
   */
  mapError?: (err: unknown) => unknown;
}

/**
 * A statement whose answer the transaction needs later, not now: on a pipelined connection it goes
 * out with the next statement the transaction sends (or its COMMIT), in the same socket write,
 * instead of taking a round trip of its own; the promise resolves with its rows when that answer
 * arrives. It runs where it was sent, after the statements before it and before the ones after it;
 * deferred writes sent after it into tables it does not name may ride in it as CTEs (one statement
 * fewer, the same rows: see the connection's writeHeldEarly). If it fails, its promise rejects and the next statement and the
 * COMMIT fail with its error (nothing commits), as with deferWrite(). When the transaction sends
 * nothing else before the next turn of the event loop, it is sent on its own, so awaiting it at
 * once never hangs. Outside a transaction (or on a connection that is not pipelined) it is simply executed.
 */
export function sendWithNext<Q extends Compilable<any> | RawBuilder<any>>(trx: Kysely<any>, query: Q): Promise<RowsOf<Q>> {
  const compiled = compileWith(trx, query);
  let answer: Promise<pg.QueryResult> | undefined;
  EARLY.set(compiled, (a) => (answer = a));
  const executed = trx.executeQuery(compiled);
  // Kysely hands the statement to the connection a few microtasks from now; until then the
  // transaction must not end (Store.transaction waits: see handedToConnection). Outside a
  // transaction the caller awaits it like any statement.
  if (trx.isTransaction) {
    let handed = UNHANDED.get(trx);
    if (!handed) UNHANDED.set(trx, (handed = new Set()));
    const done: Promise<unknown> = executed.then(
      () => handed.delete(done),
      (err: unknown) => {
        handed.delete(done);
        // Where it ran at once (a connection that is not pipelined), its failure is the transaction's.
        if (!FAILED.has(trx)) FAILED.set(trx, err);
      },
    );
    handed.add(done);
  }
  const rows = executed.then(async (r) => (answer ? (await answer).rows : r.rows) as RowsOf<Q>);
  // A transaction that failed before its caller awaited this must not end the process as an unhandled rejection.
  rows.catch(() => {});
  return rows;
}

/** sendWithNext() for a statement of one row (an insert, a read by key): that row, or undefined. */
export function firstWithNext<Q extends Compilable<any> | RawBuilder<any>>(trx: Kysely<any>, query: Q): Promise<RowsOf<Q>[number] | undefined> {
  const first = sendWithNext(trx, query).then((rows) => rows[0]);
  // As sendWithNext's own promise: a failure the transaction meets first is not also an unhandled rejection.
  first.catch(() => {});
  return first;
}

/** Per transaction handle: its sendWithNext() statements not yet handed to the connection. */
const UNHANDED = new WeakMap<Kysely<any>, Set<Promise<unknown>>>();
/** Per transaction handle: the first of them that failed when handed over (run at once, not sent with the next). */
const FAILED = new WeakMap<Kysely<any>, unknown>();

/**
 * Resolves once every sendWithNext() statement of this transaction is on its connection, and
 * rejects with the first one's error if one already failed there. The
 * transaction's COMMIT or ROLLBACK is written by Kysely straight to the connection, not behind
 * the transaction's statements: without this wait, a statement sent by sendWithNext() just before
 * the callback returned (or threw) could be written after it, outside the transaction.
 * Store.transaction() calls it after the callback, before the transaction ends.
 */
export async function handedToConnection(trx: Kysely<any>): Promise<void> {
  const handed = UNHANDED.get(trx);
  while (handed && handed.size > 0) await Promise.all([...handed]);
  // On a connection that is not pipelined such a statement has run by now: if it failed, so does
  // the transaction (on a pipelined one its failure reaches the COMMIT through the connection instead).
  if (FAILED.has(trx)) throw FAILED.get(trx);
}

/** A query builder compiles with its own executor; a raw sql`` template with the handle's. */
export function compileWith<O>(db: Kysely<any>, query: Compilable<O> | RawBuilder<O>): CompiledQuery<O> {
  return 'isRawBuilder' in query ? query.compile(db) : query.compile();
}

type RowsOf<Q> = Q extends Compilable<infer R> ? R[] : Q extends RawBuilder<infer R> ? R[] : never;

/**
 * Statements that do not depend on each other's answers, sent together: on a pipelined connection written in
 * one socket write and answered in one round trip (each still its own statement, run in order, so a
 * read after a write sees it: an upsell's new line, then all the order's lines); on a connection
 * that is not pipelined, run one after another. Resolves with each query's rows, in order; the first
 * that fails rejects it with its own error.
 */
export async function readTogether<Q extends readonly (Compilable<any> | RawBuilder<any>)[]>(db: Kysely<any>, queries: Q): Promise<{ -readonly [K in keyof Q]: RowsOf<Q[K]> }> {
  const compiled = queries.map((q) => compileWith(db, q));
  const results = await db.getExecutor().provideConnection(async (connection) => {
    if (connection instanceof PipelinedConnection) return connection.executeTogether(compiled);
    const out: QueryResult<unknown>[] = [];
    for (const c of compiled) out.push(await connection.executeQuery(c));
    return out;
  });
  return results.map((r) => r.rows) as { -readonly [K in keyof Q]: RowsOf<Q[K]> };
}
