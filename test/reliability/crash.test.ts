/**
 * Money never moves without a record, even when a process dies.
 *
 * The provider sandbox and the API run as their own processes (`checkstand sandbox`,
 * `checkstand serve` without the worker) on a fresh PostgreSQL database. Sixteen customers run
 * the card funnel over HTTP — lead, payment, one-click upsells, complete, some refunds — while
 * the API is SIGKILLed at random moments of its uptime and restarted, CRASH_KILLS times. Then the
 * traffic stops, the API starts once more, the recovery runs (`checkstand reconcile
 * --grace-seconds 0`: settles every attempt whose outcome was never recorded by asking the
 * provider), and the sandbox's NMI ledger is reconciled with the database (ledger-check.ts).
 *
 * `npm run test:crash` (vitest.reliability.config.ts); needs TEST_DATABASE_URL (a role that may
 * CREATE DATABASE). Sized by counts, not speed: CRASH_KILLS kills (20) and CRASH_MIN_FUNNELS
 * completed funnels (40); it fails if reaching both takes longer than CRASH_BUDGET_S (240).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Customers, type TrafficStats } from './customers.ts';
import { createScratchDatabase, readRecords, type ScratchDatabase } from './database.ts';
import { ServerGate } from './gate.ts';
import { LIMITS_OFF } from './limits-off.ts';
import { type CheckReport, checkLedger, type NmiEntry } from './ledger-check.ts';
import { type CliResult, ServeProcess, type SandboxProcess, freePort, killAll, runCli, sleep, startSandboxProcess } from './processes.ts';
import { intFromEnv, api, parseTally } from './setup.ts';

const KILLS = intFromEnv('CRASH_KILLS', 20);
const MIN_FUNNELS = intFromEnv('CRASH_MIN_FUNNELS', 40);
const CUSTOMERS = intFromEnv('CRASH_CUSTOMERS', 16);
/** The kill-and-restart phase must reach both counts within this; CI must end in bounded time. */
const BUDGET_MS = intFromEnv('CRASH_BUDGET_S', 240) * 1000;
/** Uptime before each kill, from the first 200 on /healthz. */
const UPTIME_MS = { min: 150, max: 1500 };
/** How long the sandbox's slow approving card takes: half of the customers pay with it. */
const SANDBOX_SLOW_MS = 250;
const SECRET_KEY = 'c7'.repeat(32);

interface Outcome {
  kills: number;
  uptimesMs: number[];
  chaosMs: number;
  /** Set when the counts were not reached within the budget. */
  shortfall: string | null;
  traffic: TrafficStats;
  reconcile: CliResult;
  tally: unknown;
  report: CheckReport;
  serverLogs: string;
}

let outcome: Outcome | undefined;
let setupError: unknown;

let db: ScratchDatabase | undefined;
let sandbox: SandboxProcess | undefined;
let serve: ServeProcess | undefined;
let customers: Customers | undefined;
let dataDir: string | undefined;

function ran(): Outcome {
  if (setupError) throw setupError;
  if (!outcome) throw new Error('the crash scenario did not run');
  return outcome;
}

function summarize(o: Outcome): string {
  const c = o.report.counts;
  const t = o.report.totals;
  const s = o.traffic;
  const lines = [
    `crash: ${o.kills} kills in ${(o.chaosMs / 1000).toFixed(0)} s (uptime before each: ${o.uptimesMs.join(', ')} ms); ` +
      `${s.ordersStarted} orders started, ${s.funnelsCompleted} funnels completed, ${s.refundsApproved} refunds answered 201; ` +
      `NMI: ${t.nmiApprovedSales} approved charges (${t.nmiChargedMinor} minor), ${t.nmiApprovedRefunds} refunds (${t.nmiRefundedMinor} minor); ` +
      `DB: ${t.dbApprovedSales} approved sales, ${t.dbApprovedRefunds} approved refunds (${t.dbRefundedMinor} minor)`,
    `crash: (a) charges without a transaction ${c.unrecordedCharges} [by provider_ref ${c.unrecordedByRef}, by orderid ${c.unrecordedByOrderId}]; ` +
      `(b) orders charged twice for one step ${c.doubleChargedOrders} [steps ${c.doubleChargedSteps}, over 1+upsells ${c.ordersOverChargeCount}]; ` +
      `(c) orders without a way forward ${c.stuckOrders} [pending transactions ${c.pendingTransactions}, pending orders ${c.pendingOrders}, upsell claims in flight ${c.inFlightUpsellClaims}]; ` +
      `(d) refund mismatches ${c.refundMismatches} [sales ${c.refundMismatchedSales}, unrecorded NMI refunds ${c.unrecordedRefunds}, refunded_total ${c.refundedTotalMismatches}]; ` +
      `(e) records without money ${c.recordsWithoutMoney} [sales ${c.phantomSales}, paid totals ${c.paidTotalMismatches}]`,
    `crash: reconcile exit ${o.reconcile.code ?? o.reconcile.signal} in ${o.reconcile.ms} ms, tally ${JSON.stringify(o.tally) ?? '(none)'}`,
    `crash: traffic ${s.requests} requests, ${s.networkErrors} no answer, ${s.serverErrors} 5xx, ${s.inProgress409} in-progress 409, ${s.replays} replays; ` +
      `retried ${JSON.stringify(s.retried)}; gave up ${JSON.stringify(s.gaveUp)}; unexpected answers ${s.unexpected}`,
    `crash: orders by status ${JSON.stringify(t.ordersByStatus)}`,
  ];
  for (const [k, ex] of Object.entries(o.report.examples)) for (const e of ex) lines.push(`crash: (${k}) ${e}`);
  for (const u of s.unexpectedSamples) lines.push(`crash: unexpected ${u}`);
  return lines.join('\n');
}

