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
import { absorbingTables, absorbsDeferred, mergeableWrite, mergeDeferred, writeTable } from './deferred-writes.ts';
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
 * Two more ways to save round trips, both below: deferWrite() (a write sent with the next awaited
 * statement) and readTogether() (independent reads sent at once). Statements are prepared under
 * names (statement-names.ts) unless `names` is null. Everything else (results mapped as Kysely's
 * PostgresDriver maps them) is as in Kysely's own driver.
 */
export class PipelinedPostgresDialect extends PostgresDialect {
  constructor(
    private readonly pgPool: pg.Pool,
    private readonly names: StatementNames | null,
  ) {
    super({ pool: pgPool });
  }

  override createDriver(): Driver {
    return new PipelinedPostgresDriver(this.pgPool, this.names);
  }
}

const RELEASE = Symbol('release');

class PipelinedPostgresDriver implements Driver {
  private readonly connections = new WeakMap<pg.PoolClient, PipelinedConnection>();
  private destroyed = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly names: StatementNames | null,
  ) {}

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    const client = await this.pool.connect();
    if (this.destroyed) {
      client.release();
      throw new Error('driver has already been destroyed');
    }
    let connection = this.connections.get(client);
    if (!connection) {
      connection = new PipelinedConnection(client, this.names ? new ConnectionStatements(this.names) : null);
      this.connections.set(client, connection);
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
  }

  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    await this.pool.end();
  }
}

type Socketish = { cork?: () => void; uncork?: () => void };

/** Compiled writes marked by deferWrite(): sent without waiting for their answer; each with the translation of its own failure, if any. */
const DEFERRED = new WeakMap<CompiledQuery, ((err: unknown) => unknown) | null>();

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

