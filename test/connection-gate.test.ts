/**
 * The connection gate (src/db/connection-gate.ts): a transaction that records a provider's answer
 * (`store.transaction(fn, { outcome: true })`) takes the next free connection ahead of
 * transactions that start new work; within each line, first come, first served; a waiter on
 * PostgreSQL gives up after the pool's connection timeout with words that read as "database
 * unavailable". On the embedded database (its one connection) always, and on PostgreSQL with
 * TEST_DATABASE_URL (a pool of one, then of two). And the card funnel over HTTP records each
 * provider answer (the payment's, the upsell's) in an outcome transaction, and nothing else.
 */
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../src/db/database.ts';
import { isDatabaseUnavailable } from '../src/db/faults.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { runCardFunnel, seedApiFunnel } from './support/fixtures.ts';
import { startTestApp } from './support/harness.ts';

const URL = process.env.TEST_DATABASE_URL;

/** A transaction that holds its connection (`held` once it has it) until `open` is called. */
function holding(store: Store): { held: Promise<void>; open: () => void; done: Promise<unknown> } {
  let open!: () => void;
  let hold!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const held = new Promise<void>((resolve) => (hold = resolve));
  const done = store.transaction(async (trx) => {
    await sql`select 1`.execute(trx);
    hold();
    await gate;
  });
  return { held, open, done };
}

/** Waits until `n` transactions wait for a connection (each is queued a few microtasks after its call). */
async function waiting(store: Store, n: number): Promise<void> {
  for (let i = 0; i < 1_000 && store.waitingCount < n; i++) await new Promise((r) => setImmediate(r));
  expect(store.waitingCount).toBe(n);
}

async function order(store: Store, size: number): Promise<string[]> {
  const holders = Array.from({ length: size }, () => holding(store));
  await Promise.all(holders.map((h) => h.held));
  const ran: string[] = [];
  const tx = (name: string, outcome: boolean) =>
    store.transaction(
      async (trx) => {
        ran.push(name);
        await sql`select 1`.execute(trx);
      },
      { outcome },
    );
  // Queued in this order while every connection is held: two new ones, an outcome, a new one, an outcome.
  const all: Promise<unknown>[] = [];
  for (const [name, outcome] of [
    ['new-1', false],
    ['new-2', false],
    ['outcome-1', true],
    ['new-3', false],
    ['outcome-2', true],
  ] as const) {
    all.push(tx(name, outcome));
    await waiting(store, all.length);
  }
  for (const h of holders) h.open();
  await Promise.all([...all, ...holders.map((h) => h.done)]);
  expect(store.waitingCount).toBe(0);
  return ran;
}

describe('on the embedded database', () => {
  let store: Store;
  afterAll(() => store?.close());

  it('an outcome transaction takes the freed connection before new work that waited longer; each line in its order', async () => {
    store = await openStore({ pglite: new PGlite(), dataDir: '' });
    expect(await order(store, 1)).toEqual(['outcome-1', 'outcome-2', 'new-1', 'new-2', 'new-3']);
    // And the connection is usable by both lines afterwards.
    expect((await store.transaction((trx) => sql<{ one: number }>`select 1 as one`.execute(trx), { outcome: true })).rows[0]!.one).toBe(1);
  });
});

describe.skipIf(!URL)('on PostgreSQL (needs TEST_DATABASE_URL; skipped without it)', () => {
  const stores: Store[] = [];
  afterAll(() => Promise.all(stores.map((s) => s.close())));
  const open = async (poolMax: number, connectTimeoutMs?: number) => {
    const s = await openStore({ databaseUrl: URL, dataDir: '', poolMax, ...(connectTimeoutMs ? { connectTimeoutMs } : {}) });
    stores.push(s);
    return s;
  };

  it('a pool of one: outcomes first, then new work, each in its order', async () => {
    expect(await order(await open(1), 1)).toEqual(['outcome-1', 'outcome-2', 'new-1', 'new-2', 'new-3']);
  });

  it('a pool of two: never more than two connections, outcomes still first', async () => {
    const store = await open(2);
    expect(await order(store, 2)).toEqual(['outcome-1', 'outcome-2', 'new-1', 'new-2', 'new-3']);
    expect(store.pool.totalCount).toBeLessThanOrEqual(2);
    // pg-pool itself never queued one of them: the gate kept the checkouts within its size.
    expect(store.pool.waitingCount).toBe(0);
  });

  it('a waiter gives up after the connection timeout, as "database unavailable", and the connection serves the next one', async () => {
    const store = await open(1, 300);
    const held = holding(store);
    await held.held;
    const handedOut = { ...store.checkouts };
    const err = await store.transaction((trx) => sql`select 1`.execute(trx), { outcome: true }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(String(err)).toContain('timeout exceeded when trying to connect');
    expect(isDatabaseUnavailable(err)).toBe(true);
    expect(store.waitingCount).toBe(0);
    // A waiter that gave up was handed nothing.
    expect(store.checkouts).toEqual(handedOut);
    held.open();
    await held.done;
    expect((await store.run((db) => sql<{ one: number }>`select 1 as one`.execute(db))).rows[0]!.one).toBe(1);
  });
});

it("a card funnel over HTTP: the payment's and the upsell's answers are recorded ahead of the line, nothing else is", async () => {
  const sandbox = await startSandbox({ port: 0 });
  const app = await startTestApp({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
  try {
    const team = await app.newTeam('Gate');
    const funnel = await seedApiFunnel(team, sandbox.url, `gate_${process.pid}`);
    await runCardFunnel(team, funnel, 'gate-warm');
    const before = { ...app.store.checkouts };
    await runCardFunnel(team, funnel, 'gate');
    const after = app.store.checkouts;
    // Two provider answers (the card payment, the upsell), each recorded in one outcome transaction.
    expect(after.outcome - before.outcome).toBe(2);
    // The lead, both phase-1 transactions, the completion: new work.
    expect(after.new - before.new).toBeGreaterThanOrEqual(4);
    const metrics = await app.anonymous.get('/metrics');
    expect(metrics.text).toMatch(/checkstand_db_checkouts_total\{line="outcome"\} [1-9]/);
  } finally {
    await app.close();
    await sandbox.close();
  }
});
