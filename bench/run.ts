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
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import { sql } from 'kysely';
import pg from 'pg';
import pino from 'pino';
import { loadConfig } from '../src/app/config.ts';
import { LIMITS_OFF as BENCH_LIMITS_OFF } from '../test/reliability/limits-off.ts';
import { freePort } from '../test/reliability/processes.ts';
import { createLogger } from '../src/app/logger.ts';
import { openRuntime, type Runtime } from '../src/app/runtime.ts';
import { seedDemo } from '../src/app/seed.ts';
import { buildServer } from '../src/app/server.ts';
import type { Http } from '../src/app/http.ts';
import { placeMailDir, type PlacedMailDir } from './mail-dir.ts';
import { type RunningWorker, SCHEDULES, startWorker } from '../src/worker/worker.ts';
import { UsageError, dropBenchDatabase, gitInfo, recreateDatabase, redactUrl, resultStamp, runMain } from './common.ts';
import { type CpuProfile, Profiler, readProcessProfiles, summarizeProfile, writeProfile } from './profile.ts';
import { callgrindMissing, callgrindWrap, dumpCounters, zeroCounters } from './callgrind.ts';
import { type DriverInput, type ReceiverFinal, SANDBOX_STEPS, SCENARIO_STEPS, STEP_NAMES, summarize, total } from './stats.ts';
import { type ServerProcesses, serverCommand, startServerProcesses } from './server-processes.ts';
import { type DriverResult, nextMessage, runDriver, startTsWorker } from './threads.ts';
import { enableWalInspect, walBetween, walPosition, type WalFigures } from './wal.ts';
import { countStatements } from './statement-count.ts';
import { CpuWindow } from './window-cpu.ts';
import { type Options, parseOptions, USAGE } from './options.ts';
import { checkSideEffects } from './checks.ts';
import { CAPTURE_RETRIES, cardLine, FIRST_CHARGE, flowLines, setUpProvider } from './provider.ts';
import { type BenchThread, closeThread, eachBenchThread, receiverStats } from './gauges.ts';
import { type EndpointReport, fmtCounts, judgeTargets, pad, printSummary, type Report, runQueueReport } from './report.ts';

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

/** The event types the receiver subscribes to: one of each per funnel. */
const WEBHOOK_TYPES = ['order.completed', 'order.upsell_added'] as const;

