/**
 * `npm run bench`: the funnel under concurrent load, over real HTTP, against the real server.
 *
 * The server (openRuntime + buildServer, logger at `warn`) runs on this process's main thread
 * on a free loopback port: PostgreSQL when DATABASE_URL is set, else embedded PGlite in a new
 * temporary data dir that is removed afterwards. A demo team, campaign and offers are seeded
 * (seedDemo). The load driver (driver.ts) runs in a worker thread. See bench/README.md.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../src/app/config.ts';
import { createLogger } from '../src/app/logger.ts';
import { openRuntime, type Runtime } from '../src/app/runtime.ts';
import { seedDemo } from '../src/app/seed.ts';
import { buildServer } from '../src/app/server.ts';
import type { Http } from '../src/app/http.ts';
import { benchCardExp, type DriverInput, type DriverMessage, ENDPOINTS, type LatencySummary, summarize, total } from './stats.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const RESULTS_DIR = path.join(HERE, 'results');

// ---------------------------------------------------------------------------------- options

interface Options {
  durationS: number;
  concurrency: number;
  warmupS: number;
  maxErrorRate: number;
  progressS: number;
  requestTimeoutS: number;
  idempotencyKeys: boolean;
  freshDb: boolean;
}

const USAGE = `Usage: npm run bench [-- options]

  --duration <s>        measured seconds                    (BENCH_DURATION_S, default 15)
  --concurrency <n>     concurrent funnel flows             (BENCH_CONCURRENCY, default 16)
  --warmup <s>          unmeasured warm-up seconds          (BENCH_WARMUP_S, default 2)
  --max-error-rate <f>  fail above this share of errors     (BENCH_MAX_ERROR_RATE, default 0.05)
  --progress <s>        seconds between progress lines      (BENCH_PROGRESS_S, default 3)
  --timeout <s>         per-request timeout                 (BENCH_REQUEST_TIMEOUT_S, default 30)
  --idempotency-keys    send Idempotency-Key on both POSTs  (BENCH_IDEMPOTENCY_KEYS=1)
  --fresh-db            with DATABASE_URL: drop and create that database first and drop it after
                        (only for a database whose name contains "bench")   (BENCH_FRESH_DB=1)

Database: PostgreSQL when DATABASE_URL is set, else embedded PGlite in a temporary data dir.
Report: bench/results/<timestamp>-<pglite|postgres>.json`;

class UsageError extends Error {}

function num(name: string, raw: string | undefined, fallback: number, check: (n: number) => boolean, what: string): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || !check(n)) throw new UsageError(`${name} must be ${what}, got "${raw}"`);
  return n;
}

const truthy = (v: string | undefined) => v !== undefined && /^(1|true|yes|on)$/i.test(v);

export function parseOptions(argv: string[], env: NodeJS.ProcessEnv): Options | 'help' {
  const flags: Record<string, string> = {};
  const BOOLEAN = new Set(['idempotency-keys', 'fresh-db']);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-h') return 'help';
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!m) throw new UsageError(`unexpected argument "${arg}"`);
    const name = m[1]!;
    if (BOOLEAN.has(name)) {
      flags[name] = m[2] ?? '1';
      continue;
    }
    const value = m[2] ?? argv[++i];
    if (value === undefined) throw new UsageError(`--${name} needs a value`);
    flags[name] = value;
  }
  const known = new Set(['duration', 'concurrency', 'warmup', 'max-error-rate', 'progress', 'timeout', ...BOOLEAN]);
  for (const k of Object.keys(flags)) if (!known.has(k)) throw new UsageError(`unknown option --${k}`);

  const positive = (n: number) => n > 0;
  return {
    durationS: num('duration', flags.duration ?? env.BENCH_DURATION_S, 15, positive, 'a positive number of seconds'),
    concurrency: num('concurrency', flags.concurrency ?? env.BENCH_CONCURRENCY, 16, (n) => Number.isInteger(n) && n >= 1 && n <= 1000, 'an integer from 1 to 1000'),
    warmupS: num('warmup', flags.warmup ?? env.BENCH_WARMUP_S, 2, (n) => n >= 0, 'zero or more seconds'),
    maxErrorRate: num('max-error-rate', flags['max-error-rate'] ?? env.BENCH_MAX_ERROR_RATE, 0.05, (n) => n >= 0 && n <= 1, 'between 0 and 1'),
    progressS: num('progress', flags.progress ?? env.BENCH_PROGRESS_S, 3, positive, 'a positive number of seconds'),
    requestTimeoutS: num('timeout', flags.timeout ?? env.BENCH_REQUEST_TIMEOUT_S, 30, positive, 'a positive number of seconds'),
    idempotencyKeys: truthy(flags['idempotency-keys'] ?? env.BENCH_IDEMPOTENCY_KEYS),
    freshDb: truthy(flags['fresh-db'] ?? env.BENCH_FRESH_DB),
  };
}

// ---------------------------------------------------------------------------------- helpers

const log = (line: string) => process.stdout.write(`[bench] ${line}\n`);

function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable DATABASE_URL)';
  }
}

function gitInfo(): { commit: string | null; dirty: boolean | null } {
  try {
    const opts = { cwd: HERE, stdio: ['ignore', 'pipe', 'ignore'] as ['ignore', 'pipe', 'ignore'], encoding: 'utf8' as const };
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], opts).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], opts).trim().length > 0;
    return { commit, dirty };
  } catch {
    return { commit: null, dirty: null };
  }
}

/** With --fresh-db: (re)creates the database DATABASE_URL names, through the server's `postgres` database. */
async function recreateDatabase(url: string, drop: boolean): Promise<void> {
  const u = new URL(url);
  const name = decodeURIComponent(u.pathname.replace(/^\//, ''));
  if (!/bench/i.test(name) || !/^[A-Za-z0-9_]+$/.test(name)) {
    throw new UsageError(`--fresh-db drops the database: it only works on a database whose name contains "bench" (letters, digits, _), not "${name}"`);
  }
  u.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: u.toString() });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    if (!drop) await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
}

