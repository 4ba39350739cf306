/**
 * `npm run bench -- --scenario extpay|threeds`: the bench's entry as a child process, on the
 * embedded database, a short run at low concurrency. It asserts what the run did, never how fast:
 * exit 0, some funnel completed, the report names the scenario, times its steps, and every
 * correctness check (ledger against database, orders completed once, the provider's webhooks,
 * order webhooks, mail) is ok.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { type BenchRun, explain, runBench as runBenchCli } from './support/bench-cli.ts';
import { localPostgresPids } from '../bench/server-processes.ts';
import { defaultMailDir, tmpfsRoot } from '../bench/mail-dir.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
/** A hang, not a slow machine: migrating the embedded database alone takes a minute on a loaded 2-core machine. */
const RUN_TIMEOUT_MS = 540_000;

/** The bench on the embedded database, or on `databaseUrl` when a test names one. */
const runBench = (args: string[], databaseUrl?: string): Promise<BenchRun> => runBenchCli(args, databaseUrl ? { DATABASE_URL: databaseUrl } : {}, RUN_TIMEOUT_MS);

describe('the PostgreSQL processes the bench measures', () => {
  it('are none for a server elsewhere or no DATABASE_URL: another machine\'s CPU is not counted as this one\'s', () => {
    expect(localPostgresPids(undefined)).toEqual([]);
    expect(localPostgresPids('postgres://u@db.internal.example:5432/checkstand')).toEqual([]);
    expect(localPostgresPids('not a url')).toEqual([]);
  });
  it.skipIf(!process.env.TEST_DATABASE_URL)('are the local server\'s, by TCP on loopback or by its socket directory (needs TEST_DATABASE_URL)', () => {
    const tcp = localPostgresPids(process.env.TEST_DATABASE_URL);
    expect(tcp.length).toBeGreaterThan(1);
    for (const pid of tcp) expect(fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim()).toBe('postgres');
    // The same processes by a socket directory (the set may have changed meanwhile: the suite's other files connect and leave).
    const socket = localPostgresPids('postgres://postgres@localhost/postgres?host=/var/run/postgresql');
    expect(socket.length).toBeGreaterThan(1);
    expect(socket.filter((p) => tcp.includes(p)).length).toBeGreaterThan(0);
  });
});

