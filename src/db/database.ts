import { AsyncLocalStorage } from 'node:async_hooks';
import fs from 'node:fs';
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { Kysely, sql, type Transaction } from 'kysely';
import pg from 'pg';
import lockfile from 'proper-lockfile';
import { ConnectionGate } from './connection-gate.ts';
import { DatabaseHealth } from './faults.ts';
import { handedToConnection, PipelinedPostgresDialect } from './pg-driver.ts';
import { DEFAULT_PREPARED_STATEMENTS, StatementNames } from './statement-names.ts';
export { deferWrite, firstWithNext, readTogether, sendWithNext } from './pg-driver.ts';
import type { DB } from './schema.ts';

// int8 (bigint) columns hold money in minor units and serial ids; all stay far below 2^53.
pg.types.setTypeParser(20, (v) => Number(v));
// numeric (from sum/count aggregates) likewise.
pg.types.setTypeParser(1700, (v) => Number(v));

/** A handle a repo function may run SQL on: the root handle or a transaction. */
export type Executor = Kysely<DB>;
export type Tx = Transaction<DB>;

export type DatabaseKind = 'postgres' | 'pglite';

export interface TransactionOptions {
  /**
   * The transaction records the answer to a provider call this process made to move money (a
   * charge, refund or void: the payment core's outcome phase, the request's own or the recovery
   * run's). It takes the next free connection ahead of transactions that start new work
   * (connection-gate.ts). Confirmations that arrive later (a provider's webhook, Capture's
   * re-check, the watchdog) finalize through the ordinary line: they are new requests or jobs.
   */
  outcome?: boolean;
}

export class DataDirLockedError extends Error {
  constructor(dataDir: string) {
    super(
      `The embedded database in ${dataDir} is in use by another Checkstand process. ` +
        'Stop that process, or point CHECKSTAND_DATA_DIR at another folder, or set DATABASE_URL to use PostgreSQL.',
    );
  }
}

/**
 * The guard against a transaction's callback reaching for the root handle (below). It needs an
 * AsyncLocalStorage, which on Node 20 turns on promise hooks for every promise of the process
 * (a few percent of the server's CPU): on under the tests (VITEST) and with CHECKSTAND_TX_GUARD=1,
 * off otherwise (CHECKSTAND_TX_GUARD=0 turns it off under the tests too).
 */
const txGuard = process.env.CHECKSTAND_TX_GUARD === '1' || (process.env.CHECKSTAND_TX_GUARD !== '0' && Boolean(process.env.VITEST));
const txScope: Pick<AsyncLocalStorage<true>, 'getStore' | 'run'> = txGuard
  ? new AsyncLocalStorage<true>()
  : { getStore: () => undefined, run: <R>(_store: true, fn: () => R): R => fn() };

/**
 * A transaction's callback, then (returned or thrown) every statement it sent with sendWithNext()
 * on the connection before the COMMIT or ROLLBACK; one that already failed fails the transaction.
 */
async function settled<T>(trx: Tx, fn: (trx: Tx) => Promise<T>): Promise<T> {
  let result: T;
  try {
    result = await fn(trx);
  } catch (err) {
    await handedToConnection(trx).catch(() => {});
    throw err;
  }
  await handedToConnection(trx);
  return result;
}

/**
 * The only way services reach the database. `transaction` hands its callback the sole
 * handle it may use; `run` refuses to execute inside a transaction, because touching the
 * root handle there waits for a second connection — a deadlock on PGlite's pool of one.
 */
export class Store {
  /** Up or down as this process last saw it; see DatabaseHealth. */
  readonly health: DatabaseHealth;

  constructor(
    private readonly root: Kysely<DB>,
    /** The same database and connections as `root`, for outcome transactions (TransactionOptions). */
    private readonly ahead: Kysely<DB>,
    private readonly gate: ConnectionGate,
    readonly kind: DatabaseKind,
    private readonly closeHook: () => Promise<void>,
  ) {
    this.health = new DatabaseHealth(async () => {
      await sql`select 1`.execute(this.root);
    });
  }

