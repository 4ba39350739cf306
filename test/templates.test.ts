/**
 * Query templates (src/db/templates.ts, issue 13): a hot statement is built and compiled once per
 * shape, later calls only bind their values; its rows are the ordinary build's, on the embedded
 * database and on PostgreSQL (with TEST_DATABASE_URL). A value that is an expression is built the
 * ordinary way; a build that computes with a value, or branches on one, is refused.
 */
import { PGlite } from '@electric-sql/pglite';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../src/db/database.ts';
import { allRows, template } from '../src/db/templates.ts';

const TABLE = `template_test_${process.pid}`;

const stores: [string, () => Promise<Store>][] = [['the embedded database', () => openStore({ dataDir: '', pglite: new PGlite() })]];
if (process.env.TEST_DATABASE_URL) {
  const url = process.env.TEST_DATABASE_URL;
  stores.push(['PostgreSQL', () => openStore({ databaseUrl: url, dataDir: '', poolMax: 2 })]);
}

type Db = Kysely<any>;
interface Item {
  id: number;
  team: string;
  v: string | null;
  n: number | null;
  data: unknown;
}

describe.each(stores)('query templates on %s', (_name, open) => {
  let store: Store;
  beforeAll(async () => {
    store = await open();
    await store.run((db) => sql`create table ${sql.table(TABLE)} (id int primary key, team text not null, v text, n int, data jsonb)`.execute(db));
  });
  afterAll(async () => {
    await store?.run((db) => sql`drop table if exists ${sql.table(TABLE)}`.execute(db)).catch(() => {});
    await store?.close();
  });

  it('builds once per shape and answers each call with its own values', async () => {
    let builds = 0;
    const insert = template(['rows'], (db: Db, rows: Partial<Item>[]) => {
      builds++;
      return db.insertInto(TABLE).values(rows).returningAll();
    });
    const byTeam = template(['value', 'list'], (db: Db, team: string, ids: readonly number[]) => {
      builds++;
      return db.selectFrom(TABLE).selectAll().where('team', '=', team).where('id', 'in', ids).orderBy('id');
    });
    await store.transaction(async (trx) => {
      await allRows(trx, insert(trx, [{ id: 1, team: 'a', v: 'one', data: { k: [1, 2] } }]));
      await allRows(trx, insert(trx, [{ id: 2, team: 'a', v: 'two', data: null }]));
      // Another shape: two rows, and a row with a column the others lack.
      await allRows(trx, insert(trx, [{ id: 3, team: 'b', n: 3 }, { id: 4, team: 'b', v: 'four', n: undefined }]));
    });
    // Kysely builds a query per call; the template only per shape: the first, then the two-row
    // insert; plus, under the tests, each call once more the ordinary way (the check against it).
    expect(builds).toBe(2 + 3);
    const a = await store.run((db) => allRows(db, byTeam(db, 'a', [1, 2, 3])));
    expect(a.map((r) => [r.id, r.v, r.data])).toEqual([
      [1, 'one', { k: [1, 2] }],
      [2, 'two', null],
    ]);
    const b = await store.run((db) => allRows(db, byTeam(db, 'b', [3, 4, 5])));
    expect(b.map((r) => [r.id, r.v, r.n])).toEqual([
      [3, null, 3],
      [4, 'four', null],
    ]);
    expect(await store.run((db) => allRows(db, byTeam(db, 'b', [4])))).toHaveLength(1);
  });

  it('updates by a row of the columns given, leaving out the undefined ones', async () => {
    const update = template(['row', 'value', 'value'], (db: Db, set: Partial<Item>, team: string, id: number) =>
      db.updateTable(TABLE).set(set).where('team', '=', team).where('id', '=', id).returningAll(),
    );
    const [first] = await store.run((db) => allRows(db, update(db, { v: 'uno', n: undefined }, 'a', 1)));
    expect(first).toMatchObject({ id: 1, v: 'uno', data: { k: [1, 2] } });
    const [second] = await store.run((db) => allRows(db, update(db, { v: 'dos', n: 2 }, 'a', 2)));
    expect(second).toMatchObject({ id: 2, v: 'dos', n: 2 });
    expect(await store.run((db) => allRows(db, update(db, { v: 'x' }, 'b', 1)))).toEqual([]); // another team's key
  });

  it('builds a call whose value is an expression the ordinary way', async () => {
    const update = template(['row', 'value'], (db: Db, set: Record<string, unknown>, id: number) => db.updateTable(TABLE).set(set).where('id', '=', id).returning(['id', 'n']));
    const [row] = await store.run((db) => allRows(db, update(db, { n: sql`coalesce(n, 0) + 10` }, 1)));
    expect(row).toEqual({ id: 1, n: 10 });
    const [again] = await store.run((db) => allRows(db, update(db, { n: 7 }, 1)));
    expect(again).toEqual({ id: 1, n: 7 });
  });
});

describe('a template refuses a build that does more than place its values', () => {
  it('a value computed with (it reaches no parameter) is refused at the first call', async () => {
    const store = await openStore({ dataDir: '', pglite: new PGlite() });
    try {
      const bad = template(['value'], (db: Db, id: number) => db.selectFrom('pg_class').select('oid').where('relpages', '=', id + 1));
      await expect(store.run(async (db) => bad(db, 1))).rejects.toThrow(/reach no parameter/);
    } finally {
      await store.close();
    }
  });

  it('a build that branches on a value compiles differently from the ordinary build: refused under the tests', async () => {
    const store = await openStore({ dataDir: '', pglite: new PGlite() });
    try {
      const branching = template(['value', 'value'], (db: Db, name: string, limit: number | null) => {
        const q = db.selectFrom('pg_class').select('oid').where('relname', '=', name);
        return limit === null ? q : q.limit(limit);
      });
      // The first call builds the template with placeholders (never null): it has a LIMIT; a call with null has none.
      await expect(store.run(async (db) => branching(db, 'pg_class', null))).rejects.toThrow(/compiled differently/);
    } finally {
      await store.close();
    }
  });
});
