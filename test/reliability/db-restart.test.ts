/**
 * Database faults: `serve` and `worker` survive PostgreSQL restarts, and say so.
 *
 * A private PostgreSQL cluster (cluster.ts: initdb in a temporary folder, its own port — never
 * the system server) holds the database. The provider sandbox, `checkstand serve` (no worker)
 * and `checkstand worker` run as their own processes; a webhook endpoint of the team points at a
 * receiver in this test, so every outbox event must travel through the worker. Eight customers
 * run the card funnel (customers.ts) while the cluster is restarted with `pg_ctl restart -m fast`
 * and `-m immediate` (DB_RESTARTS, alternating, fast first). Then the traffic stops, the recovery
 * runs, and the test checks:
 * - the `serve` and `worker` processes at the end are the ones started at the beginning;
 * - no answer ≥ 500 other than `503 database_unavailable` (with Retry-After), and every request
 *   got an answer (no connection cut without one);
 * - the first 2xx after each restart came within DB_RECOVERY_S (10) seconds of the server
 *   accepting connections again; `/readyz` said 503 while it was away and 200 after;
 * - no acknowledged write lost: every lead, payment, upsell, completion and refund the API
 *   answered 2xx is in the database as answered;
 * - every outbox event was delivered to the endpoint, including events created after the last restart;
 * - the sandbox's NMI ledger and the database agree (ledger-check.ts, as in the crash test).
 *
 * `npm run test:crash` (vitest.reliability.config.ts) runs it with the crash test; it needs the
 * PostgreSQL server binaries (Debian's postgresql package; PG_BINDIR to point elsewhere).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecordingReceiver, type RecordingReceiver } from '../support/receiver.ts';
import { type StopMode, PrivateCluster } from './cluster.ts';
import { type Answer, Customers, type TrafficStats } from './customers.ts';
import { readRecords, withDatabase } from './database.ts';
import { ServerGate } from './gate.ts';
import { LIMITS_OFF } from './limits-off.ts';
import { type CheckReport, checkLedger, type NmiEntry } from './ledger-check.ts';
import { BackgroundProcess, type CliResult, ServeProcess, type SandboxProcess, freePort, killAll, runCli, sleep, startSandboxProcess } from './processes.ts';
import { intFromEnv, api } from './setup.ts';

const RESTARTS = intFromEnv('DB_RESTARTS', 5);
const CUSTOMERS = intFromEnv('DB_CUSTOMERS', 8);
/** "The first 2xx within a few seconds after each restart", generous for a loaded 2-core machine. */
const RECOVERY_MS = intFromEnv('DB_RECOVERY_S', 10) * 1000;
const BUDGET_MS = intFromEnv('DB_BUDGET_S', 300) * 1000;
/** Completed funnels wanted before the first restart and between restarts. */
const FUNNELS_BETWEEN = 3;
const SECRET_KEY = 'd8'.repeat(32);
const MODES: StopMode[] = Array.from({ length: RESTARTS }, (_, i) => (i % 2 === 0 ? 'fast' : 'immediate'));

interface Seen {
  at: number;
  path: string;
  status: number | string;
  code: string | undefined;
}

/** What the API acknowledged (answered 2xx): each must be in the database at the end. */
interface Acked {
  leads: Set<string>;
  payments: Set<string>;
  upsellCharges: Set<string>;
  completions: Set<string>;
  refunds: Set<string>;
}

interface RestartRecord {
  mode: StopMode;
  restartMs: number;
  /** From pg_ctl's return (accepting connections) to the first 2xx any customer got. */
  first2xxMs: number | null;
  readyz: number[];
}

interface Outcome {
  restarts: RestartRecord[];
  traffic: TrafficStats;
  answers: Seen[];
  acked: Acked;
  lost: string[];
  servePids: { before: number | undefined; after: number | undefined; running: boolean; starts: number };
  workerPids: { before: number | undefined; after: number | undefined; running: boolean };
  deliveries: { events: number; delivered: number; undelivered: string[]; afterLastRestart: number; notReceived: string[] };
  reconcile: CliResult;
  report: CheckReport;
  metrics: string;
  workerMetrics: string;
  readyAfter: number;
}

let outcome: Outcome | undefined;
let setupError: unknown;
let cluster: PrivateCluster | undefined;
let sandbox: SandboxProcess | undefined;
let serve: ServeProcess | undefined;
let worker: BackgroundProcess | undefined;
let customers: Customers | undefined;
let receiver: RecordingReceiver | undefined;
let dataDir: string | undefined;

