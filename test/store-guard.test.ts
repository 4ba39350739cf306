/**
 * Store's guard (src/db/database.ts): inside a transaction, reaching for the root handle
 * (Store.run, a nested Store.transaction or Store.snapshot) is refused at once — on the embedded
 * database it would wait forever for the pool's only connection, which the transaction holds.
 * The guard is on under the tests (it costs every promise of the process its hook, so it is off
 * in production unless CHECKSTAND_TX_GUARD=1).
 */
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore, type Store } from '../src/db/database.ts';

let store: Store;
beforeAll(async () => {
  store = await openStore({ pglite: new PGlite(), dataDir: '' });
});
afterAll(async () => {
  await store?.close();
});

it('refuses Store.run, a nested transaction and a snapshot inside a transaction', async () => {
  await expect(store.transaction(() => store.run((db) => sql`select 1`.execute(db)))).rejects.toThrow('Store.run() inside a transaction');
  await expect(store.transaction(() => store.transaction(async () => 1))).rejects.toThrow('nested Store.transaction()');
  await expect(store.transaction(() => store.snapshot(async () => 1))).rejects.toThrow('Store.snapshot() inside a transaction');
  // After the transaction, the root handle is free again.
  expect((await store.run((db) => sql<{ one: number }>`select 1 as one`.execute(db))).rows[0]!.one).toBe(1);
});
