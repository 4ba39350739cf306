import type { CompiledQuery, DatabaseConnection, QueryResult } from 'kysely';
import type pg from 'pg';
import { absorbingTables, absorbsDeferred, mergeableWrite, mergeDeferred, namesNoneOf, writeTable } from './deferred-writes.ts';
import { DEFERRED, EARLY } from './statement-marks.ts';
import { rollbackQuery, sendFlushed, SyncQuery, TransactionAbortedError } from './protocol-transactions.ts';
import type { ConnectionStatements } from './statement-names.ts';

/*
 * One pooled node-postgres client in pipeline mode, as Kysely's connection (pg-driver.ts's driver
 * makes one per client): a transaction's BEGIN written with its first statement, deferred writes
 * held and sent with the next statement (as CTEs of it when they may be), sendWithNext()
 * statements held until the next, statements sent together; every answer checked. A transaction
 * whose first statement has parameters runs, where the connection allows it, as a protocol
 * transaction (protocol-transactions.ts): no BEGIN, its statements sent with Flush, its COMMIT a
 * Sync; one whose first statement has none (a migration's script, the migrator's lock) or that
 * sets an isolation level or access mode runs between BEGIN and COMMIT.
 */

type Socketish = { cork?: () => void; uncork?: () => void };

/** How the driver hands a connection back to the pool. */
export const RELEASE = Symbol('release');

/** A sendWithNext() statement held by its connection: `before` of the held deferred writes were deferred before it. */
interface HeldEarly {
  compiled: CompiledQuery;
  tables: ReadonlySet<string>;
  before: number;
  resolve: (result: pg.QueryResult) => void;
  reject: (err: unknown) => void;
}

export class PipelinedConnection implements DatabaseConnection {
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
  /** This transaction runs as a protocol transaction (no BEGIN) and has written a statement. */
  private inProtocolTransaction = false;
  /** Statements of the protocol transaction written since the last Flush: flush() writes one before it sends them. */
  private unflushed = false;
  /** The first failure of a statement of the protocol transaction: nothing more of it is written, and it rolls back. */
  private protocolFailure: unknown = null;
  private readonly onProtocolFailure = (err: unknown): void => {
    this.protocolFailure ??= err;
  };

  constructor(
    private readonly client: pg.PoolClient,
    /** The connection's statement names; null: every statement unnamed. */
    private readonly statements: ConnectionStatements | null,
    /** Whether a transaction may run as a protocol transaction (protocol-transactions.ts). */
    private readonly protocolTransactions = false,
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
    // Kysely rolls back a transaction whose COMMIT failed: that COMMIT (or Sync) already ended it.
    if (!this.inTransaction) return;
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
    if (this.inProtocolTransaction) return this.endProtocolTransaction(command);
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

  /**
   * The end of a protocol transaction: its Sync (the commit), or, when it is rolled back or one of
   * its statements failed, the statement `rollback` with its Sync (nothing of it commits either way).
   */
  private async endProtocolTransaction(command: 'commit' | 'rollback'): Promise<void> {
    // As for a COMMIT (above): a statement that failed before reaching the server reports it on the next tick.
    if (command === 'commit' && this.unanswered.length > 0) await new Promise((resolve) => process.nextTick(resolve));
    const failedBefore = this.protocolFailure ?? this.failedUnanswered;
    this.cork();
    // The Sync written next makes PostgreSQL answer what came before it: no Flush.
    this.unflushed = false;
    if (command === 'rollback' || failedBefore) {
      const rolledBack = rollbackQuery(this.client);
      rolledBack.catch(() => {});
      this.flush();
      const failed = await this.firstFailure();
      this.inProtocolTransaction = false;
      this.protocolFailure = null;
      await rolledBack.catch(() => {});
      if (command === 'commit') throw failed ?? failedBefore;
      return;
    }
    const sync = new SyncQuery();
    this.client.query(sync as unknown as pg.QueryConfig);
    this.flush();
    const failed = await this.firstFailure();
    let syncFailed: unknown = null;
    await sync.answer.catch((err: unknown) => (syncFailed = err));
    // A deferred write refused while the Sync was on its way: PostgreSQL ended the transaction it had aborted.
    const failedLate = this.protocolFailure;
    this.inProtocolTransaction = false;
    this.protocolFailure = null;
    if (failed ?? syncFailed ?? failedLate) throw failed ?? syncFailed ?? failedLate;
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
      if (!namesNoneOf(tables, this.heldWrites)) this.writeHeld();
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
    this.cork();
    if (this.pendingBegin !== null) {
      const begin = this.pendingBegin;
      this.pendingBegin = null;
      // A transaction of parameterised statements with no settings: a protocol transaction, no BEGIN.
      if (this.protocolTransactions && begin === 'begin' && values && values.length > 0) {
        this.inProtocolTransaction = true;
        this.protocolFailure = null;
      } else this.leaveUnanswered(this.client.query(begin));
    }
    if (this.inProtocolTransaction) {
      // PostgreSQL skips whatever is sent after a refused statement; nothing more is sent.
      const answer = this.protocolFailure
        ? Promise.reject(new TransactionAbortedError(this.protocolFailure))
        : this.statements
          ? this.statements.query(this.client, text, values ?? [], this.onProtocolFailure)
          : sendFlushed(this.client, { text, values: values ?? [] }, this.onProtocolFailure, false);
      this.unflushed = true;
      answer.catch(() => {});
      return answer;
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

  private cork(): void {
    if (this.corked) return;
    this.stream()?.cork?.();
    this.corked = true;
  }

  /**
   * Sends everything written since the last flush in one socket write; after a protocol
   * transaction's statements, with one Flush message, so PostgreSQL answers them all at once.
   */
  private flush(): void {
    if (!this.corked) return;
    if (this.unflushed) {
      this.unflushed = false;
      (this.client as unknown as { connection: { flush(): void } }).connection.flush();
    }
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
    // A protocol transaction its owner never ended (it always does): rolled back before anyone else uses the connection.
    if (this.inProtocolTransaction) rollbackQuery(this.client).catch(() => {});
    this.inProtocolTransaction = false;
    this.unflushed = false;
    this.protocolFailure = null;
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
