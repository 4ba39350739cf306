/**
 * `npm run bench:floor`: what this machine allows the card funnel's shape, with none of
 * Checkstand's work in it. The bench's own load driver, sandbox gateway and webhook receiver
 * (the same threads and code `npm run bench` runs) talk to a **skeleton server** on the main
 * thread instead of Checkstand: Fastify answering the four checkout calls with the fields the
 * driver reads, and on PostgreSQL (`--db pg`, with DATABASE_URL) the funnel's round trips with
 * plain statements, but no validation, no authentication, no state machine, no timeline, no
 * outbox, no mail:
 *
 *   lead      1 round trip (the order's INSERT; it commits)
 *   payment   3: the order read, the attempt's INSERT (commits), the sandbox's sale over HTTP,
 *             the attempt's and the order's UPDATE (commits)
 *   upsell    3: the same on the card the sale saved, then a signed webhook to the receiver
 *   complete  1: the order's UPDATE with its event's INSERT (commits), then a signed webhook
 *   webhooks  their deliveries recorded in one UPDATE per 50 ms
 *
 * That is 8 round trips and 6 commits per funnel where Checkstand sends 9-10 and 7, and far fewer
 * index entries, so the skeleton's figures are an upper bound: what any server of this shape could
 * reach in the same minutes. `--db none` leaves the database out (HTTP only). The report
 * (bench/results/<time>-floor-<none|pg>.json) gives funnels/s, p99 per call, and CPU per funnel:
 * the skeleton's thread, PostgreSQL's processes and the whole machine's.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Worker } from 'node:worker_threads';
import Fastify from 'fastify';
import pg from 'pg';
import { request } from 'undici';
import { Webhook } from 'standardwebhooks';
import { UsageError, dropBenchDatabase, gitInfo, machineCpu, num, readFlags, recreateDatabase, redactUrl, resultStamp, runMain, truthy } from './common.ts';
import { cpuBetweenMs, cpuSnapshot, localPostgresPids, statCpuMs } from './server-processes.ts';
import { benchCardExp, ENDPOINTS, type DriverInput, percentile, sortedCopy } from './stats.ts';
import { nextMessage, runDriver, startTsWorker } from './threads.ts';

const log = (line: string) => process.stdout.write(`[bench:floor] ${line}\n`);

const USAGE = `npm run bench:floor -- [options]
  --db <none|pg>        the skeleton's database: none, or PostgreSQL at DATABASE_URL (BENCH_FLOOR_DB, default pg with DATABASE_URL, else none)
  --concurrency <n>     concurrent funnels (BENCH_CONCURRENCY, default 16)
  --duration <s>        measured seconds (BENCH_DURATION_S, default 15)
  --warmup <s>          unmeasured seconds first (BENCH_WARMUP_S, default 10)
  --pool <n>            PostgreSQL connections (default 5, Checkstand's default on 2 cores)
  --notify              with --db pg: each event row's INSERT notifies a listening connection through a row trigger, as Checkstand's outbox tables do (migration 0017)
  --fresh-db            with DATABASE_URL: drop and create that database before, drop it after (its name must contain "bench")`;

interface Options {
  db: 'none' | 'pg';
  concurrency: number;
  durationS: number;
  warmupS: number;
  pool: number;
  notify: boolean;
  freshDb: boolean;
}

function parseFloorOptions(argv: string[], env: NodeJS.ProcessEnv): Options | 'help' {
  const flags = readFlags(argv, ['db', 'concurrency', 'duration', 'warmup', 'pool'], ['fresh-db', 'notify']);
  if (flags === 'help') return 'help';
  const db = flags.db ?? env.BENCH_FLOOR_DB ?? (env.DATABASE_URL ? 'pg' : 'none');
  if (db !== 'none' && db !== 'pg') throw new UsageError(`--db must be none or pg, got "${db}"`);
  if (db === 'pg' && !env.DATABASE_URL) throw new UsageError('--db pg needs DATABASE_URL (a PostgreSQL database the bench may write to)');
  const freshDb = truthy(flags['fresh-db'] ?? env.BENCH_FRESH_DB);
  const notify = truthy(flags.notify);
  if (freshDb && db !== 'pg') throw new UsageError('--fresh-db needs --db pg');
  if (notify && db !== 'pg') throw new UsageError('--notify needs --db pg');
  const atLeast = (min: number) => (n: number) => n >= min;
  return {
    db,
    concurrency: Math.floor(num('--concurrency', flags.concurrency ?? env.BENCH_CONCURRENCY, 16, atLeast(1), 'a number ≥ 1')),
    durationS: num('--duration', flags.duration ?? env.BENCH_DURATION_S, 15, atLeast(1), 'a number ≥ 1'),
    warmupS: num('--warmup', flags.warmup ?? env.BENCH_WARMUP_S, 10, atLeast(0), 'a number ≥ 0'),
    pool: Math.floor(num('--pool', flags.pool, 5, atLeast(1), 'a number ≥ 1')),
    notify,
    freshDb,
  };
}

// ------------------------------------------------------------------------------ the skeleton

const SCHEMA = `
CREATE TABLE IF NOT EXISTS floor_orders (id text PRIMARY KEY, team_id text NOT NULL, email text NOT NULL, status text NOT NULL,
  total integer NOT NULL, seq bigserial, created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now());
CREATE INDEX IF NOT EXISTS floor_orders_team_seq ON floor_orders (team_id, seq DESC);
CREATE INDEX IF NOT EXISTS floor_orders_team_status ON floor_orders (team_id, status, seq DESC);
CREATE TABLE IF NOT EXISTS floor_attempts (id text PRIMARY KEY, order_id text NOT NULL, amount integer NOT NULL, status text NOT NULL,
  in_flight boolean NOT NULL, provider_ref text, vault_id text, created_at timestamptz NOT NULL DEFAULT now());
CREATE INDEX IF NOT EXISTS floor_attempts_order ON floor_attempts (order_id);
CREATE TABLE IF NOT EXISTS floor_events (id text PRIMARY KEY, order_id text NOT NULL, type text NOT NULL, payload jsonb NOT NULL,
  delivered boolean NOT NULL DEFAULT false, created_at timestamptz NOT NULL DEFAULT now());`;

/** --notify: migration 0017's shape (a plpgsql row trigger calling pg_notify) on the skeleton's event rows. */
const NOTIFY = `
CREATE OR REPLACE FUNCTION floor_notify() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('floor_work', TG_ARGV[0]); RETURN NULL; END $$;
DROP TRIGGER IF EXISTS floor_events_notify ON floor_events;
CREATE TRIGGER floor_events_notify AFTER INSERT ON floor_events FOR EACH ROW WHEN (NOT NEW.delivered) EXECUTE FUNCTION floor_notify('events');`;

