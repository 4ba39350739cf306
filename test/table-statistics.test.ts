/**
 * Table statistics (src/db/maintenance.ts, issue 13). On a database whose tables were never
 * analyzed, PostgreSQL's generic plan of a by-key statement (`where team_id = $1 and id = $2`) may
 * walk a team's index instead of the primary key: every row of the team on each call, for as
 * long as the connection keeps the plan. The worker's `analyze-changed-tables` schedule analyzes
 * the tables that changed past autovacuum's threshold, which the embedded database otherwise
 * never does, and the plans then use the primary key. Runs embedded, and on PostgreSQL with
 * TEST_DATABASE_URL.
 */
import { Writable } from 'node:stream';
import pg from 'pg';
import pino from 'pino';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { analyzeChangedTables } from '../src/db/maintenance.ts';
import { SANDBOX_CARDS } from '../src/sandbox/cards.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { SCHEDULES, startWorker } from '../src/worker/worker.ts';
import { email } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

/** The funnel's by-key statements whose plans went astray on never-analyzed tables (their shape as the repos send them). */
const BY_KEY = {
  closeAttempt: { sql: `update "transactions" set "status" = $1 where "team_id" = $2 and "id" = $3 and "in_flight" = $4 returning *`, types: 'text, text, text, boolean', args: `'approved', 't', 'i', true` },
  savedCard: { sql: `select * from "payment_methods" where "team_id" = $1 and "id" = $2`, types: 'text, text', args: `'t', 'i'` },
};

