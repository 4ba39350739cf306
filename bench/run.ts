/**
 * `npm run bench`: the card funnel under concurrent load, over real HTTP, against the real server,
 * with the payment gateway and the webhook receiver on the other side of real sockets.
 *
 * - The server (openRuntime + buildServer, logger at `warn`) and the outbox worker (startWorker:
 *   webhook deliveries and mail) run on this process's main thread on a free loopback port:
 *   PostgreSQL when DATABASE_URL is set, else embedded PGlite in a temporary data dir.
 * - The provider sandbox (the NMI-compatible card gateway) runs in its own worker thread
 *   (sandbox-thread.ts); the demo team is seeded with seedDemo(ctx, { sandboxUrl }), so every
 *   payment and upsell is an HTTP call to it.
 * - A webhook receiver (receiver.ts) runs in its own worker thread; it is registered through the
 *   API for order.completed and order.upsell_added.
 * - The load driver (driver.ts) runs in a worker thread: lead → pay → upsell → complete.
 *
 * After the load it waits for the worker to deliver every webhook, then checks the sandbox ledger,
 * the webhooks received and the mail written against what the API answered. See bench/README.md.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import { sql } from 'kysely';
import pg from 'pg';
import pino from 'pino';
import { loadConfig } from '../src/app/config.ts';
import { LIMITS_OFF as BENCH_LIMITS_OFF } from '../test/reliability/limits-off.ts';
import { createLogger } from '../src/app/logger.ts';
import { openRuntime, type Runtime } from '../src/app/runtime.ts';
import { type DemoSeed, seedDemo } from '../src/app/seed.ts';
import { buildServer } from '../src/app/server.ts';
import { countSocketWrites } from '../src/db/socket-writes.ts';
import type { Http } from '../src/app/http.ts';
import { SANDBOX_CARDS } from '../src/sandbox/cards.ts';
import { EXTPAY_CARDS } from '../src/sandbox/extpay-provider.ts';
import { THREEDS_CARDS } from '../src/sandbox/threeds-gateway.ts';
import { EML_WRITER_THREAD } from '../src/modules/mail/transport.ts';
import { MAIL_DIRS, defaultMailDir, placeMailDir, tmpfsRoot, type MailDir, type PlacedMailDir } from './mail-dir.ts';
import { type RunningWorker, SCHEDULES, startWorker } from '../src/worker/worker.ts';
import { UsageError, dropBenchDatabase, gitInfo, machineCpu, num, readFlags, recreateDatabase, redactUrl, resultStamp, runMain, truthy } from './common.ts';
import { type CpuProfile, Profiler, type ProfileSummary, readProcessProfiles, summarizeProfile, writeProfile } from './profile.ts';
import { callgrindMissing, callgrindWrap, dumpCounters, zeroCounters } from './callgrind.ts';
import {
  benchCardExp,
  type DriverInput,
  type Endpoint,
  type LatencySummary,
  type ReceiverFinal,
  type ReceiverStats,
  BENCH_CLIENTS,
  type BenchClient,
  SANDBOX_STEPS,
  SCENARIO_STEPS,
  SCENARIOS,
  type Scenario,
  STEP_NAMES,
  type StepTotals,
  summarize,
  total,
} from './stats.ts';
import { type ServerProcesses, cpuBetweenMs, cpuSnapshot, isCheckstandRole, localPostgresPids, rssBytes, serverCommand, serverProcessesLabel, startServerProcesses, statCpuMs } from './server-processes.ts';
import { type DriverResult, nextMessage, runDriver, startTsWorker } from './threads.ts';
import { type CpuTicks, readCpuTicks, type SchedTimes, schedSnapshot, stealShare, waitBetween } from './sched.ts';
import { enableWalInspect, walBetween, walLine, walPosition, type WalFigures } from './wal.ts';
import { FlushQuery, SyncQuery } from '../src/db/protocol-transactions.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const RESULTS_DIR = path.join(HERE, 'results');

/**
 * The outbox worker's async context in process, in the warm-up only: its statements are counted
 * apart from the API's there. On Node 20 an AsyncLocalStorage turns on promise hooks for every
 * promise of the process, which cost the server about 1 ms of CPU per funnel (7.8 → 6.8 ms,
 * 2026-12-02): it is disabled when the measured window opens, and the window's statements are split
 * in the ratio counted in the warm-up's second half.
 */
const workerScope = new AsyncLocalStorage<true>();

/** The issue's targets on a 2-core machine (issue 13), and its goals beyond them. */
const TARGETS = {
  funnels_per_s: { postgres: 150, pglite: 50 },
  funnels_per_s_goal: { postgres: 300, pglite: 100 },
  p99_ms_per_call: 50,
  /** From the API (counted apart from the outbox worker's, in process). */
  sql_statements_per_flow: 25,
  /** From the outbox worker. */
  worker_sql_statements_per_flow: 8,
  commits_per_flow: 10,
  /** All server processes together. */
  cpu_ms_per_flow: { postgres: 6, pglite: 15 },
  /** Per process on PostgreSQL; `npm start` (embedded) as a whole. */
  rss_mb: { postgres: 200, pglite: 300 },
} as const;
/** The event types the receiver subscribes to: one of each per funnel. */
const WEBHOOK_TYPES = ['order.completed', 'order.upsell_added'] as const;

// ---------------------------------------------------------------------------------- options

interface Options {
  durationS: number;
  concurrency: number;
  warmupS: number;
  maxErrorRate: number;
  progressS: number;
  requestTimeoutS: number;
  webhookWaitS: number;
  idempotencyKeys: boolean;
  freshDb: boolean;
  profile: boolean;
  /** null: the server in this process (the default); N: `checkstand serve --processes N --with-worker` child processes (PostgreSQL). */
  processes: number | null;
  /** With `processes`: 0, the primary runs the outbox worker (`--with-worker`); M, M `checkstand worker` processes run it. */
  workers: number;
  /** Which funnel, i.e. which kind of payment (card, the default; extpay; threeds). */
  scenario: Scenario;
  /** How the driver calls the API: node:http (the default) or the typed client over fetch. */
  client: BenchClient;
  /** The server's log level: `warn` (the default: nothing per request) or `info`, what `checkstand start` logs (two lines per request). */
  logLevel: BenchLogLevel;
  /** Where the server's mail files go: tmpfs (the default where there is one) or the data dir (bench/mail-dir.ts). */
  mailDir: MailDir;
  /** `--callgrind`: `serve --processes 1 --with-worker` under valgrind, its instructions per funnel counted (bench/callgrind.ts). */
  callgrind: boolean;
}

/** `info` is the server's own default (config.ts): two lines per request, written to a file in the data dir. */
const BENCH_LOG_LEVELS = ['warn', 'info'] as const;
type BenchLogLevel = (typeof BENCH_LOG_LEVELS)[number];

/**
 * Unmeasured seconds before the window. On this project's 2-core machine V8's optimising compiler
 * is still busy for about half a minute of load (its thread fell from 0.25 to 0.04 cores over the
 * first minute) and the funnels/s rose by a third meanwhile: a shorter warm-up measures a server
 * that is still warming up (bench/README.md, "Warm-up").
 */
const DEFAULT_WARMUP_S = 30;

/**
 * `--callgrind`'s defaults: under valgrind the server runs ~40x slower, and V8 still compiles the
 * server's code (on the main thread, `--single-threaded`) for hundreds of funnels. With 60–90 s of
 * warm-up six runs of one version counted 27–36 M instructions per funnel; with 300 s, three counted
 * 18.2–20.6 M (bench/README.md, twenty-seventh round).
 */
const CALLGRIND_DEFAULTS = { warmupS: 300, durationS: 60, concurrency: 4 } as const;

/** The in-process worker's schedules: the statistics' only (the others have nothing to do in a bench). */
const BENCH_SCHEDULES = SCHEDULES.filter((s) => s.name === 'analyze-changed-tables');

const USAGE = `Usage: npm run bench [-- options]

  --duration <s>        measured seconds                        (BENCH_DURATION_S, default 15)
  --concurrency <n>     concurrent funnels                      (BENCH_CONCURRENCY, default 16)
  --warmup <s>          unmeasured warm-up seconds: V8 is still optimising the
                        server's code for about half a minute under load  (BENCH_WARMUP_S, default 30)
  --max-error-rate <f>  fail above this share of errors         (BENCH_MAX_ERROR_RATE, default 0.05)
  --progress <s>        seconds between progress lines          (BENCH_PROGRESS_S, default 3)
  --timeout <s>         per-request timeout                     (BENCH_REQUEST_TIMEOUT_S, default 30)
  --webhook-wait <s>    after the load, how long to wait for the
                        worker to deliver every webhook         (BENCH_WEBHOOK_WAIT_S, default 30)
  --idempotency-keys    send Idempotency-Key on every POST      (BENCH_IDEMPOTENCY_KEYS=1)
  --profile             CPU-profile the server thread over the measured window; with --processes,
                        every server process over its whole run (node --cpu-prof)
                        (writes .cpuprofile files next to the report; slows the server a little)  (BENCH_PROFILE=1)
  --fresh-db            with DATABASE_URL: drop and create that database first and drop it after
                        (only for a database whose name contains "bench")   (BENCH_FRESH_DB=1)
  --processes <n>       with DATABASE_URL: run the API as \`checkstand serve --processes <n> --with-worker\`
                        child processes instead of in this process          (BENCH_PROCESSES; default: in process)
  --workers <m>         with --processes: the outbox worker as <m> \`checkstand worker\` processes beside
                        \`serve --processes <n>\` instead of in serve's primary   (BENCH_WORKERS; default 0)
  --scenario <name>     which funnel (kind of payment): card, extpay or threeds  (BENCH_SCENARIO, default card)
  --client <name>       how the driver calls the API: raw (HTTP/1.1 written on kept-alive
                        sockets: the lightest for the driver's thread), http (node:http,
                        keep-alive: about twice the driver's CPU) or sdk (the typed
                        @checkstand/client over fetch, several times more)
                                                                (BENCH_CLIENT, default raw)
  --log-level <level>   the server's log level: warn (nothing per request) or info (the
                        server's default: two lines per request, written to a file beside
                        the data dir; in process only)           (BENCH_LOG_LEVEL, default warn)
  --mail-dir <where>    where the server's mail files go: tmpfs (/dev/shm) or data (the data
                        dir, on its disk; on ext4 without a journal each new file pays for the
                        files the last run removed: bench/README, twenty-first round)
                                                                (BENCH_MAIL_DIR, default tmpfs where there is one)
  --callgrind           with DATABASE_URL: run \`checkstand serve --processes 1 --with-worker\` under
                        valgrind's callgrind and report the server's instructions per funnel, a
                        figure the machine's other tenants do not move (bench/callgrind.ts); the
                        server runs ~40× slower, so its speed figures are not judged. Its defaults:
                        --concurrency 4 --warmup 300 --duration 60 (≈ 7 minutes)  (BENCH_CALLGRIND=1)

Scenarios (each with the outbox worker delivering webhooks to a local receiver):
  card     lead → Process Payment (card, sandbox NMI gateway over HTTP) → one upsell → Complete Order
  extpay   Create Order (extpay) → pay on the sandbox provider's hosted page → Capture (and the
           provider's payment.succeeded webhook) → upsell (202, settled by webhook) → Complete Order
  threeds  lead → Process Payment (3-D Secure gateway: redirect) → the sandbox's challenge page →
           Capture (and the gateway's PAYMENT_SUCCEEDED webhook) → upsell → Complete Order
Database: PostgreSQL when DATABASE_URL is set, else embedded PGlite in a temporary data dir.
Report: bench/results/<timestamp>-<pglite|postgres>[-<scenario>].json (no suffix for card)`;