function ran(): Outcome {
  if (setupError) throw setupError;
  if (!outcome) throw new Error('the database-restart scenario did not run');
  return outcome;
}

async function query<T extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  await c.connect();
  try {
    return (await c.query<T>(text, values)).rows;
  } finally {
    await c.end();
  }
}

function record(acked: Acked, p: string, body: any, a: Answer): void {
  if (typeof a.status !== 'number' || a.status < 200 || a.status >= 300) return;
  const data = a.body?.data;
  if (p === '/checkout/leads' && typeof data?.order_number === 'string') acked.leads.add(data.order_number);
  else if (p === '/checkout/orders/payment' && a.body?.success === true) acked.payments.add(body.order_number);
  else if (p === '/checkout/orders/upsell' && typeof data?.transaction_id === 'string') acked.upsellCharges.add(data.transaction_id);
  else if (p === '/checkout/orders/complete' && data?.status === 'completed') acked.completions.add(body.order_number);
  else if (p.endsWith('/refunds') && typeof data?.refund?.id === 'string') acked.refunds.add(data.refund.id);
}

/** Acknowledged writes that are not in the database as acknowledged. */
async function lostWrites(url: string, acked: Acked): Promise<string[]> {
  const lost: string[] = [];
  const orders = new Map((await query<{ id: string; status: string }>(url, 'SELECT id, status FROM orders')).map((r) => [r.id, r.status]));
  const txns = await query<{ id: string; order_id: string; type: string; status: string }>(url, 'SELECT id, order_id, type, status FROM transactions');
  const approved = new Map(txns.filter((t) => t.status === 'approved').map((t) => [t.id, t]));
  const paidOrders = new Set(txns.filter((t) => t.type === 'sale' && t.status === 'approved').map((t) => t.order_id));
  for (const o of acked.leads) if (!orders.has(o)) lost.push(`lead ${o}: no such order`);
  for (const o of acked.payments) if (!paidOrders.has(o)) lost.push(`payment of ${o}: no approved sale`);
  for (const t of acked.upsellCharges) if (approved.get(t)?.type !== 'sale') lost.push(`upsell charge ${t}: not an approved sale`);
  for (const o of acked.completions) if (orders.get(o) !== 'completed' && orders.get(o) !== 'refunded' && orders.get(o) !== 'partially_refunded') lost.push(`completion of ${o}: order is ${orders.get(o)}`);
  for (const t of acked.refunds) if (approved.get(t)?.type !== 'refund') lost.push(`refund ${t}: not an approved refund`);
  return lost;
}

async function waitReady(url: string, proc: BackgroundProcess, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!proc.running) throw new Error(`checkstand worker exited before ${url} answered:\n${proc.logs()}`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      await res.text();
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`checkstand worker: ${url} did not answer 200 within ${timeoutMs} ms:\n${proc.logs()}`);
    await sleep(50);
  }
}

async function pollReadyz(base: string, until: () => boolean): Promise<number[]> {
  const seen: number[] = [];
  while (!until()) {
    try {
      const res = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(5_000) });
      await res.text();
      if (seen[seen.length - 1] !== res.status) seen.push(res.status);
    } catch {
      if (seen[seen.length - 1] !== 0) seen.push(0);
    }
    await sleep(25);
  }
  return seen;
}