describe('table statistics kept current', () => {
  let app: TestApp;
  let team: TestTeam;
  let sandbox: { url: string; close(): Promise<void> };
  beforeAll(async () => {
    sandbox = await startSandbox({ port: 0 });
    app = await startTestApp();
    team = await app.newTeam('Statistics');
    const created = async (path: string, body: Record<string, unknown>) => {
      const r = await team.api.post(path, body);
      expect(r.status, `${path}: ${r.text}`).toBe(201);
      return r.body.data.id as string;
    };
    const gw = await created('/v1/gateways', { name: 'gw', kind: 'nmi', base_url: sandbox.url, credentials: { security_key: `stats_${process.pid}` }, test_mode: true, is_active: true });
    const campaign = await created('/v1/campaigns', { name: 'c', currency: 'USD', gateway_id: gw });
    const product = await created('/v1/products', { name: 'p' });
    const offer = await created('/v1/offers', { campaign_id: campaign, product_id: product, name: 'o', price: 2500, shipping: 0, billing: 'one_time', fulfillment_type: 'digital' });
    // One real payment first: the server's connections prepare the funnel's statements while the tables are all but empty.
    const lead = await team.api.post('/checkout/leads', { campaign_id: campaign, customer: { email: email('stats') }, products: [{ offer_id: offer, quantity: 1 }] });
    expect(lead.status, lead.text).toBe(201);
    const paid = await team.api.post('/checkout/orders/payment', { order_number: lead.body.data.order_number, payment: { card_number: SANDBOX_CARDS.approve, card_exp: '12/39', card_cvv: '123' } });
    expect(paid.status, paid.text).toBe(200);
  });
  afterAll(async () => {
    await app?.close();
    await sandbox?.close();
  });

  /**
   * A session that prepared the by-key statements while the tables were all but empty, as the
   * server's connections did: its cached generic plans (the ones a connection keeps) are asked
   * which index they scan. Embedded, the one PGlite session every client shares (each EXPLAIN in
   * a transaction of its own, forcing the generic plan locally); on PostgreSQL, a connection of
   * its own.
   */
  async function planProbe() {
    const client =
      app.store.kind === 'postgres' ? new pg.Client({ connectionString: (app.store.pool.options as { connectionString: string }).connectionString }) : undefined;
    await client?.connect();
    type PlanRow = { 'QUERY PLAN'?: string };
    /** The statements in one transaction of the probe's session, with the generic plan forced there; the plan lines they answered. */
    const inSession = async (statements: string[]): Promise<string[]> => {
      const each = async (query: (text: string) => Promise<PlanRow[]>) => {
        const out: string[] = [];
        for (const text of ['set local plan_cache_mode = force_generic_plan', ...statements]) out.push(...(await query(text)).map((r) => r['QUERY PLAN'] ?? ''));
        return out;
      };
      if (!client) return app.store.transaction((trx) => each(async (text) => (await sql.raw<PlanRow>(text).execute(trx)).rows));
      await client.query('begin');
      try {
        return await each(async (text) => (await client.query<PlanRow>(text)).rows);
      } finally {
        await client.query('commit');
      }
    };
    await inSession(Object.entries(BY_KEY).map(([name, s]) => `prepare stats_${name} (${s.types}) as ${s.sql}`));
    const probe = {
      /** The index the cached generic plan scans (or the plan, when it scans none). */
      async index(name: keyof typeof BY_KEY): Promise<string> {
        const plan = (await inSession([`explain execute stats_${name} (${BY_KEY[name].args})`])).join('\n');
        return /Index Scan using (\w+)/.exec(plan)?.[1] ?? plan;
      },
      async close() {
        await inSession(Object.keys(BY_KEY).map((name) => `deallocate stats_${name}`));
        await client?.end();
      },
    };
    // Planned now, on the all but empty tables, and kept.
    for (const name of Object.keys(BY_KEY) as (keyof typeof BY_KEY)[]) await probe.index(name);
    return probe;
  }

  /** A team's history: rows written the way the funnel writes them, past autovacuum's threshold (50 + 10 % of an empty table). */
  const seedHistory = (rows: number) =>
    app.store.transaction(async (trx) => {
      // The team's one order, its one saved card: copies of them.
      await sql`insert into transactions (id, team_id, order_id, type, status, amount, currency)
        select 'txn_stats_' || g, team_id, id, 'sale', 'declined', 100, 'USD' from orders, generate_series(1, ${rows}) g where team_id = ${team.teamId}`.execute(trx);
      await sql`insert into payment_methods (id, team_id, customer_id, gateway_id, vault_ref, brand, bin, last4, exp, is_test)
        select 'pm_stats_' || g, team_id, customer_id, gateway_id, 'v' || g, brand, bin, last4, exp, is_test from payment_methods, generate_series(1, ${rows}) g
        where team_id = ${team.teamId}`.execute(trx);
    });

  /**
   * Waits until the statistics show the rows changed since the last ANALYZE: a session reports its
   * counts at most once a second (at the end of a statement; on PostgreSQL an idle one within 10 s).
   */
  const changesSeen = (table: string, atLeast: number) =>
    vi.waitFor(
      async () => {
        const r = await app.store.run((db) => sql<{ n: string }>`select n_mod_since_analyze as n from pg_stat_user_tables where relname = ${table} and schemaname = current_schema()`.execute(db));
        expect(Number(r.rows[0]?.n ?? 0)).toBeGreaterThanOrEqual(atLeast);
      },
      { timeout: 30_000, interval: 250 },
    );

  it('analyzes the tables that changed, once, and the by-key plans then use the primary key', async () => {
    const probe = await planProbe();
    try {
      const planned = { closeAttempt: await probe.index('closeAttempt'), savedCard: await probe.index('savedCard') };
      await seedHistory(2000);
      await changesSeen('transactions', 2000);
      await changesSeen('payment_methods', 2000);
      if (app.store.kind === 'pglite') {
        // The embedded database has no autovacuum: without the schedule, the plans made on the
        // empty tables stay, whatever the tables hold now.
        expect(await probe.index('closeAttempt')).toBe(planned.closeAttempt);
        expect(await probe.index('savedCard')).toBe(planned.savedCard);
      }
      const first = await analyzeChangedTables(app.store);
      expect(first.analyzed).toEqual(expect.arrayContaining(['payment_methods', 'transactions']));
      expect(first.analyzed).not.toContain('orders'); // one row: under the threshold
      expect(await probe.index('closeAttempt')).toBe('transactions_pkey');
      expect(await probe.index('savedCard')).toBe('payment_methods_pkey');
    } finally {
      await probe.close();
    }
    const analyzedAt = await app.store.run(async (db) =>
      (await sql<{ relname: string; n_mod_since_analyze: string }>`select relname, n_mod_since_analyze from pg_stat_user_tables where relname in ('transactions', 'payment_methods')`.execute(db)).rows,
    );
    expect(analyzedAt.map((r) => Number(r.n_mod_since_analyze))).toEqual([0, 0]);
    // Nothing changed since: nothing to do.
    expect((await analyzeChangedTables(app.store)).analyzed).not.toContain('transactions');
  });

  it('runs as a worker schedule', async () => {
    // Every transaction of the team changed since the last ANALYZE (2001 rows: past 50 + 10 % of 2001).
    await app.store.run((db) => sql`update transactions set response_text = 'seen' where team_id = ${team.teamId}`.execute(db));
    await changesSeen('transactions', 2001);
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _e, cb) => (lines.push(String(chunk)), cb()) });
    const worker = startWorker(app.ctx, pino({ level: 'info' }, sink), { schedules: SCHEDULES.filter((s) => s.name === 'analyze-changed-tables'), drainers: [], listen: false });
    try {
      await vi.waitFor(() => expect(lines.some((l) => l.includes('"schedule":"analyze-changed-tables"') && l.includes('"transactions"'))).toBe(true), { timeout: 60_000, interval: 50 });
    } finally {
      await worker.stop();
    }
  });
});