const TEAM = 'team_floor';
/** How long the run waits, after the funnels, for the last event rows' notifications. */
const NOTIFY_WAIT_MS = 15_000;
const KEY = 'floor-bench-key';

interface Skeleton {
  url: string;
  /** Statements sent and commits (single statements outside a transaction) on the pool. */
  counts: { statements: number };
  close(): Promise<void>;
}

/** The skeleton server on this thread: Fastify, the funnel's round trips on `pool` (if any), the sandbox's sales, signed webhooks. */
async function startSkeleton(pool: pg.Pool | null, sandboxUrl: string, receiverUrl: string, secret: string): Promise<Skeleton> {
  const counts = { statements: 0 };
  const q = async (name: string, text: string, values: unknown[]): Promise<pg.QueryResult> => {
    counts.statements++;
    return pool!.query({ name, text, values });
  };
  const signer = new Webhook(secret);
  const delivered: string[] = [];
  const flush = setInterval(() => {
    if (!pool || delivered.length === 0) return;
    const ids = delivered.splice(0);
    void q('floor_delivered', 'UPDATE floor_events SET delivered = true WHERE id = ANY($1)', [ids]).catch((e) => log(`delivery record failed: ${String(e)}`));
  }, 50);
  const sendWebhook = async (id: string, type: string, orderId: string): Promise<void> => {
    const at = new Date();
    const body = JSON.stringify({ id, type, created_at: at.toISOString(), data: { order_number: orderId } });
    const headers = { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signer.sign(id, at, body) };
    const r = await request(receiverUrl, { method: 'POST', headers, body });
    await r.body.dump();
    if (r.statusCode < 300) delivered.push(id);
  };
  const sale = async (orderId: string, amount: string, card: { vault: string } | null): Promise<URLSearchParams> => {
    const form = new URLSearchParams({ type: 'sale', security_key: KEY, amount, orderid: orderId });
    if (card) form.set('customer_vault_id', card.vault);
    else {
      form.set('ccnumber', '4111111111111111');
      form.set('ccexp', benchCardExp().replace('/', ''));
      form.set('cvv', '123');
      form.set('customer_vault', 'add_customer');
    }
    const r = await request(`${sandboxUrl}/api/transact.php`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form.toString() });
    const answer = new URLSearchParams(await r.body.text());
    if (answer.get('response') !== '1') throw new Error(`sale not approved: ${answer.get('responsetext')}`);
    return answer;
  };
  const id = (prefix: string) => `${prefix}_${crypto.randomBytes(9).toString('base64url')}`;
  const vaults = new Map<string, string>();

  const app = Fastify({ logger: false });
  app.post('/checkout/leads', async (req, reply) => {
    const b = req.body as { customer?: { email?: string } };
    const orderId = id('ord');
    if (pool) await q('floor_lead', `INSERT INTO floor_orders (id, team_id, email, status, total) VALUES ($1, $2, $3, 'lead', 2900)`, [orderId, TEAM, b.customer?.email ?? '']);
    return reply.code(201).send({ success: true, message: 'Lead created.', data: { order_number: orderId, status: 'lead' } });
  });
  const charge = async (orderId: string, amount: number, upsell: boolean, event = '') => {
    if (pool) await q('floor_read', 'SELECT id, status, total FROM floor_orders WHERE id = $1', [orderId]);
    const attempt = id('txn');
    if (pool) await q('floor_attempt', `INSERT INTO floor_attempts (id, order_id, amount, status, in_flight) VALUES ($1, $2, $3, 'processing', true)`, [attempt, orderId, amount]);
    const vault = vaults.get(orderId);
    const answer = await sale(orderId, (amount / 100).toFixed(2), upsell && vault ? { vault } : null);
    if (!upsell) vaults.set(orderId, answer.get('customer_vault_id') ?? '');
    if (pool && !upsell)
      await q(
        'floor_pay_answer',
        `WITH a AS (UPDATE floor_attempts SET status = 'approved', in_flight = false, provider_ref = $2 WHERE id = $1 RETURNING order_id)
         UPDATE floor_orders o SET status = 'paid', updated_at = now() FROM a WHERE o.id = a.order_id`,
        [attempt, answer.get('transactionid')],
      );
    if (pool && upsell)
      await q(
        'floor_upsell_answer',
        `WITH a AS (UPDATE floor_attempts SET status = 'approved', in_flight = false, provider_ref = $2 WHERE id = $1 RETURNING order_id, amount),
         o AS (UPDATE floor_orders o SET total = o.total + a.amount, updated_at = now() FROM a WHERE o.id = a.order_id RETURNING o.id)
         INSERT INTO floor_events (id, order_id, type, payload) SELECT $3, o.id, 'order.upsell_added', jsonb_build_object('order', o.id) FROM o`,
        [attempt, answer.get('transactionid'), event],
      );
  };
  app.post('/checkout/orders/payment', async (req) => {
    const b = req.body as { order_number: string };
    await charge(b.order_number, 2900, false);
    return { success: true, message: 'Payment approved.', data: { order_number: b.order_number, payment_status: 'completed' } };
  });
  app.post('/checkout/orders/upsell', async (req) => {
    const b = req.body as { order_number: string };
    const event = id('evt');
    await charge(b.order_number, 900, true, event);
    void sendWebhook(event, 'order.upsell_added', b.order_number).catch((e) => log(`webhook failed: ${String(e)}`));
    return { success: true, message: 'Upsell added.', data: { order_number: b.order_number, upsell_status: 'added' } };
  });
  app.post('/checkout/orders/complete', async (req) => {
    const b = req.body as { order_number: string };
    const event = id('evt');
    if (pool)
      await q(
        'floor_complete',
        `WITH o AS (UPDATE floor_orders SET status = 'completed', updated_at = now() WHERE id = $1 RETURNING id)
         INSERT INTO floor_events (id, order_id, type, payload) SELECT $2, o.id, 'order.completed', jsonb_build_object('order', o.id) FROM o`,
        [b.order_number, event],
      );
    vaults.delete(b.order_number);
    void sendWebhook(event, 'order.completed', b.order_number).catch((e) => log(`webhook failed: ${String(e)}`));
    return { success: true, message: 'Order completed.', data: { order_number: b.order_number, status: 'completed' } };
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    url,
    counts,
    close: async () => {
      clearInterval(flush);
      await app.close();
    },
  };
}

