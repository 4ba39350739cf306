/**
 * `npm run bench:rebills`: one worker's rebill queue billing N due card subscriptions.
 *
 * - The runtime (openRuntime, logger at `warn`) on this process's main thread: PostgreSQL when
 *   DATABASE_URL is set, else embedded PGlite in a temporary data dir. No HTTP server: the queue is
 *   `ctx.services.checkout.rebill.runDue()`, as the worker's `rebill-due-subscriptions` schedule runs it.
 * - The provider sandbox (the NMI-compatible card gateway) in its own worker thread
 *   (sandbox-thread.ts); the demo team is seeded with seedDemo(ctx, { sandboxUrl }), so every rebill
 *   is an HTTP call to it.
 * - Fixtures: N cards vaulted in the sandbox (`customer_vault=add_customer` without a transaction,
 *   so the ledger holds nothing but the rebills), then customers, saved cards, completed orders with
 *   their line and monthly subscriptions due an hour ago, each table in one INSERT … SELECT.
 * - Measured: the one runDue call, from its start to its end. Then the database and the sandbox's
 *   ledger are checked: N approved rebill orders, N approved NMI vault sales, none twice.
 *
 * See bench/README.md ("Rebill bench").
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import { sql } from 'kysely';
import pg from 'pg';
import pino from 'pino';
import { loadConfig } from '../src/app/config.ts';
import { createLogger } from '../src/app/logger.ts';
import { openRuntime, type Runtime } from '../src/app/runtime.ts';
import { seedDemo } from '../src/app/seed.ts';
import { CreateOffer } from '../src/modules/catalog/schemas.ts';
import type { RebillTally } from '../src/modules/checkout/rebill.ts';
import { UsageError, dropBenchDatabase, gitInfo, machineCpu, num, readFlags, recreateDatabase, redactUrl, resultStamp, runMain, truthy } from './common.ts';
import { statCpuMs } from './server-processes.ts';
import { nextMessage, startTsWorker } from './threads.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const RESULTS_DIR = path.join(HERE, 'results');
const PRICE = 2900;
const CARD = { number: '4111111111111111', exp: '1230' };

// ---------------------------------------------------------------------------------- options

interface Options {
  subscriptions: number;
  batchSize: number;
  progressS: number;
  slowCard: boolean;
  slowMs: number;
  vaultConcurrency: number;
  freshDb: boolean;
}

const USAGE = `Usage: npm run bench:rebills [-- options]

  --subscriptions <n>   due card subscriptions to bill             (BENCH_REBILL_SUBSCRIPTIONS, default 10000)
  --batch <n>           REBILL_BATCH_SIZE: subscriptions claimed per batch   (REBILL_BATCH_SIZE, default 50)
  --progress <s>        seconds between progress lines             (BENCH_PROGRESS_S, default 3)
  --slow-card           vault the sandbox's slow approving card: every charge waits --slow-ms
                        at the gateway, like a real one            (BENCH_REBILL_SLOW_CARD=1)
  --slow-ms <ms>        the slow card's delay                      (BENCH_REBILL_SLOW_MS, default 100)
  --fresh-db            with DATABASE_URL: drop and create that database first and drop it after
                        (only for a database whose name contains "bench")   (BENCH_FRESH_DB=1)

One worker's rebill queue (RebillUseCase.runDue, in process) billing every subscription, through
the sandbox's NMI gateway over HTTP (in a thread of this process).
Database: PostgreSQL when DATABASE_URL is set, else embedded PGlite in a temporary data dir.
Report: bench/results/<timestamp>-rebills-<pglite|postgres>.json`;

const int = (name: string, raw: string | undefined, fallback: number, min: number): number =>
  num(name, raw, fallback, (n) => Number.isInteger(n) && n >= min, `an integer ≥ ${min}`);

function parseOptions(argv: string[], env: NodeJS.ProcessEnv): Options | 'help' {
  const flags = readFlags(argv, ['subscriptions', 'batch', 'progress', 'slow-ms'], ['slow-card', 'fresh-db']);
  if (flags === 'help') return 'help';
  return {
    subscriptions: int('--subscriptions', flags.subscriptions ?? env.BENCH_REBILL_SUBSCRIPTIONS, 10_000, 1),
    batchSize: int('--batch', flags.batch ?? env.REBILL_BATCH_SIZE, 50, 1),
    progressS: int('--progress', flags.progress ?? env.BENCH_PROGRESS_S, 3, 1),
    slowCard: truthy(flags['slow-card'] ?? env.BENCH_REBILL_SLOW_CARD),
    slowMs: int('--slow-ms', flags['slow-ms'] ?? env.BENCH_REBILL_SLOW_MS, 100, 0),
    vaultConcurrency: 32,
    freshDb: truthy(flags['fresh-db'] ?? env.BENCH_FRESH_DB),
  };
}

// ---------------------------------------------------------------------------------- helpers

const log = (line: string) => process.stdout.write(`[bench:rebills] ${line}\n`);

/** CPU time (user + system, ms) of this process's main thread, from /proc (Linux; 10 ms ticks). Null elsewhere. */
function mainThreadCpuMs(): number | null {
  return statCpuMs(`/proc/self/task/${process.pid}/stat`);
}