export function parseOptions(argv: string[], env: NodeJS.ProcessEnv): Options | 'help' {
  const flags = readFlags(
    argv,
    ['duration', 'concurrency', 'warmup', 'max-error-rate', 'progress', 'timeout', 'webhook-wait', 'processes', 'workers', 'scenario', 'client', 'log-level', 'mail-dir'],
    ['idempotency-keys', 'fresh-db', 'profile', 'callgrind'],
  );
  if (flags === 'help') return 'help';
  const callgrind = truthy(flags.callgrind ?? env.BENCH_CALLGRIND);
  if (callgrind) {
    if (!env.DATABASE_URL) throw new UsageError('--callgrind counts the instructions of a `checkstand serve` process on PostgreSQL: set DATABASE_URL');
    if ((flags.processes ?? env.BENCH_PROCESSES ?? '1') !== '1' || (flags.workers ?? env.BENCH_WORKERS ?? '0') !== '0') {
      throw new UsageError('--callgrind runs one server process with its worker (--processes 1, no --workers)');
    }
    if (truthy(flags.profile ?? env.BENCH_PROFILE)) throw new UsageError('--callgrind and --profile: one measurement of the server at a time');
  }

  const positive = (n: number) => n > 0;
  const processesRaw = flags.processes ?? env.BENCH_PROCESSES ?? (callgrind ? '1' : '');
  return {
    durationS: num('duration', flags.duration ?? env.BENCH_DURATION_S, callgrind ? CALLGRIND_DEFAULTS.durationS : 15, positive, 'a positive number of seconds'),
    concurrency: num('concurrency', flags.concurrency ?? env.BENCH_CONCURRENCY, callgrind ? CALLGRIND_DEFAULTS.concurrency : 16, (n) => Number.isInteger(n) && n >= 1 && n <= 1000, 'an integer from 1 to 1000'),
    warmupS: num('warmup', flags.warmup ?? env.BENCH_WARMUP_S, callgrind ? CALLGRIND_DEFAULTS.warmupS : DEFAULT_WARMUP_S, (n) => n >= 0, 'zero or more seconds'),
    maxErrorRate: num('max-error-rate', flags['max-error-rate'] ?? env.BENCH_MAX_ERROR_RATE, 0.05, (n) => n >= 0 && n <= 1, 'between 0 and 1'),
    progressS: num('progress', flags.progress ?? env.BENCH_PROGRESS_S, 3, positive, 'a positive number of seconds'),
    requestTimeoutS: num('timeout', flags.timeout ?? env.BENCH_REQUEST_TIMEOUT_S, 30, positive, 'a positive number of seconds'),
    webhookWaitS: num('webhook-wait', flags['webhook-wait'] ?? env.BENCH_WEBHOOK_WAIT_S, 30, (n) => n >= 0, 'zero or more seconds'),
    idempotencyKeys: truthy(flags['idempotency-keys'] ?? env.BENCH_IDEMPOTENCY_KEYS),
    freshDb: truthy(flags['fresh-db'] ?? env.BENCH_FRESH_DB),
    profile: truthy(flags.profile ?? env.BENCH_PROFILE),
    processes: (() => {
      const raw = processesRaw;
      if (raw === '') return null;
      const n = num('processes', raw, 1, (x) => Number.isInteger(x) && x >= 1 && x <= 64, 'an integer from 1 to 64');
      if (!env.DATABASE_URL) throw new UsageError('--processes runs `checkstand serve --processes N` on PostgreSQL: set DATABASE_URL (the embedded database has one owner process)');
      return n;
    })(),
    workers: (() => {
      const raw = flags.workers ?? env.BENCH_WORKERS;
      if (raw === undefined || raw === '') return 0;
      const m = num('workers', raw, 0, (x) => Number.isInteger(x) && x >= 0 && x <= 16, 'an integer from 0 to 16');
      if (m > 0 && processesRaw === '') throw new UsageError('--workers needs --processes: in process the outbox worker runs on the server thread');
      return m;
    })(),
    scenario: oneOf('scenario', flags.scenario ?? env.BENCH_SCENARIO, SCENARIOS, 'card'),
    client: oneOf('client', flags.client ?? env.BENCH_CLIENT, BENCH_CLIENTS, 'raw'),
    logLevel: (() => {
      const level = oneOf('log-level', flags['log-level'] ?? env.BENCH_LOG_LEVEL, BENCH_LOG_LEVELS, 'warn');
      if (level !== 'warn' && processesRaw !== '') {
        throw new UsageError('--log-level runs with the server in this process: the server processes of --processes log to the bench through a pipe');
      }
      return level;
    })(),
    mailDir: (() => {
      const root = tmpfsRoot();
      const where = oneOf('mail-dir', flags['mail-dir'] ?? env.BENCH_MAIL_DIR, MAIL_DIRS, defaultMailDir(root));
      if (where === 'tmpfs' && !root) throw new UsageError('--mail-dir tmpfs: /dev/shm is not a writable tmpfs on this machine (use --mail-dir data)');
      return where;
    })(),
    callgrind,
  };
}

/** An option that names one of a few choices: unset or empty gives the default, anything else exits 2. */
function oneOf<T extends string>(name: string, raw: string | undefined, choices: readonly T[], fallback: T): T {
  if (raw === undefined || raw === '') return fallback;
  if (!(choices as readonly string[]).includes(raw)) throw new UsageError(`--${name} must be one of ${choices.join(', ')}, got "${raw}"`);
  return raw as T;
}

// ---------------------------------------------------------------------------------- helpers

const log = (line: string) => process.stdout.write(`[bench] ${line}\n`);