async function scenario(): Promise<Outcome> {
  cluster = await PrivateCluster.create();
  await query(cluster.url, 'CREATE DATABASE checkstand');
  const dbUrl = withDatabase(cluster.url, 'checkstand');
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkstand-dbfault-'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: dbUrl,
    CHECKSTAND_SECRET_KEY: SECRET_KEY,
    CHECKSTAND_DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    SANDBOX_SLOW_MS: '250',
    CHECKSTAND_SANDBOX: 'off',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_RETRY_SCHEDULE_MS: '500,1000,2000,5000,10000',

    ...LIMITS_OFF,
  };
  delete env.TEST_DATABASE_URL;
  delete env.PUBLIC_BASE_URL;

  sandbox = await startSandboxProcess(env);
  const migrated = await runCli(['migrate'], env);
  if (migrated.code !== 0) throw new Error(`checkstand migrate exited ${migrated.code}:\n${migrated.stderr}`);
  const seeded = await runCli(['seed', '--demo', '--json', '--no-gateway', '--team-name', 'Database faults'], env);
  if (seeded.code !== 0) throw new Error(`checkstand seed exited ${seeded.code}:\n${seeded.stderr}`);
  const seed = JSON.parse(seeded.stdout) as { token: string; campaign_id: string; offers: Record<string, string>; upsells: Array<{ upsell_id: string; offer_id: string }> };

  serve = new ServeProcess(await freePort(), env);
  await serve.start();
  const workerMetricsPort = await freePort();
  worker = new BackgroundProcess(['worker'], { ...env, HOST: '127.0.0.1', WORKER_METRICS_PORT: String(workerMetricsPort) });
  // The worker is up (runtime open, metrics listening) before the first restart: the test is about
  // surviving restarts, and a start that meets one exits non-zero by design (its supervisor restarts it).
  await waitReady(`http://127.0.0.1:${workerMetricsPort}/readyz`, worker);
  const securityKey = `dbfault_${randomBytes(12).toString('hex')}`;
  const gateway = await api(serve.url, seed.token, 'POST', '/v1/gateways', {
    kind: 'nmi',
    name: 'Database-fault sandbox gateway',
    base_url: sandbox.url,
    credentials: { security_key: securityKey },
    test_mode: true,
  });
  await api(serve.url, seed.token, 'PATCH', `/v1/campaigns/${seed.campaign_id}`, { gateway_id: gateway.id });
  receiver = await startRecordingReceiver();
  const endpoint = await api(serve.url, seed.token, 'POST', '/v1/webhook-endpoints', { url: `${receiver.url}/hooks`, event_types: ['*'] });

  const servePid = serve.pid;
  const workerPid = worker.pid;
  const answers: Seen[] = [];
  const acked: Acked = { leads: new Set(), payments: new Set(), upsellCharges: new Set(), completions: new Set(), refunds: new Set() };
  const gate = new ServerGate();
  gate.open();
  customers = new Customers({
    baseUrl: serve.url,
    token: seed.token,
    runId: randomBytes(4).toString('hex'),
    campaignId: seed.campaign_id,
    offerId: seed.offers.serum!,
    upsellIds: seed.upsells.map((u) => u.upsell_id).slice(0, 2),
    customers: CUSTOMERS,
    gate,
    triesPerStep: 12,
    requestTimeoutMs: 30_000,
    refundShare: 0.3,
    onAnswer: (p, body, a) => {
      answers.push({ at: Date.now(), path: p, status: a.status, code: a.body?.error?.code });
      record(acked, p, body, a);
    },
  });
  customers.start();

  const started = Date.now();
  const budgetLeft = () => BUDGET_MS - (Date.now() - started);
  const waitFunnels = async (n: number) => {
    const target = customers!.stats.funnelsCompleted + n;
    while (customers!.stats.funnelsCompleted < target) {
      if (budgetLeft() <= 0) throw new Error(`out of time (${BUDGET_MS / 1000} s) waiting for ${n} funnels; ${customers!.stats.funnelsCompleted} completed\n${serve!.logs()}`);
      await sleep(50);
    }
  };
  await waitFunnels(FUNNELS_BETWEEN);

  const restarts: RestartRecord[] = [];
  let lastRestartAt = 0;
  for (const mode of MODES) {
    let restarting = true;
    const readyz = pollReadyz(serve.url, () => !restarting);
    const restartMs = await cluster.restart(mode);
    const back = Date.now();
    lastRestartAt = back;
    // The first 2xx after the server accepts connections again.
    let first2xxMs: number | null = null;
    while (Date.now() - back < RECOVERY_MS * 3) {
      const ok = answers.find((a) => a.at >= back && typeof a.status === 'number' && a.status >= 200 && a.status < 300);
      if (ok) {
        first2xxMs = ok.at - back;
        break;
      }
      await sleep(20);
    }
    // /readyz is polled a little past the restart, so it sees the 200 again.
    await sleep(300);
    restarting = false;
    restarts.push({ mode, restartMs, first2xxMs, readyz: await readyz });
    await waitFunnels(FUNNELS_BETWEEN);
  }
  const traffic = await customers.stop();

  // Recovery: attempts whose answer was never recorded (a restart between charge and record).
  const reconcile = await runCli(['reconcile', '--grace-seconds', '0'], env, 120_000);

  // Every event reaches the endpoint: the worker delivers, including what the outages delayed.
  let pendingDeliveries: Array<{ event_id: string; status: string }> = [];
  const deliveryDeadline = Date.now() + 120_000;
  for (;;) {
    pendingDeliveries = await query(dbUrl, `SELECT event_id, status FROM webhook_deliveries WHERE endpoint_id = $1 AND status <> 'succeeded'`, [endpoint.id]);
    if (pendingDeliveries.length === 0 || Date.now() > deliveryDeadline) break;
    await sleep(250);
  }
  const events = await query<{ id: string; created_at: Date }>(dbUrl, 'SELECT id, created_at FROM events');
  const deliveredRows = await query<{ event_id: string }>(dbUrl, `SELECT event_id FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'succeeded'`, [endpoint.id]);
  const delivered = new Set(deliveredRows.map((r) => r.event_id));
  const received = new Set(receiver.deliveries.map((d) => String(d.headers['webhook-id'])));
  const undelivered = events.filter((e) => !delivered.has(e.id)).map((e) => e.id);
  const notReceived = [...delivered].filter((id) => !received.has(id));

  const ledgerRes = await fetch(`${sandbox.url}/sandbox/nmi/ledger?security_key=${encodeURIComponent(securityKey)}`, { signal: AbortSignal.timeout(30_000) });
  if (!ledgerRes.ok) throw new Error(`GET /sandbox/nmi/ledger → ${ledgerRes.status}`);
  const ledger = (await ledgerRes.json()) as { transactions: NmiEntry[] };
  const report = checkLedger(ledger.transactions, await readRecords(dbUrl));
  const metrics = await (await fetch(`${serve.url}/metrics`)).text();
  const workerMetrics = await (await fetch(`http://127.0.0.1:${workerMetricsPort}/metrics`)).text();
  const readyAfter = (await fetch(`${serve.url}/readyz`)).status;

  return {
    restarts,
    traffic,
    answers,
    acked,
    lost: await lostWrites(dbUrl, acked),
    servePids: { before: servePid, after: serve.pid, running: serve.running, starts: serve.starts },
    workerPids: { before: workerPid, after: worker.pid, running: worker.running },
    deliveries: {
      events: events.length,
      delivered: delivered.size,
      undelivered: [...undelivered, ...pendingDeliveries.map((p) => `${p.event_id} (${p.status})`)],
      afterLastRestart: events.filter((e) => e.created_at.getTime() > lastRestartAt && delivered.has(e.id)).length,
      notReceived,
    },
    reconcile,
    report,
    metrics,
    workerMetrics,
    readyAfter,
  };
}

