import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import { sql } from 'kysely';
import type { Store } from '../../db/database.ts';

type Callback = (error: Error | null, result?: { current: number; ttl: number }) => void;

const PURGE_EVERY_MS = 60_000;

/**
 * A store for @fastify/rate-limit in the `rate_limits` table, so every `serve` process on one
 * database spends the same budget. One statement per request: the upsert starts a window, or
 * counts one more in it, and answers the count and the milliseconds left — on the database's
 * clock, so processes with skewed clocks agree. Keys are bucket names with a client address or
 * a token-hash prefix, never a secret.
 */
export function postgresRateLimitStore(store: Store, onError: (err: unknown) => void): FastifyRateLimitStoreCtor {
  let lastPurge = Date.now();

  /** Windows that ended a while ago: one delete a minute per process, off the request's path. */
  function purgeNowAndThen() {
    if (Date.now() - lastPurge < PURGE_EVERY_MS) return;
    lastPurge = Date.now();
    store
      .run((db) => db.deleteFrom('rate_limits').where('expires_at', '<', sql<Date>`now() - interval '1 minute'`).execute())
      .catch(onError);
  }

  class PostgresStore implements FastifyRateLimitStore {
    incr(key: string, cb: Callback, timeWindow: number) {
      purgeNowAndThen();
      const expiresAt = sql<Date>`now() + ${timeWindow} * interval '1 millisecond'`;
      store
        .run((db) =>
          db
            .insertInto('rate_limits')
            .values({ key, count: 1, expires_at: expiresAt })
            .onConflict((oc) =>
              oc.column('key').doUpdateSet({
                count: sql<number>`CASE WHEN rate_limits.expires_at <= now() THEN 1 ELSE rate_limits.count + 1 END`,
                expires_at: sql<Date>`CASE WHEN rate_limits.expires_at <= now() THEN excluded.expires_at ELSE rate_limits.expires_at END`,
              }),
            )
            .returning(['count', sql<number>`ceil(extract(epoch from expires_at - now()) * 1000)::int8`.as('ttl')])
            .executeTakeFirstOrThrow(),
        )
        .then((row) => cb(null, { current: row.count, ttl: Math.max(0, row.ttl) }), (err: Error) => cb(err));
    }

    read(key: string, cb: Callback) {
      store
        .run((db) =>
          db
            .selectFrom('rate_limits')
            .select(['count', sql<number>`ceil(extract(epoch from expires_at - now()) * 1000)::int8`.as('ttl')])
            .where('key', '=', key)
            .where('expires_at', '>', sql<Date>`now()`)
            .executeTakeFirst(),
        )
        .then((row) => cb(null, row ? { current: row.count, ttl: Math.max(0, row.ttl) } : { current: 0, ttl: 0 }), (err: Error) => cb(err));
    }

    /** Buckets share the table: their keys carry the bucket's name. */
    child(): FastifyRateLimitStore {
      return this;
    }
  }
  return PostgresStore;
}
