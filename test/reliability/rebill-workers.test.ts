/**
 * Exactly one charge per subscription per cycle, whatever happens to the workers that bill them.
 *
 * The provider sandbox, the API and the workers run as their own processes (`checkstand sandbox`,
 * `serve`, `worker`) on a fresh PostgreSQL database. Over the API: an NMI sandbox gateway with a
 * security key the test knows, a monthly recurring offer, and REBILL_WORKERS_SUBSCRIPTIONS card
 * subscriptions (one completed order each, the sandbox's slow approving card, so every charge takes
 * SANDBOX_SLOW_MS like a real gateway). They are made due in SQL (bought a month ago). Then two
 * `checkstand worker` processes start at once (the rebill queue runs at worker start), one is
 * SIGKILLed mid-run (REBILL_WORKERS_KILLS times, each a replacement started), the live ones finish
 * their run and stop; `checkstand reconcile --grace-seconds 0` settles what the killed ones left in
 * flight; the killed workers' claims (a 10-minute lease) are moved into the past in SQL instead of
 * waiting for them, and one more worker runs the queue. Judged with SQL and the sandbox's ledger,
 * not the app's code: one approved NMI vault sale and one rebill order per subscription and cycle,
 * every approved sale recorded and every record a real sale, nothing in flight, every subscription
 * at cycle 1 with its next billing date one month on.
 *
 * `npm run test:crash` (vitest.reliability.config.ts); needs TEST_DATABASE_URL. Sized by counts,
 * not speed; the whole billing must end within REBILL_WORKERS_BUDGET_S (240).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase, readRecords, type ScratchDatabase } from './database.ts';
import { type CheckReport, checkLedger, type NmiEntry } from './ledger-check.ts';
import { LIMITS_OFF } from './limits-off.ts';
import { BackgroundProcess, type CliResult, ServeProcess, type SandboxProcess, freePort, killAll, runCli, sleep, startSandboxProcess } from './processes.ts';
import { intFromEnv, api, parseTally } from './setup.ts';

/** Card subscriptions billed (each one order over the API first). */
const SUBSCRIPTIONS = intFromEnv('REBILL_WORKERS_SUBSCRIPTIONS', 80, 2);
/** Workers SIGKILLed while the queue is billed, each replaced by a new one. */
const KILLS = intFromEnv('REBILL_WORKERS_KILLS', 1, 1);
/** REBILL_BATCH_SIZE of the workers: small, so two workers take turns and a kill strands a partial batch. */
const BATCH = intFromEnv('REBILL_WORKERS_BATCH', 8, 1);
/** How long each charge takes at the sandbox (its slow approving card). */
const SLOW_MS = intFromEnv('REBILL_WORKERS_SLOW_MS', 150);
/** From the first worker's start to the last run of the queue. */
const BUDGET_MS = intFromEnv('REBILL_WORKERS_BUDGET_S', 240, 1) * 1000;
/** At a kill, how long to wait for every busy worker to have an attempt in flight. */
const IN_FLIGHT_WAIT_MS = 3000;
/** Orders placed at once while setting up. */
const SETUP_CONCURRENCY = 8;
/** The rebill hour the processes run with (the schedule's expected next date is computed from it). */
const REBILL_HOUR = 3;
const SECRET_KEY = 'c9'.repeat(32);
const SLOW_CARD = '4000000000009995';
const PRICE = 1900;

interface Tally {
  [k: string]: unknown;
}

/** A `checkstand worker` process and the tallies of its rebill runs, read from its log (LOG_LEVEL=info). */
class WorkerProcess {
  readonly proc: BackgroundProcess;
  readonly runs: Tally[] = [];
  readonly failures: string[] = [];
  private buf = '';

  constructor(
    readonly name: string,
    env: NodeJS.ProcessEnv,
  ) {
    this.proc = new BackgroundProcess(['worker'], env);
    this.proc.child.stdout!.on('data', (d: Buffer) => {
      this.buf += String(d);
      const lines = this.buf.split('\n');
      this.buf = lines.pop() ?? '';
      for (const line of lines) this.read(line);
    });
  }