const round = (v: number, digits = 1) => Math.round(v * 10 ** digits) / 10 ** digits;

/** Vaults `n` cards in the sandbox account (NMI `customer_vault=add_customer`, no transaction): their customer_vault_ids. */
async function vaultCards(sandboxUrl: string, securityKey: string, n: number, pan: string, concurrency: number): Promise<string[]> {
  const ids: string[] = new Array(n);
  let next = 0;
  const one = async () => {
    for (let i = next++; i < n; i = next++) {
      const body = new URLSearchParams({ security_key: securityKey, customer_vault: 'add_customer', ccnumber: pan, ccexp: CARD.exp, first_name: 'Bench', last_name: `Customer ${i + 1}` });
      const res = await fetch(`${sandboxUrl}/api/transact.php`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
      const answer = new URLSearchParams(await res.text());
      const id = answer.get('customer_vault_id');
      if (res.status !== 200 || answer.get('response') !== '1' || !id) throw new Error(`vaulting card ${i + 1}: ${res.status} ${answer.toString().slice(0, 200)}`);
      ids[i] = id;
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, one));
  return ids;
}

interface NmiEntry {
  transactionid: string | null;
  type: string;
  status: string;
  amount_minor: number | null;
  orderid: string | null;
  customer_vault_id: string | null;
}

interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

// ---------------------------------------------------------------------------------- main

async function main(): Promise<number> {
  let opts: Options | 'help';
  try {
    opts = parseOptions(process.argv.slice(2), process.env);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`bench:rebills: ${err.message}\n\n${USAGE}\n`);
      return 2;
    }
    throw err;
  }
  if (opts === 'help') {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  const o = opts;
  const startedAt = new Date();
  const databaseUrl = process.env.DATABASE_URL || undefined;
  const kind: 'pglite' | 'postgres' = databaseUrl ? 'postgres' : 'pglite';
  const loadAverageBefore = os.loadavg().map((v) => round(v, 2));

  let tmpDir: string | undefined;
  let rt: Runtime | undefined;
  let sandboxThread: Worker | undefined;
  let statsClient: pg.Client | undefined;

  try {
    if (databaseUrl && o.freshDb) {
      log(`creating a fresh database at ${redactUrl(databaseUrl)}`);
      await recreateDatabase(databaseUrl, false);
    }
    tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkstand-bench-rebills-'));
    sandboxThread = startTsWorker('./sandbox-thread.ts', { slowMs: o.slowMs });
    const sandboxUrl = (await nextMessage<{ type: 'ready'; url: string }>(sandboxThread, 'ready')).url;

    const base = loadConfig({ ...process.env, REBILL_BATCH_SIZE: String(o.batchSize) });
    const config = { ...base, dataDir: tmpDir, logLevel: 'warn', secretKey: base.secretKey ?? randomBytes(32).toString('hex') };
    const logger = createLogger('warn');
    log(`opening the runtime on ${kind}${databaseUrl ? ` (${redactUrl(databaseUrl)})` : ` (data dir ${tmpDir})`}; sandbox ${sandboxUrl}`);
    rt = await openRuntime({ config, log: logger });
    const ctx = rt.ctx;
    const store = ctx.store;
    const seed = await seedDemo(ctx, { sandboxUrl, teamName: 'Rebill bench' });
    if (!seed.gateway_id) throw new Error('seedDemo created no gateway');
    const gatewayRow = await store.run((db) => ctx.services.gateways.findGateway(db, seed.team_id, seed.gateway_id!));
    const securityKey = gatewayRow ? ctx.services.gateways.account(gatewayRow).credentials.security_key : undefined;
    if (!securityKey) throw new Error('the demo gateway has no security_key');
    const offer = await ctx.services.catalog.createOffer(
      seed.team_id,
      CreateOffer.parse({
        campaign_id: seed.campaign_id,
        product_id: seed.products.club ?? Object.values(seed.products)[0],
        name: 'Rebill bench, monthly',
        price: PRICE,
        recurring_price: PRICE,
        shipping: 0,
        billing: 'recurring',
        interval_unit: 'month',
        interval_count: 1,
        fulfillment_type: 'digital',
      }),
    );

    // ------------------------------------------------------------------ fixtures
    const n = o.subscriptions;
    const pan = o.slowCard ? '4000000000009995' : CARD.number;
    let t = performance.now();
    const vaultIds = await vaultCards(sandboxUrl, securityKey, n, pan, o.vaultConcurrency);
    log(`vaulted ${n} cards in the sandbox in ${((performance.now() - t) / 1000).toFixed(1)} s${o.slowCard ? ` (the slow card: ${o.slowMs} ms per charge)` : ''}`);
    t = performance.now();
    const team = seed.team_id;
    const pad = (col: string) => sql.raw(`lpad(${col}::text, 7, '0')`);
    await store.transaction(async (trx) => {
      await sql`INSERT INTO customers (id, team_id, email, first_name, last_name)
        SELECT 'cus_rbench' || ${pad('i')}, ${team}, 'rebill-bench-' || i || '@example.com', 'Bench', 'Customer ' || i FROM generate_series(1, ${n}::int) AS i`.execute(trx);
      await sql`INSERT INTO payment_methods (id, team_id, customer_id, gateway_id, vault_ref, original_ref, brand, bin, last4, exp, is_test)
        SELECT 'pm_rbench' || ${pad('v.i')}, ${team}, 'cus_rbench' || ${pad('v.i')}, ${seed.gateway_id}, v.ref, NULL, 'visa', ${pan.slice(0, 6)}, ${pan.slice(-4)}, '12/30', false
          FROM unnest(${vaultIds}::text[]) WITH ORDINALITY AS v(ref, i)`.execute(trx);
      // Bought a month and an hour ago: cycle 1 is due.
      await sql`INSERT INTO orders (id, team_id, campaign_id, customer_id, status, payment_status, currency, subtotal, total, is_test, payment_method_id, completed_at, created_at, updated_at)
        SELECT 'ord_rbench' || ${pad('i')}, ${team}, ${seed.campaign_id}, 'cus_rbench' || ${pad('i')}, 'completed', 'completed', 'USD', ${PRICE}::int, ${PRICE}::int, true,
               'pm_rbench' || ${pad('i')}, now() - interval '1 month 1 hour', now() - interval '1 month 1 hour', now() - interval '1 month 1 hour'
          FROM generate_series(1, ${n}::int) AS i`.execute(trx);
      await sql`INSERT INTO order_lines (id, team_id, order_id, offer_id, product_id, upsell_id, name, quantity, unit_price, shipping, line_total, billing_type, fulfillment_type)
        SELECT 'line_rbench' || ${pad('i')}, ${team}, 'ord_rbench' || ${pad('i')}, ${offer.id}, ${offer.product_id}, NULL, ${offer.name}, 1, ${PRICE}::int, 0, ${PRICE}::int, 'recurring', 'digital'
          FROM generate_series(1, ${n}::int) AS i`.execute(trx);
      await sql`INSERT INTO subscriptions (id, team_id, order_id, customer_id, offer_id, status, interval_unit, interval_count, recurring_price, currency, next_billing_at,
                                           membership_ref, payment_method_id, quantity, billing_anchor, anchor_cycle)
        SELECT 'sub_rbench' || ${pad('i')}, ${team}, 'ord_rbench' || ${pad('i')}, 'cus_rbench' || ${pad('i')}, ${offer.id}, 'active', 'month', 1, ${PRICE}::int, 'USD',
               now() - interval '1 hour', NULL, 'pm_rbench' || ${pad('i')}, 1, now() - interval '1 month 1 hour', 0
          FROM generate_series(1, ${n}::int) AS i`.execute(trx);
    });
    await store.run((db) => sql`ANALYZE`.execute(db));
    log(`inserted ${n} customers, saved cards, orders and due subscriptions in ${((performance.now() - t) / 1000).toFixed(1)} s`);

    // ------------------------------------------------------------------ counters
    let statements = 0;
    let commits = 0;
    const counted = new WeakSet<object>();
    const countOn = (client: object) => {
      if (counted.has(client)) return;
      counted.add(client);
      const c = client as unknown as { query: (...args: unknown[]) => unknown };
      const query = c.query.bind(client);
      c.query = (...args: unknown[]) => {
        statements++;
        const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | undefined)?.text;
        if (text && /^\s*commit\b/i.test(text)) commits++;
        return query(...args);
      };
    };
    store.pool.on('acquire', (client) => countOn(client));
    const xactCommits = async (): Promise<number | null> => {
      if (!statsClient) return null;
      await statsClient.query('SELECT pg_stat_clear_snapshot()');
      const r = await statsClient.query<{ c: string }>('SELECT xact_commit::text AS c FROM pg_stat_database WHERE datname = current_database()');
      return Number(r.rows[0]!.c);
    };
    let serverVersion: string | null = null;
    if (databaseUrl) {
      statsClient = new pg.Client({ connectionString: databaseUrl });
      await statsClient.connect();
      serverVersion = (await statsClient.query<{ server_version: string }>('SHOW server_version')).rows[0]?.server_version ?? null;
    }

    // Progress from the queue's own log lines (one per batch), not from extra queries.
    let latest: Partial<RebillTally> & { batch?: number } = {};
    const progressLog = pino({ level: 'info' }, { write: (line: string) => {
      try {
        const j = JSON.parse(line) as Record<string, unknown>;
        if (j.msg === 'rebill queue progress') latest = j as typeof latest;
        else if (typeof j.level === 'number' && j.level >= 40) process.stderr.write(line);
      } catch {
        /* not JSON */
      }
    } });
    log(`billing ${n} due subscriptions: one runDue (batches of ${o.batchSize}), progress every ${o.progressS} s`);

    const xactBefore = await xactCommits();
    const cpuBefore = process.cpuUsage();
    const mainBefore = mainThreadCpuMs();
    const machineBefore = machineCpu();
    const statementsBefore = statements;
    const commitsBefore = commits;
    const t0 = performance.now();
    let lastAt = t0;
    let lastCharged = 0;
    const ticker = setInterval(() => {
      const now = performance.now();
      const charged = latest.charged ?? 0;
      log(
        `  ${((now - t0) / 1000).toFixed(1).padStart(6)} s  charged ${String(charged).padStart(6)}/${n}  ${(((charged - lastCharged) * 1000) / (now - lastAt)).toFixed(0).padStart(5)}/s  ` +
          `batches ${latest.batch ?? 0}  declined ${latest.declined ?? 0}  unknown ${latest.unknown ?? 0}  skipped ${latest.skipped ?? 0}  failed ${latest.failed ?? 0}  ` +
          `SQL statements so far ${statements - statementsBefore}`,
      );
      lastAt = now;
      lastCharged = charged;
    }, o.progressS * 1000);
    let tally: RebillTally;
    try {
      tally = await ctx.services.checkout.rebill.runDue(progressLog);
    } finally {
      clearInterval(ticker);
    }
    const wallMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpuBefore);
    const mainAfter = mainThreadCpuMs();
    const machineAfter = machineCpu();
    const runStatements = statements - statementsBefore;
    const runCommits = commits - commitsBefore;
    log(`runDue returned after ${(wallMs / 1000).toFixed(1)} s: ${JSON.stringify(tally)}`);

    // ------------------------------------------------------------------ correctness
    const ledgerRes = await fetch(`${sandboxUrl}/sandbox/nmi/ledger?security_key=${encodeURIComponent(securityKey)}`);
    if (ledgerRes.status !== 200) throw new Error(`GET /sandbox/nmi/ledger answered ${ledgerRes.status}`);
    const nmi = ((await ledgerRes.json()) as { transactions: NmiEntry[] }).transactions;
    const q = async <T>(text: string): Promise<T[]> => (await store.run((db) => sql<T>`${sql.raw(text)}`.execute(db))).rows;
    const [subs] = await q<{ total: number; cycle1: number; active: number; next_ok: number }>(
      `SELECT count(*)::int AS total, count(*) FILTER (WHERE s.cycle = 1)::int AS cycle1, count(*) FILTER (WHERE s.status = 'active')::int AS active,
              count(*) FILTER (WHERE s.next_billing_at = (date_trunc('day', (s.billing_anchor AT TIME ZONE t.time_zone) + make_interval(months => 2 * s.interval_count)) + make_interval(hours => ${config.rebill.hour})) AT TIME ZONE t.time_zone)::int AS next_ok
         FROM subscriptions s JOIN teams t ON t.id = s.team_id WHERE s.team_id = '${team}'`,
    );
    const [orders] = await q<{ rebill_orders: number; completed: number; dup_cycles: number }>(
      `SELECT count(*)::int AS rebill_orders, count(*) FILTER (WHERE status = 'completed' AND payment_status = 'completed' AND rebill_cycle = 1 AND total = ${PRICE})::int AS completed,
              (SELECT count(*)::int FROM (SELECT 1 FROM orders WHERE team_id = '${team}' AND rebill_cycle IS NOT NULL GROUP BY subscription_id, rebill_cycle HAVING count(*) > 1) d) AS dup_cycles
         FROM orders WHERE team_id = '${team}' AND rebill_cycle IS NOT NULL`,
    );
    const sales = await q<{ id: string; provider_ref: string | null; amount: number; subscription_id: string; status: string; in_flight: boolean }>(
      `SELECT t.id, t.provider_ref, t.amount::int AS amount, o.subscription_id, t.status, t.in_flight
         FROM transactions t JOIN orders o ON o.id = t.order_id WHERE t.team_id = '${team}' AND t.step = 'rebill'`,
    );
    const approvedSales = sales.filter((s) => s.status === 'approved');
    const inFlight = sales.filter((s) => s.in_flight || s.status === 'pending').length;
    const saleById = new Map(approvedSales.map((s) => [s.id, s]));
    const nmiVaultSales = nmi.filter((e) => e.type === 'sale' && e.status === 'approved' && e.customer_vault_id);
    const nmiByRef = new Map(nmiVaultSales.map((e) => [e.transactionid, e]));
    const perSub = new Map<string, number>();
    let unrecorded = 0;
    for (const e of nmiVaultSales) {
      const s = e.orderid ? saleById.get(e.orderid) : undefined;
      if (!s || s.provider_ref !== e.transactionid || s.amount !== e.amount_minor) {
        unrecorded++;
        continue;
      }
      perSub.set(s.subscription_id, (perSub.get(s.subscription_id) ?? 0) + 1);
    }
    const phantom = approvedSales.filter((s) => !s.provider_ref || nmiByRef.get(s.provider_ref)?.orderid !== s.id).length;
    const chargedTwice = [...perSub.values()].filter((c) => c > 1).length;
    const otherNmi = nmi.length - nmiVaultSales.length;
    const checks: Check[] = [
      { name: 'tally', ok: tally.charged === n && tally.due === n, detail: `runDue: due ${tally.due}, charged ${tally.charged} of ${n}` },
      { name: 'rebill orders', ok: orders!.rebill_orders === n && orders!.completed === n && orders!.dup_cycles === 0, detail: `${orders!.rebill_orders} rebill orders, ${orders!.completed} completed at cycle 1 for ${PRICE}, ${orders!.dup_cycles} (subscription, cycle) with more than one` },
      { name: 'approved sales', ok: approvedSales.length === n && inFlight === 0, detail: `${approvedSales.length} approved rebill sale transactions, ${inFlight} in flight or pending, ${sales.length} attempts in all` },
      { name: 'NMI vault sales', ok: nmiVaultSales.length === n && perSub.size === n && chargedTwice === 0, detail: `${nmiVaultSales.length} approved NMI vault sales, ${perSub.size} subscriptions charged, ${chargedTwice} charged more than once, ${otherNmi} other ledger entries` },
      { name: 'both ways', ok: unrecorded === 0 && phantom === 0, detail: `${unrecorded} NMI sales without their approved transaction, ${phantom} approved transactions without their NMI sale` },
      { name: 'subscriptions', ok: subs!.cycle1 === n && subs!.active === n && subs!.next_ok === n, detail: `${subs!.cycle1} at cycle 1, ${subs!.active} active, ${subs!.next_ok} with next_billing_at one month on (cycle 2) of ${subs!.total}` },
    ];

    // ------------------------------------------------------------------ numbers
    // The pool's connections end with the runtime, and a backend flushes its counters as it exits.
    await rt.close();
    rt = undefined;
    let xactAfter: number | null = null;
    if (statsClient) {
      await new Promise((r) => setTimeout(r, 500));
      xactAfter = await xactCommits();
    }
    const charged = tally.charged;
    const per = (v: number) => (charged > 0 ? round(v / charged, 2) : null);
    const processCpuMs = (cpu.user + cpu.system) / 1000;
    const mainCpuMs = mainBefore !== null && mainAfter !== null ? mainAfter - mainBefore : null;
    // The stats client's own snapshot queries and the checks above commit too; they are a handful against thousands.
    const xact = xactBefore !== null && xactAfter !== null ? xactAfter - xactBefore : null;
    const failed = checks.filter((c) => !c.ok);
    const result = {
      kind: 'checkstand-bench-rebills',
      version: 1,
      started_at: startedAt.toISOString(),
      finished_at: new Date().toISOString(),
      passed: failed.length === 0,
      machine: {
        node: process.version,
        cpus: os.cpus().length,
        cpu_model: os.cpus()[0]?.model.trim() ?? 'unknown',
        load_average_before: loadAverageBefore,
      },
      git: gitInfo(),
      database: { kind, server_version: serverVersion, url: databaseUrl ? redactUrl(databaseUrl) : null, pool_max: kind === 'pglite' ? 1 : config.dbPoolMax },
      parameters: { ...o, card: `${pan.slice(0, 4)}…${pan.slice(-4)}` },
      results: {
        tally,
        wall_s: round(wallMs / 1000, 2),
        rebills_per_s: round((charged * 1000) / wallMs),
        ms_per_rebill: per(wallMs),
        cpu_ms_per_rebill: { main_thread: mainCpuMs === null ? null : per(mainCpuMs), process: per(processCpuMs) },
        main_thread_cpu_cores: mainCpuMs === null ? null : round(mainCpuMs / wallMs, 2),
        machine_cpu_cores: round((machineAfter.busy - machineBefore.busy) / wallMs, 2),
        sql_statements: runStatements,
        sql_statements_per_rebill: per(runStatements),
        commits_sent: runCommits,
        commits_sent_per_rebill: per(runCommits),
        xact_commit: xact,
        xact_commit_per_rebill: xact === null ? null : per(xact),
      },
      checks,
    };
    fs.mkdirSync(RESULTS_DIR, { recursive: true });
    const file = path.join(RESULTS_DIR, `${resultStamp(startedAt)}-rebills-${kind}.json`);
    fs.writeFileSync(file, JSON.stringify(result, null, 2) + '\n');

    const r = result.results;
    const bar = '─'.repeat(100);
    const lines = [
      bar,
      `Checkstand rebill bench · ${kind}${serverVersion ? ` ${serverVersion}` : ''} · ${n} due card subscriptions · one runDue, batches of ${o.batchSize} · card ${result.parameters.card}${o.slowCard ? ` (${o.slowMs} ms at the gateway)` : ''}`,
      `node ${process.version} · ${result.machine.cpus}× ${result.machine.cpu_model} · load ${loadAverageBefore[0]} before · git ${result.git.commit ?? '?'}${result.git.dirty ? ' (dirty)' : ''}`,
      ...((loadAverageBefore[0] ?? 0) > result.machine.cpus * 0.5 ? [`note: the machine was already busy (1-min load ${loadAverageBefore[0]} on ${result.machine.cpus} cores): rates lower and noisier than on an idle machine`] : []),
      bar,
      `rebills/s: ${r.rebills_per_s}   (${charged} charged in ${r.wall_s} s, ${r.ms_per_rebill} ms each, one worker, REBILL_CONCURRENCY at once)`,
      `CPU per rebill: main thread ${r.cpu_ms_per_rebill.main_thread ?? '?'} ms (the engine: app, driver${kind === 'pglite' ? ', PGlite' : ''}), process ${r.cpu_ms_per_rebill.process} ms (+ the sandbox thread)` +
        `   main thread ${r.main_thread_cpu_cores ?? '?'} cores, machine ${r.machine_cpu_cores} of ${result.machine.cpus} cores`,
      `SQL per rebill: ${r.sql_statements_per_rebill} statements sent (BEGIN/COMMIT included), ${r.commits_sent_per_rebill} COMMITs sent` +
        (xact === null ? '' : `; pg_stat_database xact_commit ${r.xact_commit_per_rebill} per rebill (${xact} in all)`),
      `tally: ${JSON.stringify(tally)}`,
      bar,
      ...checks.map((c) => `${c.ok ? 'OK      ' : 'MISMATCH'}  ${c.name}: ${c.detail}`),
      `result: ${result.passed ? 'OK (correct run)' : `FAIL: ${failed.map((c) => c.name).join(', ')}`}    report: ${path.relative(process.cwd(), file)}`,
      bar,
    ];
    process.stdout.write(lines.join('\n') + '\n');
    return result.passed ? 0 : 1;
  } finally {
    await statsClient?.end().catch(() => {});
    try {
      await rt?.close();
    } catch (err) {
      log(`closing the database failed: ${(err as Error).message}`);
    }
    if (sandboxThread) {
      try {
        const closed = nextMessage(sandboxThread, 'closed', 5_000);
        sandboxThread.postMessage({ type: 'close' });
        await closed;
      } catch {
        // gone already
      }
      await sandboxThread.terminate();
    }
    if (tmpDir) fs.rmSync(tmpDir, { recursive: true, force: true });
    if (databaseUrl && o.freshDb) await dropBenchDatabase(databaseUrl, log);
  }
}

runMain('bench:rebills', main);
