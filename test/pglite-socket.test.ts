/**
 * node-postgres on the embedded database through the wire protocol's bytes (src/db/pglite-socket.ts):
 * a statement is one call into PGlite, whatever the number of protocol messages it takes; errors,
 * notifications and named statements come through as from a server; and a connection that goes away
 * inside a transaction does not leave the next one (PGlite has one session) inside it.
 */
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../src/db/database.ts';

let store: Store | undefined;
let pglite: PGlite | undefined;
afterEach(async () => {
  await store?.close();
  await pglite?.close();
  store = undefined;
  pglite = undefined;
});

async function open(): Promise<{ store: Store; pglite: PGlite; calls: () => number }> {
  pglite = new PGlite();
  let n = 0;
  const raw = pglite.execProtocolRawStream.bind(pglite);
  pglite.execProtocolRawStream = (...args: Parameters<PGlite['execProtocolRawStream']>) => {
    n++;
    return raw(...args);
  };
  store = await openStore({ dataDir: '.vitest-tmp', pglite });
  await store.run((db) => sql`create table t (id int primary key, note text)`.execute(db));
  return { store, pglite, calls: () => n };
}

describe('the embedded database over the wire protocol', () => {
  it('sends each statement to PGlite in one call (Parse, Bind, Describe, Execute and Sync together)', async () => {
    const { store, calls } = await open();
    const before = calls();
    for (let i = 0; i < 20; i++) await store.run((db) => db.insertInto('t' as never).values({ id: i, note: `n${i}` } as never).execute());
    const rows = await store.run((db) => sql<{ n: number }>`select count(*)::int as n from t where id >= ${0}`.execute(db));
    expect(rows.rows[0]!.n).toBe(20);
    // One call per statement: PGlite's own node-postgres adapter made one per protocol message (five).
    expect(calls() - before).toBe(21);
  });

  it('answers errors with their SQLSTATE and keeps the connection usable; a transaction rolls back', async () => {
    const { store } = await open();
    await store.run((db) => sql`insert into t values (1, 'a')`.execute(db));
    const err = await store.run((db) => sql`insert into t values (1, 'b')`.execute(db)).catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe('23505');
    await expect(
      store.transaction(async (trx) => {
        await sql`insert into t values (2, 'c')`.execute(trx);
        throw new Error('stop');
      }),
    ).rejects.toThrow('stop');
    const rows = await store.run((db) => sql<{ id: number; note: string }>`select id, note from t order by id`.execute(db));
    expect(rows.rows).toEqual([{ id: 1, note: 'a' }]);
  });

  it('delivers notifications to a listening client', async () => {
    const { store } = await open();
    const client = await store.pool.connect();
    const got: string[] = [];
    client.on('notification', (n) => got.push(`${n.channel}:${n.payload}`));
    await client.query('LISTEN work');
    await client.query("select pg_notify('work', 'hello')");
    client.release();
    await store.run((db) => sql`select pg_notify('work', 'again')`.execute(db));
    await new Promise((r) => setTimeout(r, 20));
    expect(got).toEqual(['work:hello', 'work:again']);
  });

  it('rolls back what a connection that went away left open, so the next one does not run inside it', async () => {
    const { store } = await open();
    const client: pg.PoolClient = await store.pool.connect();
    await client.query('begin');
    await client.query("insert into t values (7, 'left open')");
    // A client released with an error is destroyed: its stream closes, as a socket would.
    client.release(new Error('gone'));
    const rows = await store.run((db) => sql<{ n: number }>`select count(*)::int as n from t`.execute(db));
    expect(rows.rows[0]!.n).toBe(0);
    // Not inside a transaction: a COMMIT now would only warn, and the row is not there.
    await store.run((db) => sql`insert into t values (8, 'after')`.execute(db));
    expect((await store.run((db) => sql<{ id: number }>`select id from t`.execute(db))).rows).toEqual([{ id: 8 }]);
  });
});