async function scenario(): Promise<Outcome> {
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl) {
    throw new Error('npm run test:crash needs TEST_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/postgres, a role that may CREATE DATABASE)');
  }
  db = await createScratchDatabase(serverUrl);
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkstand-crash-'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: db.url,
    CHECKSTAND_SECRET_KEY: SECRET_KEY,
    CHECKSTAND_DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    SANDBOX_SLOW_MS: String(SANDBOX_SLOW_MS),
    CHECKSTAND_SANDBOX: 'off',

    ...LIMITS_OFF,
  };
  delete env.TEST_DATABASE_URL;
  delete env.PUBLIC_BASE_URL;

  sandbox = await startSandboxProcess(env);
  const migrated = await runCli(['migrate'], env);
  if (migrated.code !== 0) throw new Error(`checkstand migrate exited ${migrated.code}:\n${migrated.stderr}`);
  // The demo team, campaign, offers and upsells; the card gateway is added over the API below,
  // with a security key the test knows, so the sandbox's ledger can be read for that account.
  const seeded = await runCli(['seed', '--demo', '--json', '--no-gateway', '--team-name', 'Crash test'], env);
  if (seeded.code !== 0) throw new Error(`checkstand seed exited ${seeded.code}:\n${seeded.stderr}`);
  const seed = JSON.parse(seeded.stdout) as { token: string; campaign_id: string; products: Record<string, string>; offers: Record<string, string>; upsells: Array<{ upsell_id: string; offer_id: string }> };

  serve = new ServeProcess(await freePort(), env);
  await serve.start();
  const securityKey = `crash_${randomBytes(12).toString('hex')}`;
  const gateway = await api(serve.url, seed.token, 'POST', '/v1/gateways', {
    kind: 'nmi',
    name: 'Crash-test sandbox gateway',
    base_url: sandbox.url,
    credentials: { security_key: securityKey },
    test_mode: true,
  });
  await api(serve.url, seed.token, 'PATCH', `/v1/campaigns/${seed.campaign_id}`, { gateway_id: gateway.id });
  // Two charged upsells: the demo's $9 guide, and a second bottle added here.
  const guide = seed.upsells.find((u) => u.offer_id === seed.offers.guide)!;
  const bottle = await api(serve.url, seed.token, 'POST', '/v1/offers', {
    campaign_id: seed.campaign_id,
    product_id: seed.products.serum,
    name: 'Glow Serum, second bottle',
    price: 2900,
    shipping: 0,
    billing: 'one_time',
    fulfillment_type: 'physical',
  });
  const bottleUpsell = await api(serve.url, seed.token, 'POST', '/v1/upsells', { campaign_id: seed.campaign_id, offer_id: bottle.id, step: 3, name: 'Add a second bottle' });

  const gate = new ServerGate();
  gate.open();
  customers = new Customers({
    baseUrl: serve.url,
    token: seed.token,
    runId: randomBytes(4).toString('hex'),
    campaignId: seed.campaign_id,
    offerId: seed.offers.serum!,
    upsellIds: [guide.upsell_id, bottleUpsell.id],
    customers: CUSTOMERS,
    gate,
    triesPerStep: 5,
    requestTimeoutMs: 20_000,
    refundShare: 0.4,
  });
  customers.start();

  // Kill at random moments of uptime and restart, KILLS times. If fewer than MIN_FUNNELS funnels
  // have completed by then, the API stays up until they have; a last kill ends the traffic, so
  // the recovery always follows a crash. Both counts must be reached within BUDGET_MS.
  const started = Date.now();
  let kills = 0;
  const uptimesMs: number[] = [];
  let shortfall: string | null = null;
  const overBudget = () => {
    if (Date.now() - started <= BUDGET_MS) return false;
    shortfall = `after ${BUDGET_MS / 1000} s: ${kills} kills (want ${KILLS}), ${customers!.stats.funnelsCompleted} completed funnels (want ${MIN_FUNNELS})`;
    return true;
  };
  const kill = async (uptime: number) => {
    gate.close();
    await serve!.kill();
    kills++;
    uptimesMs.push(uptime);
  };
  while (kills < KILLS && !overBudget()) {
    if (!serve.running) {
      await serve.start();
      gate.open();
    }
    const uptime = Math.round(UPTIME_MS.min + Math.random() * (UPTIME_MS.max - UPTIME_MS.min));
    await sleep(uptime);
    await kill(uptime);
  }
  if (!shortfall && customers.stats.funnelsCompleted < MIN_FUNNELS) {
    await serve.start();
    gate.open();
    const up = Date.now();
    while (customers.stats.funnelsCompleted < MIN_FUNNELS && !overBudget()) await sleep(50);
    await kill(Date.now() - up);
  }
  const chaosMs = Date.now() - started;
  const traffic = await customers.stop();

  // Recovery: the API up again, then the command that settles what nobody recorded.
  await serve.start();
  const reconcile = await runCli(['reconcile', '--grace-seconds', '0'], env, 120_000);

  const ledgerRes = await fetch(`${sandbox.url}/sandbox/nmi/ledger?security_key=${encodeURIComponent(securityKey)}`, { signal: AbortSignal.timeout(30_000) });
  if (!ledgerRes.ok) throw new Error(`GET /sandbox/nmi/ledger → ${ledgerRes.status}`);
  const ledger = (await ledgerRes.json()) as { transactions: NmiEntry[] };
  const report = checkLedger(ledger.transactions, await readRecords(db.url));
  return { kills, uptimesMs, chaosMs, shortfall, traffic, reconcile, tally: parseTally(reconcile.stdout), report, serverLogs: serve.logs() };
}

