/**
 * Transactions without BEGIN and COMMIT statements (src/db/protocol-transactions.ts): a service's
 * transaction sends its statements with Flush and commits with one Sync, and is still one
 * transaction: nothing of it is seen by another connection before the Sync, its row locks hold
 * until then, a refused statement or a thrown callback leaves nothing behind, a failure PostgreSQL
 * reports at commit fails it, and the connection serves the next transaction normally. A
 * transaction whose first statement has no parameters (a migration's script) and a snapshot (an
 * isolation level) keep BEGIN and COMMIT. Statements sent together share one Flush. Embedded, and on PostgreSQL with TEST_DATABASE_URL.
 * Frontend messages are counted on the client sockets by type byte.
 */
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deferWrite, openStore, readTogether, type Store } from '../src/db/database.ts';
import { PgliteSocket } from '../src/db/pglite-socket.ts';
import { sendFlushed, SyncQuery } from '../src/db/protocol-transactions.ts';
import { frontendMessages } from './support/frontend-messages.ts';
import { statementsSent } from './support/statements.ts';

const url = process.env.TEST_DATABASE_URL;
const table = `protocol_tx_${process.pid}`;

/** Frontend messages written by node-postgres clients, by type: Q simple query, P Parse, E Execute, H Flush, S Sync. */
const messages = frontendMessages();
beforeAll(() => messages.install());
afterAll(() => messages.restore());

/** The frontend messages `fn` makes the clients write, by type. */
async function sent(fn: () => Promise<unknown>): Promise<Record<string, number>> {
  messages.counts.clear();
  await fn();
  return Object.fromEntries(messages.counts);
}

const databases: [string, string | null][] = [['embedded', null], ...(url ? [['PostgreSQL', url] as [string, string]] : [])];

describe.each(databases)('protocol transactions on the %s database', (_name, databaseUrl) => {
  let store: Store;
  beforeAll(async () => {
    store = databaseUrl ? await openStore({ databaseUrl, dataDir: '.vitest-tmp', poolMax: 1 }) : await openStore({ dataDir: '.vitest-tmp', pglite: new PGlite() });
    await store.run((db) => sql`drop table if exists ${sql.id(table)}`.execute(db));
    await store.run((db) => sql`create table ${sql.id(table)} (id int primary key, v text, d int unique deferrable initially deferred)`.execute(db));
  });
  afterAll(async () => {
    await store?.run((db) => sql`drop table if exists ${sql.id(table)}`.execute(db));
    await store?.close();
  });

  const insert = (db: Parameters<Parameters<Store['run']>[0]>[0], id: number, v = 'x', d: number | null = null) => sql`insert into ${sql.id(table)} (id, v, d) values (${id}, ${v}, ${d})`.execute(db);
  const ids = async () => (await store.run((db) => sql<{ id: number }>`select id from ${sql.id(table)} where id > ${0} order by id`.execute(db))).rows.map((r) => r.id);

  it('sends a transaction of three statements with no BEGIN and no COMMIT: three Executes with Flush, one Sync, no simple query', async () => {
    await store.run((db) => sql`select ${1}::int`.execute(db)); // the pooled connection exists
    let texts: string[] = [];
    const counts = await sent(async () => {
      texts = await statementsSent(() =>
        store.transaction(async (trx) => {
          await insert(trx, 1);
          await insert(trx, 2);
          await sql`select count(*) from ${sql.id(table)} where id < ${10}`.execute(trx);
        }),
      );
    });
    expect(texts.map((t) => t.split(' ')[0]!.toLowerCase())).toEqual(['insert', 'insert', 'select', 'sync']);
    expect(counts).toMatchObject({ E: 3, H: 3, S: 1 });
    expect(counts.Q).toBeUndefined();
    expect(await ids()).toEqual([1, 2]);
  });

  it('statements sent together share one Flush, after the last: PostgreSQL answers them at once', async () => {
    const counts = await sent(() =>
      store.transaction(async (trx) => {
        const [one, two, three] = await readTogether(trx, [
          sql<{ id: number }>`select id from ${sql.id(table)} where id = ${1}`,
          sql<{ id: number }>`select id from ${sql.id(table)} where id = ${2}`,
          sql<{ n: number }>`select count(*)::int as n from ${sql.id(table)} where id > ${0}`,
        ]);
        expect([one, two, three]).toEqual([[{ id: 1 }], [{ id: 2 }], [{ n: 2 }]]);
      }),
    );
    expect(counts).toMatchObject({ E: 3, H: 1, S: 1 });
  });

  it('a statement PostgreSQL refuses fails the transaction with its own error; the statements sent after it and before are undone; the next transaction commits', async () => {
    const failed = store.transaction(async (trx) => {
      await insert(trx, 3);
      // Written, not awaited: sent with the duplicate, after which PostgreSQL skips everything up to a Sync.
      await deferWrite(trx, sql`insert into ${sql.id(table)} (id, v) values (${4}, ${'y'})`);
      await insert(trx, 1, 'duplicate');
      await insert(trx, 5);
    });
    await expect(failed).rejects.toMatchObject({ code: '23505' });
    expect(await ids()).toEqual([1, 2]);
    // Statements prepared under names before the failure and skipped after it both run again.
    for (let i = 0; i < 3; i++) await store.transaction(async (trx) => insert(trx, 6 + i));
    expect(await ids()).toEqual([1, 2, 6, 7, 8]);
  });

  it('a deferred write PostgreSQL refuses just before the commit fails it; nothing commits', async () => {
    const failed = store.transaction(async (trx) => {
      await insert(trx, 9);
      await deferWrite(trx, sql`insert into ${sql.id(table)} (id, v) values (${1}, ${'duplicate'})`);
    });
    await expect(failed).rejects.toMatchObject({ code: '23505' });
    expect(await ids()).toEqual([1, 2, 6, 7, 8]);
  });

  it('a callback that throws after its writes leaves nothing behind; the connection is not left inside it', async () => {
    const failed = store.transaction(async (trx) => {
      await insert(trx, 10);
      await insert(trx, 11);
      throw new Error('changed my mind');
    });
    await expect(failed).rejects.toThrow('changed my mind');
    expect(await ids()).toEqual([1, 2, 6, 7, 8]);
    // Outside any transaction: committed by its own Sync, never by a later one.
    await store.run((db) => insert(db, 12));
    expect(await ids()).toEqual([1, 2, 6, 7, 8, 12]);
  });

  it('a failure PostgreSQL reports only at commit (a deferred unique key) fails the transaction; nothing commits', async () => {
    await store.run((db) => insert(db, 13, 'x', 100));
    const failed = store.transaction(async (trx) => {
      await insert(trx, 14);
      await insert(trx, 15, 'x', 100);
    });
    await expect(failed).rejects.toMatchObject({ code: '23505' });
    expect(await ids()).toEqual([1, 2, 6, 7, 8, 12, 13]);
  });

  it('a transaction whose first statement has no parameters (a script) and a snapshot keep BEGIN and COMMIT', async () => {
    const script = await statementsSent(() =>
      store.transaction(async (trx) => {
        await sql.raw(`insert into ${table} (id, v) values (16, 'a'); insert into ${table} (id, v) values (17, 'b')`).execute(trx);
        await insert(trx, 18);
      }),
    );
    expect(script.map((t) => t.split(' ')[0]!.toLowerCase())).toEqual(['begin', 'insert', 'insert', 'commit']);
    const snapshot = await statementsSent(() => store.snapshot((db) => sql`select count(*) from ${sql.id(table)} where id > ${0}`.execute(db)));
    expect(snapshot[0]).toMatch(/^start transaction isolation level repeatable read read only$/);
    expect(snapshot.at(-1)).toBe('commit');
    expect(await ids()).toEqual([1, 2, 6, 7, 8, 12, 13, 16, 17, 18]);
  });
});

