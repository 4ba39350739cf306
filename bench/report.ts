/**
 * The bench's report: the JSON it writes (bench/results/…) and the summary it prints, and the
 * issue's targets they are judged against.
 */
import path from 'node:path';
import type { ProfileSummary } from './profile.ts';
import { FIRST_CHARGE, FUNNEL_LINE } from './provider.ts';
import type { BenchLogLevel, Options } from './options.ts';
import { serverCommand, serverProcessesLabel } from './server-processes.ts';
import { type EndpointSamples, type LatencySummary, type ReceiverStats, SANDBOX_STEPS, SCENARIO_STEPS, type Scenario, STEP_NAMES, type StepTotals } from './stats.ts';
import { walLine, type WalFigures } from './wal.ts';

/** The issue's targets on a 2-core machine (issue 13), and its goals beyond them. */
export const TARGETS = {
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

export function pad(s: string | number, n: number, right = false): string {
  const t = String(s);
  return right ? t.padEnd(n) : t.padStart(n);
}

export function fmtCounts(counts: Record<string, number>): string {
  const entries = Object.entries(counts).sort((a, b) => b[1] - a[1]);
  return entries.length ? entries.map(([k, v]) => `${k}: ${v}`).join(', ') : 'none';
}

/** An endpoint's figures in the report: its latency summary and the window's counts as the driver sent them. */
export type EndpointReport = LatencySummary & Omit<EndpointSamples, 'latencies'>;

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

export interface TargetResult {
  target: string;
  measured: string;
  /** null: not measured in this run (see `measured`). */
  met: boolean | null;
}

export interface Report {
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

/** What judgeTargets weighs: the run's figures, per completed funnel where they are counts. */
export interface TargetInputs {
  kind: 'pglite' | 'postgres';
  /** The server in the bench's process: its RSS is the whole bench's, which judges nothing. */
  inProcess: boolean;
  flowsPerS: number;
  /** The API's calls (not the provider's pages), by step name. */
  p99ByCall: Record<string, Pick<LatencySummary, 'count' | 'p99_ms'>>;
  cpuMsPerFlow: number | null;
  /** Null with `--processes` (counted in this process only) or without a warm-up (not counted apart). */
  statementsBySource: { api: number; worker: number } | null;
  /** Counted in the window (in process), or pg_stat_database's xact_commit over the whole run. */
  commits: { perFlow: number; from: 'window' | 'xact_commit' } | null;
  rssMb: { max: number } | null;
}

/** The issue's targets against a run's figures: met, not met, or not measured (null). Never a failure of the run. */
export function judgeTargets(f: TargetInputs): Report['targets'] {
  const { kind } = f;
  const p99_per_call: Record<string, TargetResult> = {};
  for (const [name, s] of Object.entries(f.p99ByCall)) {
    p99_per_call[name] = { target: `p99 < ${TARGETS.p99_ms_per_call} ms`, measured: `${s.p99_ms.toFixed(1)} ms`, met: s.count > 0 && s.p99_ms < TARGETS.p99_ms_per_call };
  }
  const rate = TARGETS.funnels_per_s[kind];
  const funnels_per_s: TargetResult = { target: `≥ ${rate} funnels/s (${kind})`, measured: `${f.flowsPerS.toFixed(1)}/s`, met: f.flowsPerS >= rate };
  const goal = TARGETS.funnels_per_s_goal[kind];
  const funnels_per_s_goal: TargetResult = { target: `≥ ${goal} funnels/s (${kind})`, measured: `${f.flowsPerS.toFixed(1)}/s`, met: f.flowsPerS >= goal };
  const cpuTarget = TARGETS.cpu_ms_per_flow[kind];
  const rssTarget = TARGETS.rss_mb[kind];
  const sbs = f.statementsBySource;
  const more = {
    cpu_ms_per_flow: {
      target: `≤ ${cpuTarget} ms (${kind}, all server processes)`,
      measured: f.cpuMsPerFlow === null ? '?' : `${f.cpuMsPerFlow} ms`,
      met: f.cpuMsPerFlow === null ? null : f.cpuMsPerFlow <= cpuTarget,
    },
    sql_statements_per_flow: {
      target: `≤ ${TARGETS.sql_statements_per_flow} from the API, ≤ ${TARGETS.worker_sql_statements_per_flow} from the worker`,
      measured: sbs === null ? (f.inProcess ? '? (not counted apart without a warm-up)' : '? (child processes)') : `API ${sbs.api}, worker ${sbs.worker}`,
      met: sbs === null ? null : sbs.api <= TARGETS.sql_statements_per_flow && sbs.worker <= TARGETS.worker_sql_statements_per_flow,
    },
    commits_per_flow: {
      target: `≤ ${TARGETS.commits_per_flow}`,
      measured: f.commits === null ? '?' : `${f.commits.perFlow}${f.commits.from === 'window' ? '' : ' (xact_commit, whole run)'}`,
      met: f.commits === null ? null : f.commits.perFlow <= TARGETS.commits_per_flow,
    },
    rss_mb: {
      target: kind === 'postgres' ? `≤ ${rssTarget} MB per process (PostgreSQL)` : `≤ ${rssTarget} MB for npm start (embedded)`,
      measured: f.rssMb === null ? '?' : f.inProcess ? `${f.rssMb.max} MB (whole bench process; a server's alone: --processes)` : `${f.rssMb.max} MB (largest)`,
      // In process the figure holds the bench's own threads and heaps too: an upper bound of the
      // server's that judges nothing (`--processes` measures each server process apart).
      met: f.rssMb === null || f.inProcess ? null : f.rssMb.max <= rssTarget,
    },
  } satisfies Record<string, TargetResult>;
  return {
    funnels_per_s,
    funnels_per_s_goal,
    p99_per_call,
    ...more,
    all_met: [funnels_per_s, ...Object.values(p99_per_call), ...Object.values(more)].every((x) => x.met !== false),
  };
}

const pct = (v: number | null) => (v === null ? '?' : `${(v * 100).toFixed(0)}%`);
const mark = (met: boolean | null) => (met === null ? 'not measured' : met ? 'PASS' : 'BELOW TARGET');

export function printSummary(r: Report, file: string | null): void {
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

/** The run-queue figures over the window, as measured (ms), before they are put per funnel. */
export interface RunQueueFigures {
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

export function runQueueReport(f: RunQueueFigures | null, perFlow: (n: number | null) => number | null): Report['results']['server']['run_queue'] {
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