/** The in-process worker's schedules: the statistics' only (the others have nothing to do in a bench). */
const BENCH_SCHEDULES = SCHEDULES.filter((s) => s.name === 'analyze-changed-tables');

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

    // Gauges over the measured window: CPU, threads and processes (bench/window-cpu.ts), the pool's queue.
    let driverThread: Worker | undefined;
    const cpuWindow = new CpuWindow({
      servers,
      databaseUrl,
      tids: benchTids,
      threads: () => ({ driver: driverThread, sandbox: sandboxThread, receiver: receiverThread }),
    });
    let lastElu = performance.eventLoopUtilization();
    let poolWaitingMax = 0;
    const serverStore = rt.ctx.store;
    const pool = serverStore.pool;
    const db = countStatements(pool, () => workerScope.getStore() === true);
    let dbAtStart = { ...db };
    let dbStatementsInWindow: number | null = null;
    /** The warm-up's second half: statements counted there, and the outbox worker's among them. */
    let splitFrom: { statements: number; worker: number } | null = null;
    let workerShare: number | null = null;
    let dbWritesInWindow: number | null = null;
    let dbCommitsInWindow: { explicit: number; single: number } | null = null;
    const xactCommit = async (): Promise<number | null> => {
      if (!statsClient) return null;
      const r = await statsClient.query<{ c: string }>('SELECT xact_commit::text AS c FROM pg_stat_database WHERE datname = current_database()');
      return Number(r.rows[0]!.c);
    };
    const xactAtStart = await xactCommit();
    /** --callgrind: the server's instructions over the measured window (bench/callgrind.ts). */
    let instructions: number | null = null;
    let callgrindZeroed = false;
    let callgrindDump: string | null = null;
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
            cpuWindow.open();
            if (callgrindPid !== null) {
              try {
                zeroCounters(callgrindPid);
                callgrindZeroed = true;
              } catch (err) {
                log(`callgrind: could not zero the server's counters: ${err instanceof Error ? err.message : String(err)}`);
              }
            }
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
          } else if (phase === 'drain' && cpuWindow.isOpen) {
            if (callgrindPid !== null && callgrindZeroed) {
              try {
                const dumped = dumpCounters(callgrindPid, callgrindDir!);
                instructions = dumped.instructions;
                callgrindDump = dumped.file;
              } catch (err) {
                log(`callgrind: ${err instanceof Error ? err.message : String(err)}`);
              }
            }
            cpuWindow.close();
            if (!servers) {
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

    const perFlow = (n: number | null) => (n !== null && result.flowsCompleted > 0 ? Math.round((n / result.flowsCompleted) * 10) / 10 : null);
    const w = cpuWindow.figures;
    const mainCores = w?.serverCores ?? null;
    const cpuMsPerFlow = mainCores !== null ? perFlow(mainCores * windowMs) : null;
    const postgresCores = w?.postgresCores ?? null;
    const postgresCpuMsPerFlow = postgresCores !== null ? perFlow(postgresCores * windowMs) : null;
    const machineCores = w?.machineCores ?? null;
    const machineCpuMsPerFlow = machineCores !== null ? perFlow(machineCores * windowMs) : null;
    const threadCores = w?.benchThreadCores ?? null;
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
    const rssMb = w?.rssMb ?? null;
    let wal: WalFigures | null = null;
    const [walStart, walEnd] = await Promise.all([walAtStart, walAtEnd]);
    if (statsClient && walStart && walEnd) {
      wal = await walBetween(statsClient, walStart, walEnd, result.flowsCompleted, walInspectNote).catch((err: Error) => {
        log(`the WAL figures failed: ${err.message}`);
        return null;
      });
    }
    const cpuByProcess = w?.cpuMsByProcess ?? null;
    const cpuMsPerFlowByProcess = cpuByProcess ? Object.fromEntries(Object.entries(cpuByProcess).map(([k, ms]) => [k, perFlow(ms)!])) : null;
    const commitsPerFlow =
      windowCommits && result.flowsCompleted > 0
        ? { explicit: perFlow(windowCommits.explicit)!, single_statement: perFlow(windowCommits.single)!, total: perFlow(windowCommits.explicit + windowCommits.single)! }
        : null;
    // Targets: reported, never a failure.
    const targets = judgeTargets({
      kind,
      inProcess: opts.processes === null,
      flowsPerS,
      p99ByCall: Object.fromEntries(steps.filter((x) => !SANDBOX_STEPS.has(x)).map((e) => [STEP_NAMES[e], endpoints[e]!])),
      cpuMsPerFlow,
      statementsBySource,
      commits: commitsPerFlow ? { perFlow: commitsPerFlow.total, from: 'window' } : xact?.per_flow != null ? { perFlow: xact.per_flow, from: 'xact_commit' } : null,
      rssMb,
    });

    // Correctness: every side effect of the whole run against what the API answered (bench/checks.ts).
    const captureTotals = result.totals['POST /checkout/orders/capture'];
    const { checks, expectedSales, expectedCompleted, providerWebhooks, mailRows } = checkSideEffects({
      scenario: opts.scenario,
      totals: result.totals,
      providerLabel: provider.label,
      ledger,
      db: c,
      settleWaitedS,
      webhooks: { outbox: expectedWebhooks, byStatus: deliveriesByStatus, received: receiverFinal, waitS: opts.webhookWaitS },
      mailByStatus,
      serversStop,
    });
    const logLines = serverLogFile && fs.existsSync(serverLogFile) ? countLines(serverLogFile) : 0;

    let failure: string | null = null;
    if (interrupted) failure = 'interrupted';
    else if (result.flowsCompleted === 0)
      failure =
        result.allFlowsCompleted > 0
          ? `no funnel that started in the measured window completed (${result.allFlowsCompleted} started before it did): a funnel takes longer than the window here, try a longer --duration`
          : 'no funnel completed';
    else if (errorRate > opts.maxErrorRate) failure = `error rate ${(errorRate * 100).toFixed(2)}% is above ${(opts.maxErrorRate * 100).toFixed(2)}%`;
    else if (checks.some((x) => !x.ok)) failure = `correctness: ${checks.filter((x) => !x.ok).map((x) => x.name).join(', ')} mismatch`;

    const { lagsMs, ...receivedStats } = receiverFinal;
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
        const label = w?.processLabels.get(pid) ?? 'process';
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
      targets,
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
          main_thread_utilization: w?.serverElu == null ? null : Math.round(w.serverElu * 1000) / 1000,
          thread_utilization: w?.threadElu ?? { driver: null, sandbox: null, receiver: null },
          bench_threads_cpu_ms_per_flow: benchThreadsPerFlow,
          server_thread_cpu_cores: mainCores === null ? null : Math.round(mainCores * 100) / 100,
          server_cpu_ms_per_flow: cpuMsPerFlow,
          server_cpu_ms_per_flow_by_thread: w?.serverThreadCpuMs ? { main: perFlow(w.serverThreadCpuMs.main)!, mail_writer: perFlow(w.serverThreadCpuMs.mail_writer)! } : null,
          server_instructions_per_flow_m: instructions === null ? null : perFlow(instructions / 1e6),
          callgrind_file: callgrindFile,
          process_cpu_cores: w ? Math.round(w.processCores * 100) / 100 : null,
          machine_cpu_cores: machineCores === null ? null : Math.round(machineCores * 100) / 100,
          postgres_cpu_ms_per_flow: postgresCpuMsPerFlow,
          machine_cpu_ms_per_flow: machineCpuMsPerFlow,
          machine_flows_per_s_bound:
            machineCpuMsPerFlow !== null && machineCpuMsPerFlow > 0 ? Math.round((cpus * 1000 * 10) / machineCpuMsPerFlow) / 10 : null,
          run_queue: runQueueReport(w?.runQueue ?? null, perFlow),
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
            pids: opts.processes === null ? [process.pid] : (w?.serverPids ?? []),
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