  private read(line: string): void {
    if (!line.includes('rebill-due-subscriptions')) return;
    let j: Record<string, unknown>;
    try {
      j = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    if (j.schedule !== 'rebill-due-subscriptions') return;
    if (j.msg === 'schedule ran') {
      const { level: _l, time: _t, pid: _p, hostname: _h, msg: _m, schedule: _s, ...tally } = j;
      this.runs.push(tally);
    } else {
      this.failures.push(String(j.msg));
      this.runs.push({ failed_run: j.msg });
    }
  }

  get running(): boolean {
    return this.proc.running;
  }

  /** Resolves once its first rebill run has ended (true), or false if it exited or the deadline passed first. */
  async firstRun(deadline: number): Promise<boolean> {
    while (this.runs.length === 0) {
      if (!this.proc.running || Date.now() > deadline) return false;
      await sleep(50);
    }
    return true;
  }

  kill(): Promise<void> {
    return this.proc.kill();
  }

  /** SIGTERM (it finishes what it holds), then SIGKILL if it has not exited within 30 s. */
  async stop(): Promise<void> {
    const child = this.proc.child;
    if (!this.proc.running) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  }
}

interface SubRow {
  id: string;
  status: string;
  cycle: number;
  retry_count: number;
  next_billing_at: Date | null;
  expected_next: Date | null;
  billing_lease_until: Date | null;
  recurring_price: number;
}

interface RebillOrderRow {
  id: string;
  subscription_id: string;
  rebill_cycle: number;
  status: string;
  payment_status: string | null;
  total: number;
}

interface RebillTxnRow {
  id: string;
  order_id: string;
  type: string;
  status: string;
  amount: number;
  provider_ref: string | null;
  step: string | null;
  in_flight: boolean;
  response_code: string | null;
}

export interface RebillCheck {
  subscriptions: number;
  /** Approved NMI vault sales on rebill orders. */
  charges: number;
  /** Subscriptions (× cycle) charged more than once at NMI, plus (subscription, cycle) with more than one rebill order. */
  duplicates: number;
  /** Approved NMI sales with no approved sale transaction (id = orderid, provider_ref = transactionid). */
  unrecorded: number;
  /** Approved sales in the database with no approved NMI sale of the same amount. */
  phantom: number;
  /** Transactions still in flight or pending. */
  inFlight: number;
  /** Subscriptions not at cycle 1, not active, or whose next billing date is not cycle 2's. */
  wrongState: number;
  /** Subscriptions without exactly one approved charge for cycle 1 (at NMI and in the database), or whose rebill order is not completed at its total. */
  notChargedOnce: number;
  examples: string[];
}

/** The dedicated rebill checks: SQL rows and the sandbox ledger in, counts out. */
function checkRebills(subs: SubRow[], orders: RebillOrderRow[], txns: RebillTxnRow[], nmi: NmiEntry[], allApprovedSales: { id: string; amount: number; provider_ref: string | null }[]): RebillCheck {
  const examples: string[] = [];
  const note = (s: string) => {
    if (examples.length < 12) examples.push(s);
  };
  const nmiApproved = nmi.filter((e) => e.type === 'sale' && e.status === 'approved' && e.transactionid);
  const nmiByOrderId = new Map<string, NmiEntry[]>();
  for (const e of nmiApproved) if (e.orderid) nmiByOrderId.set(e.orderid, [...(nmiByOrderId.get(e.orderid) ?? []), e]);
  const nmiByRef = new Map(nmiApproved.map((e) => [e.transactionid!, e]));
  const txnsByOrder = new Map<string, RebillTxnRow[]>();
  for (const t of txns) txnsByOrder.set(t.order_id, [...(txnsByOrder.get(t.order_id) ?? []), t]);
  const ordersBySub = new Map<string, RebillOrderRow[]>();
  for (const o of orders) ordersBySub.set(o.subscription_id, [...(ordersBySub.get(o.subscription_id) ?? []), o]);

  let charges = 0;
  let duplicates = 0;
  let notChargedOnce = 0;
  let wrongState = 0;
  for (const s of subs) {
    const mine = ordersBySub.get(s.id) ?? [];
    const perCycle = new Map<number, RebillOrderRow[]>();
    for (const o of mine) perCycle.set(o.rebill_cycle, [...(perCycle.get(o.rebill_cycle) ?? []), o]);
    for (const [cycle, list] of perCycle) {
      if (list.length > 1) {
        duplicates += list.length - 1;
        note(`subscription ${s.id}: ${list.length} rebill orders for cycle ${cycle} (${list.map((o) => o.id).join(', ')})`);
      }
    }
    // Every approved NMI sale whose orderid is an attempt on one of this subscription's rebill orders.
    const nmiSales = mine.flatMap((o) => (txnsByOrder.get(o.id) ?? []).flatMap((t) => nmiByOrderId.get(t.id) ?? []));
    const vaultSales = nmiSales.filter((e) => e.customer_vault_id);
    charges += vaultSales.length;
    if (nmiSales.length > 1) {
      duplicates += nmiSales.length - 1;
      note(`subscription ${s.id}: ${nmiSales.length} approved NMI sales on its rebill orders (${nmiSales.map((e) => e.transactionid).join(', ')})`);
    }
    const cycle1 = perCycle.get(1) ?? [];
    const order = cycle1[0];
    const approved = order ? (txnsByOrder.get(order.id) ?? []).filter((t) => t.type === 'sale' && t.status === 'approved') : [];
    const sale = approved[0];
    const nmiSale = sale ? nmiByOrderId.get(sale.id)?.[0] : undefined;
    const problems: string[] = [];
    if (!order) problems.push('no cycle-1 rebill order');
    else {
      if (order.status !== 'completed' || order.payment_status !== 'completed') problems.push(`its rebill order ${order.id} is ${order.status}/${order.payment_status}`);
      if (order.total !== s.recurring_price) problems.push(`its rebill order totals ${order.total}, the subscription's price is ${s.recurring_price}`);
      if (approved.length !== 1) problems.push(`${approved.length} approved sale transactions on ${order.id}`);
      if (sale && sale.step !== 'rebill') problems.push(`sale ${sale.id} has step ${sale.step}`);
      if (sale && !nmiSale) problems.push(`sale ${sale.id} is no NMI orderid`);
      if (nmiSale && (!nmiSale.customer_vault_id || nmiSale.transactionid !== sale!.provider_ref || nmiSale.amount_minor !== sale!.amount)) {
        problems.push(`NMI sale ${nmiSale.transactionid} (vault ${nmiSale.customer_vault_id ?? 'none'}, ${nmiSale.amount_minor} minor) does not match sale ${sale!.id} (ref ${sale!.provider_ref}, ${sale!.amount})`);
      }
    }
    if (vaultSales.length !== 1) problems.push(`${vaultSales.length} approved NMI vault sales`);
    if (problems.length) {
      notChargedOnce++;
      note(`subscription ${s.id}: ${problems.join('; ')}`);
    }
    const nextOk = s.next_billing_at !== null && s.expected_next !== null && s.next_billing_at.getTime() === s.expected_next.getTime();
    if (s.cycle !== 1 || s.status !== 'active' || !nextOk) {
      wrongState++;
      note(
        `subscription ${s.id}: ${s.status}, cycle ${s.cycle}, retry_count ${s.retry_count}, next_billing_at ${s.next_billing_at?.toISOString() ?? 'null'} ` +
          `(cycle 2 is due ${s.expected_next?.toISOString() ?? '?'}), lease ${s.billing_lease_until?.toISOString() ?? 'none'}`,
      );
    }
  }

  // Both ways, over every approved sale (first payments too): no charge without its record, no record without its charge.
  const saleById = new Map(allApprovedSales.map((t) => [t.id, t]));
  let unrecorded = 0;
  for (const e of nmiApproved) {
    const t = e.orderid ? saleById.get(e.orderid) : undefined;
    if (!t || t.provider_ref !== e.transactionid) {
      unrecorded++;
      note(`NMI sale ${e.transactionid} (orderid ${e.orderid ?? 'null'}, vault ${e.customer_vault_id ?? 'none'}, ${e.amount_minor} minor) has no approved sale transaction`);
    }
  }
  let phantom = 0;
  for (const t of allApprovedSales) {
    const e = t.provider_ref ? nmiByRef.get(t.provider_ref) : undefined;
    if (!e || e.amount_minor !== t.amount || e.orderid !== t.id) {
      phantom++;
      note(`approved sale ${t.id} (ref ${t.provider_ref ?? 'null'}, ${t.amount}) is no approved NMI sale`);
    }
  }
  const stuck = txns.filter((t) => t.in_flight || t.status === 'pending');
  for (const t of stuck) note(`transaction ${t.id} on rebill order ${t.order_id} is still ${t.status}${t.in_flight ? ', in flight' : ''}`);
  return { subscriptions: subs.length, charges, duplicates, unrecorded, phantom, inFlight: stuck.length, wrongState, notChargedOnce, examples };
}

async function query<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

async function readRebillState(url: string) {
  return query(url, async (c) => {
    // Cycle n is due on billing_anchor + (n - anchor_cycle) intervals, that calendar day at the rebill hour in the team's zone.
    const subs = await c.query(
      `SELECT s.id, s.status, s.cycle, s.retry_count, s.next_billing_at, s.billing_lease_until, s.recurring_price::int AS recurring_price,
              (date_trunc('day', (s.billing_anchor AT TIME ZONE t.time_zone) + make_interval(months => s.interval_count * (s.cycle + 1 - s.anchor_cycle)))
                 + make_interval(hours => $1)) AT TIME ZONE t.time_zone AS expected_next
         FROM subscriptions s JOIN teams t ON t.id = s.team_id ORDER BY s.created_at, s.id`,
      [REBILL_HOUR],
    );
    const orders = await c.query(`SELECT id, subscription_id, rebill_cycle, status, payment_status, total::int AS total FROM orders WHERE rebill_cycle IS NOT NULL ORDER BY seq`);
    const txns = await c.query(
      `SELECT t.id, t.order_id, t.type, t.status, t.amount::int AS amount, t.provider_ref, t.step, t.in_flight, t.response_code
         FROM transactions t JOIN orders o ON o.id = t.order_id WHERE o.rebill_cycle IS NOT NULL ORDER BY t.seq`,
    );
    const sales = await c.query(`SELECT id, amount::int AS amount, provider_ref FROM transactions WHERE type = 'sale' AND status = 'approved'`);
    return { subs: subs.rows as SubRow[], orders: orders.rows as RebillOrderRow[], txns: txns.rows as RebillTxnRow[], sales: sales.rows as { id: string; amount: number; provider_ref: string | null }[] };
  });
}

async function progress(url: string): Promise<{ billed: number; inFlight: number; leased: number }> {
  return query(url, async (c) => {
    const r = await c.query(
      `SELECT (SELECT count(*)::int FROM subscriptions WHERE cycle >= 1) AS billed,
              (SELECT count(*)::int FROM transactions WHERE in_flight) AS "inFlight",
              (SELECT count(*)::int FROM subscriptions WHERE cycle = 0 AND billing_lease_until > now()) AS leased`,
    );
    return r.rows[0] as { billed: number; inFlight: number; leased: number };
  });
}

interface KillRecord {
  worker: string;
  billedAtKill: number;
  inFlightAtKill: number;
}

interface Outcome {
  kills: KillRecord[];
  /** Subscriptions at cycle 0 still leased after the live workers finished: the killed workers' claims. */
  stranded: number;
  leasesExpired: number;
  shortfall: string | null;
  reconcile: CliResult;
  reconcileTally: unknown;
  workerRuns: Record<string, Tally[]>;
  billingMs: number;
  setupMs: number;
  rebills: RebillCheck;
  ledger: CheckReport;
}

let outcome: Outcome | undefined;
let setupError: unknown;
let db: ScratchDatabase | undefined;
let sandbox: SandboxProcess | undefined;
let serve: ServeProcess | undefined;
let dataDir: string | undefined;
const workers: WorkerProcess[] = [];

function ran(): Outcome {
  if (setupError) throw setupError;
  if (!outcome) throw new Error('the rebill-workers scenario did not run');
  return outcome;
}

async function scenario(): Promise<Outcome> {
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl) throw new Error('npm run test:crash needs TEST_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/postgres, a role that may CREATE DATABASE)');
  const setupStarted = Date.now();
  db = await createScratchDatabase(serverUrl);
  const dbUrl = db.url;
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkstand-rebills-'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: dbUrl,
    CHECKSTAND_SECRET_KEY: SECRET_KEY,
    CHECKSTAND_DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    SANDBOX_SLOW_MS: String(SLOW_MS),
    CHECKSTAND_SANDBOX: 'off',
    REBILL_HOUR: String(REBILL_HOUR),
    REBILL_BATCH_SIZE: String(BATCH),
    ...LIMITS_OFF,
  };
  delete env.TEST_DATABASE_URL;
  delete env.PUBLIC_BASE_URL;
  delete env.REBILL_RETRY_DAYS;
  delete env.REBILL_AFTER_LAST_RETRY;

  sandbox = await startSandboxProcess(env);
  const migrated = await runCli(['migrate'], env);
  if (migrated.code !== 0) throw new Error(`checkstand migrate exited ${migrated.code}:\n${migrated.stderr}`);
  const seeded = await runCli(['seed', '--demo', '--json', '--no-gateway', '--team-name', 'Rebill workers test'], env);
  if (seeded.code !== 0) throw new Error(`checkstand seed exited ${seeded.code}:\n${seeded.stderr}`);
  const seed = JSON.parse(seeded.stdout) as { token: string; campaign_id: string; products: Record<string, string> };

  serve = new ServeProcess(await freePort(), env);
  await serve.start();
  const securityKey = `rebills_${randomBytes(12).toString('hex')}`;
  const gateway = await api(serve.url, seed.token, 'POST', '/v1/gateways', {
    kind: 'nmi',
    name: 'Rebill-workers sandbox gateway',
    base_url: sandbox.url,
    credentials: { security_key: securityKey },
    test_mode: true,
  });
  await api(serve.url, seed.token, 'PATCH', `/v1/campaigns/${seed.campaign_id}`, { gateway_id: gateway.id });
  const offer = await api(serve.url, seed.token, 'POST', '/v1/offers', {
    campaign_id: seed.campaign_id,
    product_id: Object.values(seed.products)[0],
    name: 'Rebill club, monthly',
    price: PRICE,
    recurring_price: PRICE,
    shipping: 0,
    billing: 'recurring',
    interval_unit: 'month',
    interval_count: 1,
    fulfillment_type: 'digital',
  });

  // The subscriptions: one completed card order each, SETUP_CONCURRENCY at a time.
  const runId = randomBytes(4).toString('hex');
  const exp = `12/${String((new Date().getUTCFullYear() + 5) % 100).padStart(2, '0')}`;
  let next = 0;
  const place = async () => {
    for (let i = next++; i < SUBSCRIPTIONS; i = next++) {
      const order = await api(serve!.url, seed.token, 'POST', '/checkout/orders', {
        campaign_id: seed.campaign_id,
        currency: 'USD',
        customer: { email: `rebill-${runId}-${i}@example.com`, first_name: 'Rebill', last_name: `Customer${i}` },
        products: [{ offer_id: offer.id, quantity: 1 }],
        payment: { card_number: SLOW_CARD, card_exp: exp, card_cvv: '123' },
      });
      await api(serve!.url, seed.token, 'POST', '/checkout/orders/complete', { order_number: order.order_number });
    }
  };
  await Promise.all(Array.from({ length: SETUP_CONCURRENCY }, place));
  // Due now, as if bought a month ago: the anchor one month back, cycle 1's date an hour ago.
  const made = await query(dbUrl, async (c) => {
    const r = await c.query(
      `UPDATE subscriptions SET billing_anchor = billing_anchor - interval '1 month', next_billing_at = now() - interval '1 hour'
        WHERE status = 'active' AND cycle = 0 AND payment_method_id IS NOT NULL AND NOT externally_managed RETURNING id`,
    );
    return r.rowCount ?? 0;
  });
  if (made !== SUBSCRIPTIONS) throw new Error(`expected ${SUBSCRIPTIONS} active card subscriptions to make due, found ${made}`);
  // The API is not needed while the workers bill.
  await serve.kill();
  const setupMs = Date.now() - setupStarted;

  // Two workers at once; kill one mid-run, replace it, KILLS times.
  const workerEnv: NodeJS.ProcessEnv = { ...env, LOG_LEVEL: 'info' };
  let seq = 0;
  const startWorkerProcess = () => {
    const w = new WorkerProcess(`worker-${++seq}`, workerEnv);
    workers.push(w);
    return w;
  };
  const started = Date.now();
  const deadline = started + BUDGET_MS;
  let shortfall: string | null = null;
  let live = [startWorkerProcess(), startWorkerProcess()];
  const kills: KillRecord[] = [];
  for (let k = 1; k <= KILLS; k++) {
    // Kill points spread over the run: after k/(KILLS+1) of the subscriptions (at least one) are billed.
    const at = Math.max(1, Math.floor((SUBSCRIPTIONS * k) / (KILLS + 1)));
    let p = await progress(dbUrl);
    while (p.billed < at && Date.now() < deadline) {
      await sleep(25);
      p = await progress(dbUrl);
    }
    if (p.billed >= SUBSCRIPTIONS) {
      shortfall = `every subscription was billed before kill ${k}: nothing was killed mid-run (try more REBILL_WORKERS_SUBSCRIPTIONS)`;
      break;
    }
    // A worker still in its run (one that has finished it would be idle, not mid-batch).
    const busy = live.filter((w) => w.runs.length === 0 && w.running);
    if (busy.length === 0) {
      shortfall = `no worker was still billing at kill ${k} (${p.billed}/${SUBSCRIPTIONS} billed)`;
      break;
    }
    // Preferably while every busy worker has an attempt in flight (the victim is then between the
    // commit of its attempt and the gateway's answer): polled for up to IN_FLIGHT_WAIT_MS, then killed anyway.
    const waitUntil = Date.now() + IN_FLIGHT_WAIT_MS;
    while (p.inFlight < busy.length && Date.now() < waitUntil && p.billed < SUBSCRIPTIONS) {
      await sleep(5);
      p = await progress(dbUrl);
    }
    const victim = busy[Math.floor(Math.random() * busy.length)]!;
    await victim.kill();
    kills.push({ worker: victim.name, billedAtKill: p.billed, inFlightAtKill: p.inFlight });
    live = [...live.filter((w) => w !== victim), startWorkerProcess()];
  }
  // The live workers finish their run (the queue as far as nobody's lease holds it), then stop.
  for (const w of live) {
    if (!(await w.firstRun(deadline))) shortfall ??= `${w.name} did not finish its first rebill run within ${BUDGET_MS / 1000} s (running: ${w.running})\n${w.proc.logs()}`;
  }
  await Promise.all(live.map((w) => w.stop()));
  const stranded = (await progress(dbUrl)).leased;

  // Recovery: the attempts the killed workers left in flight, asked of the gateway by our attempt id.
  const reconcile = await runCli(['reconcile', '--grace-seconds', '0'], env, 120_000);
  // The killed workers' claims hold a 10-minute lease: move it into the past rather than wait.
  const leasesExpired = await query(dbUrl, async (c) => {
    const r = await c.query(`UPDATE subscriptions SET billing_lease_until = now() - interval '1 second' WHERE billing_lease_until > now() RETURNING id`);
    return r.rowCount ?? 0;
  });
  // The queue once more: a worker bills what the killed ones held (and any cycle whose attempt was never sent).
  const last = startWorkerProcess();
  if (!(await last.firstRun(deadline))) shortfall ??= `${last.name} did not finish its rebill run within the budget (running: ${last.running})\n${last.proc.logs()}`;
  await last.stop();
  const billingMs = Date.now() - started;

  const ledgerRes = await fetch(`${sandbox.url}/sandbox/nmi/ledger?security_key=${encodeURIComponent(securityKey)}`, { signal: AbortSignal.timeout(30_000) });
  if (!ledgerRes.ok) throw new Error(`GET /sandbox/nmi/ledger → ${ledgerRes.status}`);
  const nmi = ((await ledgerRes.json()) as { transactions: NmiEntry[] }).transactions;
  const state = await readRebillState(dbUrl);
  const rebills = checkRebills(state.subs, state.orders, state.txns, nmi, state.sales);
  const ledger = checkLedger(nmi, await readRecords(dbUrl));
  return {
    kills,
    stranded,
    leasesExpired,
    shortfall,
    reconcile,
    reconcileTally: parseTally(reconcile.stdout),
    workerRuns: Object.fromEntries(workers.map((w) => [w.name, w.runs])),
    billingMs,
    setupMs,
    rebills,
    ledger,
  };
}