  /**
   * A lost connection rejects the callback's statement and the transaction is rolled back by the
   * server (nothing of it committed); the error reaches the caller, which answers
   * `503 database_unavailable` for a request or retries a job later.
   */
  async transaction<T>(fn: (trx: Tx) => Promise<T>, opts?: TransactionOptions): Promise<T> {
    if (txScope.getStore()) throw new Error('nested Store.transaction(): pass the open transaction instead');
    const db = opts?.outcome ? this.ahead : this.root;
    return this.watched(() => txScope.run(true, () => db.transaction().execute((trx) => settled(trx, fn))));
  }

  /** The connection pool (LISTEN on the embedded database, metrics). */
  get pool(): pg.Pool {
    return this.gate.pool;
  }

  /** Connections handed out since start: to outcome transactions, and to everything else. */
  get checkouts(): Readonly<{ outcome: number; new: number }> {
    return this.gate.checkouts;
  }

  /** Transactions and statements waiting for a free connection (the pool's own queue included). */
  get waitingCount(): number {
    return this.gate.waitingCount + this.gate.pool.waitingCount;
  }

  /**
   * Several reads that must agree with each other (an order with its lines, transactions and
   * refunds): one read-only REPEATABLE READ transaction, so a change committed between two of
   * the reads is seen by all of them or by none.
   */
  async snapshot<T>(fn: (db: Tx) => Promise<T>): Promise<T> {
    if (txScope.getStore()) throw new Error('Store.snapshot() inside a transaction: use the transaction handle');
    return this.watched(() => txScope.run(true, () => this.root.transaction().setIsolationLevel('repeatable read').setAccessMode('read only').execute((trx) => settled(trx, fn))));
  }

  /** Statements outside any transaction (single reads, single writes). */
  async run<T>(fn: (db: Executor) => Promise<T>): Promise<T> {
    if (txScope.getStore()) throw new Error('Store.run() inside a transaction: use the transaction handle');
    return this.watched(() => fn(this.root));
  }

  private async watched<T>(fn: () => Promise<T>): Promise<T> {
    try {
      const result = await fn();
      this.health.ok();
      return result;
    } catch (err) {
      this.health.observe(err);
      throw err;
    }
  }

  /** For the migrator and health checks only. */
  get rootHandle(): Kysely<DB> {
    return this.root;
  }

  async close(): Promise<void> {
    this.health.close();
    await Promise.all([this.root.destroy(), this.ahead.destroy()]);
    await this.closeHook();
  }
}

export interface OpenOptions {
  databaseUrl?: string | undefined;
  dataDir: string;
  poolMax?: number;
  /** An already-open PGlite (tests load a migrated snapshot into memory). */
  pglite?: PGlite;
  /** Gives up connecting after this long (a failover that drops packets instead of refusing). */
  connectTimeoutMs?: number;
  /** The embedded database's shared_buffers (e.g. `16MB`); PostgreSQL's default, 128MB, is most of PGlite's memory. */
  sharedBuffers?: string;
  /** How many statement texts may be prepared under a name (DATABASE_PREPARED_STATEMENTS; 0: none). */
  preparedStatements?: number;
  /** Transactions without BEGIN and COMMIT where they may (DATABASE_PROTOCOL_TRANSACTIONS; default true). */
  protocolTransactions?: boolean;
}

const LOCK_STALE_MS = 15_000;