// ------------------------------------------------------------------------------ the run

async function main(): Promise<number> {
  let parsed: Options | 'help';
  try {
    parsed = parseFloorOptions(process.argv.slice(2), process.env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`${err.message}\n`);
    return 2;
  }
  if (parsed === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const opts = parsed;
  const loadBefore = os.loadavg()[0]!;
  const databaseUrl = opts.db === 'pg' ? process.env.DATABASE_URL! : null;
  if (databaseUrl && opts.freshDb) {
    try {
      await recreateDatabase(databaseUrl, false);
    } catch (err) {
      if (!(err instanceof UsageError)) throw err;
      process.stderr.write(`${err.message}\n`);
      return 2;
    }
  }
  const pool = databaseUrl ? new pg.Pool({ connectionString: databaseUrl, max: opts.pool }) : null;
  // pg-pool's end() resolves before its clients' sockets have closed, so the --fresh-db drop (WITH
  // FORCE) can terminate one still closing: its error reaches the pool after the run, and unheard
  // it would crash the bench after a complete report (it did, once in CI).
  pool?.on('error', (err) => log(`database connection ended: ${err.message}`));
  if (pool) await pool.query(SCHEMA);
  let listener: pg.Client | null = null;
  let notified = 0;
  if (pool && opts.notify) {
    await pool.query(NOTIFY);
    listener = new pg.Client({ connectionString: databaseUrl! });
    listener.on('error', (err) => log(`notification listener: ${err.message}`));
    await listener.connect();
    listener.on('notification', () => notified++);
    await listener.query('LISTEN floor_work');
  }

  const sandbox = startTsWorker('./sandbox-thread.ts', { slowMs: 2000 });
  const receiver = startTsWorker('./receiver.ts', null);
  const threads: Worker[] = [sandbox, receiver];
  try {
    const [s, r] = await Promise.all([
      nextMessage<{ type: 'ready'; url: string }>(sandbox, 'ready'),
      nextMessage<{ type: 'ready'; url: string }>(receiver, 'ready'),
    ]);
    const secret = `whsec_${crypto.randomBytes(24).toString('base64')}`;
    receiver.postMessage({ type: 'secret', secret });
    const skeleton = await startSkeleton(pool, s.url, r.url, secret);
    log(`skeleton on ${skeleton.url} (${opts.db === 'pg' ? `PostgreSQL ${redactUrl(databaseUrl!)}, pool ${opts.pool}${opts.notify ? ', event rows notify' : ''}` : 'no database'}); ${opts.concurrency} concurrent funnels, ${opts.warmupS} s warm-up, ${opts.durationS} s measured`);

    const input: DriverInput = {
      baseUrl: skeleton.url,
      token: 'floor',
      campaignId: 'cmp_floor',
      offerId: 'off_floor',
      upsellId: 'ups_floor',
      scenario: 'card',
      currency: 'USD',
      extpayConnectionId: null,
      threedsGatewayId: null,
      captureRetries: 0,
      concurrency: opts.concurrency,
      warmupMs: opts.warmupS * 1000,
      durationMs: opts.durationS * 1000,
      progressEveryMs: 5000,
      requestTimeoutMs: 30_000,
      idempotencyKeys: false,
      runId: crypto.randomBytes(4).toString('hex'),
      client: 'raw',
    };
    const self = `/proc/self/task/${process.pid}/stat`;
    let start: { at: number; thread: number | null; machine: number; pg: Map<number, number>; statements: number } | null = null;
    // Set in the driver's callback: declared through `as` so that the check after the run is not narrowed away.
    let window = null as { ms: number; threadMs: number | null; machineMs: number; pgMs: number | null; statements: number } | null;
    const result = await runDriver(
      input,
      (driver) => threads.push(driver),
      (phase) => {
        if (phase === 'measure') {
          start = { at: performance.now(), thread: statCpuMs(self), machine: machineCpu().busy, pg: cpuSnapshot(localPostgresPids(databaseUrl ?? undefined)), statements: skeleton.counts.statements };
        } else if (phase === 'drain' && start) {
          const thread = statCpuMs(self);
          window = {
            ms: performance.now() - start.at,
            threadMs: thread !== null && start.thread !== null ? thread - start.thread : null,
            machineMs: machineCpu().busy - start.machine,
            pgMs: databaseUrl ? cpuBetweenMs(start.pg, cpuSnapshot(localPostgresPids(databaseUrl))) : null,
            statements: skeleton.counts.statements - start.statements,
          };
        }
      },
      (m) => log(`${m.elapsedS.toFixed(1).padStart(5)} s  ${m.phase.padEnd(7)} funnels ${String(m.flowsDone).padStart(6)}  ${m.intervalFlowsPerS.toFixed(1).padStart(6)}/s  p99 ${m.intervalP99Ms.toFixed(0)} ms  errors ${m.errors}`),
      () => {},
    );
    await skeleton.close();
    if (!window) throw new Error('the driver never opened its measured window');
    // --notify: every event row's notification has arrived. The last commits' come a moment after
    // their answers, and on a loaded machine that moment can be long: wait for them up to 15 s.
    let eventRows: number | null = null;
    if (listener && pool) {
      eventRows = Number((await pool.query('SELECT count(*) AS n FROM floor_events')).rows[0].n);
      const deadline = performance.now() + NOTIFY_WAIT_MS;
      while (notified < eventRows && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    }
    const w = window;
    const perS = result.flowsCompleted / (result.measuredMs / 1000);
    const inWindow = (perS * w.ms) / 1000;
    const perFunnel = (ms: number | null) => (ms === null || inWindow <= 0 ? null : Math.round((ms / inWindow) * 100) / 100);
    const p99 = Object.fromEntries(ENDPOINTS.filter((e) => result.endpoints[e].latencies.length > 0).map((e) => [e, Math.round(percentile(sortedCopy(result.endpoints[e].latencies), 99) * 10) / 10]));
    const figures = {
      funnels_per_s: Math.round(perS * 10) / 10,
      failed_funnels: result.flowsFailed,
      funnel_p99_ms: Math.round(percentile(sortedCopy(result.flowLatencies), 99) * 10) / 10,
      p99_ms_per_call: p99,
      skeleton_thread_cpu_ms_per_funnel: perFunnel(w.threadMs),
      postgres_cpu_ms_per_funnel: perFunnel(w.pgMs),
      machine_cpu_ms_per_funnel: perFunnel(w.machineMs),
      statements_per_funnel: pool ? perFunnel(w.statements) : null,
      notifications: listener ? notified : null,
      event_rows: eventRows,
    };
    const line = (label: string, v: unknown) => log(`${label.padEnd(34)} ${v === null ? '–' : String(v)}`);
    log(`result (${opts.db === 'pg' ? `PostgreSQL${opts.notify ? ' with NOTIFY' : ''}` : 'no database'}, c=${opts.concurrency}, ${(result.measuredMs / 1000).toFixed(1)} s, 1-min load before ${loadBefore.toFixed(2)}):`);
    line('funnels/s', figures.funnels_per_s);
    line('failed funnels', figures.failed_funnels);
    line('funnel p99 ms', figures.funnel_p99_ms);
    for (const [e, v] of Object.entries(p99)) line(`p99 ms ${e}`, v);
    line('skeleton thread CPU ms per funnel', figures.skeleton_thread_cpu_ms_per_funnel);
    line('PostgreSQL CPU ms per funnel', figures.postgres_cpu_ms_per_funnel);
    line('machine CPU ms per funnel', figures.machine_cpu_ms_per_funnel);
    line('statements per funnel', figures.statements_per_funnel);
    if (listener) line('notifications / event rows', `${notified} / ${eventRows}`);
    const file = `bench/results/${resultStamp(new Date())}-floor-${opts.db}.json`;
    fs.mkdirSync('bench/results', { recursive: true });
    fs.writeFileSync(file, `${JSON.stringify({ kind: 'checkstand-bench-floor', git: gitInfo(), machine: { cpus: os.cpus().length, load_before: loadBefore, load_after: os.loadavg()[0] }, options: opts, figures }, null, 2)}\n`);
    log(`report: ${file}`);
    if (eventRows !== null && notified !== eventRows) {
      log(`FAILED: ${notified} notifications for ${eventRows} event rows`);
      return 1;
    }
    return result.flowsFailed > 0 || result.flowsCompleted === 0 ? 1 : 0;
  } finally {
    await Promise.all(threads.map((t) => t.terminate()));
    await listener?.end();
    await pool?.end();
    if (databaseUrl && opts.freshDb) await dropBenchDatabase(databaseUrl, log);
  }
}

runMain('bench:floor', main);
