import { AsyncLocalStorage } from 'node:async_hooks';
import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { createPgConfig } from '@electric-sql/pglite/node-postgres';
import { Kysely, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import lockfile from 'proper-lockfile';
import type { DB } from './schema.ts';

// int8 (bigint) columns hold money in minor units and serial ids; all stay far below 2^53.
pg.types.setTypeParser(20, (v) => Number(v));
// numeric (from sum/count aggregates) likewise.
pg.types.setTypeParser(1700, (v) => Number(v));

/** A handle a repo function may run SQL on: the root handle or a transaction. */
export type Executor = Kysely<DB>;
export type Tx = Transaction<DB>;

export type DatabaseKind = 'postgres' | 'pglite';

export class DataDirLockedError extends Error {
  constructor(dataDir: string) {
    super(
      `The embedded database in ${dataDir} is in use by another Checkstand process. ` +
        'Stop that process, or point CHECKSTAND_DATA_DIR at another folder, or set DATABASE_URL to use PostgreSQL.',
    );
  }
}

const txScope = new AsyncLocalStorage<true>();

/**
 * The only way services reach the database. `transaction` hands its callback the sole
 * handle it may use; `run` refuses to execute inside a transaction, because touching the
 * root handle there waits for a second connection — a deadlock on PGlite's pool of one.
 */
export class Store {
  constructor(
    private readonly root: Kysely<DB>,
    readonly pool: pg.Pool,
    readonly kind: DatabaseKind,
    private readonly closeHook: () => Promise<void>,
  ) {}

  async transaction<T>(fn: (trx: Tx) => Promise<T>): Promise<T> {
    if (txScope.getStore()) throw new Error('nested Store.transaction(): pass the open transaction instead');
    return txScope.run(true, () => this.root.transaction().execute(fn));
  }

  /** Statements outside any transaction (single reads, single writes). */
  async run<T>(fn: (db: Executor) => Promise<T>): Promise<T> {
    if (txScope.getStore()) throw new Error('Store.run() inside a transaction: use the transaction handle');
    return fn(this.root);
  }

  /** For the migrator and health checks only. */
  get rootHandle(): Kysely<DB> {
    return this.root;
  }

  async close(): Promise<void> {
    await this.root.destroy();
    await this.closeHook();
  }
}

export interface OpenOptions {
  databaseUrl?: string | undefined;
  dataDir: string;
  poolMax?: number;
  /** An already-open PGlite (tests load a migrated snapshot into memory). */
  pglite?: PGlite;
  /** Told about errors on idle pooled connections (logged by the runtime). */
  onPoolError?: (err: Error) => void;
}

export async function openStore(opts: OpenOptions): Promise<Store> {
  if (opts.databaseUrl) {
    const pool = new pg.Pool({ connectionString: opts.databaseUrl, max: opts.poolMax ?? 10 });
    // An idle connection the server ends (restart, failover, pg_terminate_backend) is dropped from
    // the pool and replaced on next use; without a listener it would crash the process.
    pool.on('error', (err) => opts.onPoolError?.(err));
    const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
    return new Store(db, pool, 'postgres', async () => {});
  }

  let release: (() => Promise<void>) | undefined;
  let pglite = opts.pglite;
  if (!pglite) {
    fs.mkdirSync(opts.dataDir, { recursive: true });
    try {
      release = await lockfile.lock(opts.dataDir, {
        lockfilePath: path.join(opts.dataDir, '.lock'),
        stale: 15_000,
        update: 5_000,
      });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ELOCKED') throw new DataDirLockedError(opts.dataDir);
      throw err;
    }
    pglite = new PGlite(path.join(opts.dataDir, 'pg'));
  }
  const owned = !opts.pglite;
  const instance = pglite;
  // PGlite is one connection: a pool of one queues callers, so Kysely and everything else share it.
  const pool = new pg.Pool({ ...createPgConfig(instance), max: 1 });
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  return new Store(db, pool, 'pglite', async () => {
    if (owned) await instance.close();
    if (release) await release();
  });
}
