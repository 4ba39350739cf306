/**
 * DATABASE_URL may name PostgreSQL's Unix socket (same machine: no TCP stack on every statement).
 * What the start-up check accepts and refuses, how `serve` names it, and (where the server's socket
 * is at /var/run/postgresql, with TEST_DATABASE_URL) a store opened through it.
 */
import fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { checkDatabaseUrl, databaseLocation } from '../src/app/runtime.ts';
import { openStore, type Store } from '../src/db/database.ts';
import { sql } from 'kysely';

describe('DATABASE_URL', () => {
  it('names a host and port, or a Unix socket by a percent-encoded path or a host parameter', () => {
    expect(databaseLocation('postgres://u:p@db.example:6543/shop')).toEqual({ host: 'db.example', port: 6543, database: 'shop', socket: false });
    expect(databaseLocation('postgres://u@%2Fvar%2Frun%2Fpostgresql/shop')).toEqual({ host: '/var/run/postgresql', port: 5432, database: 'shop', socket: true });
    // node-postgres lets the host parameter win over the URL's host; so does the check.
    expect(databaseLocation('postgresql:///shop?host=/tmp&port=5433')).toEqual({ host: '/tmp', port: 5433, database: 'shop', socket: true });
    expect(databaseLocation('not a url')).toBeNull();
  });

  it('the start-up check accepts a socket and still refuses a URL naming nothing to connect to', () => {
    expect(() => checkDatabaseUrl('postgres://u@%2Fvar%2Frun%2Fpostgresql/shop')).not.toThrow();
    expect(() => checkDatabaseUrl('postgres:///shop?host=/var/run/postgresql')).not.toThrow();
    expect(() => checkDatabaseUrl('postgres:///shop')).toThrow(/DATABASE_URL names no host/);
    expect(() => checkDatabaseUrl('mysql://u@h/shop')).toThrow(/must start with postgres:\/\//);
    expect(() => checkDatabaseUrl('base')).toThrow(/is not a URL/);
  });
});

const SOCKET_DIR = '/var/run/postgresql';
const server = process.env.TEST_DATABASE_URL ? databaseLocation(process.env.TEST_DATABASE_URL) : null;
const socketThere = server !== null && fs.existsSync(`${SOCKET_DIR}/.s.PGSQL.${server.port}`);

describe.skipIf(!socketThere)(`a store through the socket in ${SOCKET_DIR} (needs TEST_DATABASE_URL and that socket; skipped without)`, () => {
  let store: Store | undefined;
  afterAll(() => store?.close());

  it('connects over the socket, not TCP, and runs a transaction', async (ctx) => {
    const u = new URL(process.env.TEST_DATABASE_URL!);
    const url = `postgres://${u.username ? `${u.username}${u.password ? `:${u.password}` : ''}@` : ''}${encodeURIComponent(SOCKET_DIR)}${u.port ? `:${u.port}` : ''}${u.pathname}`;
    expect(() => checkDatabaseUrl(url)).not.toThrow();
    try {
      store = await openStore({ databaseUrl: url, dataDir: '/nonexistent', poolMax: 2 });
      await store.run((db) => sql`select 1`.execute(db));
    } catch (err) {
      // The socket's authentication is the server's own (peer on a fresh Debian install): a refused
      // login says nothing about the URL: reported as skipped, not passed.
      if (/authentication failed|password/i.test((err as Error).message)) ctx.skip();
      throw err;
    }
    // inet_client_addr() is null only on a Unix-socket connection.
    const r = await store.transaction((trx) => sql<{ addr: string | null; one: number }>`select inet_client_addr()::text as addr, 1 as one`.execute(trx));
    expect(r.rows).toEqual([{ addr: null, one: 1 }]);
  });
});
