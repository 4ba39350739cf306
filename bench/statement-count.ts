/**
 * The statements and commits the in-process server sends: every pooled client is counted once it
 * is first checked out (PGlite goes through the same pg.Pool). Transactions too: COMMITs and
 * protocol transactions' Syncs (their commits), and statements sent outside a transaction (one
 * transaction each). `writes`: socket writes to PostgreSQL (one system call each): a statement sent
 * with others (a transaction's BEGIN, deferred writes) shares one. PGlite has no socket: not counted there.
 */
import type pg from 'pg';
import { FlushQuery, SyncQuery } from '../src/db/protocol-transactions.ts';
import { countSocketWrites } from '../src/db/socket-writes.ts';

export interface StatementCounts {
  statements: number;
  /** The statements sent while `inWorker()` said so (the outbox worker's async context). */
  workerStatements: number;
  /** COMMITs and protocol transactions' Syncs. */
  commits: number;
  /** Statements sent outside a transaction. */
  single: number;
  writes: number;
}

/** Counts from now on into the object it returns (read it, or copy it, whenever). */
export function countStatements(pool: pg.Pool, inWorker: () => boolean): StatementCounts {
  const db: StatementCounts = { statements: 0, workerStatements: 0, commits: 0, single: 0, writes: 0 };
  const counted = new WeakSet<object>();
  const countWrites = countSocketWrites(() => db.writes++);
  pool.on('acquire', (client) => {
    if (counted.has(client)) return;
    counted.add(client);
    countWrites(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    let inTransaction = false;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const first = args[0];
      // A protocol transaction (src/db/protocol-transactions.ts): its statements go with Flush, its commit is a Sync.
      if (first instanceof SyncQuery) {
        db.commits++;
        return query(...args);
      }
      db.statements++;
      if (inWorker()) db.workerStatements++;
      if (first instanceof FlushQuery) return query(...args);
      const text = (typeof first === 'string' ? first : ((first as { text?: string } | undefined)?.text ?? '')).trimStart().slice(0, 24).toLowerCase();
      if (text.startsWith('begin') || text.startsWith('start transaction')) inTransaction = true;
      else if (text.startsWith('commit')) {
        inTransaction = false;
        db.commits++;
      } else if (text.startsWith('rollback to')) {
        // a savepoint: still in the transaction
      } else if (text.startsWith('rollback')) inTransaction = false;
      else if (!inTransaction) db.single++;
      return query(...args);
    };
  });
  return db;
}