/** The store's two handles on one gate: the ordinary one, and the one whose transactions go ahead. */
function handles(gate: ConnectionGate, names: StatementNames | null, opts: OpenOptions): [Kysely<DB>, Kysely<DB>] {
  const protocol = opts.protocolTransactions ?? true;
  return [new Kysely<DB>({ dialect: new PipelinedPostgresDialect(gate, names, protocol) }), new Kysely<DB>({ dialect: new PipelinedPostgresDialect(gate, names, protocol, true) })];
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * One process per embedded data directory. The holder's pid is written beside the lock: when a
 * holder was killed (SIGKILL, power loss) its lock is left behind until it goes stale, so a restart
 * waits for that (at most ~15 s) instead of refusing; a live holder is refused at once.
 */
async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const lockfilePath = path.join(dataDir, '.lock');
  const pidFile = path.join(dataDir, '.lock.pid');
  const options = { lockfilePath, stale: LOCK_STALE_MS, update: 5_000 };
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(dataDir, options);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ELOCKED') throw err;
    const holder = Number.parseInt(fs.existsSync(pidFile) ? fs.readFileSync(pidFile, 'utf8') : '', 10);
    if (!Number.isInteger(holder) || holder === process.pid || isAlive(holder)) throw new DataDirLockedError(dataDir);
    process.stderr.write(`checkstand: the previous process on ${dataDir} (pid ${holder}) stopped without releasing it; waiting for its lock to expire…\n`);
    try {
      release = await lockfile.lock(dataDir, { ...options, retries: { retries: 40, minTimeout: 500, maxTimeout: 500, factor: 1 } });
    } catch (again) {
      if ((again as NodeJS.ErrnoException).code === 'ELOCKED') throw new DataDirLockedError(dataDir);
      throw again;
    }
  }
  fs.writeFileSync(pidFile, String(process.pid));
  return release;
}

export async function openStore(opts: OpenOptions): Promise<Store> {
  const max = opts.preparedStatements ?? DEFAULT_PREPARED_STATEMENTS;
  const names = max > 0 ? new StatementNames(max) : null;
  if (opts.databaseUrl) {
    const pool = new pg.Pool({
      connectionString: opts.databaseUrl,
      max: opts.poolMax ?? 10,
      connectionTimeoutMillis: opts.connectTimeoutMs ?? 5_000,
      // TCP keepalive: a connection to a server that vanished without a word is found dead.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      // Lets a transaction's BEGIN go out with its first statement (PipelinedPostgresDialect).
      pipeline: true,
    });
    const gate = new ConnectionGate(pool, pool.options.max, pool.options.connectionTimeoutMillis ?? 5_000);
    const store = new Store(...handles(gate, names, opts), gate, 'postgres', async () => {});
    // The server ending a connection (restart, failover, pg_terminate_backend) emits `error` on its
    // client. pg-pool listens only while the client is idle; a client checked out for a request or
    // a transaction has no listener, and an unhandled `error` event ends the process. Every client
    // gets a listener for its whole life: the statement it was running fails on its own, pg-pool
    // drops the dead client on release (it is no longer queryable) and connects a new one on demand.
    pool.on('connect', (client) => client.on('error', (err) => store.health.observe(err)));
    pool.on('error', (err) => store.health.observe(err));
    return store;
  }

  // PGlite (its JavaScript and WebAssembly) is loaded only for the embedded database: a process on
  // PostgreSQL never holds it in memory.
  const [{ PGlite }, { PgliteSocket }] = await Promise.all([import('@electric-sql/pglite'), import('./pglite-socket.ts')]);
  let release: (() => Promise<void>) | undefined;
  let pglite = opts.pglite;
  if (!pglite) {
    fs.mkdirSync(opts.dataDir, { recursive: true });
    release = await lockDataDir(opts.dataDir);
    const memory = opts.sharedBuffers ? ['-c', `shared_buffers=${opts.sharedBuffers}`] : [];
    pglite = new PGlite(path.join(opts.dataDir, 'pg'), { startParams: [...PGlite.defaultStartParams, ...memory] });
  }
  const owned = !opts.pglite;
  const instance = pglite;
  // PGlite is one connection: a pool of one queues callers, so Kysely and everything else share it.
  // node-postgres speaks the wire protocol to it through a stream (pglite-socket.ts), in pipeline
  // mode as on PostgreSQL: what the driver sends together (a BEGIN with the first statement,
  // deferred writes, reads together) goes to PGlite in one call, and deferred inserts into
  // different tables go as one statement.
  const pool = new pg.Pool({ stream: () => new PgliteSocket(instance), max: 1, host: 'localhost', port: 5432, user: 'postgres', database: 'postgres', password: 'embedded', pipeline: true });
  // No timeout for the one connection's waiters: the embedded database cannot hang up.
  const gate = new ConnectionGate(pool, 1, 0);
  return new Store(...handles(gate, names, opts), gate, 'pglite', async () => {
    if (owned) await instance.close();
    if (release) await release();
  });
}
