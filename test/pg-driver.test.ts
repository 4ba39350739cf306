/**
 * The PostgreSQL driver (src/db/pg-driver.ts): a transaction's BEGIN goes out with its first
 * statement, and deferWrite() sends a write with the next awaited statement or the COMMIT, in one
 * socket write, while every answer is still checked: a write that fails fails its transaction with
 * its own error and nothing of the transaction commits. Socket writes are counted on the pooled
 * connection's socket (each is one write system call). PostgreSQL only: the embedded database has
 * no socket (skipped without TEST_DATABASE_URL).
 */
import { CompiledQuery, type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deferWrite, openStore, readTogether, sendWithNext, type Store, type Tx } from '../src/db/database.ts';
import { mergeDeferred } from '../src/db/deferred-writes.ts';
import { countSocketWrites } from '../src/db/socket-writes.ts';
import { statementsSent } from './support/statements.ts';

const URL = process.env.TEST_DATABASE_URL;
const TABLE = `pg_driver_test_${process.pid}`;
const CHILD = `pg_driver_child_${process.pid}`;

describe.skipIf(!URL)('the PostgreSQL driver (needs TEST_DATABASE_URL; skipped without it)', () => {
  let store: Store;
  let writes = 0;

  beforeAll(async () => {
    store = await openStore({ databaseUrl: URL, dataDir: '', poolMax: 1 });
    store.pool.on('acquire', countSocketWrites(() => writes++));
    await store.run((db) => sql`create table ${sql.table(TABLE)} (id int primary key, v text)`.execute(db));
    await store.run((db) => sql`create table ${sql.table(CHILD)} (id int primary key, parent_id int not null references ${sql.table(TABLE)} (id), note text)`.execute(db));
  });
  afterAll(async () => {
    await store?.run((db) => sql`drop table if exists ${sql.table(CHILD)}`.execute(db)).catch(() => {});
    await store?.run((db) => sql`drop table if exists ${sql.table(TABLE)}`.execute(db)).catch(() => {});
    await store?.close();
  });

  const insert = (db: Parameters<Parameters<Store['run']>[0]>[0], id: number, v = 'x') => sql`insert into ${sql.table(TABLE)} (id, v) values (${id}, ${v})`;
  const ids = async () =>
    (await store.run((db) => sql<{ id: number }>`select id from ${sql.table(TABLE)} order by id`.execute(db))).rows.map((r) => r.id);
  const counted = async (fn: () => Promise<unknown>) => {
    await store.run((db) => sql`select 1`.execute(db)); // the pooled connection exists and is wrapped
    const before = writes;
    await fn();
    return writes - before;
  };

  it('writes BEGIN with the first statement: a transaction of one statement is two socket writes (BEGIN + statement, COMMIT)', async () => {
    const n = await counted(() => store.transaction((trx) => insert(trx, 1).execute(trx)));
    expect(n).toBe(2);
    expect(await ids()).toContain(1);
  });

  it('a transaction that sends no statement sends no BEGIN and no COMMIT', async () => {
    expect(await counted(() => store.transaction(async () => 42))).toBe(0);
  });

  it('deferred writes go out with the next awaited statement, and they run inside the transaction', async () => {
    let seen = 0;
    const n = await counted(() =>
      store.transaction(async (trx) => {
        await deferWrite(trx, insert(trx, 11));
        await deferWrite(trx, insert(trx, 12));
        seen = (await sql<{ n: number }>`select count(*)::int as n from ${sql.table(TABLE)} where id in (11, 12)`.execute(trx)).rows[0]!.n;
      }),
    );
    expect(seen).toBe(2);
    expect(n).toBe(2); // BEGIN + both inserts + the select; COMMIT
    expect(await ids()).toEqual(expect.arrayContaining([11, 12]));
  });

  it('a deferred write that fails fails the next statement with its own error, and nothing of the transaction commits', async () => {
    const failed = store.transaction(async (trx) => {
      await insert(trx, 21).execute(trx);
      await deferWrite(trx, insert(trx, 21, 'duplicate'));
      await insert(trx, 22).execute(trx);
    });
    await expect(failed).rejects.toMatchObject({ code: '23505' });
    expect(await ids()).not.toContain(21);
    expect(await ids()).not.toContain(22);
  });

  it('a deferred write that fails just before COMMIT fails the commit with its error; nothing commits', async () => {
    const failed = store.transaction(async (trx) => {
      await insert(trx, 31).execute(trx);
      await deferWrite(trx, insert(trx, 31, 'duplicate'));
    });
    await expect(failed).rejects.toMatchObject({ code: '23505' });
    expect(await ids()).not.toContain(31);
    // The connection is clean for the next transaction.
    await store.transaction((trx) => insert(trx, 32).execute(trx));
    expect(await ids()).toContain(32);
  });

  it("a deferred write's own failure is translated by its mapError, from the next statement or the COMMIT; no round trip of its own", async () => {
    const refused = new Error('refused by its guard');
    const mapError = (err: unknown) => ((err as { code?: string }).code === '23505' ? refused : err);
    await store.transaction((trx) => insert(trx, 401).execute(trx));
    // Failing before the COMMIT: the COMMIT fails with the translated error, nothing commits.
    await expect(
      store.transaction(async (trx) => {
        await insert(trx, 402).execute(trx);
        await deferWrite(trx, insert(trx, 401, 'duplicate'), { mapError });
      }),
    ).rejects.toBe(refused);
    // Failing before the next statement: that statement fails with the translated error.
    await expect(
      store.transaction(async (trx) => {
        await deferWrite(trx, insert(trx, 401, 'duplicate'), { mapError });
        await insert(trx, 403).execute(trx);
      }),
    ).rejects.toBe(refused);
    // Another statement's failure is not translated.
    await expect(
      store.transaction(async (trx) => {
        await deferWrite(trx, insert(trx, 404), { mapError });
        await insert(trx, 401, 'duplicate').execute(trx);
      }),
    ).rejects.toMatchObject({ code: '23505' });
    // Succeeding: it commits with the rest.
    const n = await counted(() => store.transaction((trx) => deferWrite(trx, insert(trx, 405), { mapError })));
    expect(n).toBe(1); // BEGIN + the write + COMMIT
    expect(await ids()).toEqual(expect.arrayContaining([401, 405]));
    expect((await ids()).filter((id) => id === 402 || id === 403 || id === 404)).toEqual([]);
  });

  it('a failing statement after deferred writes rolls them back', async () => {
    const failed = store.transaction(async (trx) => {
      await deferWrite(trx, insert(trx, 41));
      await sql`select 1 / 0`.execute(trx);
    });
    await expect(failed).rejects.toMatchObject({ code: '22012' });
    expect(await ids()).not.toContain(41);
  });

  it('readTogether sends independent reads in one socket write (with the BEGIN) and answers each in order', async () => {
    await store.transaction((trx) => insert(trx, 61, 'sixty-one').execute(trx));
    let answers: unknown[] = [];
    const n = await counted(() =>
      store.transaction(async (trx) => {
        answers = await readTogether(trx, [
          sql<{ v: string }>`select v from ${sql.table(TABLE)} where id = ${61}`,
          sql<{ n: number }>`select count(*)::int as n from ${sql.table(TABLE)}`,
          sql<{ v: string }>`select v from ${sql.table(TABLE)} where id = ${-1}`,
        ] as const);
      }),
    );
    expect(n).toBe(2); // BEGIN + the three reads; COMMIT
    expect(answers[0]).toEqual([{ v: 'sixty-one' }]);
    expect((answers[1] as { n: number }[])[0]!.n).toBeGreaterThan(0);
    expect(answers[2]).toEqual([]);
  });

  it('readTogether: a read that fails fails with its own error, and the transaction rolls back', async () => {
    const failed = store.transaction(async (trx) => {
      await insert(trx, 71).execute(trx);
      await readTogether(trx, [sql`select 1 / 0 as x`, sql`select 1 as y`] as const);
    });
    await expect(failed).rejects.toMatchObject({ code: '22012' });
    expect(await ids()).not.toContain(71);
  });

  it('sendWithNext writes a statement that goes out with the next one and answers when it does, in its place in the order', async () => {
    await store.transaction((trx) => insert(trx, 81, 'eighty-one').execute(trx));
    let early: { v: string }[] = [];
    let counts: number[] = [];
    const n = await counted(() =>
      store.transaction(async (trx) => {
        const answer = sendWithNext(trx, sql<{ v: string }>`select v from ${sql.table(TABLE)} where id = ${81}`);
        const before = sendWithNext(trx, sql<{ n: number }>`select count(*)::int as n from ${sql.table(TABLE)} where id = ${82}`);
        await insert(trx, 82).execute(trx);
        early = await answer;
        counts = [(await before)[0]!.n, (await sql<{ n: number }>`select count(*)::int as n from ${sql.table(TABLE)} where id = ${82}`.execute(trx)).rows[0]!.n];
      }),
    );
    expect(early).toEqual([{ v: 'eighty-one' }]);
    // The count written before the insert ran before it; the one after sees it.
    expect(counts).toEqual([0, 1]);
    expect(n).toBe(3); // BEGIN + both early reads + the insert; the last select; COMMIT
  });

  it('sendWithNext awaited at once, with nothing sent after it, still answers (on its own)', async () => {
    let rows: { one: number }[] = [];
    const n = await counted(() =>
      store.transaction(async (trx) => {
        rows = await sendWithNext(trx, sql<{ one: number }>`select 1 as one`);
      }),
    );
    expect(rows).toEqual([{ one: 1 }]);
    expect(n).toBe(2); // BEGIN + the read; COMMIT
  });

  it('sendWithNext: a statement that fails rejects its own promise and fails the next statement with its error; nothing commits', async () => {
    let own: unknown;
    const failed = store.transaction(async (trx) => {
      const early = sendWithNext(trx, sql`select 1 / 0 as x`);
      early.catch((err: unknown) => (own = err));
      await insert(trx, 91).execute(trx);
    });
    await expect(failed).rejects.toMatchObject({ code: '22012' });
    expect(own).toMatchObject({ code: '22012' });
    expect(await ids()).not.toContain(91);
    // A failure its caller never awaited does not escape as an unhandled rejection, and the connection is clean.
    await expect(store.transaction(async (trx) => {
      void sendWithNext(trx, sql`select 1 / 0 as x`);
      await insert(trx, 92).execute(trx);
    })).rejects.toMatchObject({ code: '22012' });
    await store.transaction((trx) => insert(trx, 93).execute(trx));
    expect(await ids()).toContain(93);
    expect(await ids()).not.toContain(92);
  });

  it('sendWithNext just before the callback returns goes out with the COMMIT, inside the transaction; its rows can be awaited after it', async () => {
    let later: Promise<{ id: number }[]> | undefined;
    const n = await counted(() =>
      store.transaction(async (trx) => {
        void sendWithNext(trx, insert(trx, 100));
        later = sendWithNext(trx, sql<{ id: number }>`insert into ${sql.table(TABLE)} (id, v) values (${101}, 'x') returning id`);
      }),
    );
    expect(n).toBe(1); // BEGIN, the inserts and the COMMIT in one socket write
    expect(await later).toEqual([{ id: 101 }]);
    expect(await ids()).toEqual(expect.arrayContaining([100, 101]));
  });

  it('sendWithNext just before the callback throws is rolled back with the transaction, never run after it', async () => {
    for (let i = 0; i < 20; i++) {
      const failed = store.transaction(async (trx) => {
        // Several in a row: Kysely hands the later ones to the connection only after the earlier ones.
        for (let k = 0; k < 3; k++) void sendWithNext(trx, insert(trx, 1000 + i * 10 + k));
        throw new Error('changed my mind');
      });
      await expect(failed).rejects.toThrow('changed my mind');
    }
    expect((await ids()).filter((id) => id >= 1000 && id < 1200)).toEqual([]);
  });

  it('a statement that fails before it reaches the server (node-postgres\'s own error) is not followed by a COMMIT: nothing commits', async () => {
    // A parameter node-postgres cannot serialize: it fails the statement in the client, before its Bind is written.
    const unserializable = {
      toPostgres() {
        throw new Error('could not serialize a parameter');
      },
    };
    let id = 200;
    for (const send of [(trx: Tx) => deferWrite(trx, sql`select ${unserializable}`), (trx: Tx) => void sendWithNext(trx, sql`select ${unserializable}`)]) {
      const mine = ++id;
      const failed = store.transaction(async (trx) => {
        await insert(trx, mine).execute(trx);
        await send(trx);
      });
      await expect(failed).rejects.toThrow('could not serialize a parameter');
      expect(await ids()).not.toContain(mine);
    }
  });

  // Query-builder inserts (the kind the repos defer); sql`` templates are never merged.
  const parentInsert = (trx: Tx, id: number, v = 'p') => (trx as unknown as Kysely<any>).insertInto(TABLE).values({ id, v });
  const childInsert = (trx: Tx, id: number, parentId: number, note = "it's $1") => (trx as unknown as Kysely<any>).insertInto(CHILD).values({ id, parent_id: parentId, note });

  it('deferred inserts into different tables go as one statement; a foreign key to a row of the same statement holds; the rows land as written', async () => {
    const texts = await statementsSent(() =>
      store.transaction(async (trx) => {
        await deferWrite(trx, parentInsert(trx, 301, 'three hundred one'));
        await deferWrite(trx, childInsert(trx, 1, 301));
      }),
    );
    // The two inserts as one statement, the commit (a Sync).
    expect(texts).toHaveLength(2);
    expect(texts[0]).toMatch(/^with "deferred_0" as \(insert into .+\) insert into /);
    const child = await store.run((db) => sql<{ parent_id: number; note: string; v: string }>`select c.parent_id, c.note, p.v from ${sql.table(CHILD)} c join ${sql.table(TABLE)} p on p.id = c.parent_id where c.id = 1`.execute(db));
    // Each insert kept its own values: the placeholders were renumbered, the literal text was not touched.
    expect(child.rows).toEqual([{ parent_id: 301, note: "it's $1", v: 'three hundred one' }]);
  });

  it('a merged insert that fails fails the transaction with its own error, and nothing of it commits', async () => {
    await store.transaction((trx) => childInsert(trx, 2, 301).execute());
    const failed = store.transaction(async (trx) => {
      await deferWrite(trx, parentInsert(trx, 302));
      await deferWrite(trx, childInsert(trx, 2, 302)); // the child's id is taken
      await sql`select 1`.execute(trx);
    });
    await expect(failed).rejects.toMatchObject({ code: '23505' });
    expect(await ids()).not.toContain(302);
    // A child naming a parent that nowhere exists fails on its foreign key, at the end of the statement.
    const orphan = store.transaction(async (trx) => {
      await deferWrite(trx, parentInsert(trx, 303));
      await deferWrite(trx, childInsert(trx, 3, 999));
    });
    await expect(orphan).rejects.toMatchObject({ code: '23503' });
    expect(await ids()).not.toContain(303);
  });

  it('deferred inserts into one table stay separate statements; a statement awaited after them sees their rows', async () => {
    let seen = 0;
    const texts = await statementsSent(() =>
      store.transaction(async (trx) => {
        await deferWrite(trx, parentInsert(trx, 311));
        await deferWrite(trx, parentInsert(trx, 312));
        await deferWrite(trx, childInsert(trx, 11, 311));
        seen = (await sql<{ n: number }>`select count(*)::int as n from ${sql.table(CHILD)} where parent_id in (311, 312)`.execute(trx)).rows[0]!.n;
      }),
    );
    // The first insert, the second merged with the child's, the count, the commit (a Sync).
    expect(texts).toHaveLength(4);
    expect(seen).toBe(1);
    expect(await ids()).toEqual(expect.arrayContaining([311, 312]));
  });

  const parentUpdate = (trx: Tx, id: number, v: string) => (trx as unknown as Kysely<any>).updateTable(TABLE).set({ v }).where('id', '=', id);
  /** A parent row and a child naming it, each committed on its own. */
  const seedPair = async (parentId: number, v: string, childId: number, note: string) => {
    await store.transaction((trx) => parentInsert(trx, parentId, v).execute());
    await store.transaction((trx) => childInsert(trx, childId, parentId, note).execute());
  };
  /** A parent row's `v`, as committed. */
  const parentV = async (id: number) => (await store.run((db) => sql<{ v: string }>`select v from ${sql.table(TABLE)} where id = ${id}`.execute(db))).rows;

  it('a deferred UPDATE goes in the same statement as deferred inserts into other tables; one into the same table, or one that reads another table, goes on its own', async () => {
    await store.transaction((trx) => parentInsert(trx, 331, 'before').execute());
    const texts = await statementsSent(() =>
      store.transaction(async (trx) => {
        await deferWrite(trx, parentUpdate(trx, 331, 'after'));
        await deferWrite(trx, childInsert(trx, 31, 331));
      }),
    );
    // The update and the insert as one statement, the commit (a Sync).
    expect(texts).toHaveLength(2);
    expect(texts[0]).toMatch(/^with "deferred_0" as \(update .+\) insert into /);
    const both = await store.run((db) => sql<{ v: string; note: string }>`select p.v, c.note from ${sql.table(CHILD)} c join ${sql.table(TABLE)} p on p.id = c.parent_id where c.id = 31`.execute(db));
    expect(both.rows).toEqual([{ v: 'after', note: "it's $1" }]);

    // An update of a row a held insert adds (one table): the insert goes first, on its own, so the update finds the row.
    const sameTable = await statementsSent(() =>
      store.transaction(async (trx) => {
        await deferWrite(trx, parentInsert(trx, 332, 'new'));
        await deferWrite(trx, parentUpdate(trx, 332, 'updated'));
      }),
    );
    expect(sameTable).toHaveLength(3);
    const row = await store.run((db) => sql<{ v: string }>`select v from ${sql.table(TABLE)} where id = 332`.execute(db));
    expect(row.rows).toEqual([{ v: 'updated' }]);

    // An update whose WHERE reads another table is never merged: in one statement it would not see that table's held rows.
    const reading = (trx: Tx) =>
      (trx as unknown as Kysely<any>)
        .updateTable(TABLE)
        .set({ v: 'has a child' })
        .where('id', 'in', (qb: any) => qb.selectFrom(CHILD).select('parent_id').where('id', '=', 33));
    const subquery = await statementsSent(() =>
      store.transaction(async (trx) => {
        await deferWrite(trx, childInsert(trx, 33, 331));
        await deferWrite(trx, reading(trx));
      }),
    );
    expect(subquery).toHaveLength(3);
    const updated = await store.run((db) => sql<{ v: string }>`select v from ${sql.table(TABLE)} where id = 331`.execute(db));
    expect(updated.rows).toEqual([{ v: 'has a child' }]);
  });

  it('the statement after deferred writes carries them as its own CTEs when it names none of their tables: its rows are its own, the writes land', async () => {
    await store.transaction((trx) => parentInsert(trx, 341, 'before').execute());
    let inserted: unknown[] = [];
    let viaNext: unknown[] = [];
    const texts = await statementsSent(() =>
      store.transaction(async (trx) => {
        await deferWrite(trx, parentUpdate(trx, 341, 'after'));
        inserted = await (trx as unknown as Kysely<any>).insertInto(CHILD).values({ id: 41, parent_id: 341, note: 'n41' }).returning(['id', 'note']).execute();
        await deferWrite(trx, parentUpdate(trx, 341, 'after again'));
        viaNext = await sendWithNext(trx, (trx as unknown as Kysely<any>).selectFrom(CHILD).select('note').where('id', '=', 41));
      }),
    );
    // The update in the insert's statement, the second update in the read's, the commit (a Sync).
    expect(texts).toHaveLength(3);
    expect(texts[0]).toMatch(/^with "deferred_0" as \(update .+\) insert into .+ returning "id", "note"$/);
    expect(texts[1]).toMatch(/^with "deferred_0" as \(update .+\) select "note" from /);
    expect(inserted).toEqual([{ id: 41, note: 'n41' }]);
    expect(viaNext).toEqual([{ note: 'n41' }]);
    expect(await parentV(341)).toEqual([{ v: 'after again' }]);
  });

  it('a statement with CTEs of its own keeps them after the deferred writes it carries', async () => {
    await seedPair(342, 'before', 42, 'old');
    let moved: unknown[] = [];
    const texts = await statementsSent(() =>
      store.transaction(async (trx) => {
        await deferWrite(trx, parentUpdate(trx, 342, 'after'));
        moved = await (trx as unknown as Kysely<any>)
          .with('changed', (w: any) => w.updateTable(CHILD).set({ note: 'new' }).where('id', '=', 42).returning('id'))
          .selectFrom('changed')
          .select('id')
          .execute();
      }),
    );
    expect(texts).toHaveLength(2);
    expect(texts[0]).toMatch(/^with "deferred_0" as \(update .+\), "changed" as \(update .+\) select "id" from "changed"$/);
    expect(moved).toEqual([{ id: 42 }]);
    const both = await store.run((db) => sql<{ v: string; note: string }>`select p.v, c.note from ${sql.table(CHILD)} c join ${sql.table(TABLE)} p on p.id = c.parent_id where c.id = 42`.execute(db));
    expect(both.rows).toEqual([{ v: 'after', note: 'new' }]);
  });

  it('a statement that names a table the deferred writes change (or raw SQL that may) goes after them, on its own, and sees what they wrote', async () => {
    await seedPair(343, 'before', 43, 'c43');
    const reads: unknown[] = [];
    const texts = await statementsSent(() =>
      store.transaction(async (trx) => {
        const db = trx as unknown as Kysely<any>;
        await deferWrite(trx, parentUpdate(trx, 343, 'first'));
        reads.push(await db.selectFrom(TABLE).select('v').where('id', '=', 343).execute());
        await deferWrite(trx, parentUpdate(trx, 343, 'second'));
        reads.push(await db.selectFrom(CHILD).innerJoin(TABLE, `${TABLE}.id`, `${CHILD}.parent_id`).select(`${TABLE}.v`).where(`${CHILD}.id`, '=', 43).execute());
        await deferWrite(trx, parentUpdate(trx, 343, 'third'));
        // A table named only in raw text: no node of the query says which.
        reads.push(await db.selectFrom(CHILD).select(sql<string>`(select v from ${sql.raw(TABLE)} where id = 343)`.as('v')).where('id', '=', 43).execute());
      }),
    );
    // each update and the read after it as two statements, the commit (a Sync).
    expect(texts).toHaveLength(7);
    expect(reads).toEqual([[{ v: 'first' }], [{ v: 'second' }], [{ v: 'third' }]]);
  });

  it('a deferred write that fails in the statement carrying it fails the transaction with its own error; nothing commits', async () => {
    await store.transaction((trx) => parentInsert(trx, 344).execute());
    const failed = store.transaction(async (trx) => {
      await deferWrite(trx, parentInsert(trx, 344)); // the id is taken
      await (trx as unknown as Kysely<any>).insertInto(CHILD).values({ id: 44, parent_id: 344, note: 'never' }).execute();
    });
    await expect(failed).rejects.toMatchObject({ code: '23505' });
    const child = await store.run((db) => sql<{ n: number }>`select count(*)::int as n from ${sql.table(CHILD)} where id = 44`.execute(db));
    expect(child.rows).toEqual([{ n: 0 }]);
  });

  it('deferred writes after a sendWithNext statement ride in it when it names none of their tables; a foreign key from them to its row holds', async () => {
    let rows: unknown[] = [];
    const texts = await statementsSent(() =>
      store.transaction(async (trx) => {
        const parent = sendWithNext(trx, parentInsert(trx, 351, 'p351').returning('id'));
        await deferWrite(trx, childInsert(trx, 51, 351));
        rows = await parent;
      }),
    );
    // The parent's insert carrying the child's, the commit (a Sync).
    expect(texts).toHaveLength(2);
    expect(texts[0]).toMatch(new RegExp(`^with "deferred_0" as \\(insert into "${CHILD}" .+\\) insert into "${TABLE}" .+ returning "id"$`));
    expect(rows).toEqual([{ id: 351 }]);
    const child = await store.run((db) => sql<{ parent_id: number }>`select parent_id from ${sql.table(CHILD)} where id = 51`.execute(db));
    expect(child.rows).toEqual([{ parent_id: 351 }]);
  });

  it('a deferred write into a table the held sendWithNext statement names goes after it, on its own, and sees its row', async () => {
    const texts = await statementsSent(() =>
      store.transaction(async (trx) => {
        const inserted = sendWithNext(trx, parentInsert(trx, 352, 'new').returning('id'));
        await deferWrite(trx, parentUpdate(trx, 352, 'updated'));
        await inserted;
      }),
    );
    expect(texts).toHaveLength(3);
    expect(await parentV(352)).toEqual([{ v: 'updated' }]);
  });

  it('deferred writes that cannot share its statement go each in its place around the held sendWithNext statement', async () => {
    const texts = await statementsSent(() =>
      store.transaction(async (trx) => {
        const parent = sendWithNext(trx, parentInsert(trx, 353).returning('id'));
        // A comment in its text: never renumbered, so never merged (mergeDeferred answers null).
        await deferWrite(trx, (trx as unknown as Kysely<any>).insertInto(CHILD).values({ id: 53, parent_id: 353, note: sql`'n' /* kept */` }));
        await parent;
      }),
    );
    // The parent, then the child naming it (the other order would break its foreign key), the commit (a Sync).
    expect(texts).toHaveLength(3);
    expect(texts[0]).toMatch(new RegExp(`^insert into "${TABLE}"`));
    const child = await store.run((db) => sql<{ note: string }>`select note from ${sql.table(CHILD)} where id = 53`.execute(db));
    expect(child.rows).toEqual([{ note: 'n' }]);
  });

  it('a held sendWithNext statement that fails with the deferred writes it carries fails the transaction with its own error; nothing commits', async () => {
    await store.transaction((trx) => parentInsert(trx, 354).execute());
    let own: unknown;
    const failed = store.transaction(async (trx) => {
      const dup = sendWithNext(trx, parentInsert(trx, 354).returning('id')); // the id is taken
      dup.catch((err: unknown) => (own = err));
      await deferWrite(trx, childInsert(trx, 54, 354));
    });
    await expect(failed).rejects.toMatchObject({ code: '23505' });
    expect(own).toMatchObject({ code: '23505' });
    const child = await store.run((db) => sql<{ n: number }>`select count(*)::int as n from ${sql.table(CHILD)} where id = 54`.execute(db));
    expect(child.rows).toEqual([{ n: 0 }]);
  });

  it('a transaction that rolls back never sends the deferred inserts it still held', async () => {
    const texts = await statementsSent(() =>
      store
        .transaction(async (trx) => {
          await deferWrite(trx, parentInsert(trx, 321));
          throw new Error('changed my mind');
        })
        .catch(() => {}),
    );
    expect(texts).toEqual([]);
    expect(await ids()).not.toContain(321);
  });

  it('outside a transaction sendWithNext is an ordinary awaited statement', async () => {
    expect(await store.run((db) => sendWithNext(db, sql<{ two: number }>`select 2 as two`))).toEqual([{ two: 2 }]);
  });

  it('outside a transaction a deferred write is an ordinary awaited statement', async () => {
    await store.run((db) => deferWrite(db, insert(db, 51)));
    expect(await ids()).toContain(51);
    await expect(store.run((db) => deferWrite(db, insert(db, 51)))).rejects.toMatchObject({ code: '23505' });
  });
});

