/**
 * Named (prepared) statements (src/db/statement-names.ts, issue 13): a parameterised statement
 * sent a second time is prepared under a name and then only bound and executed, on PostgreSQL and
 * on the embedded database; one-off texts and scripts stay unnamed; the number of names is capped;
 * a table that changes under a prepared `select *` fails that statement once (503 over HTTP), and
 * the connection prepares it again.
 */
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../src/db/database.ts';
import { isStalePlan, StatementNames } from '../src/db/statement-names.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

describe('StatementNames', () => {
  it('names a text on its second sighting, keeps the name, and never gives one name to two texts', () => {
    const names = new StatementNames(10);
    expect(names.numberOf('select $1')).toBeUndefined();
    expect(names.numberOf('select $1')).toBe(0);
    expect(names.numberOf('select $1')).toBe(0);
    expect(names.numberOf('select $1, $2')).toBeUndefined();
    expect(names.numberOf('select $1, $2')).toBe(1);
    expect(names.named).toBe(2);
  });

  it('stops naming new texts at its cap; texts named before keep their names', () => {
    const names = new StatementNames(2);
    for (const t of ['a', 'b', 'c']) {
      names.numberOf(t);
      names.numberOf(t);
    }
    expect(names.numberOf('a')).toBe(0);
    expect(names.numberOf('b')).toBe(1);
    expect(names.numberOf('c')).toBeUndefined();
    expect(names.named).toBe(2);
    expect(new StatementNames(0).numberOf('a') ?? new StatementNames(0).numberOf('a')).toBeUndefined();
  });
});

const TABLE = `named_stmt_test_${process.pid}`;

const stores: [string, () => Promise<Store>, () => Promise<Store>][] = [
  ['the embedded database', () => openStore({ dataDir: '', pglite: new PGlite() }), () => openStore({ dataDir: '', pglite: new PGlite(), preparedStatements: 0 })],
];
if (process.env.TEST_DATABASE_URL) {
  const url = process.env.TEST_DATABASE_URL;
  stores.push(['PostgreSQL', () => openStore({ databaseUrl: url, dataDir: '', poolMax: 1 }), () => openStore({ databaseUrl: url, dataDir: '', poolMax: 1, preparedStatements: 0 })]);
}

describe.each(stores)('named statements on %s', (_name, open, openUnnamed) => {
  let store: Store;
  let unnamed: Store;
  beforeAll(async () => {
    store = await open();
    unnamed = await openUnnamed();
    await store.run((db) => sql`create table ${sql.table(TABLE)} (id int primary key, v text)`.execute(db));
    await store.run((db) => sql`insert into ${sql.table(TABLE)} (id, v) values (1, 'one'), (2, 'two')`.execute(db));
  });
  afterAll(async () => {
    await store?.run((db) => sql`drop table if exists ${sql.table(TABLE)}`.execute(db)).catch(() => {});
    await store?.close();
    await unnamed?.close();
  });

  /** The statements the transaction's connection has prepared (its session's pg_prepared_statements). */
  const prepared = async (s: Store, fn: (trx: Parameters<Parameters<Store['transaction']>[0]>[0]) => Promise<unknown>) =>
    s.transaction(async (trx) => {
      await fn(trx);
      return (await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(trx)).rows;
    });
  const byId = (id: number) => sql<{ id: number; v: string }>`select * from ${sql.table(TABLE)} where id = ${id}`;

  it('prepares a parameterised statement under a name from its second use, and answers it as before', async () => {
    const answers: string[] = [];
    const rows = await prepared(store, async (trx) => {
      for (const id of [1, 2, 1]) answers.push((await byId(id).execute(trx)).rows[0]!.v);
    });
    expect(answers).toEqual(['one', 'two', 'one']);
    const mine = rows.filter((r) => r.statement.includes(TABLE));
    expect(mine).toHaveLength(1);
    expect(mine[0]!.name).toMatch(/^cs[0-9a-z]+_[0-9a-z]+$/);
  });

  it('prepares nothing with DATABASE_PREPARED_STATEMENTS=0, nor a statement without values', async () => {
    await unnamed.run((db) => sql`create table if not exists ${sql.table(`${TABLE}_u`)} (id int primary key)`.execute(db));
    const rows = await prepared(unnamed, async (trx) => {
      for (const id of [1, 1, 1]) await sql`select * from ${sql.table(`${TABLE}_u`)} where id = ${id}`.execute(trx);
    });
    expect(rows.filter((r) => r.statement.includes(`${TABLE}_u`))).toEqual([]);
    await unnamed.run((db) => sql`drop table ${sql.table(`${TABLE}_u`)}`.execute(db));
    const literal = await prepared(store, async (trx) => {
      for (let i = 0; i < 3; i++) await sql`select * from ${sql.table(TABLE)} where id = 2`.execute(trx);
    });
    expect(literal.filter((r) => r.statement.includes('id = 2'))).toEqual([]);
  });

  it('a table that changed columns under a prepared select * fails the statement once, then it is prepared again', async () => {
    for (const id of [1, 1, 1]) await store.run((db) => byId(id).execute(db));
    await store.run((db) => sql`alter table ${sql.table(TABLE)} add column extra int default 7`.execute(db));
    const stale = await store.run((db) => byId(1).execute(db)).catch((err: unknown) => err);
    expect(isStalePlan(stale), String(stale)).toBe(true);
    const again = await store.run((db) => byId(1).execute(db));
    expect(again.rows[0]).toMatchObject({ id: 1, v: 'one', extra: 7 });
  });
});

describe('a table changing under a prepared statement, over HTTP', () => {
  let app: TestApp;
  let team: TestTeam;
  beforeAll(async () => {
    app = await startTestApp();
    team = await app.newTeam('Stale plans');
  });
  afterAll(async () => app?.close());

  it('answers 503 database_unavailable with Retry-After while a connection re-prepares, never 500, then 200', async () => {
    const created = await team.api.post('/v1/products', { name: 'p' });
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.id as string;
    for (let i = 0; i < 12; i++) expect((await team.api.get(`/v1/products/${id}`)).status).toBe(200);
    await app.store.run((db) => sql`alter table products add column stale_plan_probe int`.execute(db));
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      const r = await team.api.get(`/v1/products/${id}`);
      statuses.push(r.status);
      if (r.status === 200) break;
      expect(r.status, r.text).toBe(503);
      expect(r.body.error.code).toBe('database_unavailable');
      expect(r.headers.get('retry-after')).toMatch(/^[0-9]+$/);
    }
    expect(statuses.at(-1)).toBe(200);
    // The embedded database is one connection: exactly one request met the stale plan.
    if (app.store.kind === 'pglite') expect(statuses).toEqual([503, 200]);
  });
});