function summarize(o: Outcome): string {
  const r = o.rebills;
  const lines = [
    `rebill-workers: ${r.subscriptions} subscriptions, ${o.kills.length} kills, ${r.charges} charges, duplicates ${r.duplicates}, unrecorded ${r.unrecorded}, ` +
      `phantom ${r.phantom}, in flight ${r.inFlight}, not charged once ${r.notChargedOnce}, wrong state ${r.wrongState}`,
    `rebill-workers: kills ${o.kills.map((k) => `${k.worker} at ${k.billedAtKill}/${r.subscriptions} billed (${k.inFlightAtKill} attempts in flight just before)`).join('; ')}; ` +
      `stranded by the kills ${o.stranded}, leases expired ${o.leasesExpired}; setup ${(o.setupMs / 1000).toFixed(1)} s, billing ${(o.billingMs / 1000).toFixed(1)} s ` +
      `(${SUBSCRIPTIONS} subscriptions, batch ${BATCH}, charges ${SLOW_MS} ms)`,
    `rebill-workers: reconcile exit ${o.reconcile.code ?? o.reconcile.signal} in ${o.reconcile.ms} ms, tally ${JSON.stringify(o.reconcileTally) ?? '(none)'}`,
    `rebill-workers: worker runs ${JSON.stringify(o.workerRuns)}`,
    `rebill-workers: ledger check ${JSON.stringify(o.ledger.counts)}`,
  ];
  if (o.shortfall) lines.push(`rebill-workers: SHORTFALL ${o.shortfall}`);
  for (const e of r.examples) lines.push(`rebill-workers: ${e}`);
  for (const [k, ex] of Object.entries(o.ledger.examples)) for (const e of ex) lines.push(`rebill-workers: ledger (${k}) ${e}`);
  return lines.join('\n');
}