describe('mergeDeferred', () => {
  const insertNode = { kind: 'InsertQueryNode' } as unknown as CompiledQuery['query'];
  it('renumbers each insert\'s placeholders after the ones before it, never inside a quoted literal or identifier', () => {
    const a = CompiledQuery.raw('insert into "a" ("x", "y$1") values ($1, \'$2 isn\'\'t a placeholder\')', [1]);
    const b = CompiledQuery.raw('insert into "b" ("z", "w") values ($1, now() + $2::int * interval \'1 millisecond\')', [2, 3]);
    const merged = mergeDeferred([{ ...a, query: insertNode }, { ...b, query: insertNode }]);
    expect(merged!.sql).toBe('with "deferred_0" as (insert into "a" ("x", "y$1") values ($1, \'$2 isn\'\'t a placeholder\')) insert into "b" ("z", "w") values ($2, now() + $3::int * interval \'1 millisecond\')');
    expect(merged!.parameters).toEqual([1, 2, 3]);
  });

  it('answers the same texts with the same statement each time (remembered), with each call\'s own values, and other texts or orders with their own', () => {
    const a = { ...CompiledQuery.raw('insert into "a" ("x") values ($1)', [1]), query: insertNode };
    const b = { ...CompiledQuery.raw('insert into "b" ("y", "z") values ($1, $2)', [2, 3]), query: insertNode };
    const into = { ...CompiledQuery.raw('select * from "c" where "id" = $1', [4]), query: { kind: 'SelectQueryNode' } as unknown as CompiledQuery['query'] };
    const first = mergeDeferred([a, b], into)!;
    expect(first.sql).toBe('with "deferred_0" as (insert into "a" ("x") values ($1)), "deferred_1" as (insert into "b" ("y", "z") values ($2, $3)) select * from "c" where "id" = $4');
    // The same texts with other values: the same statement, these values.
    const again = mergeDeferred([{ ...a, parameters: [10] }, { ...b, parameters: [20, 30] }], { ...into, parameters: [40] })!;
    expect(again.sql).toBe(first.sql);
    expect(again.parameters).toEqual([10, 20, 30, 40]);
    // Without the statement carrying them, or in the other order: other statements, numbered their own way.
    expect(mergeDeferred([a, b])!.sql).toBe('with "deferred_0" as (insert into "a" ("x") values ($1)) insert into "b" ("y", "z") values ($2, $3)');
    expect(mergeDeferred([b, a])!.sql).toBe('with "deferred_0" as (insert into "b" ("y", "z") values ($1, $2)) insert into "a" ("x") values ($3)');
    // A text that cannot be renumbered is refused every time, not only the first.
    const commented = { ...CompiledQuery.raw('insert into "d" ("x") values ($1) -- note', [5]), query: insertNode };
    expect(mergeDeferred([commented, a])).toBeNull();
    expect(mergeDeferred([commented, a])).toBeNull();
  });
});