function pad(s: string | number, n: number, right = false): string {
  const t = String(s);
  return right ? t.padEnd(n) : t.padStart(n);
}

function fmtCounts(counts: Record<string, number>): string {
  const entries = Object.entries(counts).sort((a, b) => b[1] - a[1]);
  return entries.length ? entries.map(([k, v]) => `${k}: ${v}`).join(', ') : 'none';
}

// ---------------------------------------------------------------------------------- report

interface EndpointReport extends LatencySummary {
  statuses: Record<string, number>;
  outcomes: Record<string, number>;
  errors: Record<string, number>;
}

interface Report {
  kind: 'checkstand-bench';
  version: 1;
  started_at: string;
  finished_at: string;
  passed: boolean;
  failure: string | null;
  machine: {
    node: string;
    platform: string;
    os_release: string;
    arch: string;
    cpus: number;
    cpu_model: string;
    total_memory_gib: number;
    load_average_before: number[];
  };
  git: { commit: string | null; dirty: boolean | null };
  database: { kind: 'pglite' | 'postgres'; server_version: string | null; url: string | null; pool_max: number };
  parameters: Options & { flow: string[]; card: string; client: string };
  results: {
    measured_s: number;
    flows: { completed: number; failed: number; per_s: number; latency: LatencySummary };
    orders_per_s: number;
    requests: { total: number; per_s: number; errors: number; error_rate: number; errors_by_status: Record<string, number> };
    endpoints: Record<string, EndpointReport>;
    warmup: { flows: number; errors: number };
    server: {
      /** Share of the measured window the server's event loop (main thread) was busy. */
      main_thread_utilization: number | null;
      /** CPU seconds of the whole process (server + driver thread + PGlite) per wall second. */
      process_cpu_cores: number | null;
      db_pool_waiting_max: number;
      /** SQL statements sent to the database in the measured window, per completed flow (all three requests). */
      db_statements_per_flow: number | null;
    };
    database_rows: { orders: number; transactions: number } | null;
    first_errors: string[];
  };
}

