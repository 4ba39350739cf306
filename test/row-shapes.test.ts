/**
 * A named statement's result columns are described once per connection (src/db/row-shapes.ts):
 * its later executions send no Describe, and their rows still come back whole and typed; a write
 * without RETURNING (NoData) likewise; a table whose columns change under a prepared `select *`
 * is refused once (PostgreSQL's own "cached plan must not change result type") and the statement
 * then comes back with the new column, never parsed with the old description. Embedded, and on
 * PostgreSQL with TEST_DATABASE_URL. Describe messages are counted on the client sockets.
 */
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../src/db/database.ts';
import { PgliteSocket } from '../src/db/pglite-socket.ts';
import { describeOnce } from '../src/db/row-shapes.ts';
import { isStalePlan } from '../src/db/statement-names.ts';
import { frontendMessages } from './support/frontend-messages.ts';

const url = process.env.TEST_DATABASE_URL;
const table = `row_shapes_${process.pid}`;

/** Frontend messages written by node-postgres clients, by type byte ('D' = Describe). */
const messages = frontendMessages();
beforeAll(() => messages.install());
afterAll(() => messages.restore());
const describes = () => messages.count('D');

const databases: [string, string | null][] = [['embedded', null], ...(url ? [['PostgreSQL', url] as [string, string]] : [])];

describe.each(databases)('named statements on the %s database', (_name, databaseUrl) => {
  let store: Store;
  let pglite: PGlite | undefined;
  beforeAll(async () => {
    pglite = databaseUrl ? undefined : new PGlite();
    store = databaseUrl ? await openStore({ databaseUrl, dataDir: '.vitest-tmp', poolMax: 1 }) : await openStore({ dataDir: '.vitest-tmp', pglite });
    await store.run((db) => sql`drop table if exists ${sql.id(table)}`.execute(db));
    await store.run((db) =>
      sql`create table ${sql.id(table)} (id int primary key, at timestamptz not null, n bigint not null, amount numeric not null, data jsonb not null, ok boolean not null, note text)`.execute(db),
    );
    await store.run((db) =>
      sql`insert into ${sql.id(table)} values (1, '2026-11-29T10:00:00Z', 42, 12.5, '{"a":[1,2]}', true, null), (2, '2026-11-30T10:00:00Z', 7, 3, '{}', false, 'x')`.execute(db),
    );
  });
  afterAll(async () => {
    await store?.run((db) => sql`drop table if exists ${sql.id(table)}`.execute(db));
    await store?.close();
  });
  afterEach(() => {
    messages.counts.clear();
  });

  const selectOne = (id: number) => store.run((db) => sql<Record<string, unknown>>`select * from ${sql.id(table)} where id = ${id}`.execute(db));

  it('describes a select once: later executions send no Describe and parse their rows with the kept description', async () => {
    const expected = { id: 1, at: new Date('2026-11-29T10:00:00Z'), n: 42, amount: 12.5, data: { a: [1, 2] }, ok: true, note: null };
    messages.counts.clear();
    // 1st: unnamed (a text is named from its second sighting), described; 2nd: prepared, described; then none.
    for (let i = 0; i < 5; i++) {
      const r = await selectOne(1);
      expect(r.rows).toEqual([expected]);
      expect(r.rows[0]!.at).toBeInstanceOf(Date);
    }
    expect(describes()).toBe(2);
    // Another row, no row: the same kept description.
    expect((await selectOne(2)).rows).toEqual([{ id: 2, at: new Date('2026-11-30T10:00:00Z'), n: 7, amount: 3, data: {}, ok: false, note: 'x' }]);
    expect((await selectOne(3)).rows).toEqual([]);
    expect(describes()).toBe(2);
  });

  it('describes a write without RETURNING once (NoData), and counts its rows each time', async () => {
    messages.counts.clear();
    for (let i = 0; i < 5; i++) {
      const r = await store.run((db) => sql`update ${sql.id(table)} set note = ${`v${i}`} where id = ${2}`.execute(db));
      expect(r.numAffectedRows).toBe(1n);
      expect(r.rows).toEqual([]);
    }
    expect(describes()).toBe(2);
    expect((await selectOne(2)).rows[0]!.note).toBe('v4');
  });

  it('a column added under a prepared select * is refused once, then described again and returned', async () => {
    expect((await selectOne(1)).rows[0]).not.toHaveProperty('extra');
    await store.run((db) => sql`alter table ${sql.id(table)} add column extra text not null default 'e'`.execute(db));
    const err = await selectOne(1).catch((e: unknown) => e);
    expect(isStalePlan(err)).toBe(true);
    messages.counts.clear();
    for (let i = 0; i < 3; i++) expect((await selectOne(1)).rows[0]).toMatchObject({ id: 1, n: 42, extra: 'e' });
    // Prepared again under the connection's new name prefix, described once more, then not.
    expect(describes()).toBe(1);
  });

  it('a row that does not match its kept description fails the statement as a stale plan, never misread', async () => {
    // A name prepared again with other columns behind the client's back (as a pooler could after a
    // migration): SQL-level PREPARE shares the protocol's statement names.
    const client = databaseUrl
      ? new pg.Client({ connectionString: databaseUrl })
      : new pg.Client({ stream: () => new PgliteSocket(pglite!), host: 'localhost', port: 5432, user: 'postgres', database: 'postgres', password: 'embedded' });
    await client.connect();
    try {
      expect(describeOnce(client)).toBe(true);
      const named = { name: `rs_${process.pid}`, text: `select id, note from ${table} where id = $1`, values: [2] };
      for (let i = 0; i < 2; i++) expect((await client.query(named)).rows).toEqual([{ id: 2, note: 'v4' }]);
      await client.query(`deallocate ${named.name}`);
      await client.query(`prepare ${named.name}(int) as select id from ${table} where id = $1`);
      const err = await client.query(named).catch((e: unknown) => e);
      expect(isStalePlan(err)).toBe(true);
      // The connection is usable after it.
      expect((await client.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await client.end();
    }
  });
});