describe('rebill workers: exactly one charge per subscription per cycle, whatever happens', () => {
  beforeAll(async () => {
    try {
      outcome = await scenario();
      console.log(summarize(outcome));
    } catch (err) {
      setupError = err;
      if (serve) console.log(`rebill-workers: server log tail:\n${serve.logs()}`);
      for (const w of workers) console.log(`rebill-workers: ${w.name} log tail:\n${w.proc.logs()}`);
    }
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill()));
    await serve?.kill();
    await sandbox?.stop();
    await killAll();
    await db?.drop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const examples = () => ran().rebills.examples.join('\n');

  it(`two workers billed ${SUBSCRIPTIONS} due subscriptions through ${KILLS} SIGKILL(s) mid-run, within the budget`, () => {
    const o = ran();
    expect(o.shortfall, 'the billing ran out of time or was never interrupted').toBeNull();
    expect(o.kills).toHaveLength(KILLS);
    for (const k of o.kills) {
      expect(k.billedAtKill, 'killed after some subscriptions were billed').toBeGreaterThan(0);
      expect(k.billedAtKill, 'killed before all were billed').toBeLessThan(SUBSCRIPTIONS);
    }
  });

  it('recovery: `checkstand reconcile --grace-seconds 0` exits 0 and prints a JSON tally', () => {
    const o = ran();
    const output = `stdout:\n${o.reconcile.stdout.slice(-2000)}\nstderr:\n${o.reconcile.stderr.slice(-2000)}`;
    expect(o.reconcile.code, output).toBe(0);
    expect(o.reconcileTally, output).toBeTypeOf('object');
  });

  it('every subscription was charged exactly once for cycle 1: one approved NMI vault sale, one rebill order, completed at its price', () => {
    const r = ran().rebills;
    expect(r.duplicates, examples()).toBe(0);
    expect(r.notChargedOnce, examples()).toBe(0);
    expect(r.charges, examples()).toBe(SUBSCRIPTIONS);
  });

  it('no charge without a record and no record without a charge (every approved sale, first payments included)', () => {
    const o = ran();
    expect(o.rebills.unrecorded, examples()).toBe(0);
    expect(o.rebills.phantom, examples()).toBe(0);
    const c = o.ledger.counts;
    const ledgerExamples = JSON.stringify(o.ledger.examples);
    expect(c.unrecordedCharges, ledgerExamples).toBe(0);
    expect(c.doubleChargedOrders, ledgerExamples).toBe(0);
    expect(c.recordsWithoutMoney, ledgerExamples).toBe(0);
  });

  it('nothing is left in flight or pending', () => {
    const o = ran();
    expect(o.rebills.inFlight, examples()).toBe(0);
    expect(o.ledger.counts.stuckOrders, JSON.stringify(o.ledger.examples)).toBe(0);
  });

  it('every subscription is active at cycle 1, its next billing date one month on (cycle 2)', () => {
    expect(ran().rebills.wrongState, examples()).toBe(0);
  });
});