function summarize(o: Outcome): string {
  const byStatus: Record<string, number> = {};
  for (const a of o.answers) byStatus[String(a.status)] = (byStatus[String(a.status)] ?? 0) + 1;
  const s = o.traffic;
  const acked = Object.fromEntries(Object.entries(o.acked).map(([k, v]) => [k, (v as Set<string>).size]));
  return [
    `db-faults: ${o.restarts.length} restarts: ${o.restarts.map((r) => `${r.mode} ${r.restartMs} ms → first 2xx +${r.first2xxMs ?? '∞'} ms, readyz ${r.readyz.join('→')}`).join('; ')}`,
    `db-faults: ${s.ordersStarted} orders started, ${s.funnelsCompleted} funnels completed, ${s.requests} requests; answers by status ${JSON.stringify(byStatus)}`,
    `db-faults: acknowledged ${JSON.stringify(acked)}, lost ${o.lost.length}; serve pid ${o.servePids.before}→${o.servePids.after} (starts ${o.servePids.starts}), worker pid ${o.workerPids.before}→${o.workerPids.after}`,
    `db-faults: events ${o.deliveries.events}, delivered ${o.deliveries.delivered} (after the last restart ${o.deliveries.afterLastRestart}), undelivered ${o.deliveries.undelivered.length}, not seen by the receiver ${o.deliveries.notReceived.length}`,
    `db-faults: ledger: unrecorded ${o.report.counts.unrecordedCharges}, double ${o.report.counts.doubleChargedOrders}, stuck ${o.report.counts.stuckOrders}, refunds ${o.report.counts.refundMismatches}, phantom ${o.report.counts.recordsWithoutMoney}; NMI charges ${o.report.totals.nmiApprovedSales}`,
    `db-faults: ${o.metrics.split('\n').filter((l) => l.startsWith('checkstand_db_')).join('; ')}`,
  ].join('\n');
}