function printSummary(r: Report, file: string | null): void {
  const res = r.results;
  const lines: string[] = [];
  const bar = '─'.repeat(86);
  lines.push(bar);
  lines.push(
    `Checkstand bench · ${r.database.kind}${r.database.server_version ? ` ${r.database.server_version}` : ''} · ${r.parameters.concurrency} concurrent flows · ` +
      `${res.measured_s.toFixed(1)} s measured (+${r.parameters.warmupS} s warm-up)`,
  );
  lines.push(
    `node ${r.machine.node} · ${r.machine.cpus}× ${r.machine.cpu_model} · load ${r.machine.load_average_before[0]} before · git ${r.git.commit ?? '?'}${r.git.dirty ? ' (dirty)' : ''}`,
  );
  if ((r.machine.load_average_before[0] ?? 0) > r.machine.cpus * 0.5) {
    lines.push(`note: the machine was already busy (1-min load ${r.machine.load_average_before[0]} on ${r.machine.cpus} cores): the numbers may be lower and noisier than on an idle machine`);
  }
  lines.push(bar);
  lines.push(`${pad('endpoint', 34, true)}${pad('count', 8)}${pad('req/s', 9)}${pad('p50', 8)}${pad('p90', 8)}${pad('p99', 8)}${pad('max', 8)}  ms`);
  const row = (name: string, s: LatencySummary) =>
    lines.push(
      `${pad(name, 34, true)}${pad(s.count, 8)}${pad(s.per_s.toFixed(1), 9)}${pad(s.p50_ms.toFixed(1), 8)}${pad(s.p90_ms.toFixed(1), 8)}${pad(s.p99_ms.toFixed(1), 8)}${pad(s.max_ms.toFixed(1), 8)}`,
    );
  for (const e of ENDPOINTS) row(e, res.endpoints[e]!);
  row('flow (lead → pay → read)', { ...res.flows.latency, count: res.flows.completed, per_s: res.flows.per_s });
  lines.push(bar);
  lines.push(`orders/s (completed flows/s): ${res.orders_per_s.toFixed(1)}    requests/s: ${res.requests.per_s.toFixed(1)}`);
  lines.push(`payment outcomes: ${fmtCounts(res.endpoints['POST /checkout/orders/payment']!.outcomes)}`);
  lines.push(
    `errors: ${res.requests.errors} of ${res.requests.total} (${(res.requests.error_rate * 100).toFixed(2)}%)  by status: ${fmtCounts(res.requests.errors_by_status)}` +
      `    failed flows: ${res.flows.failed}`,
  );
  const srv = res.server;
  lines.push(
    `server main thread busy: ${srv.main_thread_utilization === null ? '?' : `${(srv.main_thread_utilization * 100).toFixed(0)}%`}` +
      `    process CPU: ${srv.process_cpu_cores === null ? '?' : `${srv.process_cpu_cores.toFixed(2)} cores`}` +
      `    db pool waiting (max): ${srv.db_pool_waiting_max}` +
      `    SQL statements/flow: ${srv.db_statements_per_flow ?? '?'}`,
  );
  if (res.database_rows) lines.push(`rows written (incl. warm-up): ${res.database_rows.orders} orders, ${res.database_rows.transactions} transactions`);
  lines.push(`result: ${r.passed ? 'PASS' : `FAIL: ${r.failure}`}${file ? `    report: ${path.relative(process.cwd(), file)}` : ''}`);
  lines.push(bar);
  process.stdout.write(lines.join('\n') + '\n');
}

// ---------------------------------------------------------------------------------- main