/** Statements marked by sendWithNext(): each takes the promise of its answer. */
const EARLY = new WeakMap<CompiledQuery, (answer: Promise<pg.QueryResult>) => void>();

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
function compileWith(db: Kysely<any>, query: Compilable | RawBuilder<unknown>): CompiledQuery {
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

/** A sendWithNext() statement held by its connection: `before` of the held deferred writes were deferred before it. */
interface HeldEarly {
  compiled: CompiledQuery;
  tables: ReadonlySet<string>;
  before: number;
  resolve: (result: pg.QueryResult) => void;
  reject: (err: unknown) => void;
}

class PipelinedConnection implements DatabaseConnection {
  /** The BEGIN (or START TRANSACTION …) still to be written with the transaction's first statement. */
  private pendingBegin: string | null = null;
  private inTransaction = false;
  /** Answers of statements written but not awaited yet (a BEGIN, deferred writes), in order. */
  private unanswered: Promise<unknown>[] = [];
  /** The first of them that failed, once its answer (or node-postgres's own error) is in. */
  private failedUnanswered: Error | null = null;
  private corked = false;
  /** Deferred writes into different tables not yet written: written as one statement before anything else (mergeDeferred). */
  private heldWrites: CompiledQuery[] = [];
  /**
   * A sendWithNext() statement not written yet, held (with the deferred writes before it) until
   * the transaction writes anything else, ends, or the event loop turns: deferred writes into other
   * tables that come after it ride in it too (writeHeldEarly).
   */
  private heldEarly: HeldEarly | null = null;

  constructor(
    private readonly client: pg.PoolClient,
    /** The connection's statement names; null: every statement unnamed. */
    private readonly statements: ConnectionStatements | null,
  ) {}

  deferBegin(begin: string): void {
    this.pendingBegin = begin;
    this.inTransaction = true;
    this.unanswered = [];
    this.failedUnanswered = null;
    this.heldWrites = [];
    this.heldEarly = null; // always null here: the last transaction's end() or release dropped it
  }

  /** COMMIT or ROLLBACK; nothing at all when the transaction never sent a statement. */
  async end(command: 'commit' | 'rollback'): Promise<void> {
    this.inTransaction = false;
    // Deferred writes still held go out before the COMMIT (and are checked like any deferred
    // write below); a ROLLBACK never sends them.
    if (command === 'commit') this.writePending();
    else {
      this.heldWrites = [];
      this.dropHeldEarly();
    }
    if (this.pendingBegin !== null) {
      this.pendingBegin = null;
      this.unanswered = [];
      return;
    }
    if (command === 'commit' && this.unanswered.length > 0) {
      // A written statement can fail before it reaches the server (node-postgres reports that on
      // the next tick): the server then never aborted the transaction, and a COMMIT would commit
      // the rest without it. So a transaction with statements still unanswered lets the ticks
      // queued before it run, and ends with ROLLBACK and that statement's error when one has failed.
      await new Promise((resolve) => process.nextTick(resolve));
      if (this.failedUnanswered) {
        const failed = this.failedUnanswered;
        const rolledBack = this.write('rollback');
        this.flush();
        await Promise.allSettled(this.unanswered);
        this.unanswered = [];
        await rolledBack.catch(() => {});
        throw failed;
      }
    }
    const ended = this.write(command);
    this.flush();
    const failed = await this.firstFailure();
    if (command === 'commit' && failed) {
      // PostgreSQL answers a COMMIT of an aborted transaction with ROLLBACK: nothing committed.
      await ended.catch(() => {});
      throw failed;
    }
    await ended;
  }

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    if (this.inTransaction && DEFERRED.has(compiled)) {
      const mapError = DEFERRED.get(compiled);
      if (mapError) {
        const answer = this.writeStatement(compiled);
        const translated = answer.catch((err: unknown) => Promise.reject(mapError(err)));
        translated.catch(() => {});
        this.leaveUnanswered(translated);
      } else if (mergeableWrite(compiled)) {
        const table = writeTable(compiled);
        // A held sendWithNext() statement that names this table runs before it, as it was sent before it.
        if (this.heldEarly?.tables.has(table)) this.writeHeldEarly();
        if (this.heldWrites.some((d) => writeTable(d) === table)) this.writePending();
        this.heldWrites.push(compiled);
      } else {
        this.leaveUnanswered(this.writeStatement(compiled));
      }
      return { rows: [] };
    }
    const early = this.inTransaction ? EARLY.get(compiled) : undefined;
    if (early) {
      const tables = absorbingTables(compiled);
      if (tables === null) {
        const answer = this.writeStatement(compiled);
        this.leaveUnanswered(answer);
        early(answer);
        // Nothing else sent before the next turn of the event loop: it goes on its own.
        setImmediate(() => this.flush());
        return { rows: [] };
      }
      // Held, not written yet: deferred writes after it may still ride in it (writeHeldEarly), as
      // may the ones before it when it names none of their tables.
      if (this.heldEarly) this.writeHeldEarly();
      if (!absorbsDeferred(this.heldWrites, compiled)) this.writeHeld();
      let settle!: Pick<HeldEarly, 'resolve' | 'reject'>;
      const answer = new Promise<pg.QueryResult>((resolve, reject) => (settle = { resolve, reject }));
      const held: HeldEarly = { compiled, tables, before: this.heldWrites.length, ...settle };
      this.heldEarly = held;
      this.leaveUnanswered(answer);
      early(answer);
      // Nothing else sent before the next turn of the event loop: it goes on its own (with what it carries).
      setImmediate(() => {
        if (this.heldEarly === held) this.writeHeldEarly();
        this.flush();
      });
      return { rows: [] };
    }
    const answer = this.writeStatement(compiled);
    this.flush();
    let result: pg.QueryResult;
    try {
      result = await answer;
    } catch (err) {
      // An earlier write that failed aborted the transaction: its error is the one that explains.
      throw (await this.firstFailure()) ?? err;
    }
    // A BEGIN or a deferred write before it failed (the statement itself then ran, or failed, outside it).
    const failed = await this.firstFailure();
    if (failed) throw failed;
    const { command, rowCount, rows } = result;
    return {
      numAffectedRows:
        command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE' ? BigInt(rowCount ?? 0) : undefined,
      rows: (rows ?? []) as R[],
    };
  }

  /** Several statements written together; each answer awaited, in order (readTogether). */
  async executeTogether(compiled: readonly CompiledQuery[]): Promise<QueryResult<unknown>[]> {
    const answers = compiled.map((c) => this.writeStatement(c));
    this.flush();
    const results: QueryResult<unknown>[] = [];
    for (const answer of answers) {
      let result: pg.QueryResult;
      try {
        result = await answer;
      } catch (err) {
        await Promise.allSettled(answers);
        throw (await this.firstFailure()) ?? err;
      }
      results.push({ rows: result.rows ?? [] });
    }
    const failed = await this.firstFailure();
    if (failed) throw failed;
    return results;
  }

  /** Writes a statement into the corked socket, after what is still held (the BEGIN, a sendWithNext() statement, deferred writes). */
  private write(text: string, values?: unknown[]): Promise<pg.QueryResult> {
    this.writePending();
    return this.writeText(text, values);
  }

  /** Writes what the transaction still holds, in its order: a sendWithNext() statement with the deferred writes it carries, or the deferred writes. */
  private writePending(): void {
    if (this.heldEarly) this.writeHeldEarly();
    else if (this.heldWrites.length > 0) this.writeHeld();
  }

  /** Writes one statement's text into the corked socket, after the transaction's BEGIN when that is still to go; nothing held is written. */
  private writeText(text: string, values?: unknown[]): Promise<pg.QueryResult> {
    if (!this.corked) {
      this.stream()?.cork?.();
      this.corked = true;
    }
    if (this.pendingBegin !== null) {
      const begin = this.pendingBegin;
      this.pendingBegin = null;
      this.leaveUnanswered(this.client.query(begin));
    }
    const answer = !values ? this.client.query(text) : this.statements ? this.statements.query(this.client, text, values) : this.client.query(text, values);
    answer.catch(() => {});
    return answer;
  }

  /**
   * A statement of the transaction written (write()), carrying the deferred writes still held as
   * CTEs of its own when it may (absorbsDeferred: it names none of their tables): one statement
   * where there were two, in the same socket write. Otherwise they go before it as their own.
   */
  private writeStatement(compiled: CompiledQuery): Promise<pg.QueryResult> {
    if (this.heldEarly) this.writeHeldEarly();
    if (this.heldWrites.length > 0 && absorbsDeferred(this.heldWrites, compiled)) {
      const merged = mergeDeferred(this.heldWrites, compiled);
      if (merged) {
        this.heldWrites = [];
        return this.writeText(merged.sql, merged.parameters as unknown[]);
      }
    }
    return this.write(compiled.sql, compiled.parameters as unknown[]);
  }

  /**
   * The held sendWithNext() statement, written with every deferred write held (those before it and
   * those after it, none into a table it names) as its CTEs; when they cannot be merged, each in its
   * place: the ones before it, the statement, the ones after it. Its promise settles with the answer.
   */
  private writeHeldEarly(): void {
    const early = this.heldEarly;
    if (!early) return;
    this.heldEarly = null;
    const held = this.heldWrites;
    this.heldWrites = [];
    const merged = held.length > 0 ? mergeDeferred(held, early.compiled) : null;
    let answer: Promise<pg.QueryResult>;
    if (merged || held.length === 0) {
      const { sql, parameters } = merged ?? early.compiled;
      answer = this.writeText(sql, parameters as unknown[]);
    } else {
      this.heldWrites = held.slice(0, early.before);
      this.writeHeld();
      answer = this.writeText(early.compiled.sql, early.compiled.parameters as unknown[]);
      this.heldWrites = held.slice(early.before);
      this.writeHeld();
    }
    answer.then(early.resolve, early.reject);
  }

  /** A transaction that ends without sending its held sendWithNext() statement (a ROLLBACK, a released connection): its promise rejects. */
  private dropHeldEarly(): void {
    const early = this.heldEarly;
    this.heldEarly = null;
    early?.reject(new Error('the transaction ended before this statement was sent'));
  }

  /**
   * The deferred writes held so far, written (not flushed): several as one statement of
   * data-modifying CTEs (mergeDeferred), else each as it is. Unanswered, like any deferred write.
   */
  private writeHeld(): void {
    const held = this.heldWrites;
    if (held.length === 0) return;
    this.heldWrites = [];
    const merged = held.length > 1 ? mergeDeferred(held) : null;
    for (const { sql, parameters } of merged ? [merged] : held) this.leaveUnanswered(this.writeText(sql, parameters as unknown[]));
  }

  /** Sends everything written since the last flush in one socket write. */
  private flush(): void {
    if (!this.corked) return;
    this.corked = false;
    this.stream()?.uncork?.();
  }

  /** A statement written without awaiting its answer: checked by the next statement and by the COMMIT. */
  private leaveUnanswered(answer: Promise<unknown>): void {
    this.unanswered.push(answer);
    answer.catch((err: unknown) => {
      this.failedUnanswered ??= err as Error;
    });
  }

  /** The first failure among the unanswered statements (all are answered by now: they were sent before). */
  private async firstFailure(): Promise<Error | null> {
    if (this.unanswered.length === 0) return null;
    const settled = await Promise.allSettled(this.unanswered);
    this.unanswered = [];
    this.failedUnanswered = null;
    const failed = settled.find((s) => s.status === 'rejected');
    return failed ? ((failed as PromiseRejectedResult).reason as Error) : null;
  }

  private stream(): Socketish | undefined {
    return (this.client as unknown as { connection?: { stream?: Socketish } }).connection?.stream;
  }

  streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming is not used by Checkstand');
  }

  [RELEASE](): void {
    if (this.corked) this.flush();
    this.pendingBegin = null;
    this.inTransaction = false;
    this.unanswered = [];
    this.failedUnanswered = null;
    this.heldWrites = [];
    this.dropHeldEarly();
    this.client.release();
  }
}