describe.skipIf(!url)('protocol transactions seen from another connection (PostgreSQL; needs TEST_DATABASE_URL)', () => {
  let store: Store;
  let other: pg.Client;
  beforeAll(async () => {
    store = await openStore({ databaseUrl: url, dataDir: '.vitest-tmp', poolMax: 1 });
    other = new pg.Client({ connectionString: url });
    await other.connect();
    await other.query(`drop table if exists ${table}_locks`);
    await other.query(`create table ${table}_locks (id int primary key, v int not null)`);
    await other.query(`insert into ${table}_locks values (1, 0)`);
  });
  afterAll(async () => {
    await other?.query(`drop table if exists ${table}_locks`).catch(() => {});
    await other?.end();
    await store?.close();
  });

  it('holds its row lock and hides its writes from other connections until its Sync', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    const tx = store.transaction(async (trx) => {
      await sql`select * from ${sql.id(`${table}_locks`)} where id = ${1} for update`.execute(trx);
      await sql`update ${sql.id(`${table}_locks`)} set v = v + ${1} where id = ${1}`.execute(trx);
      locked();
      await held;
    });
    await lockTaken;
    await expect(other.query(`select * from ${table}_locks where id = 1 for update nowait`)).rejects.toMatchObject({ code: '55P03' });
    expect((await other.query(`select v from ${table}_locks where id = 1`)).rows).toEqual([{ v: 0 }]);
    release();
    await tx;
    expect((await other.query(`select v from ${table}_locks where id = 1 for update nowait`)).rows).toEqual([{ v: 1 }]);
  });
});

describe('the embedded database after a connection dropped inside a protocol transaction', () => {
  it('does not let the next connection continue (and commit) what the dropped one left open', async () => {
    const pglite = new PGlite();
    await pglite.exec('create table t (id int primary key)');
    const connect = async () => {
      const client = new pg.Client({ stream: () => new PgliteSocket(pglite), host: 'localhost', user: 'postgres', database: 'postgres', password: 'x', pipeline: true } as pg.ClientConfig);
      client.on('error', () => {}); // the dropped one's end
      await client.connect();
      return client;
    };
    const first = await connect();
    await sendFlushed(first, { text: 'insert into t values ($1)', values: [1] }, () => {});
    // Gone without its Sync (a pool dropping it, a crash of what held it).
    (first as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    const second = await connect();
    await sendFlushed(second, { text: 'insert into t values ($1)', values: [2] }, () => {});
    const sync = new SyncQuery();
    second.query(sync as unknown as pg.QueryConfig);
    await sync.answer;
    expect((await second.query('select id from t order by id')).rows).toEqual([{ id: 2 }]);
    await second.end();
    await pglite.close();
  });
});