async function runDriver(
  input: DriverInput,
  onPhase: (phase: 'measure' | 'drain' | 'done') => void,
  onProgress: (m: Extract<DriverMessage, { type: 'progress' }>) => void,
  registerStop: (stop: () => void) => void,
): Promise<Extract<DriverMessage, { type: 'result' }>> {
  // Worker threads do not inherit tsx's loader on Node 20: the thread registers it itself.
  const tsxApi = import.meta.resolve('tsx/esm/api');
  const target = new URL('./driver.ts', import.meta.url).href;
  const boot = `import(${JSON.stringify(tsxApi)}).then(({ tsImport }) => tsImport(${JSON.stringify(target)}, ${JSON.stringify(import.meta.url)}))`;
  const worker = new Worker(boot, { eval: true, workerData: input });
  registerStop(() => worker.postMessage({ type: 'stop' }));
  return new Promise((resolve, reject) => {
    let result: Extract<DriverMessage, { type: 'result' }> | undefined;
    worker.on('message', (m: DriverMessage) => {
      if (m.type === 'phase') onPhase(m.phase);
      else if (m.type === 'progress') onProgress(m);
      else if (m.type === 'result') {
        result = m;
        // The thread's keep-alive sockets would keep it alive: end it once it has answered.
        void worker.terminate();
      }
    });
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (result) resolve(result);
      else reject(new Error(`the load driver thread exited (code ${code}) without a result`));
    });
  });
}