/** Newlines in a file, read in chunks (a server log at info runs to tens of MB). */
function countLines(file: string): number {
  const fd = fs.openSync(file, 'r');
  const buf = Buffer.alloc(1 << 20);
  let n = 0;
  try {
    for (let got; (got = fs.readSync(fd, buf, 0, buf.length, null)) > 0; ) {
      for (let at = buf.indexOf(10, 0); at !== -1 && at < got; at = buf.indexOf(10, at + 1)) n++;
    }
  } finally {
    fs.closeSync(fd);
  }
  return n;
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

interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

interface TargetResult {
  target: string;
  measured: string;
  /** null: not measured in this run (see `measured`). */
  met: boolean | null;
}

interface Report {
  kind: 'checkstand-bench';
  version: 2;
  /** The funnel that ran (`--scenario`); reports from before scenarios have none and ran `card`. */
  scenario: Scenario;
  started_at: string;
  finished_at: string;
  /** The run is correct: error rate within the limit, and every side effect accounted for. Targets do not count. */
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
  /** `client`: how the driver called the API (`--client`); reports from before the option used the typed client over fetch. */
  parameters: Omit<Options, 'client'> & { flow: string[]; card: string; client: string; threads: string; worker: string };
  targets: {
    funnels_per_s: TargetResult;
    /** The issue's goal beyond the target: reported, not part of all_met. */
    funnels_per_s_goal: TargetResult;
    p99_per_call: Record<string, TargetResult>;
    sql_statements_per_flow: TargetResult;
    commits_per_flow: TargetResult;
    cpu_ms_per_flow: TargetResult;
    rss_mb: TargetResult;
    /** Every target that was measured is met. */
    all_met: boolean;
  };
  results: {
    measured_s: number;
    flows: { completed: number; failed: number; per_s: number; latency: LatencySummary };
    /** Completed funnels per second = orders per second (each funnel is one order). */
    orders_per_s: number;
    requests: { total: number; per_s: number; errors: number; error_rate: number; errors_by_status: Record<string, number> };
    endpoints: Record<string, EndpointReport>;
    warmup: { flows: number; errors: number };
    /** Every answer of the whole run (warm-up and drain included), per step. */
    totals: Record<string, StepTotals>;
    all_funnels_completed: number;
    side_effects: {
      /**
       * The scenario's provider on the sandbox (NMI gateway, extpay provider, 3-D Secure gateway):
       * its charges that went through (approved / paid / succeeded) against the answers and the
       * database's approved sale transactions on that provider; `unsettled`: its payments still
       * held, pending or awaiting authentication at the end.
       */
      sandbox_ledger: {
        provider: string;
        approved_sales: number;
        charged_minor: number;
        ledger_entries: number;
        unsettled: number;
        expected_approved_sales: number;
        database_approved_sales: number;
        database_unsettled: number;
      };
      /** Orders completed (order.completed events, completed orders) against what the answers imply. */
      orders_completed: { events: number; distinct_orders: number; completed_orders: number; expected: number; by_capture: number; webhook_first: number };
      /** extpay and threeds: the provider's webhooks to the API, from the sandbox's ledger (null for card). */
      provider_webhooks: { events: number; delivered: number; by_type: Record<string, number> } | null;
      webhooks: {
        expected: number;
        outbox_deliveries: number;
        events_by_type: Record<string, number>;
        received: ReceiverStats;
        waited_s: number;
        deliveries_by_status: Record<string, number>;
        lag_ms: { p50: number; p90: number; p99: number; max: number } | null;
        window_delivered_per_s: number | null;
        window_events_per_s: number;
      };
      /** lag_ms: from the completion's transaction to the mail's recorded sending, whole run (warm-up and drain included). */
      mail: { rows: number; expected: number; by_status: Record<string, number>; lag_ms: { p50: number; p99: number; max: number } | null };
    };
    checks: Check[];
    server: {
      /** Share of the measured window the server's event loop (main thread: API, outbox worker, PGlite) was busy. */
      main_thread_utilization: number | null;
      /** Event-loop utilisation of the other threads of this process over the window. */
      thread_utilization: { driver: number | null; sandbox: number | null; receiver: number | null };
      /** The same threads' CPU (user + system, from their kernel tasks) over the window per completed funnel, ms; null off Linux. */
      bench_threads_cpu_ms_per_flow: { driver: number | null; sandbox: number | null; receiver: number | null } | null;
      /** CPU seconds of the main thread (the server: API, outbox worker, PGlite) per wall second; Linux only. */
      server_thread_cpu_cores: number | null;
      /** The server thread's CPU per completed funnel, ms: the cost of a funnel, less sensitive to a busy machine than the rates. */
      server_cpu_ms_per_flow: number | null;
      /** In process: server_cpu_ms_per_flow, the main thread's and the mail file writer's (eml-writer) apart. */
      server_cpu_ms_per_flow_by_thread: { main: number; mail_writer: number } | null;
      /**
       * `--callgrind`: the instructions the server process (all its threads) executed over the
       * measured window per completed funnel, in millions (bench/callgrind.ts); null otherwise.
       */
      server_instructions_per_flow_m: number | null;
      /** `--callgrind`: the window's dump, kept next to the report (bench/results/<time>-postgres.callgrind.out). */
      callgrind_file: string | null;
      /** CPU seconds of the whole process (server + driver + sandbox + receiver threads) per wall second. */
      process_cpu_cores: number | null;
      /** CPU busy on the whole machine per wall second (this process, PostgreSQL, anything else running). */
      machine_cpu_cores: number | null;
      /**
       * PostgreSQL on this machine (DATABASE_URL's host is local): the CPU of all its processes
       * (backends, WAL writer, checkpointer…) over the window, per completed funnel, ms. Null
       * embedded (PGlite is in server_cpu_ms_per_flow) or when the server is elsewhere.
       */
      postgres_cpu_ms_per_flow: number | null;
      /** machine_cpu_cores over the window per completed funnel, ms: everything the machine did for a funnel (server, database, the bench's own threads, anything else running). */
      machine_cpu_ms_per_flow: number | null;
      /** The funnels/s this machine's cores would allow at machine_cpu_ms_per_flow, all of them busy (cores × 1000 / that): the ceiling of this run's cost, not a measurement. */
      machine_flows_per_s_bound: number | null;
      /**
       * Waiting for a core over the window (`/proc/…/schedstat`: runnable, not running; bench/sched.ts).
       * server_main_wait_share: the share of the window the server's main thread (the one that
       * waited most, with `--processes`) waited; server_wait_ms_per_flow: every server main thread's
       * wait together, per completed funnel; postgres_wait_ms_per_flow: PostgreSQL's processes on
       * this machine (null embedded or elsewhere); steal_share: the share of all cores' time the
       * hypervisor gave to another machine. Null off Linux.
       */
      run_queue: {
        server_main_wait_share: number;
        server_wait_ms_per_flow: number;
        /** With `--processes`: each Checkstand process's main thread apart (`api 1234`); null in process. */
        server_wait_ms_per_flow_by_process: Record<string, number> | null;
        postgres_wait_ms_per_flow: number | null;
        steal_share: number | null;
      } | null;
      db_pool_waiting_max: number;
      /** SQL statements sent in the measured window (API and outbox worker), per completed funnel. In-process server only. */
      db_statements_per_flow: number | null;
      /**
       * In-process server: the same, the API's and the outbox worker's apart, in the ratio counted in
       * the warm-up's second half (the worker runs in an async context of its own there; not in the
       * window, where that context would cost the server CPU). Null without a warm-up.
       */
      db_statements_per_flow_by_source: { api: number; worker: number } | null;
      /** PostgreSQL, in-process server: socket writes to the database per completed funnel (round trips: statements sent together share one). */
      db_round_trips_per_flow: number | null;
      /**
       * Transactions committed in the measured window per completed funnel, counted on the pool's
       * clients (in-process server only): COMMITs sent plus statements sent outside a transaction
       * (each is a transaction of its own).
       */
      db_commits_per_flow: { explicit: number; single_statement: number; total: number } | null;
      /**
       * PostgreSQL only: pg_stat_database.xact_commit of the bench database over the whole run
       * (setup to the end, the servers' connections closed so their counters are flushed), per
       * funnel completed in the whole run. Includes the outbox worker and the bench's own few queries.
       */
      xact_commit: { total: number; per_flow: number | null } | null;
      /** PostgreSQL only: what the server wrote to its WAL in the measured window, per completed funnel (bench/wal.ts). */
      wal: WalFigures | null;
      /**
       * In process, or `serve --processes N --with-worker`, or `serve --processes N` and
       * `worker_processes` × `checkstand worker` (the CPU above then sums every one of them).
       */
      server_processes: { mode: 'in-process' | 'child processes'; api_processes: number; worker_processes?: number; pids: number[]; code?: 'build' | 'sources' };
      /** Resident memory at the end of the measured window: each server process (in process: this whole process, helper threads included). */
      rss_mb: { per_process: Record<string, number>; max: number } | null;
      /** `--processes`: each server process's CPU in the measured window per completed funnel, ms (its share of server_cpu_ms_per_flow). */
      cpu_ms_per_flow_by_process: Record<string, number> | null;
      /** The server's log (`--log-level`): lines written over the whole run, and per completed funnel. */
      log: { level: BenchLogLevel; lines: number; lines_per_flow: number | null };
    };
    database_rows: { orders: number; transactions: number } | null;
    profile: (ProfileSummary & { file: string }) | null;
    /** `--profile --processes`: each server process's own profile, over its whole run (warm-up and drain included). */
    process_profiles: Array<ProfileSummary & { process: string; file: string }> | null;
    first_errors: string[];
  };
}

const pct = (v: number | null) => (v === null ? '?' : `${(v * 100).toFixed(0)}%`);
const mark = (met: boolean | null) => (met === null ? 'not measured' : met ? 'PASS' : 'BELOW TARGET');

function printSummary(r: Report, file: string | null): void {
  const res = r.results;
  const lines: string[] = [];
  const bar = '─'.repeat(101);
  lines.push(bar);
  lines.push(
    `Checkstand bench · scenario ${r.scenario} · ${r.database.kind}${r.database.server_version ? ` ${r.database.server_version}` : ''} · ${r.parameters.concurrency} concurrent funnels · ` +
      `${res.measured_s.toFixed(1)} s measured (+${r.parameters.warmupS} s warm-up)`,
  );
  lines.push(
    `node ${r.machine.node} · ${r.machine.cpus}× ${r.machine.cpu_model} · load ${r.machine.load_average_before[0]} before · git ${r.git.commit ?? '?'}${r.git.dirty ? ' (dirty)' : ''} · mail files on ${r.parameters.mailDir === 'tmpfs' ? 'tmpfs' : 'the data dir\'s disk'}`,
  );
  lines.push(FUNNEL_LINE[r.scenario]);
  const steps = SCENARIO_STEPS[r.scenario];
  if ((r.machine.load_average_before[0] ?? 0) > r.machine.cpus * 0.5) {
    lines.push(`note: the machine was already busy (1-min load ${r.machine.load_average_before[0]} on ${r.machine.cpus} cores): the numbers may be lower and noisier than on an idle machine`);
  }
  lines.push(bar);
  lines.push(`${pad('step', 40, true)}${pad('count', 8)}${pad('req/s', 9)}${pad('p50', 8)}${pad('p90', 8)}${pad('p99', 8)}${pad('max', 9)}  ms   p99 target < ${TARGETS.p99_ms_per_call} ms`);
  const row = (name: string, s: LatencySummary, note = '') =>
    lines.push(
      `${pad(name, 40, true)}${pad(s.count, 8)}${pad(s.per_s.toFixed(1), 9)}${pad(s.p50_ms.toFixed(1), 8)}${pad(s.p90_ms.toFixed(1), 8)}${pad(s.p99_ms.toFixed(1), 8)}${pad(s.max_ms.toFixed(1), 9)}` +
        (note ? `       ${note}` : ''),
    );
  for (const e of steps) {
    // The provider's pages (sandbox) are timed for the funnel's latency; the p99 target is the API's.
    const sandbox = SANDBOX_STEPS.has(e);
    const target = r.targets.p99_per_call[STEP_NAMES[e]];
    row(`${STEP_NAMES[e]} (${sandbox ? e : e.replace('/checkout/', '…/')})`, res.endpoints[e]!, sandbox ? '(sandbox: no target)' : target ? mark(target.met) : '');
  }
  row(`funnel (${steps.length} steps)`, { ...res.flows.latency, count: res.flows.completed, per_s: res.flows.per_s });
  lines.push(bar);
  const ft = r.targets.funnels_per_s;
  const goal = r.targets.funnels_per_s_goal;
  lines.push(
    `funnels/s (= orders/s): ${res.orders_per_s.toFixed(1)}    target ${ft.target}: ${mark(ft.met)}    goal ${goal.target}: ${goal.met ? 'REACHED' : 'not reached'}` +
      `    requests/s: ${res.requests.per_s.toFixed(1)}`,
  );
  const p99s = Object.entries(r.targets.p99_per_call);
  const p99Met = p99s.every(([, t]) => t.met);
  lines.push(`p99 per call < ${TARGETS.p99_ms_per_call} ms: ${mark(p99Met)}${p99Met ? '' : ` (over: ${p99s.filter(([, t]) => !t.met).map(([k, t]) => `${k} ${t.measured}`).join(', ')})`}`);
  lines.push(`outcomes: ${steps.map((e) => `${STEP_NAMES[e]} ${fmtCounts(res.endpoints[e]!.outcomes)}`).join('; ')}`);
  lines.push(
    `errors: ${res.requests.errors} of ${res.requests.total} (${(res.requests.error_rate * 100).toFixed(2)}%)  by status: ${fmtCounts(res.requests.errors_by_status)}` +
      `    failed funnels: ${res.flows.failed}`,
  );
  lines.push(bar);
  const se = res.side_effects;
  lines.push(`side effects, whole run (warm-up and drain included: ${res.all_funnels_completed} completed funnels):`);
  const check = (name: string) => {
    const c = res.checks.find((x) => x.name === name);
    return c ? (c.ok ? 'OK' : 'MISMATCH') : '?';
  };
  lines.push(
    `  sandbox ledger (${se.sandbox_ledger.provider}): ${se.sandbox_ledger.approved_sales} charges through, expected ${se.sandbox_ledger.expected_approved_sales} ` +
      `(${STEP_NAMES[FIRST_CHARGE[r.scenario]]} ${res.totals[STEP_NAMES[FIRST_CHARGE[r.scenario]]]!.ok} + upsell ${res.totals['upsell']!.ok}); database: ${se.sandbox_ledger.database_approved_sales}` +
      `${se.sandbox_ledger.unsettled + se.sandbox_ledger.database_unsettled > 0 ? `; unsettled: ${se.sandbox_ledger.unsettled} there, ${se.sandbox_ledger.database_unsettled} here` : ''}   ${check('sandbox ledger')}`,
  );
  const oc = se.orders_completed;
  lines.push(
    `  orders completed: ${oc.completed_orders} (expected ${oc.expected}), ${oc.events} order.completed events for ${oc.distinct_orders} orders` +
      `${r.scenario === 'card' ? '' : `; by Capture ${oc.by_capture}, by the provider's webhook first ${oc.webhook_first}`}   ${check('orders completed once')}`,
  );
  if (se.provider_webhooks) {
    const pw = se.provider_webhooks;
    lines.push(`  provider webhooks to the API: ${pw.delivered} of ${pw.events} taken (${fmtCounts(pw.by_type)})   ${check('provider webhooks')}`);
  }
  const wh = se.webhooks;
  const lag = wh.lag_ms ? `lag p50 ${wh.lag_ms.p50.toFixed(0)} ms, p99 ${wh.lag_ms.p99.toFixed(0)} ms, max ${wh.lag_ms.max.toFixed(0)} ms` : 'lag ?';
  lines.push(
    `  webhooks: ${wh.received.unique} of ${wh.expected} delivered (distinct webhook-id; ${fmtCounts(wh.received.byType)}) ` +
      `${wh.waited_s.toFixed(1)} s after the load; ${wh.received.duplicates} duplicates   ${check('webhooks')}`,
  );
  lines.push(
    `            ${lag}; signatures verified ${wh.received.verified}, bad ${wh.received.badSignatures}; ` +
      `in the window ${wh.window_delivered_per_s === null ? '?' : wh.window_delivered_per_s.toFixed(1)} delivered/s for ${wh.window_events_per_s.toFixed(1)} events/s`,
  );
  const mailLag = se.mail.lag_ms ? `    lag p50 ${Number(se.mail.lag_ms.p50).toFixed(0)} ms, p99 ${Number(se.mail.lag_ms.p99).toFixed(0)} ms, max ${Number(se.mail.lag_ms.max).toFixed(0)} ms (whole run)` : '';
  lines.push(`  mail: ${se.mail.rows} rows for ${se.mail.expected} completed orders (${fmtCounts(se.mail.by_status)})   ${check('mail')}${mailLag}`);
  lines.push(bar);
  const srv = res.server;
  lines.push(
    `${srv.server_processes.mode === 'in-process' ? `server main thread busy: ${pct(srv.main_thread_utilization)}, CPU (main + mail writer threads)` : 'server processes CPU'} ${srv.server_thread_cpu_cores === null ? '?' : `${srv.server_thread_cpu_cores.toFixed(2)} cores`}` +
      ` (${srv.server_cpu_ms_per_flow ?? '?'} ms CPU per funnel${srv.server_cpu_ms_per_flow_by_thread ? `: main ${srv.server_cpu_ms_per_flow_by_thread.main}, mail writer ${srv.server_cpu_ms_per_flow_by_thread.mail_writer}` : ''})` +
      `    process CPU: ${srv.process_cpu_cores === null ? '?' : `${srv.process_cpu_cores.toFixed(2)} cores`}` +
      `    machine CPU: ${srv.machine_cpu_cores === null ? '?' : `${srv.machine_cpu_cores.toFixed(2)} of ${r.machine.cpus} cores`}`,
  );
  if (srv.server_instructions_per_flow_m !== null) {
    lines.push(
      `server instructions per funnel: ${srv.server_instructions_per_flow_m} M (callgrind: every thread of the serve process, node --single-threaded; by function: callgrind_annotate ${srv.callgrind_file ?? '?'})` +
        `    under valgrind the server runs ~40x slower: this run's speed, CPU and latency figures are not the server's own, nor its targets' verdicts`,
    );
  }
  if (srv.machine_cpu_ms_per_flow !== null) {
    lines.push(
      `CPU per funnel on this machine: ${srv.machine_cpu_ms_per_flow} ms in all (server ${srv.server_cpu_ms_per_flow ?? '?'}, ` +
        `PostgreSQL ${srv.postgres_cpu_ms_per_flow ?? (r.database.kind === 'pglite' ? 'in the server' : 'not on this machine')}, the rest the bench's threads and anything else)` +
        `    at that cost ${r.machine.cpus} cores allow at most ${srv.machine_flows_per_s_bound ?? '?'} funnels/s`,
    );
  }
  if (srv.run_queue) lines.push(runQueueLine(srv.run_queue, srv.server_processes.mode === 'in-process'));
  lines.push(
    `other threads busy: driver ${pct(srv.thread_utilization.driver)}, sandbox ${pct(srv.thread_utilization.sandbox)}, receiver ${pct(srv.thread_utilization.receiver)}` +
      (srv.bench_threads_cpu_ms_per_flow
        ? ` (CPU per funnel: driver ${srv.bench_threads_cpu_ms_per_flow.driver ?? '?'} ms, sandbox ${srv.bench_threads_cpu_ms_per_flow.sandbox ?? '?'} ms, receiver ${srv.bench_threads_cpu_ms_per_flow.receiver ?? '?'} ms)`
        : '') +
      `    db pool waiting (max): ${srv.db_pool_waiting_max}    SQL statements/funnel (API + outbox worker): ${srv.db_statements_per_flow ?? '?'}`,
  );
  const sp = srv.server_processes;
  lines.push(
    `server: ${sp.mode === 'in-process' ? 'in this process (main thread)' : `${serverCommand(sp.api_processes, sp.worker_processes ?? 0)} (${serverProcessesLabel(sp.api_processes, sp.worker_processes ?? 0)}, pids ${sp.pids.join(', ')}${sp.code ? `; ${sp.code === 'build' ? 'the bundle in build/' : 'the TypeScript sources (CHECKSTAND_FROM_SOURCES=1)'}` : ''})`}` +
      `    RSS at the end: ${srv.rss_mb ? Object.entries(srv.rss_mb.per_process).map(([k, v]) => `${k} ${v} MB`).join(', ') : '?'}`,
  );
  if (srv.log.level !== 'warn') {
    lines.push(`server log: level ${srv.log.level}, ${srv.log.lines} lines (${srv.log.lines_per_flow ?? '?'} per completed funnel, warm-up included), written to a file`);
  }
  if (srv.cpu_ms_per_flow_by_process) {
    const waited = srv.run_queue?.server_wait_ms_per_flow_by_process ?? {};
    lines.push(
      `CPU per funnel by process: ${Object.entries(srv.cpu_ms_per_flow_by_process)
        .map(([k, v]) => `${k} ${v} ms${waited[k] === undefined ? '' : ` (waited for a core ${waited[k]})`}`)
        .join(', ')}`,
    );
  }
  const cm = srv.db_commits_per_flow;
  lines.push(
    `per funnel: SQL statements ${srv.db_statements_per_flow ?? '? (not counted in child processes)'}` +
      `${srv.db_statements_per_flow_by_source ? ` (API ${srv.db_statements_per_flow_by_source.api}, worker ${srv.db_statements_per_flow_by_source.worker}, in the warm-up's ratio)` : ''}` +
      `${srv.db_round_trips_per_flow !== null ? `    round trips ${srv.db_round_trips_per_flow}` : ''}` +
      `    commits ${cm ? `${cm.total} (${cm.explicit} COMMIT or Sync + ${cm.single_statement} single-statement)` : '? (not counted in child processes)'}` +
      `${srv.xact_commit ? `    pg xact_commit ${srv.xact_commit.per_flow ?? '?'} (whole run)` : ''}`,
  );
  if (srv.wal) lines.push(walLine(srv.wal));
  const t = r.targets;
  for (const [name, x] of [
    ['server CPU per funnel', t.cpu_ms_per_flow],
    ['SQL statements per funnel', t.sql_statements_per_flow],
    ['commits per funnel', t.commits_per_flow],
    ['RSS', t.rss_mb],
  ] as const) {
    lines.push(`  ${pad(name, 27, true)} ${pad(x.measured, 30, true)} target ${pad(x.target, 46, true)} ${mark(x.met)}`);
  }
  if (res.database_rows) lines.push(`rows written (incl. warm-up): ${res.database_rows.orders} orders, ${res.database_rows.transactions} transactions`);
  if (res.profile) {
    const p = res.profile;
    lines.push(`server-thread CPU profile (${p.total_ms.toFixed(0)} ms self time, idle excluded): ${path.relative(process.cwd(), p.file)}`);
    lines.push(
      `  by group: app code ${(p.app_code.share * 100).toFixed(1)}%; ` +
        p.groups
          .filter((g) => g.share >= 0.005)
          .map((g) => `${g.group} ${(g.share * 100).toFixed(1)}%`)
          .join(', '),
    );
    lines.push(`  top: ${p.top_functions.slice(0, 8).map((f) => `${f.function} (${f.where}) ${(f.share * 100).toFixed(1)}%`).join('; ')}`);
  }
  for (const p of res.process_profiles ?? []) {
    lines.push(`CPU profile of ${p.process}, its whole run (${p.total_ms.toFixed(0)} ms self time, idle excluded): ${path.relative(process.cwd(), p.file)}`);
    lines.push(`  by group: ${p.groups.filter((g) => g.share >= 0.01).map((g) => `${g.group} ${(g.share * 100).toFixed(1)}%`).join(', ')}`);
    lines.push(`  top: ${p.top_functions.slice(0, 8).map((f) => `${f.function} (${f.where}) ${(f.share * 100).toFixed(1)}%`).join('; ')}`);
  }
  if (res.process_profiles && res.process_profiles.length === 0) lines.push('CPU profiles: none was written (a server process did not exit on its own)');
  const failedChecks = res.checks.filter((c) => !c.ok);
  lines.push(
    `result: ${r.passed ? 'OK (correct run)' : `FAIL: ${r.failure}`}    targets: ${r.targets.all_met ? 'all met' : 'BELOW TARGET'}` +
      `${file ? `    report: ${path.relative(process.cwd(), file)}` : ''}`,
  );
  for (const c of failedChecks) lines.push(`  ${c.name}: ${c.detail}`);
  lines.push(bar);
  process.stdout.write(lines.join('\n') + '\n');
}

// ---------------------------------------------------------------------------------- threads and gauges

/** A free TCP port on loopback, for the `serve --processes` children to share. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * CPU time (user + system, ms) of the server in this process: its main thread and the mail file
 * transport's writer thread (found by its name, EML_WRITER_THREAD, in /proc/self/task/<tid>/comm;
 * 0 before it started), from /proc (Linux). Null elsewhere. The writer lives as long as the server.
 */
function serverThreadsCpuMs(): { main: number; mailWriter: number } | null {
  const main = statCpuMs(`/proc/self/task/${process.pid}/stat`);
  if (main === null) return null;
  let mailWriter = 0;
  for (const tid of fs.readdirSync('/proc/self/task')) {
    try {
      if (tid !== String(process.pid) && fs.readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim() === EML_WRITER_THREAD) mailWriter += statCpuMs(`/proc/self/task/${tid}/stat`) ?? 0;
    } catch {
      // the thread ended meanwhile
    }
  }
  return { main, mailWriter };
}

/** The bench's own threads: they stand for other machines (the shoppers, the gateway, the merchant's receiver). */
type BenchThread = 'driver' | 'sandbox' | 'receiver';

/** `f` of each bench thread. */
function eachBenchThread<T>(f: (t: BenchThread) => T): Record<BenchThread, T> {
  return { driver: f('driver'), sandbox: f('sandbox'), receiver: f('receiver') };
}

/** Each bench thread's CPU so far (user + system, ms), read from its kernel task; null where its id is unknown or off Linux. */
function benchThreadsCpuMs(tids: Record<BenchThread, number | null>): Record<BenchThread, number | null> {
  return eachBenchThread((t) => (tids[t] === null ? null : statCpuMs(`/proc/self/task/${tids[t]}/stat`)));
}

/** The Checkstand processes of `--processes` (primary, API children, workers): not tsx's esbuild helpers. */
function serverMainPids(servers: ServerProcesses): number[] {
  return servers.pids().filter((pid) => isCheckstandRole(servers.role(pid)));
}

/** The run-queue figures over the window, as measured (ms), before they are put per funnel. */
interface RunQueueFigures {
  wallMs: number;
  /** The server's main threads together (one in process). */
  serverMs: number;
  /** The one of them that waited most. */
  serverMaxMs: number;
  /** With `--processes`: each one's, by its report label (`api 1234`). */
  serverByProcess: Record<string, number> | null;
  /** PostgreSQL's processes on this machine together; null when it is elsewhere or embedded. */
  postgresMs: number | null;
  steal: number | null;
}

function runQueueReport(f: RunQueueFigures | null, perFlow: (n: number | null) => number | null): Report['results']['server']['run_queue'] {
  if (!f || f.wallMs <= 0) return null;
  return {
    server_main_wait_share: Math.round((f.serverMaxMs / f.wallMs) * 1000) / 1000,
    server_wait_ms_per_flow: perFlow(f.serverMs) ?? 0,
    server_wait_ms_per_flow_by_process: f.serverByProcess ? Object.fromEntries(Object.entries(f.serverByProcess).map(([k, ms]) => [k, perFlow(ms) ?? 0])) : null,
    postgres_wait_ms_per_flow: perFlow(f.postgresMs),
    steal_share: f.steal === null ? null : Math.round(f.steal * 1000) / 1000,
  };
}

function runQueueLine(rq: NonNullable<Report['results']['server']['run_queue']>, inProcess: boolean): string {
  const pg = rq.postgres_wait_ms_per_flow === null ? '' : `, PostgreSQL ${rq.postgres_wait_ms_per_flow} ms per funnel`;
  const steal = rq.steal_share === null ? '' : `    hypervisor steal: ${(rq.steal_share * 100).toFixed(1)}% of the cores`;
  const who = inProcess ? 'server main thread' : "server processes' main threads";
  const busiest = inProcess ? '' : ', the busiest';
  return `waiting for a core (runnable, not running): ${who} ${rq.server_wait_ms_per_flow} ms per funnel (${(rq.server_main_wait_share * 100).toFixed(0)}% of the window${busiest})${pg}${steal}`;
}

/** A thread's event-loop utilisation since `since`, or null when it is gone. */
function threadElu(worker: Worker | undefined, since: EventLoopUtilization | undefined): number | null {
  if (!worker || !since) return null;
  try {
    return Math.round(worker.performance.eventLoopUtilization(since).utilization * 1000) / 1000;
  } catch {
    return null;
  }
}

async function receiverStats(receiver: Worker): Promise<ReceiverStats> {
  const answer = nextMessage<{ type: 'stats'; stats: ReceiverStats }>(receiver, 'stats', 10_000);
  receiver.postMessage({ type: 'stats' });
  return (await answer).stats;
}

/** Ends a helper thread: asks it to close (answered by `answerType`), terminates it if it does not. */
async function closeThread(worker: Worker | undefined, message: string, answerType: string): Promise<void> {
  if (!worker) return;
  try {
    const answered = nextMessage(worker, answerType, 5_000);
    worker.postMessage({ type: message });
    await answered;
  } catch {
    // It exited already, or did not answer in time.
  }
  await worker.terminate();
}

// ---------------------------------------------------------------------------------- the scenario's provider

/** Capture answered 202: asked again at most this many times (backing off from 100 ms to 2 s: ≈ 10 s in all). */
const CAPTURE_RETRIES = 8;

/** The step whose expected answer means the first payment went through, per scenario. */
const FIRST_CHARGE: Record<Scenario, Endpoint> = {
  card: 'POST /checkout/orders/payment',
  extpay: 'sandbox: extpay pay page',
  threeds: 'sandbox: 3DS challenge',
};

/** What the sandbox's ledger of the scenario's provider says, in the terms of the checks. */
interface LedgerRead {
  /** Charges that went through: NMI approved sales, extpay `paid` payments, 3-D Secure `succeeded` ones. */
  approved: number;
  chargedMinor: number;
  entries: number;
  /** Payments not settled either way: extpay `pending`, 3-D Secure awaiting authentication or processing. */
  unsettled: number;
  /** The provider's webhooks to the API (extpay, threeds); null for the NMI gateway, which sends none. */
  events: Array<{ type: string; delivered: boolean }> | null;
}

interface ProviderSetup {
  /** For the report: which provider on the sandbox. */
  label: string;
  /** The gateway's or connection's id. */
  id: string;
  /** Which column of `transactions` names it. */
  column: 'gateway_id' | 'connection_id';
  readLedger(): Promise<LedgerRead>;
}

async function getJson(url: string): Promise<any> {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`GET ${url.replace(/\?.*$/, '')} answered ${res.status}`);
  return res.json();
}

/**
 * The scenario's provider, read back from the demo seed (its credentials, to read the sandbox's
 * ledger afterwards). extpay and threeds: the sandbox is told again where to send the provider's
 * signed webhooks, now that the API listens (seedDemo ran before, with port 0 in the config).
 */
async function setUpProvider(rt: Runtime, seed: DemoSeed, scenario: Scenario, sandboxUrl: string, apiUrl: string): Promise<ProviderSetup> {
  const { gateways, connections } = rt.ctx.services;
  const post = async (url: string, body: unknown) => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`POST ${url} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
    await res.arrayBuffer();
  };
  if (scenario === 'extpay') {
    const id = seed.extpay_connection_id;
    const row = id ? await rt.ctx.store.run((db) => connections.findLive(db, seed.team_id, id)) : undefined;
    if (!id || !row) throw new Error('seedDemo created no extpay connection');
    const conn = connections.connection(row);
    const root = /^(.*\/extpay\/sandbox)\/api\/v1\/?$/.exec(row.base_url)?.[1];
    if (!root) throw new Error(`the demo extpay connection is not on the sandbox: ${row.base_url}`);
    // As configureExtpaySandboxCompany (src/app/seed.ts) does, with the API's real address.
    await post(`${root}/sandbox/companies`, {
      company_id: conn.companyId,
      api_keys: [{ key: conn.apiKey }],
      webhook_url: `${apiUrl}/webhooks/extpay`,
      webhook_secret: conn.webhookSecret,
    });
    return {
      label: 'extpay connection (sandbox provider)',
      id,
      column: 'connection_id',
      readLedger: async () => {
        const l = await getJson(`${root}/sandbox/ledger?company_id=${encodeURIComponent(conn.companyId)}`);
        return {
          approved: l.summary.paid,
          chargedMinor: Math.round(Number(l.summary.charged) * 100),
          entries: l.payments.length,
          unsettled: l.summary.pending,
          events: l.events,
        };
      },
    };
  }
  if (scenario === 'threeds') {
    const id = seed.threeds_gateway_id;
    const row = id ? await rt.ctx.store.run((db) => gateways.findGateway(db, seed.team_id, id)) : undefined;
    if (!id || !row) throw new Error('seedDemo created no 3-D Secure gateway');
    const credentials = gateways.account(row).credentials;
    if (!credentials.api_key) throw new Error('the demo 3-D Secure gateway has no api_key');
    const apiKey = credentials.api_key;
    // As configureThreeDsSandboxAccount (src/app/seed.ts) does, with the API's real address.
    await post(`${row.base_url}/sandbox/accounts`, { api_key: apiKey, webhook_url: `${apiUrl}/webhooks/gateways/${id}`, webhook_secret: credentials.webhook_secret });
    return {
      label: '3-D Secure gateway (sandbox)',
      id,
      column: 'gateway_id',
      readLedger: async () => {
        const l = await getJson(`${row.base_url}/sandbox/ledger?api_key=${encodeURIComponent(apiKey)}`);
        return { approved: l.summary.succeeded, chargedMinor: l.summary.charged_minor, entries: l.payments.length, unsettled: l.summary.requires_action + l.summary.processing, events: l.events };
      },
    };
  }
  const id = seed.gateway_id;
  const row = id ? await rt.ctx.store.run((db) => gateways.findGateway(db, seed.team_id, id)) : undefined;
  if (!id || !row) throw new Error('seedDemo created no card gateway');
  const securityKey = gateways.account(row).credentials.security_key;
  if (!securityKey) throw new Error('the demo gateway has no security_key');
  return {
    label: 'NMI gateway (sandbox)',
    id,
    column: 'gateway_id',
    readLedger: async () => {
      const l = await getJson(`${sandboxUrl}/sandbox/nmi/ledger?security_key=${encodeURIComponent(securityKey)}`);
      return { approved: l.summary.approved_sales, chargedMinor: l.summary.charged_minor, entries: l.transactions.length, unsettled: 0, events: null };
    },
  };
}

/** The report's description of each step of the scenario's funnel. */
function flowLines(scenario: Scenario, upsellId: string): string[] {
  const upsell = `POST /checkout/orders/upsell (demo step-2 upsell ${upsellId}, quantity 1, saved`;
  const complete = 'POST /checkout/orders/complete (expects 200, status completed)';
  if (scenario === 'extpay')
    return [
      'POST /checkout/orders (new e-mail, serum offer, payment.method extpay pinned to the demo connection; expects 200 pending_redirect with checkout.purchase_url)',
      "sandbox: the provider's hosted page (GET it, POST its form, setup_future_usage off_session; expects 303 to the return URL with payment_id)",
      `POST /checkout/orders/capture (payment_id = the receipt; expects 200 captured or already captured by the provider's payment.succeeded webhook; 202 asked again up to ${CAPTURE_RETRIES} times)`,
      `${upsell} payment method at the provider; expects 202 accepted, the line added by its payment.succeeded webhook, or 200)`,
      complete,
    ];
  if (scenario === 'threeds')
    return [
      'POST /checkout/leads (new e-mail, serum offer)',
      'POST /checkout/orders/payment (gateway_id = the demo 3-D Secure gateway, challenge card, return_url, cancel_url, risk_session_id; expects 200 pending_redirect with redirect_url)',
      "sandbox: the gateway's challenge page (GET it, then its Authenticate link; expects 302 to the return URL)",
      `POST /checkout/orders/capture (expects 200 captured or already captured by the gateway's PAYMENT_SUCCEEDED webhook; 202 asked again up to ${CAPTURE_RETRIES} times)`,
      `${upsell} card, merchant-initiated, no redirect; expects 200)`,
      complete,
    ];
  return [
    'POST /checkout/leads (new e-mail, serum offer)',
    'POST /checkout/orders/payment (card; sandbox NMI gateway over HTTP; expects 200 Payment approved.)',
    `${upsell} card; expects 200)`,
    complete,
  ];
}

function cardLine(scenario: Scenario): string {
  const short = (n: string) => `${n.slice(0, 4)}…${n.slice(-4)}`;
  if (scenario === 'extpay') return `${short(EXTPAY_CARDS.paid)} on the provider's hosted page (paid at once)`;
  if (scenario === 'threeds') return `${short(THREEDS_CARDS.challenge)} exp ${benchCardExp()} cvv 123 (3-D Secure challenge)`;
  return `${short(SANDBOX_CARDS.approve)} exp ${benchCardExp()} cvv 123`;
}

/** The summary's one-line description of the funnel. */
const FUNNEL_LINE: Record<Scenario, string> = {
  card: 'funnel: lead → pay (card, sandbox NMI gateway over HTTP) → upsell ($9 guide, saved card) → complete; worker → webhook receiver',
  extpay: "funnel (extpay): create order → pay on the provider's hosted page (sandbox) → capture (or its webhook first) → upsell (202, settled by webhook) → complete; worker → webhook receiver",
  threeds: 'funnel (threeds): lead → pay (3-D Secure gateway: redirect) → challenge page (sandbox) → capture (or its webhook first) → upsell (saved card) → complete; worker → webhook receiver',
};

// ---------------------------------------------------------------------------------- main

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

  if (opts.callgrind) {
    const missing = callgrindMissing();
    if (missing) {
      process.stderr.write(`bench: ${missing}\n`);
      return 2;
    }
  }
  const startedAt = new Date();
  const databaseUrl = process.env.DATABASE_URL || undefined;
  const kind: 'pglite' | 'postgres' = databaseUrl ? 'postgres' : 'pglite';
  const loadAverageBefore = os.loadavg().map((v) => Math.round(v * 100) / 100);

  let tmpDir: string | undefined;
  let mailDir: PlacedMailDir | undefined;
  let serverLogFile: string | null = null;
  let rt: Runtime | undefined;
  let app: Http | undefined;
  let outboxWorker: RunningWorker | undefined;
  let servers: ServerProcesses | undefined;
  /** What the server processes ran (ServerProcesses.code), kept for the report after they stop. */
  let serversCode: 'build' | 'sources' | undefined;
  let callgrindDir: string | undefined;
  /** --callgrind: the serve process valgrind runs (no cluster with --processes 1). */
  let callgrindPid: number | null = null;
  let statsClient: pg.Client | undefined;
  let walInspectNote: string | null = null;
  let sandboxThread: Worker | undefined;
  let receiverThread: Worker | undefined;
  let receiverFinal: ReceiverFinal | undefined;
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
    // A temporary data dir in both modes: the embedded database (PGlite) and the outbox's mail
    // files (no SMTP_URL: each mail is written to DATA_DIR/mail/<id>.eml, by default a link to
    // tmpfs: bench/mail-dir.ts). Removed afterwards.
    tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkstand-bench-'));
    mailDir = placeMailDir(tmpDir, opts.mailDir);

    // The card gateway and the webhook receiver, each on its own thread and loopback port.
    sandboxThread = startTsWorker('./sandbox-thread.ts', { slowMs: 2000 });
    receiverThread = startTsWorker('./receiver.ts', null);
    const [sandboxReady, receiverReady] = await Promise.all([
      nextMessage<{ type: 'ready'; url: string; tid: number | null }>(sandboxThread, 'ready'),
      nextMessage<{ type: 'ready'; url: string; tid: number | null }>(receiverThread, 'ready'),
    ]);
    const sandboxUrl = sandboxReady.url;
    /** The bench's threads' kernel ids (the driver's comes with its first phase message), for their CPU over the window. */
    const benchTids: Record<BenchThread, number | null> = { driver: null, sandbox: sandboxReady.tid ?? null, receiver: receiverReady.tid ?? null };

    // The bench measures the funnel, not the request budgets: one token at c=16 passes Stripe-like
    // per-token limits at once, and a loaded machine's event-loop delay would shed requests.
    const base = loadConfig({ ...BENCH_LIMITS_OFF, ...process.env });
    const config = {
      ...base,
      dataDir: tmpDir,
      host: '127.0.0.1',
      port: 0,
      logLevel: opts.logLevel,
      // A throwaway key, so nothing is written to ./data.
      secretKey: base.secretKey ?? randomBytes(32).toString('hex'),
      // The receiver is on loopback, which the SSRF guard refuses otherwise.
      webhookAllowPrivateTargets: true,
    };
    // At warn the server writes nothing per request (to stdout, beside the bench's lines); at info
    // its lines go to a file, as a server's to a log collector: formatted, masked and written.
    serverLogFile = opts.logLevel === 'warn' ? null : path.join(tmpDir, 'server.log');
    const logger = serverLogFile ? createLogger(opts.logLevel, pino.destination({ dest: serverLogFile, sync: true })) : createLogger('warn');
    log(`starting the server on ${kind}${databaseUrl ? ` (${redactUrl(databaseUrl)})` : ` (data dir ${tmpDir})`}; sandbox ${sandboxUrl}; receiver ${receiverReady.url}; mail files: ${mailDir.description}`);
    const t = performance.now();
    rt = await openRuntime({ config, log: logger });
    const seed = await seedDemo(rt.ctx, { sandboxUrl });
    let baseUrl: string;
    if (opts.processes === null) {
      app = await buildServer(rt.ctx, logger);
      await app.listen({ host: '127.0.0.1', port: 0 });
      const addr = app.server.address();
      if (!addr || typeof addr !== 'object') throw new Error('the server did not report a port');
      baseUrl = `http://127.0.0.1:${addr.port}`;
    } else {
      // The same settings as the in-process server, through the environment a `serve` reads.
      const serverEnv: NodeJS.ProcessEnv = {
        ...BENCH_LIMITS_OFF,
        ...process.env,
        DATABASE_URL: databaseUrl,
        CHECKSTAND_SECRET_KEY: config.secretKey,
        CHECKSTAND_DATA_DIR: tmpDir,
        LOG_LEVEL: 'warn',
        WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      };
      delete serverEnv.SERVE_PROCESSES;
      // --callgrind: a server 40x slower refills its 1-s configuration caches every few funnels, more
      // or fewer with the machine's speed; counted instructions should not depend on that.
      if (opts.callgrind && !process.env.CONFIG_CACHE_TTL_MS) serverEnv.CONFIG_CACHE_TTL_MS = '600000';
      callgrindDir = opts.callgrind ? path.join(tmpDir, 'callgrind') : undefined;
      if (callgrindDir) log(`starting the server under valgrind's callgrind (it starts and runs about 40 times slower)`);
      servers = await startServerProcesses(opts.processes, await freePort(), serverEnv, {
        cpuProfileDir: opts.profile ? path.join(tmpDir, 'cpu-profiles') : undefined,
        workers: opts.workers,
        ...(callgrindDir ? { wrap: callgrindWrap(callgrindDir), timeoutMs: 900_000 } : {}),
      });
      baseUrl = servers.url;
      serversCode = servers.code.code;
      if (servers.code.rebuilt) log('the server bundle (build/) was older than the sources: rebuilt it first (npm run build:server), so the processes run what npx checkstand serve runs');
      if (callgrindDir) callgrindPid = servers.pids()[0]!;
    }
    const health = await fetch(`${baseUrl}/readyz`);
    if (health.status !== 200) throw new Error(`GET /readyz answered ${health.status}: ${await health.text()}`);
    // The scenario's provider, told where the API listens now (the seed ran before it did, with port 0).
    const provider = await setUpProvider(rt, seed, opts.scenario, sandboxUrl, baseUrl);

    // The merchant registers its receiver through the API, as a merchant would.
    const reg = await fetch(`${baseUrl}/v1/webhook-endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${seed.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiverReady.url, description: 'bench receiver', event_types: WEBHOOK_TYPES }),
    });
    const regBody = (await reg.json()) as { data?: { id?: string; secret?: string } };
    if (reg.status !== 201 || !regBody.data?.secret || !regBody.data.id) throw new Error(`POST /v1/webhook-endpoints answered ${reg.status}: ${JSON.stringify(regBody).slice(0, 300)}`);
    const endpointId = regBody.data.id;
    receiverThread.postMessage({ type: 'secret', secret: regBody.data.secret });

    // The outbox worker on the server's thread, as `checkstand start` / `serve --with-worker` runs it
    // (with child processes, the primary of `serve --processes N --with-worker` runs it), with the
    // one schedule the funnel's speed depends on: the tables' statistics (src/db/maintenance.ts),
    // which the bench's new database, and the embedded one at any age, would otherwise lack.
    // In the worker's own async context while the warm-up runs: every statement it sends then (its
    // drainers' loops and its schedules' timers started here keep that context, whoever wakes them)
    // is counted as the worker's. Without a warm-up the statements are not counted apart.
    const splitInWarmup = !servers && opts.warmupS > 0;
    if (!servers) {
      const start = () => startWorker(rt!.ctx, logger, { schedules: BENCH_SCHEDULES, withApi: true });
      outboxWorker = splitInWarmup ? workerScope.run(true, start) : start();
    }

    let serverVersion: string | null = null;
    if (kind === 'postgres') {
      const r = await rt.ctx.store.run((db) => sql<{ v: string }>`show server_version`.execute(db));
      serverVersion = r.rows[0]?.v ?? null;
    }
    if (kind === 'postgres') {
      statsClient = new pg.Client({ connectionString: databaseUrl });
      await statsClient.connect();
      walInspectNote = await enableWalInspect(statsClient, { create: opts.freshDb });
    }
    log(`server ready at ${baseUrl}${servers ? ` (${serverCommand(opts.processes!, opts.workers)}: pids ${servers.pids().join(', ')})` : ''} in ${((performance.now() - t) / 1000).toFixed(1)} s; team ${seed.team_id}, ${provider.label} ${provider.id}, webhook endpoint ${endpointId}`);
    log(
      `load: scenario ${opts.scenario} (${SCENARIO_STEPS[opts.scenario].map((e) => STEP_NAMES[e]).join(' → ')}), ${opts.concurrency} concurrent funnels, ${opts.warmupS} s warm-up + ${opts.durationS} s measured; ` +
        `driver client ${opts.client}; progress every ${opts.progressS} s${opts.idempotencyKeys ? '; with Idempotency-Key' : ''}${opts.logLevel === 'warn' ? '' : `; server log at ${opts.logLevel}, to a file`}${opts.profile ? (opts.processes === null ? '; profiling the server thread' : '; every server process profiling itself') : ''}`,
    );

    const serumOffer = seed.offers.serum;
    const guideUpsell = seed.upsells[1];
    if (!serumOffer || !guideUpsell) throw new Error('seedDemo returned no serum offer or no step-2 upsell');
    const input: DriverInput = {
      baseUrl,
      token: seed.token,
      campaignId: seed.campaign_id,
      offerId: serumOffer,
      upsellId: guideUpsell.upsell_id,
      scenario: opts.scenario,
      currency: seed.currency,
      extpayConnectionId: seed.extpay_connection_id,
      threedsGatewayId: seed.threeds_gateway_id,
      captureRetries: CAPTURE_RETRIES,
      concurrency: opts.concurrency,
      warmupMs: opts.warmupS * 1000,
      durationMs: opts.durationS * 1000,
      progressEveryMs: opts.progressS * 1000,
      requestTimeoutMs: opts.requestTimeoutS * 1000,
      idempotencyKeys: opts.idempotencyKeys,
      runId: randomBytes(4).toString('hex'),
      client: opts.client,
    };

    // Gauges over the measured window: thread utilisation, process and machine CPU, pool queue.
    let driverThread: Worker | undefined;
    let eluStart: EventLoopUtilization | undefined;
    let eluWindow: EventLoopUtilization | undefined;
    const threadEluStart: { driver?: EventLoopUtilization; sandbox?: EventLoopUtilization; receiver?: EventLoopUtilization } = {};
    const threadEluWindow: Report['results']['server']['thread_utilization'] = { driver: null, sandbox: null, receiver: null };
    let benchThreadCpuStart: Record<BenchThread, number | null> | undefined;
    /** The bench's threads' CPU over the window per wall second (cores), each apart. */
    let benchThreadCores: Record<BenchThread, number | null> | null = null;
    let cpuStart: { usage: NodeJS.CpuUsage; machine: { busy: number; total: number }; threads: { main: number; mailWriter: number } | null; at: number } | undefined;
    let cpuCores: number | null = null;
    let mainCores: number | null = null;
    /** In process: the server threads' CPU over the window, ms, each apart. */
    let threadCpuMs: { main: number; mail_writer: number } | null = null;
    let machineCores: number | null = null;
    /** PostgreSQL on this machine: its processes' CPU at the window's start, and over the window per wall second. */
    let pgCpuStart: Map<number, number> | null = null;
    let pgCores: number | null = null;
    /** Waiting for a core over the window (bench/sched.ts): the server's main threads, PostgreSQL's processes, the hypervisor's steal. */
    let schedStart: { server: Map<number, SchedTimes>; postgres: Map<number, SchedTimes> | null; ticks: CpuTicks | null } | undefined;
    let runQueue: RunQueueFigures | null = null;
    let lastElu = performance.eventLoopUtilization();
    let poolWaitingMax = 0;
    const serverStore = rt.ctx.store;
    const pool = serverStore.pool;
    // Count the statements every pooled client sends (PGlite goes through the same pg.Pool).
    // Transactions too: COMMITs and protocol transactions' Syncs (their commits), and statements
    // sent outside a transaction (one transaction each).
    // writes: socket writes to PostgreSQL (one system call each): a statement sent with others (a
    // transaction's BEGIN, deferred writes) shares one. PGlite has no socket: not counted there.
    const db = { statements: 0, workerStatements: 0, commits: 0, single: 0, writes: 0 };
    let dbAtStart = { ...db };
    let dbStatementsInWindow: number | null = null;
    /** The warm-up's second half: statements counted there, and the outbox worker's among them. */
    let splitFrom: { statements: number; worker: number } | null = null;
    let workerShare: number | null = null;
    let dbWritesInWindow: number | null = null;
    let dbCommitsInWindow: { explicit: number; single: number } | null = null;
    const counted = new WeakSet<object>();
    const countWrites = countSocketWrites(() => db.writes++);
    pool.on('acquire', (client) => {
      if (counted.has(client)) return;
      counted.add(client);
      countWrites(client);
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      let inTransaction = false;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        const first = args[0];
        // A protocol transaction (src/db/protocol-transactions.ts): its statements go with Flush, its commit is a Sync.
        if (first instanceof SyncQuery) {
          db.commits++;
          return query(...args);
        }
        db.statements++;
        if (workerScope.getStore()) db.workerStatements++;
        if (first instanceof FlushQuery) return query(...args);
        const text = (typeof first === 'string' ? first : ((first as { text?: string } | undefined)?.text ?? '')).trimStart().slice(0, 24).toLowerCase();
        if (text.startsWith('begin') || text.startsWith('start transaction')) inTransaction = true;
        else if (text.startsWith('commit')) {
          inTransaction = false;
          db.commits++;
        } else if (text.startsWith('rollback to')) {
          // a savepoint: still in the transaction
        } else if (text.startsWith('rollback')) inTransaction = false;
        else if (!inTransaction) db.single++;
        return query(...args);
      };
    });
    const xactCommit = async (): Promise<number | null> => {
      if (!statsClient) return null;
      const r = await statsClient.query<{ c: string }>('SELECT xact_commit::text AS c FROM pg_stat_database WHERE datname = current_database()');
      return Number(r.rows[0]!.c);
    };
    const xactAtStart = await xactCommit();
    let serverCpuStart: Map<number, number> | undefined;
    /** --callgrind: the server's instructions over the measured window (bench/callgrind.ts). */
    let instructions: number | null = null;
    let callgrindZeroed = false;
    let callgrindDump: string | null = null;
    let serverPids: number[] = [];
    /** `primary` or `api` by pid, for naming the processes' CPU profiles. */
    const processLabels = new Map<number, string>();
    let rssAtEnd: Report['results']['server']['rss_mb'] = null;
    let cpuMsByProcess: Record<string, number> | null = null;
    const poolSampler = setInterval(() => {
      poolWaitingMax = Math.max(poolWaitingMax, serverStore.waitingCount);
    }, 50);
    // Webhooks received at the window's edges, for the delivery rate during the load.
    let receivedAtStart: Promise<number> | undefined;
    let receivedAtEnd: Promise<number> | undefined;
    let walAtStart: Promise<string | null> | undefined;
    let walAtEnd: Promise<string | null> | undefined;
    // With --processes the server is not in this process: each of its processes profiles itself.
    const profiler = opts.profile && !servers ? new Profiler() : undefined;
    let profileStarted: Promise<void> | undefined;
    let profileStopped: Promise<CpuProfile | null> | undefined;
    const receiver = receiverThread;
    const uniqueNow = () => receiverStats(receiver).then((s) => s.unique, () => -1);

    let result: DriverResult;
    try {
      result = await runDriver(
        input,
        (w) => {
          driverThread = w;
        },
        (phase) => {
          if (phase === 'measure') {
            eluStart = performance.eventLoopUtilization();
            threadEluStart.driver = driverThread?.performance.eventLoopUtilization();
            benchThreadCpuStart = benchThreadsCpuMs(benchTids);
            threadEluStart.sandbox = sandboxThread?.performance.eventLoopUtilization();
            threadEluStart.receiver = receiverThread?.performance.eventLoopUtilization();
            cpuStart = { usage: process.cpuUsage(), machine: machineCpu(), threads: serverThreadsCpuMs(), at: performance.now() };
            if (servers) serverCpuStart = cpuSnapshot(servers.pids());
            if (callgrindPid !== null) {
              try {
                zeroCounters(callgrindPid);
                callgrindZeroed = true;
              } catch (err) {
                log(`callgrind: could not zero the server's counters: ${err instanceof Error ? err.message : String(err)}`);
              }
            }
            const pgPids = localPostgresPids(databaseUrl);
            pgCpuStart = pgPids.length ? cpuSnapshot(pgPids) : null;
            schedStart = { server: schedSnapshot(servers ? serverMainPids(servers) : [process.pid]), postgres: pgPids.length ? schedSnapshot(pgPids) : null, ticks: readCpuTicks() };
            poolWaitingMax = 0;
            if (splitInWarmup) {
              const from = splitFrom ?? { statements: 0, worker: 0 };
              const statements = db.statements - from.statements;
              workerShare = statements > 0 ? (db.workerStatements - from.worker) / statements : null;
              workerScope.disable();
            }
            dbAtStart = { ...db };
            if (statsClient) walAtStart = walPosition(statsClient).catch(() => null);
            receivedAtStart = uniqueNow();
            if (profiler) profileStarted = profiler.start();
          } else if (phase === 'drain' && eluStart && cpuStart && !eluWindow) {
            if (callgrindPid !== null && callgrindZeroed) {
              try {
                const dumped = dumpCounters(callgrindPid, callgrindDir!);
                instructions = dumped.instructions;
                callgrindDump = dumped.file;
              } catch (err) {
                log(`callgrind: ${err instanceof Error ? err.message : String(err)}`);
              }
            }
            eluWindow = performance.eventLoopUtilization(eluStart);
            threadEluWindow.driver = threadElu(driverThread, threadEluStart.driver);
            threadEluWindow.sandbox = threadElu(sandboxThread, threadEluStart.sandbox);
            threadEluWindow.receiver = threadElu(receiverThread, threadEluStart.receiver);
            const wallMs = performance.now() - cpuStart.at;
            if (benchThreadCpuStart) {
              const start = benchThreadCpuStart;
              const end = benchThreadsCpuMs(benchTids);
              benchThreadCores = eachBenchThread((t) => (start[t] !== null && end[t] !== null ? (end[t]! - start[t]!) / wallMs : null));
            }
            const used = process.cpuUsage(cpuStart.usage);
            cpuCores = (used.user + used.system) / 1000 / wallMs;
            const m = machineCpu();
            machineCores = (m.busy - cpuStart.machine.busy) / wallMs;
            if (pgCpuStart) pgCores = cpuBetweenMs(pgCpuStart, cpuSnapshot(localPostgresPids(databaseUrl))) / wallMs;
            if (schedStart) {
              const server = waitBetween(schedStart.server, schedSnapshot(servers ? serverMainPids(servers) : [process.pid]));
              const postgres = schedStart.postgres ? waitBetween(schedStart.postgres, schedSnapshot(localPostgresPids(databaseUrl))) : null;
              const procs = servers;
              const byProcess = procs ? Object.fromEntries([...server.byPid].map(([pid, ms]) => [`${procs.role(pid)} ${pid}`, ms])) : null;
              runQueue = schedStart.server.size > 0 ? { wallMs, serverMs: server.totalMs, serverMaxMs: server.maxMs, serverByProcess: byProcess, postgresMs: postgres?.totalMs ?? null, steal: stealShare(schedStart.ticks, readCpuTicks()) } : null;
            }
            if (servers && serverCpuStart) {
              // Every server process: the primary (and its outbox worker) and each API child.
              serverPids = servers.pids();
              const end = cpuSnapshot(serverPids);
              mainCores = end.size > 0 ? cpuBetweenMs(serverCpuStart, end) / wallMs : null;
              const perProcess: Record<string, number> = {};
              const cpuByProcess: Record<string, number> = {};
              // The target is per Checkstand process: tsx's esbuild helpers are listed, not judged.
              const values: number[] = [];
              for (const pid of serverPids) {
                const label = servers.role(pid);
                processLabels.set(pid, label);
                const cpuEnd = end.get(pid);
                if (cpuEnd !== undefined) cpuByProcess[`${label} ${pid}`] = cpuEnd - (serverCpuStart.get(pid) ?? 0);
                const b = rssBytes(pid);
                if (b === null) continue;
                perProcess[`${label} ${pid}`] = Math.round(b / 2 ** 20);
                if (isCheckstandRole(label)) values.push(perProcess[`${label} ${pid}`]!);
              }
              rssAtEnd = values.length ? { per_process: perProcess, max: Math.max(...values) } : null;
              cpuMsByProcess = cpuByProcess;
            } else {
              const threads = serverThreadsCpuMs();
              if (threads !== null && cpuStart.threads !== null) {
                threadCpuMs = { main: threads.main - cpuStart.threads.main, mail_writer: threads.mailWriter - cpuStart.threads.mailWriter };
                mainCores = (threadCpuMs.main + threadCpuMs.mail_writer) / wallMs;
              }
              const rss = Math.round(process.memoryUsage().rss / 2 ** 20);
              rssAtEnd = { per_process: { [`this process ${process.pid}`]: rss }, max: rss };
              dbStatementsInWindow = db.statements - dbAtStart.statements;
              if (rt!.ctx.store.kind === 'postgres') dbWritesInWindow = db.writes - dbAtStart.writes;
              dbCommitsInWindow = { explicit: db.commits - dbAtStart.commits, single: db.single - dbAtStart.single };
            }
            if (statsClient) walAtEnd = walPosition(statsClient).catch(() => null);
            receivedAtEnd = uniqueNow();
            if (profiler) profileStopped = (profileStarted ?? Promise.resolve()).then(() => profiler.stop());
          }
        },
        (p) => {
          if (splitInWarmup && !splitFrom && p.phase === 'warmup' && p.elapsedS >= opts.warmupS / 2) splitFrom = { statements: db.statements, worker: db.workerStatements };
          const elu = performance.eventLoopUtilization(lastElu);
          lastElu = performance.eventLoopUtilization();
          log(
            `${pad(p.elapsedS.toFixed(1), 5)} s  ${pad(p.phase, 7, true)} funnels ${pad(p.flowsDone, 6)}  ` +
              `${pad(p.intervalFlowsPerS.toFixed(1), 6)}/s  p50 ${pad(p.intervalP50Ms.toFixed(0), 4)} ms  p99 ${pad(p.intervalP99Ms.toFixed(0), 5)} ms  ` +
              `errors ${p.errors}  in flight ${p.inFlight}` +
                (servers ? '' : `  server busy ${(elu.utilization * 100).toFixed(0)}%  db waiting ${serverStore.waitingCount}/${pool.totalCount}`),
          );
        },
        (stop) => {
          stopDriver = stop;
          if (interrupted) stop();
        },
        (tid) => {
          benchTids.driver ??= tid;
        },
      );
    } finally {
      clearInterval(poolSampler);
    }
    const loadEndedAt = performance.now();
    let profile: CpuProfile | null = null;
    try {
      profile = (await profileStopped) ?? null;
    } catch (err) {
      log(`the CPU profile failed: ${(err as Error).message}`);
    }

    const store = rt.ctx.store;
    // ------------------------------------------------------------------ the provider's webhooks: wait for its payments to settle
    // extpay upsells are answered 202 and added when the provider's payment.succeeded arrives, and
    // the provider sends its webhooks on its own: the outbox's deliveries are counted once the
    // sandbox has delivered every event and nothing is left unsettled, at the provider or here
    // (within --webhook-wait). The card gateway sends no webhooks: nothing to wait for.
    const unsettledHere = async () => {
      const r = await store.run((db) =>
        sql<{ n: number }>`select count(*)::int as n from transactions where team_id = ${seed.team_id} and (status = 'pending' or in_flight)`.execute(db),
      );
      return r.rows[0]!.n;
    };
    let settleWaitedS = 0;
    if (opts.scenario !== 'card') {
      const settleStarted = performance.now();
      let lastSettleLine = settleStarted;
      for (;;) {
        const [l, here] = await Promise.all([provider.readLedger(), unsettledHere()]);
        const undelivered = (l.events ?? []).filter((e) => !e.delivered).length;
        if ((undelivered === 0 && l.unsettled === 0 && here === 0) || interrupted || performance.now() - settleStarted >= opts.webhookWaitS * 1000) break;
        if (performance.now() - lastSettleLine >= Math.min(2000, opts.progressS * 1000)) {
          log(`  provider: ${undelivered} webhooks not yet delivered, ${l.unsettled} payments unsettled there, ${here} transactions unsettled here (${((performance.now() - settleStarted) / 1000).toFixed(1)} s)`);
          lastSettleLine = performance.now();
        }
        await new Promise((r) => setTimeout(r, 200));
      }
      settleWaitedS = (performance.now() - settleStarted) / 1000;
    }

    // ------------------------------------------------------------------ webhooks: wait for the outbox to drain
    const outboxDeliveries = async () => {
      const r = await store.run((db) =>
        sql<{ status: string; n: number }>`select status, count(*)::int as n from webhook_deliveries where endpoint_id = ${endpointId} group by status`.execute(db),
      );
      return Object.fromEntries(r.rows.map((x) => [x.status, x.n])) as Record<string, number>;
    };
    const expectedWebhooks = total(await outboxDeliveries());
    let stats = await receiverStats(receiverThread);
    const waitStarted = performance.now();
    let lastLine = waitStarted;
    let lastUnique = stats.unique;
    if (stats.unique < expectedWebhooks) log(`load done; waiting up to ${opts.webhookWaitS} s for the worker to deliver ${expectedWebhooks - stats.unique} more webhooks`);
    while (stats.unique < expectedWebhooks && !interrupted && performance.now() - waitStarted < opts.webhookWaitS * 1000) {
      await new Promise((r) => setTimeout(r, 200));
      stats = await receiverStats(receiverThread);
      const now = performance.now();
      if (now - lastLine >= Math.min(2000, opts.progressS * 1000)) {
        const byStatus = await outboxDeliveries();
        log(
          `  webhooks ${stats.unique}/${expectedWebhooks} delivered  ${(((stats.unique - lastUnique) * 1000) / (now - lastLine)).toFixed(0)}/s  ` +
            `outbox: ${fmtCounts(byStatus)}  (${((now - waitStarted) / 1000).toFixed(1)} s)`,
        );
        lastLine = now;
        lastUnique = stats.unique;
      }
    }
    // From the end of the load to the last webhook (or to giving up).
    const waitedS = (performance.now() - loadEndedAt) / 1000;
    // Stop the worker (it finishes what it holds), then collect the receiver's final numbers.
    await outboxWorker?.stop();
    outboxWorker = undefined;
    let serversStop: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let processProfiles: Array<{ pid: number; profile: CpuProfile }> = [];
    if (servers) {
      serversStop = await servers.stop();
      servers = undefined;
      // Written by each process as it exited (the children before the primary).
      if (opts.profile) processProfiles = readProcessProfiles(path.join(tmpDir, 'cpu-profiles'));
    }
    const deliveriesByStatus = await outboxDeliveries();
    {
      const answered = nextMessage<{ type: 'final'; stats: ReceiverFinal }>(receiverThread, 'final', 10_000);
      receiverThread.postMessage({ type: 'final' });
      receiverFinal = (await answered).stats;
    }

    // ------------------------------------------------------------------ the sandbox's ledger and the database
    const ledger = await provider.readLedger();

    const counts = await store.run((db) =>
      sql<{
        orders: number;
        transactions: number;
        approved_sales: number;
        unsettled: number;
        completed_events: number;
        completed_event_orders: number;
        completed_orders: number;
        mail: Record<string, number> | null;
        mail_lag: { p50: number; p99: number; max: number } | null;
        events: Record<string, number> | null;
      }>`select
          (select count(*)::int from orders where team_id = ${seed.team_id}) as orders,
          (select count(*)::int from transactions where team_id = ${seed.team_id}) as transactions,
          (select count(*)::int from transactions where team_id = ${seed.team_id} and type = 'sale' and status = 'approved' and ${sql.ref(provider.column)} = ${provider.id}) as approved_sales,
          (select count(*)::int from transactions where team_id = ${seed.team_id} and (status = 'pending' or in_flight)) as unsettled,
          (select count(*)::int from events where team_id = ${seed.team_id} and type = 'order.completed') as completed_events,
          (select count(distinct order_id)::int from events where team_id = ${seed.team_id} and type = 'order.completed') as completed_event_orders,
          (select count(*)::int from orders where team_id = ${seed.team_id} and status = 'completed') as completed_orders,
          (select jsonb_object_agg(status, n) from (select status, count(*)::int as n from mail_messages where team_id = ${seed.team_id} group by status) m) as mail,
          (select case when count(*) > 0 then jsonb_build_object('p50', percentile_cont(0.5) within group (order by ms), 'p99', percentile_cont(0.99) within group (order by ms), 'max', max(ms)) end
             from (select extract(epoch from sent_at - created_at) * 1000 as ms from mail_messages where team_id = ${seed.team_id} and status = 'sent') l) as mail_lag,
          (select jsonb_object_agg(type, n) from (select type, count(*)::int as n from events where team_id = ${seed.team_id} and type in (${sql.join([...WEBHOOK_TYPES])}) group by type) e) as events`.execute(db),
    );
    const c = counts.rows[0]!;
    const mailByStatus = c.mail ?? {};

    // Every connection closed (the in-process server's too), so their xact_commit counters are
    // flushed to pg_stat_database before it is read.
    await app?.close();
    app = undefined;
    await rt.close();
    rt = undefined;
    let xact: Report['results']['server']['xact_commit'] = null;
    if (xactAtStart !== null) {
      await new Promise((r) => setTimeout(r, 500));
      const end = await xactCommit();
      if (end !== null) {
        const n = end - xactAtStart;
        xact = { total: n, per_flow: result.allFlowsCompleted > 0 ? Math.round((n / result.allFlowsCompleted) * 10) / 10 : null };
      }
    }
    const eventsByType = c.events ?? {};

    // ------------------------------------------------------------------ numbers
    const windowMs = result.measuredMs;
    const endpoints: Record<string, EndpointReport> = {};
    const errorsByStatus: Record<string, number> = {};
    let requests = 0;
    let errors = 0;
    const steps = SCENARIO_STEPS[opts.scenario];
    for (const e of steps) {
      const s = result.endpoints[e];
      endpoints[e] = { ...summarize(s.latencies, windowMs), statuses: s.statuses, outcomes: s.outcomes, errors: s.errors };
      requests += s.latencies.length;
      errors += total(s.errors);
      for (const [status, n] of Object.entries(s.errors)) errorsByStatus[`${STEP_NAMES[e]} ${status}`] = n;
    }
    const errorRate = requests > 0 ? errors / requests : 0;
    const flowsPerS = windowMs > 0 ? (result.flowsCompleted * 1000) / windowMs : 0;

    // Targets: reported, never a failure.
    const targetRate = TARGETS.funnels_per_s[kind];
    const p99Targets: Record<string, TargetResult> = {};
    // The API's calls; the provider's pages (the sandbox) have no target.
    for (const e of steps.filter((x) => !SANDBOX_STEPS.has(x))) {
      const p99 = endpoints[e]!.p99_ms;
      p99Targets[STEP_NAMES[e]] = { target: `p99 < ${TARGETS.p99_ms_per_call} ms`, measured: `${p99.toFixed(1)} ms`, met: endpoints[e]!.count > 0 && p99 < TARGETS.p99_ms_per_call };
    }
    const rateTarget: TargetResult = { target: `≥ ${targetRate} funnels/s (${kind})`, measured: `${flowsPerS.toFixed(1)}/s`, met: flowsPerS >= targetRate };
    const goalRate = TARGETS.funnels_per_s_goal[kind];
    const rateGoal: TargetResult = { target: `≥ ${goalRate} funnels/s (${kind})`, measured: `${flowsPerS.toFixed(1)}/s`, met: flowsPerS >= goalRate };
    const perFlow = (n: number | null) => (n !== null && result.flowsCompleted > 0 ? Math.round((n / result.flowsCompleted) * 10) / 10 : null);
    const cpuMsPerFlow = mainCores !== null ? perFlow(mainCores * windowMs) : null;
    // Set in the driver's phase callback, like mainCores.
    const postgresCores = pgCores as number | null;
    const postgresCpuMsPerFlow = postgresCores !== null ? perFlow(postgresCores * windowMs) : null;
    const machineCpuMsPerFlow = machineCores !== null ? perFlow(machineCores * windowMs) : null;
    // Set in the driver's phase callback, like mainCores.
    const threadCores = benchThreadCores as Record<BenchThread, number | null> | null;
    const benchThreadsPerFlow = threadCores ? eachBenchThread((t) => (threadCores[t] === null ? null : perFlow(threadCores[t] * windowMs))) : null;
    const cpus = os.cpus().length;
    const statementsPerFlow = perFlow(dbStatementsInWindow);
    const writesPerFlow = perFlow(dbWritesInWindow as number | null);
    // Set in the driver's phase callback (TypeScript cannot see that it ran): the window's statements in the warm-up's ratio.
    const share = workerShare as number | null;
    const workerStatements = dbStatementsInWindow === null || share === null ? null : dbStatementsInWindow * share;
    const statementsBySource =
      dbStatementsInWindow === null || workerStatements === null ? null : { api: perFlow(dbStatementsInWindow - workerStatements)!, worker: perFlow(workerStatements)! };
    const windowCommits = dbCommitsInWindow as { explicit: number; single: number } | null;
    const rssMb = rssAtEnd as Report['results']['server']['rss_mb'];
    let wal: WalFigures | null = null;
    const [walStart, walEnd] = await Promise.all([walAtStart, walAtEnd]);
    if (statsClient && walStart && walEnd) {
      wal = await walBetween(statsClient, walStart, walEnd, result.flowsCompleted, walInspectNote).catch((err: Error) => {
        log(`the WAL figures failed: ${err.message}`);
        return null;
      });
    }
    // Set in the driver's phase callback, like rssAtEnd.
    const cpuByProcess = cpuMsByProcess as Record<string, number> | null;
    const cpuMsPerFlowByProcess = cpuByProcess ? Object.fromEntries(Object.entries(cpuByProcess).map(([k, ms]) => [k, perFlow(ms)!])) : null;
    const commitsPerFlow =
      windowCommits && result.flowsCompleted > 0
        ? { explicit: perFlow(windowCommits.explicit)!, single_statement: perFlow(windowCommits.single)!, total: perFlow(windowCommits.explicit + windowCommits.single)! }
        : null;
    const cpuTarget = TARGETS.cpu_ms_per_flow[kind];
    const rssTarget = TARGETS.rss_mb[kind];
    const inProcess = opts.processes === null;
    const commitsMeasured = commitsPerFlow?.total ?? xact?.per_flow ?? null;
    const moreTargets = {
      cpu_ms_per_flow: {
        target: `≤ ${cpuTarget} ms (${kind}, all server processes)`,
        measured: cpuMsPerFlow === null ? '?' : `${cpuMsPerFlow} ms`,
        met: cpuMsPerFlow === null ? null : cpuMsPerFlow <= cpuTarget,
      },
      sql_statements_per_flow: {
        target: `≤ ${TARGETS.sql_statements_per_flow} from the API, ≤ ${TARGETS.worker_sql_statements_per_flow} from the worker`,
        measured:
          statementsBySource === null
            ? opts.processes !== null
              ? '? (child processes)'
              : '? (not counted apart without a warm-up)'
            : `API ${statementsBySource.api}, worker ${statementsBySource.worker}`,
        met:
          statementsBySource === null
            ? null
            : statementsBySource.api <= TARGETS.sql_statements_per_flow && statementsBySource.worker <= TARGETS.worker_sql_statements_per_flow,
      },
      commits_per_flow: {
        target: `≤ ${TARGETS.commits_per_flow}`,
        measured: commitsMeasured === null ? '?' : `${commitsMeasured}${commitsPerFlow ? '' : ' (xact_commit, whole run)'}`,
        met: commitsMeasured === null ? null : commitsMeasured <= TARGETS.commits_per_flow,
      },
      rss_mb: {
        target: kind === 'postgres' ? `≤ ${rssTarget} MB per process (PostgreSQL)` : `≤ ${rssTarget} MB for npm start (embedded)`,
        measured: rssMb === null ? '?' : inProcess ? `${rssMb.max} MB (whole bench process; a server's alone: --processes)` : `${rssMb.max} MB (largest)`,
        // In process the figure holds the bench's own threads and heaps too: an upper bound of the
        // server's that judges nothing (`--processes` measures each server process apart).
        met: rssMb === null || inProcess ? null : rssMb.max <= rssTarget,
      },
    } satisfies Record<string, TargetResult>;

    // Correctness: every side effect must match what the API answered over the whole run. An
    // answer that never came (network error, timeout) or a 5xx leaves its effect unknown, so it
    // widens the accepted range by one.
    const T = (e: Endpoint) => result.totals[e];
    // The step whose success means the customer's first payment went through: approved at once
    // (card), paid on the provider's page (extpay), authenticated on the challenge page (threeds).
    const firstCharge = T(FIRST_CHARGE[opts.scenario]);
    const upsell = T('POST /checkout/orders/upsell');
    const complete = T('POST /checkout/orders/complete');
    const captureTotals = T('POST /checkout/orders/capture');
    const within = (value: number, expected: number, slack: number) => value >= expected && value <= expected + slack;
    const checks: Check[] = [];
    const firstName = STEP_NAMES[FIRST_CHARGE[opts.scenario]];
    const expectedSales = firstCharge.ok + upsell.ok;
    const salesSlack = firstCharge.ambiguous + upsell.ambiguous;
    const ledgerProblems: string[] = [];
    if (!within(ledger.approved, expectedSales, salesSlack) || ledger.approved !== c.approved_sales)
      ledgerProblems.push(
        `the sandbox's ${provider.label} holds ${ledger.approved} charges that went through and the database ${c.approved_sales} approved sales on it, ` +
          `for ${expectedSales} answers (${firstName} ${firstCharge.ok} + upsell ${upsell.ok}${salesSlack ? `, +${salesSlack} unanswered` : ''})`,
      );
    if (ledger.unsettled + c.unsettled > salesSlack)
      ledgerProblems.push(`${ledger.unsettled} payments still unsettled at the provider and ${c.unsettled} transactions here after waiting ${settleWaitedS.toFixed(1)} s`);
    checks.push({ name: 'sandbox ledger', ok: ledgerProblems.length === 0, detail: ledgerProblems.join('; ') || 'every charge recorded once, none unsettled' });
    // Completed orders: card orders complete on Complete Order; a redirected payment that went
    // through completes by Capture or by the provider's webhook, whichever comes first, once.
    const expectedCompleted = opts.scenario === 'card' ? complete.ok : firstCharge.ok;
    const logLines = serverLogFile && fs.existsSync(serverLogFile) ? countLines(serverLogFile) : 0;
    const completedSlack = opts.scenario === 'card' ? complete.ambiguous : firstCharge.ambiguous;
    const completedProblems: string[] = [];
    if (c.completed_events !== c.completed_event_orders) completedProblems.push(`${c.completed_events} order.completed events for ${c.completed_event_orders} orders: some order completed twice`);
    if (c.completed_orders !== c.completed_event_orders) completedProblems.push(`${c.completed_orders} completed orders but order.completed events for ${c.completed_event_orders}`);
    if (!within(c.completed_orders, expectedCompleted, completedSlack))
      completedProblems.push(`${c.completed_orders} completed orders for ${expectedCompleted} ${opts.scenario === 'card' ? 'Complete Order answers' : `${firstName} successes`}`);
    checks.push({ name: 'orders completed once', ok: completedProblems.length === 0, detail: completedProblems.join('; ') || 'each paid order completed exactly once' });
    let providerWebhooks: Report['results']['side_effects']['provider_webhooks'] = null;
    if (ledger.events) {
      const byType: Record<string, number> = {};
      for (const e of ledger.events) byType[e.type] = (byType[e.type] ?? 0) + 1;
      const delivered = ledger.events.filter((e) => e.delivered).length;
      providerWebhooks = { events: ledger.events.length, delivered, by_type: byType };
      checks.push({
        name: 'provider webhooks',
        ok: delivered === ledger.events.length,
        detail: delivered === ledger.events.length ? 'the API took every webhook the provider sent' : `the API took ${delivered} of the ${ledger.events.length} webhooks the provider sent`,
      });
    }
    const expectedEvents = upsell.ok + expectedCompleted;
    const eventSlack = upsell.ambiguous + completedSlack;
    const rcv = receiverFinal;
    const webhookProblems: string[] = [];
    if (!within(expectedWebhooks, expectedEvents, eventSlack))
      webhookProblems.push(`the outbox holds ${expectedWebhooks} deliveries for ${expectedEvents} that should emit one (upsell ${upsell.ok} + completed ${expectedCompleted})`);
    if (rcv.unique !== expectedWebhooks)
      webhookProblems.push(
        `the receiver got ${rcv.unique} of ${expectedWebhooks} after waiting ${opts.webhookWaitS} s (outbox: ${fmtCounts(deliveriesByStatus)}` +
          `${(deliveriesByStatus.pending ?? 0) > 0 ? '; pending ones mean the worker is behind: try a longer --webhook-wait' : ''})`,
      );
    if (rcv.badSignatures > 0 || rcv.malformed > 0) webhookProblems.push(`${rcv.badSignatures} bad signatures, ${rcv.malformed} malformed deliveries: ${rcv.firstBad.slice(0, 3).join(' | ')}`);
    checks.push({ name: 'webhooks', ok: webhookProblems.length === 0, detail: webhookProblems.join('; ') || 'every delivery arrived, signed' });
    const mailRows = total(mailByStatus);
    const mailProblems: string[] = [];
    if (!within(mailRows, expectedCompleted, completedSlack)) mailProblems.push(`${mailRows} mail rows for ${expectedCompleted} completed orders`);
    if ((mailByStatus.failed ?? 0) > 0) mailProblems.push(`${mailByStatus.failed} mails failed to send`);
    checks.push({ name: 'mail', ok: mailProblems.length === 0, detail: mailProblems.join('; ') || 'one purchase mail per completed order' });
    if (serversStop) {
      const clean = serversStop.code === 0 && serversStop.signal === null;
      checks.push({ name: 'server stop', ok: clean, detail: clean ? 'serve --processes exited 0 on SIGTERM' : `serve --processes exited ${serversStop.signal ?? serversStop.code} on SIGTERM` });
    }

    let failure: string | null = null;
    if (interrupted) failure = 'interrupted';
    else if (result.flowsCompleted === 0)
      failure =
        result.allFlowsCompleted > 0
          ? `no funnel that started in the measured window completed (${result.allFlowsCompleted} started before it did): a funnel takes longer than the window here, try a longer --duration`
          : 'no funnel completed';
    else if (errorRate > opts.maxErrorRate) failure = `error rate ${(errorRate * 100).toFixed(2)}% is above ${(opts.maxErrorRate * 100).toFixed(2)}%`;
    else if (checks.some((x) => !x.ok)) failure = `correctness: ${checks.filter((x) => !x.ok).map((x) => x.name).join(', ')} mismatch`;

    const { lagsMs, ...receivedStats } = rcv;
    const sortedLags = Float64Array.from(lagsMs).sort();
    const q = (p: number) => (sortedLags.length ? sortedLags[Math.min(sortedLags.length, Math.max(1, Math.ceil((p / 100) * sortedLags.length))) - 1]! : 0);
    const [atStart, atEnd] = await Promise.all([receivedAtStart ?? Promise.resolve(-1), receivedAtEnd ?? Promise.resolve(-1)]);
    // Events the window's answers make: an added or accepted upsell, and a completion (card: Complete
    // Order; a redirected payment: when it went through, by Capture or the provider's webhook).
    const windowEvents = total(endpoints['POST /checkout/orders/upsell']!.outcomes) + total(endpoints[opts.scenario === 'card' ? 'POST /checkout/orders/complete' : FIRST_CHARGE[opts.scenario]]!.outcomes);

    fs.mkdirSync(RESULTS_DIR, { recursive: true });
    const stamp = resultStamp(startedAt);
    // The card funnel's reports keep their name from before scenarios.
    const suffix = opts.scenario === 'card' ? '' : `-${opts.scenario}`;
    const file = path.join(RESULTS_DIR, `${stamp}-${kind}${suffix}.json`);
    let profileReport: Report['results']['profile'] = null;
    if (profile) {
      const profileFile = path.join(RESULTS_DIR, `${stamp}-${kind}${suffix}.cpuprofile`);
      writeProfile(profileFile, profile);
      profileReport = { ...summarizeProfile(profile), file: profileFile };
    }
    // --callgrind: the window's dump, by function (callgrind_annotate <file>, or KCachegrind).
    let callgrindFile: string | null = null;
    if (callgrindDump) {
      callgrindFile = path.join(RESULTS_DIR, `${stamp}-${kind}${suffix}.callgrind.out`);
      fs.copyFileSync(callgrindDump, callgrindFile);
    }
    let processProfilesReport: Report['results']['process_profiles'] = null;
    if (opts.profile && opts.processes !== null) {
      processProfilesReport = processProfiles.map(({ pid, profile: p }) => {
        const label = processLabels.get(pid) ?? 'process';
        const profileFile = path.join(RESULTS_DIR, `${stamp}-${kind}${suffix}-${label}-${pid}.cpuprofile`);
        writeProfile(profileFile, p);
        return { process: `${label} ${pid}`, ...summarizeProfile(p), file: profileFile };
      });
    }

    const report: Report = {
      kind: 'checkstand-bench',
      version: 2,
      scenario: opts.scenario,
      started_at: startedAt.toISOString(),
      finished_at: new Date().toISOString(),
      passed: failure === null,
      failure,
      machine: {
        node: process.version,
        platform: process.platform,
        os_release: os.release(),
        arch: process.arch,
        cpus,
        cpu_model: os.cpus()[0]?.model.trim() ?? 'unknown',
        total_memory_gib: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
        load_average_before: loadAverageBefore,
      },
      git: gitInfo(),
      database: { kind, server_version: serverVersion, url: databaseUrl ? redactUrl(databaseUrl) : null, pool_max: kind === 'pglite' ? 1 : config.dbPoolMax },
      parameters: {
        ...opts,
        flow: flowLines(opts.scenario, guideUpsell.upsell_id),
        card: cardLine(opts.scenario),
        client:
          opts.client === 'sdk'
            ? 'sdk: the typed @checkstand/client over Node global fetch (undici, keep-alive) in a worker thread'
            : opts.client === 'http'
              ? 'http: node:http with a keep-alive agent in a worker thread (bench/plain-http.ts)'
              : 'raw: HTTP/1.1 written on kept-alive sockets, one per request in flight, in a worker thread (bench/raw-http.ts)',
        threads:
          opts.processes === null
            ? `main: server + outbox worker (+ PGlite); worker threads: driver, sandbox (${provider.label}), webhook receiver`
            : `server: ${serverCommand(opts.processes, opts.workers)} (child processes); this process: setup and checks; worker threads: driver, sandbox (${provider.label}), webhook receiver`,
        worker:
          opts.processes === null
            ? `startWorker(ctx, log, { schedules: [${BENCH_SCHEDULES.map((x) => x.name).join(', ')}], withApi: true }); endpoint subscribed to ${WEBHOOK_TYPES.join(', ')}`
            : `serve's worker child or the checkstand worker processes (default schedules, polling and gather window); endpoint subscribed to ${WEBHOOK_TYPES.join(', ')}`,
      },
      targets: {
        funnels_per_s: rateTarget,
        funnels_per_s_goal: rateGoal,
        p99_per_call: p99Targets,
        ...moreTargets,
        all_met: [rateTarget, ...Object.values(p99Targets), ...Object.values(moreTargets)].every((x) => x.met !== false),
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
        totals: Object.fromEntries(steps.map((e) => [STEP_NAMES[e], result.totals[e]])),
        all_funnels_completed: result.allFlowsCompleted,
        side_effects: {
          sandbox_ledger: {
            provider: provider.label,
            approved_sales: ledger.approved,
            charged_minor: ledger.chargedMinor,
            ledger_entries: ledger.entries,
            unsettled: ledger.unsettled,
            expected_approved_sales: expectedSales,
            database_approved_sales: c.approved_sales,
            database_unsettled: c.unsettled,
          },
          orders_completed: {
            events: c.completed_events,
            distinct_orders: c.completed_event_orders,
            completed_orders: c.completed_orders,
            expected: expectedCompleted,
            by_capture: captureTotals.outcomes['200 captured'] ?? 0,
            webhook_first: captureTotals.outcomes['200 already captured (webhook first)'] ?? 0,
          },
          provider_webhooks: providerWebhooks,
          webhooks: {
            expected: expectedWebhooks,
            outbox_deliveries: expectedWebhooks,
            events_by_type: eventsByType,
            received: receivedStats,
            waited_s: Math.round(waitedS * 10) / 10,
            deliveries_by_status: deliveriesByStatus,
            lag_ms: sortedLags.length ? { p50: q(50), p90: q(90), p99: q(99), max: sortedLags[sortedLags.length - 1]! } : null,
            window_delivered_per_s: atStart >= 0 && atEnd >= 0 && windowMs > 0 ? Math.round(((atEnd - atStart) * 10000) / windowMs) / 10 : null,
            window_events_per_s: windowMs > 0 ? Math.round((windowEvents * 10000) / windowMs) / 10 : 0,
          },
          mail: { rows: mailRows, expected: expectedCompleted, by_status: mailByStatus, lag_ms: c.mail_lag },
        },
        checks,
        server: {
          main_thread_utilization: eluWindow && opts.processes === null ? Math.round(eluWindow.utilization * 1000) / 1000 : null,
          thread_utilization: threadEluWindow,
          bench_threads_cpu_ms_per_flow: benchThreadsPerFlow,
          server_thread_cpu_cores: mainCores === null ? null : Math.round(mainCores * 100) / 100,
          server_cpu_ms_per_flow: cpuMsPerFlow,
          server_cpu_ms_per_flow_by_thread: threadCpuMs === null ? null : { main: perFlow(threadCpuMs.main)!, mail_writer: perFlow(threadCpuMs.mail_writer)! },
          server_instructions_per_flow_m: instructions === null ? null : perFlow(instructions / 1e6),
          callgrind_file: callgrindFile,
          process_cpu_cores: cpuCores === null ? null : Math.round(cpuCores * 100) / 100,
          machine_cpu_cores: machineCores === null ? null : Math.round(machineCores * 100) / 100,
          postgres_cpu_ms_per_flow: postgresCpuMsPerFlow,
          machine_cpu_ms_per_flow: machineCpuMsPerFlow,
          machine_flows_per_s_bound:
            machineCpuMsPerFlow !== null && machineCpuMsPerFlow > 0 ? Math.round((cpus * 1000 * 10) / machineCpuMsPerFlow) / 10 : null,
          run_queue: runQueueReport(runQueue as RunQueueFigures | null, perFlow),
          db_pool_waiting_max: poolWaitingMax,
          db_statements_per_flow: statementsPerFlow,
          db_statements_per_flow_by_source: statementsBySource,
          db_round_trips_per_flow: writesPerFlow,
          db_commits_per_flow: commitsPerFlow,
          xact_commit: xact,
          wal,
          server_processes: {
            mode: opts.processes === null ? 'in-process' : 'child processes',
            api_processes: opts.processes ?? 1,
            ...(opts.processes !== null ? { worker_processes: opts.workers } : {}),
            pids: opts.processes === null ? [process.pid] : serverPids,
            ...(serversCode ? { code: serversCode } : {}),
          },
          rss_mb: rssMb,
          cpu_ms_per_flow_by_process: cpuMsPerFlowByProcess,
          log: { level: opts.logLevel, lines: logLines, lines_per_flow: expectedCompleted > 0 ? Math.round((logLines / expectedCompleted) * 10) / 10 : null },
        },
        database_rows: { orders: c.orders, transactions: c.transactions },
        profile: profileReport,
        process_profiles: processProfilesReport,
        first_errors: result.firstErrors,
      },
    };

    fs.writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
    printSummary(report, file);
    if (result.firstErrors.length) {
      log('first errors:');
      for (const e of result.firstErrors) log(`  ${e}`);
    }
    return failure === null ? 0 : interrupted ? 130 : 1;
  } finally {
    // Close in order: the worker, then stop taking requests, close the database, the helper
    // threads, then remove what we created.
    try {
      await outboxWorker?.stop();
    } catch (err) {
      log(`stopping the outbox worker failed: ${(err as Error).message}`);
    }
    try {
      await servers?.stop();
    } catch (err) {
      log(`stopping the server processes failed: ${(err as Error).message}`);
    }
    await statsClient?.end().catch(() => {});
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
    await closeThread(sandboxThread, 'close', 'closed');
    if (!receiverFinal) await closeThread(receiverThread, 'final', 'final');
    else await receiverThread?.terminate();
    if (tmpDir) fs.rmSync(tmpDir, { recursive: true, force: true });
    mailDir?.remove();
    if (databaseUrl && opts.freshDb) await dropBenchDatabase(databaseUrl, log);
  }
}

runMain('bench', main);
