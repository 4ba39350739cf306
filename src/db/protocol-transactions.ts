import pg from 'pg';

/**
 * Transactions without BEGIN and COMMIT statements: the wire protocol's own transaction.
 *
 * PostgreSQL runs every extended-protocol statement sent before a Sync message in one transaction,
 * committed at the Sync (its "implicit transaction"; libpq's pipeline mode relies on it). A
 * statement followed by Flush instead of Sync is answered at once and the transaction stays open:
 * its row locks held, its writes uncommitted, the next statement inside it. So a transaction of
 * the API's services is its statements each sent with Flush, then one Sync: the server's work and
 * the client's of two statements per transaction (BEGIN, COMMIT: a tenth of the card funnel's
 * statements) are gone, and nothing changes in what commits and when (issue 13).
 *
 * node-postgres ends every statement with Sync and takes ReadyForQuery as its end; here:
 * - `FlushQuery` is a statement sent with Flush (statements sent together share one, after the
 *   last: PostgreSQL then answers them in one packet), finished at its CommandComplete (the client then
 *   takes the next statement's answers as it does after a ReadyForQuery). When PostgreSQL refuses
 *   one, it skips everything up to the next Sync: the statements written after it get no answer,
 *   so they fail at once (`25P02`, as PostgreSQL answers them inside an aborted BEGIN), and the
 *   connection is told (`onFailure`) so it writes nothing more of the transaction.
 * - `SyncQuery` is the Sync alone: the COMMIT. A failure PostgreSQL reports at commit is its error.
 * - A rollback is the statement `rollback` with its Sync (`rollbackQuery`): inside an open
 *   implicit transaction it rolls it back (with the notice "there is no transaction in progress");
 *   after a refused statement PostgreSQL skips it and the Sync ends the aborted transaction. Either
 *   way nothing of the transaction commits.
 * - A statement without parameters inside such a transaction is sent with the extended protocol too
 *   (a simple query would commit the transaction at its end).
 *
 * This reaches into node-postgres's Client (`_activeQuery`, `readyForQuery`, `_sentQueryQueue`,
 * `_pulseQueryQueue`, `connection.submittedNamedStatements`) and Query (`_getRows`,
 * `handleReadyForQuery`); `protocolTransactionsAvailable()` checks they are there, and the
 * driver uses BEGIN and COMMIT when they are not (test/protocol-transactions.test.ts then fails).
 */

interface ClientInternals {
  _activeQuery: unknown;
  readyForQuery: boolean;
  _sentQueryQueue: unknown[];
  _pulseQueryQueue(): void;
  connection: { submittedNamedStatements: Record<string, string>; parsedStatements: Record<string, string>; flush(): void; sync(): void; execute(msg: unknown): void };
}

type QueryCtor = new (config: unknown) => Record<string, any>;
type StatementConfig = { text: string; values: unknown[]; name?: string };
const BaseQuery = (pg as unknown as { Query: QueryCtor }).Query;

/** An error of a statement that PostgreSQL skipped: one before it in the transaction was refused. */
export class TransactionAbortedError extends Error {
  readonly code = '25P02';
  constructor(cause: unknown) {
    super('current transaction is aborted, commands ignored until end of transaction block', { cause });
  }
}

/**
 * A statement sent as node-postgres sends any (with its Sync: it commits on its own). Built from its
 * text alone, then given its values and name: node-postgres copies a config object property by
 * property (cloneQueryConfig, 1–2 % of the API thread in the bench's profile). Its answer is a
 * promise of its own (node-postgres's for a config object is a second promise chained to the first).
 */
class PlainQuery extends BaseQuery {
  readonly answer: Promise<pg.QueryResult>;

  constructor(config: StatementConfig) {
    super(config.text);
    this.values = config.values;
    this.name = config.name;
    this.answer = new Promise((resolve, reject) => {
      (this as { callback?: unknown }).callback = (err: unknown, res: pg.QueryResult) => (err ? reject(err) : resolve(res));
    });
  }
}

/** A statement of a protocol transaction: sent with Flush, finished at its CommandComplete. */
export class FlushQuery extends PlainQuery {
  constructor(
    config: StatementConfig,
    private readonly client: pg.ClientBase,
    private readonly onFailure: (err: unknown) => void,
    /** false: no Flush of its own, the caller writes one after the last statement it sends together. */
    private readonly flushes = true,
  ) {
    super(config);
    this.queryMode = 'extended';
  }