async function main(): Promise<number> {
  let opts: Options | 'help';
  try {
    opts = parseOptions(process.argv.slice(2), process.env);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`bench: ${err.message}\n\n${USAGE}\n`);
      return 2;
    }
    throw err;
  }
  if (opts === 'help') {
    process.stdout.write(USAGE + '\n');
    return 0;
  }

  const startedAt = new Date();
  const databaseUrl = process.env.DATABASE_URL || undefined;
  const kind: 'pglite' | 'postgres' = databaseUrl ? 'postgres' : 'pglite';
  const loadAverageBefore = os.loadavg().map((v) => Math.round(v * 100) / 100);

  let tmpDir: string | undefined;
  let rt: Runtime | undefined;
  let app: Http | undefined;
  let stopDriver: (() => void) | undefined;
  let interrupted = false;
  const onSignal = (signal: string) => {
    if (interrupted) return;
    interrupted = true;
    log(`${signal}: stopping the load early`);
    stopDriver?.();
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));

  try {
    if (databaseUrl && opts.freshDb) {
      log(`creating a fresh database at ${redactUrl(databaseUrl)}`);
      await recreateDatabase(databaseUrl, false);
    }
    if (!databaseUrl) {
      tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkstand-bench-'));
      process.env.CHECKSTAND_DATA_DIR = tmpDir;
    }
    const base = loadConfig();
    const config = {
      ...base,
      host: '127.0.0.1',
      port: 0,
      logLevel: 'warn',
      // A throwaway key, so nothing is written to ./data when running on PostgreSQL.
      secretKey: base.secretKey ?? randomBytes(32).toString('hex'),
    };
    const logger = createLogger('warn');
    log(`starting the server on ${kind}${tmpDir ? ` (data dir ${tmpDir})` : ` (${redactUrl(databaseUrl!)})`}`);
    const t = performance.now();
    rt = await openRuntime({ config, log: logger });
    const seed = await seedDemo(rt.ctx);
    app = await buildServer(rt.ctx, logger);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const addr = app.server.address();
    if (!addr || typeof addr !== 'object') throw new Error('the server did not report a port');
    const baseUrl = `http://127.0.0.1:${addr.port}`;
    const health = await fetch(`${baseUrl}/readyz`);
    if (health.status !== 200) throw new Error(`GET /readyz answered ${health.status}: ${await health.text()}`);
    let serverVersion: string | null = null;
    if (kind === 'postgres') {
      const r = await rt.ctx.store.run((db) => sql<{ v: string }>`show server_version`.execute(db));
      serverVersion = r.rows[0]?.v ?? null;
    }
    log(`server ready at ${baseUrl} in ${((performance.now() - t) / 1000).toFixed(1)} s; team ${seed.team_id}, offer ${seed.offers.serum}`);
    log(
      `load: ${opts.concurrency} concurrent flows, ${opts.warmupS} s warm-up + ${opts.durationS} s measured; ` +
        `progress every ${opts.progressS} s${opts.idempotencyKeys ? '; with Idempotency-Key' : ''}`,
    );

    const serumOffer = seed.offers.serum;
    if (!serumOffer) throw new Error('seedDemo returned no serum offer');
    const input: DriverInput = {
      baseUrl,
      token: seed.token,
      campaignId: seed.campaign_id,
      offerId: serumOffer,
      concurrency: opts.concurrency,
      warmupMs: opts.warmupS * 1000,
      durationMs: opts.durationS * 1000,
      progressEveryMs: opts.progressS * 1000,
      requestTimeoutMs: opts.requestTimeoutS * 1000,
      idempotencyKeys: opts.idempotencyKeys,
      runId: randomBytes(4).toString('hex'),
    };

    // Server-side gauges over the measured window: main-thread utilisation, process CPU, pool queue.
    let eluStart: EventLoopUtilization | undefined;
    let eluWindow: EventLoopUtilization | undefined;
    let cpuStart: { usage: NodeJS.CpuUsage; at: number } | undefined;
    let cpuCores: number | null = null;
    let lastElu = performance.eventLoopUtilization();
    let poolWaitingMax = 0;
    const pool = rt.ctx.store.pool;
    // Count the statements every pooled client sends (PGlite goes through the same pg.Pool).
    let dbStatements = 0;
    let dbStatementsAtStart = 0;
    let dbStatementsInWindow: number | null = null;
    const counted = new WeakSet<object>();
    pool.on('acquire', (client) => {
      if (counted.has(client)) return;
      counted.add(client);
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        dbStatements++;
        return query(...args);
      };
    });
    const poolSampler = setInterval(() => {
      poolWaitingMax = Math.max(poolWaitingMax, pool.waitingCount);
    }, 50);

    let result: Extract<DriverMessage, { type: 'result' }>;
    try {
      result = await runDriver(
        input,
        (phase) => {
          if (phase === 'measure') {
            eluStart = performance.eventLoopUtilization();
            cpuStart = { usage: process.cpuUsage(), at: performance.now() };
            poolWaitingMax = 0;
            dbStatementsAtStart = dbStatements;
          } else if (phase === 'drain' && eluStart && cpuStart && !eluWindow) {
            eluWindow = performance.eventLoopUtilization(eluStart);
            const used = process.cpuUsage(cpuStart.usage);
            cpuCores = (used.user + used.system) / 1000 / (performance.now() - cpuStart.at);
            dbStatementsInWindow = dbStatements - dbStatementsAtStart;
          }
        },
        (p) => {
          const elu = performance.eventLoopUtilization(lastElu);
          lastElu = performance.eventLoopUtilization();
          log(
            `${pad(p.elapsedS.toFixed(1), 5)} s  ${pad(p.phase, 7, true)} flows ${pad(p.flowsDone, 6)}  ` +
              `${pad(p.intervalFlowsPerS.toFixed(1), 6)} flows/s  p50 ${pad(p.intervalP50Ms.toFixed(0), 4)} ms  p99 ${pad(p.intervalP99Ms.toFixed(0), 5)} ms  ` +
              `errors ${p.errors}  in flight ${p.inFlight}  server busy ${(elu.utilization * 100).toFixed(0)}%  db waiting ${pool.waitingCount}/${pool.totalCount}`,
          );
        },
        (stop) => {
          stopDriver = stop;
          if (interrupted) stop();
        },
      );
    } finally {
      clearInterval(poolSampler);
    }

    let databaseRows: Report['results']['database_rows'] = null;
    try {
      const rows = await rt.ctx.store.run((db) =>
        sql<{ orders: number; transactions: number }>`select
            (select count(*)::int from orders where team_id = ${seed.team_id}) as orders,
            (select count(*)::int from transactions where team_id = ${seed.team_id}) as transactions`.execute(db),
      );
      databaseRows = rows.rows[0] ?? null;
    } catch (err) {
      log(`could not count the rows written: ${(err as Error).message}`);
    }

    // ------------------------------------------------------------------ numbers
    const windowMs = result.measuredMs;
    const endpoints: Record<string, EndpointReport> = {};
    const errorsByStatus: Record<string, number> = {};
    let requests = 0;
    let errors = 0;
    for (const e of ENDPOINTS) {
      const s = result.endpoints[e];
      endpoints[e] = { ...summarize(s.latencies, windowMs), statuses: s.statuses, outcomes: s.outcomes, errors: s.errors };
      requests += s.latencies.length;
      errors += total(s.errors);
      for (const [status, n] of Object.entries(s.errors)) errorsByStatus[`${e} ${status}`] = n;
    }
    const errorRate = requests > 0 ? errors / requests : 0;
    const flowsPerS = windowMs > 0 ? (result.flowsCompleted * 1000) / windowMs : 0;

    let failure: string | null = null;
    if (interrupted) failure = 'interrupted';
    else if (result.flowsCompleted === 0) failure = 'no flow completed';
    else if (errorRate > opts.maxErrorRate) failure = `error rate ${(errorRate * 100).toFixed(2)}% is above ${(opts.maxErrorRate * 100).toFixed(2)}%`;

    const report: Report = {
      kind: 'checkstand-bench',
      version: 1,
      started_at: startedAt.toISOString(),
      finished_at: new Date().toISOString(),
      passed: failure === null,
      failure,
      machine: {
        node: process.version,
        platform: process.platform,
        os_release: os.release(),
        arch: process.arch,
        cpus: os.cpus().length,
        cpu_model: os.cpus()[0]?.model.trim() ?? 'unknown',
        total_memory_gib: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
        load_average_before: loadAverageBefore,
      },
      git: gitInfo(),
      database: { kind, server_version: serverVersion, url: databaseUrl ? redactUrl(databaseUrl) : null, pool_max: kind === 'pglite' ? 1 : config.dbPoolMax },
      parameters: {
        ...opts,
        flow: ['POST /checkout/leads (new e-mail, serum offer)', 'POST /checkout/orders/payment (card)', 'GET /v1/orders/{order_number}'],
        card: `4111…1111 exp ${benchCardExp()} cvv 123`,
        client: 'Node global fetch (undici, keep-alive) in a worker thread; server on the main thread',
      },
      results: {
        measured_s: Math.round(windowMs) / 1000,
        flows: {
          completed: result.flowsCompleted,
          failed: result.flowsFailed,
          per_s: Math.round(flowsPerS * 10) / 10,
          latency: summarize(result.flowLatencies, windowMs),
        },
        orders_per_s: Math.round(flowsPerS * 10) / 10,
        requests: {
          total: requests,
          per_s: windowMs > 0 ? Math.round((requests * 10000) / windowMs) / 10 : 0,
          errors,
          error_rate: Math.round(errorRate * 1e6) / 1e6,
          errors_by_status: errorsByStatus,
        },
        endpoints,
        warmup: result.warmup,
        server: {
          main_thread_utilization: eluWindow ? Math.round(eluWindow.utilization * 1000) / 1000 : null,
          process_cpu_cores: cpuCores === null ? null : Math.round(cpuCores * 100) / 100,
          db_pool_waiting_max: poolWaitingMax,
          db_statements_per_flow:
            dbStatementsInWindow !== null && result.flowsCompleted > 0 ? Math.round((dbStatementsInWindow / result.flowsCompleted) * 10) / 10 : null,
        },
        database_rows: databaseRows,
        first_errors: result.firstErrors,
      },
    };

    fs.mkdirSync(RESULTS_DIR, { recursive: true });
    const stamp = startedAt.toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/:/g, '-');
    const file = path.join(RESULTS_DIR, `${stamp}-${kind}.json`);
    fs.writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
    printSummary(report, file);
    if (result.firstErrors.length) {
      log('first errors:');
      for (const e of result.firstErrors) log(`  ${e}`);
    }
    return failure === null ? 0 : interrupted ? 130 : 1;
  } finally {
    // Close in order: stop taking requests, close the database, then remove what we created.
    try {
      await app?.close();
    } catch (err) {
      log(`closing the server failed: ${(err as Error).message}`);
    }
    try {
      await rt?.close();
    } catch (err) {
      log(`closing the database failed: ${(err as Error).message}`);
    }
    if (tmpDir) fs.rmSync(tmpDir, { recursive: true, force: true });
    if (databaseUrl && opts.freshDb) {
      try {
        await recreateDatabase(databaseUrl, true);
        log('dropped the bench database');
      } catch (err) {
        log(`dropping the bench database failed: ${(err as Error).message}`);
      }
    }
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`bench failed: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(1);
  },
);