describe('database faults: serve and worker survive PostgreSQL restarts', () => {
  beforeAll(async () => {
    try {
      outcome = await scenario();
      console.log(summarize(outcome));
    } catch (err) {
      setupError = err;
      if (serve) console.log(`db-faults: serve log tail:\n${serve.logs()}`);
      if (worker) console.log(`db-faults: worker log tail:\n${worker.logs()}`);
      if (cluster) console.log(cluster.logTail());
    }
  });

  afterAll(async () => {
    await customers?.stop().catch(() => {});
    await serve?.kill();
    await worker?.kill();
    await sandbox?.stop();
    await receiver?.close();
    await killAll();
    await cluster?.destroy();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it(`restarted the database ${RESTARTS} times (fast and immediate) under ${CUSTOMERS} customers`, () => {
    const o = ran();
    expect(o.restarts.map((r) => r.mode)).toEqual(MODES);
    expect(o.traffic.funnelsCompleted).toBeGreaterThanOrEqual(FUNNELS_BETWEEN * (RESTARTS + 1));
  });

  it('the serve and worker processes at the end are the ones started at the beginning', () => {
    const o = ran();
    expect(o.servePids.running, serve?.logs()).toBe(true);
    expect(o.servePids.starts).toBe(1);
    expect(o.servePids.after).toBe(o.servePids.before);
    expect(o.workerPids.running, worker?.logs()).toBe(true);
    expect(o.workerPids.after).toBe(o.workerPids.before);
  });

  it('every request got an answer, and no answer ≥ 500 other than 503 database_unavailable', () => {
    const o = ran();
    const cut = o.answers.filter((a) => typeof a.status === 'string');
    expect(cut.map((a) => `${a.path} ${a.status}`)).toEqual([]);
    const bad = o.answers.filter((a) => typeof a.status === 'number' && a.status >= 500 && !(a.status === 503 && a.code === 'database_unavailable'));
    expect(bad.map((a) => `${a.path} ${a.status} ${a.code}`)).toEqual([]);
    // The outages were seen: some requests did get the clean 503.
    expect(o.answers.some((a) => a.status === 503)).toBe(true);
  });

  it(`the first 2xx after each restart came within ${RECOVERY_MS / 1000} s; /readyz said 503 while the database was away and 200 after`, () => {
    const o = ran();
    for (const r of o.restarts) {
      expect(r.first2xxMs, `${r.mode} restart`).not.toBeNull();
      expect(r.first2xxMs!, `${r.mode} restart`).toBeLessThanOrEqual(RECOVERY_MS);
      expect(r.readyz[r.readyz.length - 1], `${r.mode} restart: readyz ${r.readyz.join('→')}`).toBe(200);
    }
    expect(o.restarts.some((r) => r.readyz.includes(503))).toBe(true);
    expect(o.readyAfter).toBe(200);
    expect(o.metrics).toMatch(/^checkstand_db_up 1$/m);
    const errors = Number(/^checkstand_db_connection_errors_total (\d+)/m.exec(o.metrics)?.[1]);
    expect(errors).toBeGreaterThan(0);
    // The worker reports on its own listener (WORKER_METRICS_PORT): it saw the outages too, and is back.
    expect(o.workerMetrics).toMatch(/^checkstand_db_up 1$/m);
    expect(Number(/^checkstand_db_connection_errors_total (\d+)/m.exec(o.workerMetrics)?.[1])).toBeGreaterThan(0);
  });

  it('no acknowledged write was lost', () => {
    const o = ran();
    expect(o.acked.leads.size).toBeGreaterThan(0);
    expect(o.acked.completions.size).toBeGreaterThan(0);
    expect(o.lost).toEqual([]);
  });

  it('every outbox event was delivered by the worker, including events created after the last restart', () => {
    const o = ran();
    expect(o.deliveries.events).toBeGreaterThan(0);
    expect(o.deliveries.undelivered).toEqual([]);
    expect(o.deliveries.notReceived).toEqual([]);
    expect(o.deliveries.afterLastRestart).toBeGreaterThan(0);
  });

  it('money: the recovery exits 0 and the provider ledger and the database agree (no unrecorded or double charge)', () => {
    const o = ran();
    expect(o.reconcile.code, o.reconcile.stderr.slice(-2000)).toBe(0);
    const c = o.report.counts;
    const ex = JSON.stringify(o.report.examples).slice(0, 2000);
    expect(c.unrecordedCharges, ex).toBe(0);
    expect(c.doubleChargedOrders, ex).toBe(0);
    expect(c.stuckOrders, ex).toBe(0);
    expect(c.refundMismatches, ex).toBe(0);
    expect(c.recordsWithoutMoney, ex).toBe(0);
  });
});