describe('bench --scenario', () => {
  it('extpay: create order, pay on the hosted page, capture, upsell (202), complete; every check ok', async () => {
    // The mail files in the data dir, on its disk (the default is tmpfs where the machine has one).
    // node:http's client (--client http), as before raw-http.ts was the default.
    const r = await runBench(['--scenario', 'extpay', '--duration', '2', '--warmup', '0', '--concurrency', '2', '--mail-dir', 'data', '--client', 'http']);
    expect(r.code, explain(r)).toBe(0);
    const rep = r.report;
    expect(rep, explain(r)).not.toBeNull();
    expect(rep.scenario).toBe('extpay');
    expect(rep.parameters.mailDir).toBe('data');
    expect(r.stdout).toContain('mail files: data dir');
    expect(rep.parameters.scenario).toBe('extpay');
    expect(rep.parameters.client).toMatch(/^http: /);
    expect(rep.passed, explain(r)).toBe(true);
    expect(rep.results.flows.completed).toBeGreaterThan(0);
    expect(Object.keys(rep.results.endpoints)).toEqual([
      'POST /checkout/orders',
      'sandbox: extpay pay page',
      'POST /checkout/orders/capture',
      'POST /checkout/orders/upsell',
      'POST /checkout/orders/complete',
    ]);
    // Capture settled every order, by itself or after the provider's webhook; the upsell was accepted or already added.
    const t = rep.results.totals;
    expect(t.capture.ok).toBeGreaterThan(0);
    expect(Object.keys(t.capture.outcomes).every((o) => o.startsWith('200 ') || o.startsWith('202 '))).toBe(true);
    expect(Object.keys(t.upsell.outcomes).every((o) => o === '202 accepted' || o === '200 added')).toBe(true);
    const checks = Object.fromEntries(rep.results.checks.map((c: { name: string; ok: boolean; detail: string }) => [c.name, c]));
    for (const name of ['sandbox ledger', 'orders completed once', 'provider webhooks', 'webhooks', 'mail']) expect(checks[name], name).toMatchObject({ ok: true });
    const se = rep.results.side_effects;
    // Two charges per funnel at the provider (the checkout and the upsell), each recorded once here.
    expect(se.sandbox_ledger.approved_sales).toBe(se.sandbox_ledger.database_approved_sales);
    expect(se.sandbox_ledger.approved_sales).toBeGreaterThanOrEqual(2 * rep.results.all_funnels_completed);
    expect(se.orders_completed.events).toBe(se.orders_completed.distinct_orders);
    expect(se.provider_webhooks.by_type['payment.succeeded']).toBeGreaterThan(0);
    // No warm-up: the statements are counted, not split between the API and the worker.
    expect(rep.results.server.db_statements_per_flow).toBeGreaterThan(0);
    expect(rep.results.server.db_statements_per_flow_by_source).toBeNull();
    expect(rep.targets.sql_statements_per_flow.measured).toBe('? (not counted apart without a warm-up)');
    // In process the RSS is the whole bench's (its own threads and heaps too): reported, not judged against a server's target.
    expect(rep.targets.rss_mb.measured).toMatch(/^\d+ MB \(whole bench process; a server's alone: --processes\)$/);
    expect(rep.targets.rss_mb.met).toBeNull();
    // Embedded: the database's CPU is the server's; the machine's CPU per funnel and the ceiling it sets are still reported.
    expect(rep.results.server.postgres_cpu_ms_per_flow).toBeNull();
    expect(rep.results.server.machine_cpu_ms_per_flow).toBeGreaterThan(0);
    expect(rep.results.server.machine_flows_per_s_bound).toBeCloseTo((rep.machine.cpus * 1000) / rep.results.server.machine_cpu_ms_per_flow, 0);
    expect(r.stdout).toContain('PostgreSQL in the server');
  }, RUN_TIMEOUT_MS + 30_000);

  it('threeds: lead, pay (redirect), the challenge page, capture, upsell, complete; every check ok', async () => {
    // A warm-up, so the window's statements are split between the API and the outbox worker (in the warm-up's ratio).
    // The server logging at info (its own default), to a file: two lines for each of the funnel's five API requests and more.
    const r = await runBench(['--scenario', 'threeds', '--duration', '2', '--warmup', '2', '--concurrency', '2', '--log-level', 'info']);
    expect(r.code, explain(r)).toBe(0);
    const rep = r.report;
    expect(rep, explain(r)).not.toBeNull();
    expect(rep.scenario).toBe('threeds');
    // The default client: HTTP/1.1 on the driver's own kept-alive sockets (bench/raw-http.ts).
    expect(rep.parameters.client).toMatch(/^raw: /);
    // Each bench thread's own CPU over the window, read from its kernel task (Linux).
    if (process.platform === 'linux') {
      const threads = rep.results.server.bench_threads_cpu_ms_per_flow;
      for (const t of ['driver', 'sandbox', 'receiver']) {
        expect(typeof threads?.[t], explain(r)).toBe('number');
        expect(threads[t]).toBeGreaterThanOrEqual(0);
      }
      expect(r.stdout).toMatch(/\(CPU per funnel: driver [\d.]+ ms, sandbox [\d.]+ ms, receiver [\d.]+ ms\)/);
    }
    // The default mail dir: a directory on tmpfs where the machine has one (the mail check below says every mail was written there), removed after the run.
    expect(rep.parameters.mailDir).toBe(defaultMailDir());
    if (tmpfsRoot()) {
      const target = /mail files: tmpfs \((\/dev\/shm\/checkstand-bench-mail-[^)]+)\)/.exec(r.stdout)?.[1];
      expect(target, explain(r)).toBeDefined();
      expect(fs.existsSync(target!)).toBe(false);
    }
    expect(rep.passed, explain(r)).toBe(true);
    expect(rep.results.flows.completed).toBeGreaterThan(0);
    expect(Object.keys(rep.results.endpoints)).toEqual([
      'POST /checkout/leads',
      'POST /checkout/orders/payment',
      'sandbox: 3DS challenge',
      'POST /checkout/orders/capture',
      'POST /checkout/orders/upsell',
      'POST /checkout/orders/complete',
    ]);
    const t = rep.results.totals;
    expect(t.pay.outcomes).toEqual({ '200 pending_redirect': t.pay.ok });
    expect(t.challenge.ok).toBeGreaterThan(0);
    expect(t.upsell.outcomes).toEqual({ '200 added': t.upsell.ok });
    const checks = Object.fromEntries(rep.results.checks.map((c: { name: string; ok: boolean; detail: string }) => [c.name, c]));
    for (const name of ['sandbox ledger', 'orders completed once', 'provider webhooks', 'webhooks', 'mail']) expect(checks[name], name).toMatchObject({ ok: true });
    const se = rep.results.side_effects;
    expect(se.sandbox_ledger.approved_sales).toBe(se.sandbox_ledger.database_approved_sales);
    expect(se.sandbox_ledger.approved_sales).toBeGreaterThanOrEqual(2 * rep.results.all_funnels_completed);
    expect(se.provider_webhooks.by_type.PAYMENT_SUCCEEDED).toBeGreaterThan(0);
    // The worker's statements were counted in its own async context during the warm-up, and the window's split in that ratio.
    const srv = rep.results.server;
    expect(srv.db_statements_per_flow, explain(r)).toBeGreaterThan(0);
    expect(srv.db_statements_per_flow_by_source.worker, explain(r)).toBeGreaterThan(0);
    expect(srv.db_statements_per_flow_by_source.api, explain(r)).toBeGreaterThan(srv.db_statements_per_flow_by_source.worker);
    expect(srv.db_statements_per_flow_by_source.api + srv.db_statements_per_flow_by_source.worker).toBeCloseTo(srv.db_statements_per_flow, 0);
    // Waiting for a core over the window: the server's main thread's share and ms per funnel; no PostgreSQL process embedded.
    expect(srv.run_queue, explain(r)).not.toBeNull();
    expect(srv.run_queue.server_main_wait_share).toBeGreaterThanOrEqual(0);
    expect(srv.run_queue.server_main_wait_share).toBeLessThanOrEqual(1);
    expect(srv.run_queue.server_wait_ms_per_flow).toBeGreaterThanOrEqual(0);
    expect(srv.run_queue.postgres_wait_ms_per_flow).toBeNull();
    expect(srv.run_queue.server_wait_ms_per_flow_by_process).toBeNull();
    expect(r.stdout).toMatch(/waiting for a core \(runnable, not running\): server main thread [\d.]+ ms per funnel \(\d+% of the window\)/);
    expect(srv.log.level).toBe('info');
    expect(srv.log.lines_per_flow, explain(r)).toBeGreaterThanOrEqual(10);
    expect(r.stdout).toMatch(/server log: level info, \d+ lines/);
  }, RUN_TIMEOUT_MS + 30_000);

  it('refuses a log level other than warn and info (exit 2)', async () => {
    const r = await runBench(['--log-level', 'debug']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--log-level must be one of warn, info, got "debug"');
    expect(r.report).toBeNull();
  });

  it('refuses a mail dir other than tmpfs and data (exit 2)', async () => {
    const r = await runBench(['--mail-dir', 'nfs']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--mail-dir must be one of tmpfs, data, got "nfs"');
    expect(r.report).toBeNull();
  });

  it('refuses an unknown scenario with its usage (exit 2)', async () => {
    const r = await runBench(['--scenario', 'paypal']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--scenario must be one of card, extpay, threeds, got "paypal"');
    expect(r.report).toBeNull();
  });

  it('refuses --workers without --processes (exit 2): in process the worker runs on the server thread', async () => {
    const r = await runBench(['--workers', '1']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--workers needs --processes');
    expect(r.report).toBeNull();
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('bench --processes N --workers M on PostgreSQL (needs TEST_DATABASE_URL; skipped without it)', () => {
  it('runs serve without its worker and the outbox worker as its own process: every check ok, each process measured', async () => {
    const url = new URL(process.env.TEST_DATABASE_URL!);
    url.pathname = `/checkstand_bench_workers_${process.pid}`;
    const r = await runBench(['--processes', '1', '--workers', '1', '--fresh-db', '--duration', '2', '--warmup', '0', '--concurrency', '2'], url.toString());
    expect(r.code, explain(r)).toBe(0);
    const rep = r.report;
    expect(rep.passed, explain(r)).toBe(true);
    // Only the worker process delivers: serve ran without --with-worker, and every webhook and mail went out.
    const checks = Object.fromEntries(rep.results.checks.map((c: { name: string; ok: boolean; detail: string }) => [c.name, c]));
    for (const name of ['sandbox ledger', 'orders completed once', 'webhooks', 'mail', 'server stop']) expect(checks[name], name).toMatchObject({ ok: true });
    const srv = rep.results.server;
    expect(srv.server_processes).toMatchObject({ mode: 'child processes', api_processes: 1, worker_processes: 1 });
    const byProcess = Object.keys(srv.cpu_ms_per_flow_by_process ?? {}).map((k) => k.split(' ')[0]).sort();
    expect(byProcess, explain(r)).toEqual(['api', 'worker']);
    expect(Object.keys(srv.rss_mb.per_process).some((k) => k.startsWith('worker '))).toBe(true);
    // Each server process measured apart: the RSS target is judged (on the largest).
    expect(rep.targets.rss_mb.measured).toMatch(/^\d+ MB \(largest\)$/);
    expect(typeof rep.targets.rss_mb.met).toBe('boolean');
    expect(r.stdout).toContain('checkstand serve --processes 1 + 1 × checkstand worker (1 API process + 1 worker process');
    // PostgreSQL runs on this machine (CI's and this suite's): its processes' CPU over the window, per funnel, part of the machine's.
    expect(srv.postgres_cpu_ms_per_flow, explain(r)).toBeGreaterThan(0);
    expect(srv.machine_cpu_ms_per_flow).toBeGreaterThan(srv.postgres_cpu_ms_per_flow);
    expect(r.stdout).toMatch(/CPU per funnel on this machine: [\d.]+ ms in all \(server [\d.]+, PostgreSQL [\d.]+,/);
    // The API and worker processes' main threads and PostgreSQL's processes, each waiting for a core some of the window.
    expect(srv.run_queue, explain(r)).not.toBeNull();
    expect(srv.run_queue.postgres_wait_ms_per_flow).toBeGreaterThanOrEqual(0);
    expect(Object.keys(srv.run_queue.server_wait_ms_per_flow_by_process).sort()).toEqual(Object.keys(srv.cpu_ms_per_flow_by_process).sort());
    expect(r.stdout).toMatch(/CPU per funnel by process: api \d+ [\d.]+ ms \(waited for a core [\d.]+\), worker \d+ [\d.]+ ms \(waited for a core [\d.]+\)/);
    expect(r.stdout).toMatch(/waiting for a core \(runnable, not running\): server processes' main threads [\d.]+ ms per funnel \(\d+% of the window, the busiest\), PostgreSQL [\d.]+ ms per funnel/);
  }, RUN_TIMEOUT_MS + 30_000);
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('bench --processes --profile on PostgreSQL (needs TEST_DATABASE_URL; skipped without it)', () => {
  it("profiles each server process over its run (node --cpu-prof) and reports each one's top items", async () => {
    const url = new URL(process.env.TEST_DATABASE_URL!);
    url.pathname = `/checkstand_bench_profile_${process.pid}`;
    const r = await runBench(['--processes', '2', '--profile', '--fresh-db', '--duration', '2', '--warmup', '0', '--concurrency', '2'], url.toString());
    const profiles: Array<{ process: string; file: string; total_ms: number; groups: Array<{ group: string }>; top_functions: unknown[] }> = r.report?.results.process_profiles ?? [];
    try {
      expect(r.code, explain(r)).toBe(0);
      expect(r.report.passed, explain(r)).toBe(true);
      // The primary, each API process and serve's worker child (--with-worker), each its own file.
      expect(profiles.map((p) => p.process.split(' ')[0]).sort(), explain(r)).toEqual(['api', 'api', 'primary', 'worker']);
      for (const p of profiles) {
        expect(fs.existsSync(path.resolve(ROOT, p.file)), p.file).toBe(true);
        expect(p.file).toContain(p.process.replace(' ', '-'));
        expect(p.total_ms).toBeGreaterThan(0);
        expect(p.top_functions.length).toBeGreaterThan(0);
        // Its own code is in it: the bundle (build/), or the sources when the bundle is not current.
        expect(p.groups.some((g) => g.group.startsWith('app: ')), p.process).toBe(true);
        expect(r.stdout).toContain(`CPU profile of ${p.process}, its whole run`);
      }
    } finally {
      for (const p of profiles) fs.rmSync(path.resolve(ROOT, p.file), { force: true });
    }
  }, RUN_TIMEOUT_MS + 30_000);
});