  /**
   * node-postgres ends a statement whose parameters it cannot serialize (a value's toPostgres()
   * throwing) with Close and Sync, and that Sync would commit the transaction so far: the
   * connection is dropped instead (PostgreSQL rolls back what a vanished client left open), and the
   * statement fails with the serializer's error.
   */
  submit(connection: ClientInternals['connection'] & { stream: { destroy(): void } }): unknown {
    const sync = connection.sync;
    connection.sync = () => {
      // Not queryable from now on, so the pool drops it when it is released (the socket's own end comes later).
      (this.client as unknown as { _queryable: boolean })._queryable = false;
      connection.stream.destroy();
    };
    try {
      return super.submit(connection);
    } finally {
      connection.sync = sync;
    }
  }

  /** node-postgres ends every execution with Sync; this one with Flush: the transaction stays open. */
  _getRows(connection: ClientInternals['connection'], rows: unknown): void {
    connection.execute({ portal: this.portal, rows });
    if (this.flushes) connection.flush();
  }

  handleCommandComplete(msg: unknown, connection: unknown): void {
    super.handleCommandComplete(msg, connection);
    // No ReadyForQuery comes: the statement is done here, and the next one's answers follow.
    const client = this.client as unknown as ClientInternals;
    if (client._activeQuery === this) {
      client._activeQuery = null;
      client.readyForQuery = true;
    }
    this.handleReadyForQuery(connection);
    client._pulseQueryQueue();
  }

  handleError(err: unknown, connection: unknown): void {
    if (err instanceof pg.DatabaseError) {
      // Refused by PostgreSQL, which now skips everything up to the next Sync: the statements
      // written after this one get no answer. They fail here; the Sync the connection writes next
      // (with its ROLLBACK) is answered by the next query in the client's queue.
      const client = this.client as unknown as ClientInternals;
      const skipped: FlushQuery[] = [];
      while (client._sentQueryQueue[0] instanceof FlushQuery) skipped.push(client._sentQueryQueue.shift() as FlushQuery);
      const named = client.connection.submittedNamedStatements;
      for (const q of skipped) if (q.name && client.connection.parsedStatements[q.name] === undefined) delete named[q.name];
      client.readyForQuery = true;
      this.onFailure(err);
      super.handleError(err, connection);
      for (const q of skipped) q.handleError(new TransactionAbortedError(err), connection);
      client._pulseQueryQueue();
      return;
    }
    // Failed in the client (a row it could not read, a lost connection): the transaction must not commit.
    this.onFailure(err);
    super.handleError(err, connection);
  }
}

/** Sends a statement of a protocol transaction on the client, with Flush (`flushes`: false, the caller writes it); its answer. */
export function sendFlushed(client: pg.ClientBase, config: StatementConfig, onFailure: (err: unknown) => void, flushes = true): Promise<pg.QueryResult> {
  const query = new FlushQuery(config, client, onFailure, flushes);
  client.query(query as unknown as pg.QueryConfig);
  return query.answer;
}

/** Sends a statement on the client with its Sync (outside a protocol transaction); its answer. */
export function sendPlain(client: pg.ClientBase, config: StatementConfig): Promise<pg.QueryResult> {
  const query = new PlainQuery(config);
  client.query(query as unknown as pg.QueryConfig);
  return query.answer;
}

/** The Sync alone: commits the protocol transaction (or ends one PostgreSQL already aborted). */
export class SyncQuery extends BaseQuery {
  readonly answer: Promise<void>;

  constructor() {
    // A text, not a config object: node-postgres copies an object property by property (see FlushQuery).
    super('sync');
    this.answer = new Promise((resolve, reject) => {
      (this as { callback?: unknown }).callback = (err: unknown) => (err ? reject(err) : resolve());
    });
  }

  submit(connection: ClientInternals['connection']): null {
    connection.sync();
    return null;
  }
}

/** Rolls back the protocol transaction, whether PostgreSQL aborted it already or not (see above). */
export function rollbackQuery(client: pg.ClientBase): Promise<unknown> {
  return client.query({ text: 'rollback', values: [], queryMode: 'extended' } as pg.QueryConfig);
}

let available: boolean | undefined;

/** Whether node-postgres's internals are the ones this module was written for. */
export function protocolTransactionsAvailable(client: pg.ClientBase): boolean {
  const c = client as unknown as Partial<ClientInternals> & { pipeline?: boolean };
  if (!c.pipeline || !Array.isArray(c._sentQueryQueue) || !('_queryable' in c) || typeof c._pulseQueryQueue !== 'function' || !('_activeQuery' in c)) return false;
  const con = c.connection as Partial<ClientInternals['connection']> | undefined;
  if (!con || typeof con.flush !== 'function' || typeof con.sync !== 'function' || !con.submittedNamedStatements || !con.parsedStatements) return false;
  if (available === undefined) {
    const proto = BaseQuery.prototype as Record<string, unknown>;
    available = typeof proto._getRows === 'function' && typeof proto.handleReadyForQuery === 'function' && typeof pg.DatabaseError === 'function';
  }
  return available;
}