describe('crash recovery: money never moves without a record, even when a process dies', () => {
  beforeAll(async () => {
    try {
      outcome = await scenario();
      console.log(summarize(outcome));
    } catch (err) {
      setupError = err;
      if (serve) console.log(`crash: server log tail:\n${serve.logs()}`);
    }
  });

  afterAll(async () => {
    await customers?.stop().catch(() => {});
    await serve?.kill();
    await sandbox?.stop();
    await killAll();
    await db?.drop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it(`ran the funnel through ${KILLS} kills of the API and completed at least ${MIN_FUNNELS} funnels`, () => {
    const o = ran();
    expect(o.shortfall, 'the kill-and-restart phase ran out of time').toBeNull();
    expect(o.kills).toBeGreaterThanOrEqual(KILLS);
    expect(o.traffic.funnelsCompleted).toBeGreaterThanOrEqual(MIN_FUNNELS);
    expect(o.report.totals.nmiApprovedSales).toBeGreaterThan(0);
    expect(o.report.totals.nmiApprovedRefunds).toBeGreaterThan(0);
  });

  it('recovery: `checkstand reconcile --grace-seconds 0` exits 0 and prints a JSON tally', () => {
    const o = ran();
    const output = `stdout:\n${o.reconcile.stdout.slice(-2000)}\nstderr:\n${o.reconcile.stderr.slice(-2000)}`;
    expect(o.reconcile.code, output).toBe(0);
    expect(o.tally, output).toBeTypeOf('object');
    expect(o.tally, output).not.toBeNull();
  });

  const examples = (k: string) => (ran().report.examples[k] ?? []).join('\n');

  it('(a) every approved provider charge has its approved sale transaction (provider_ref and orderid)', () => {
    const c = ran().report.counts;
    expect(c.unrecordedCharges, examples('a')).toBe(0);
  });

  it('(b) no order is charged twice for one step (first payment, each upsell)', () => {
    const c = ran().report.counts;
    expect(c.doubleChargedOrders, examples('b')).toBe(0);
  });

  it('(c) no order is left without a way forward, and no outcome is still unknown', () => {
    const c = ran().report.counts;
    expect(c.stuckOrders, examples('c')).toBe(0);
    expect(c.pendingTransactions, examples('c')).toBe(0);
  });

  it('(d) no double refund: the provider refunded exactly what the records say, and refunded_total adds up', () => {
    const c = ran().report.counts;
    expect(c.refundMismatches, examples('d')).toBe(0);
  });

  it('(e) no record without money: approved sales are the provider charges, and paid orders total what was charged', () => {
    const c = ran().report.counts;
    expect(c.recordsWithoutMoney, examples('e')).toBe(0);
  });
});
