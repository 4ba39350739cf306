/**
 * A newcomer's first ten minutes (issue 12): `npm start` as a process on a fresh data dir — the
 * token is never lost, a token can be made while the server runs, a banner on every start, clear
 * one-line errors naming the setting — and the API's answers for `/` and a timeline id.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { email, seedFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp } from './support/harness.ts';

const run = promisify(execFile);
const BIN = path.resolve('bin/checkstand.js');
const dirs: string[] = [];
const children: ChildProcess[] = [];
/** A start on a machine under load: minutes, not seconds, before giving up. */
const START_TIMEOUT_MS = 120_000;

function freshDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'checkstand-first-run-'));
  dirs.push(d);
  return d;
}

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** The environment of a start on `dir`: embedded database, its own API and sandbox ports, JSON logs (not a TTY). */
function envFor(dir: string, ports: { api: number; sandbox: number }, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  // No event-loop load shedding: a loaded test machine would answer 503 where the test expects 401.
  // No demo history: its ≈230 background orders are test/demo-history.test.ts's subject, and here they only load the machine.
  return { ...process.env, CHECKSTAND_DATA_DIR: dir, DATABASE_URL: '', PORT: String(ports.api), SANDBOX_PORT: String(ports.sandbox), LOG_LEVEL: 'info', OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0', CHECKSTAND_DEMO_HISTORY: '0', ...extra };
}

interface Started {
  child: ChildProcess;
  out: () => string;
  err: () => string;
  exited: Promise<number | null>;
}

function launch(args: string[], env: NodeJS.ProcessEnv): Started {
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += String(d)));
  child.stderr!.on('data', (d: Buffer) => (err += String(d)));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { child, out: () => out, err: () => err, exited };
}

async function until(what: string, check: () => boolean, s: Started, timeoutMs = START_TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (s.child.exitCode !== null) throw new Error(`exited (${s.child.exitCode}) before ${what}:\n${s.out()}\n${s.err()}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${s.out()}\n${s.err()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function stop(s: Started): Promise<void> {
  if (s.child.exitCode === null) s.child.kill('SIGTERM');
  await s.exited;
}

/** The API token the banner printed, if any. */
function bannerToken(out: string): string | undefined {
  return /API token {4}(csk_\w+)/.exec(out)?.[1];
}

async function status(url: string, token: string): Promise<number> {
  return (await fetch(url, { headers: { authorization: `Bearer ${token}` } })).status;
}

/** One line on stderr, no stack trace. */
function expectOneLineError(stderr: string, pattern: RegExp): void {
  const lines = stderr.trim().split('\n');
  expect(lines.at(-1)).toMatch(pattern);
  expect(stderr).not.toMatch(/^\s+at /m);
}

afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe('npm start on a fresh data dir', () => {
  it('a busy PORT fails before the database is opened, in one line naming PORT: nothing seeded, so the next start makes and prints the token', async () => {
    const dir = freshDir();
    const ports = { api: await freePort(), sandbox: await freePort() };
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(ports.api, '127.0.0.1', r));
    const failed = launch(['start'], envFor(dir, ports));
    expect(await failed.exited).toBe(1);
    await new Promise((r) => blocker.close(r));
    expectOneLineError(failed.err(), new RegExp(`^checkstand: port ${ports.api} on 127\\.0\\.0\\.1 \\(PORT\\) is already in use`));
    expect(fs.readdirSync(dir)).toEqual([]);
  }, 120_000);

  it('a start stopped after seeding but before printing its token: the next start revokes that token and prints a new one', async () => {
    const dir = freshDir();
    const ports = { api: await freePort(), sandbox: await freePort() };
    const first = launch(['start'], envFor(dir, ports));
    // demo.json is written right after seeding; the banner comes after the server is built and listening.
    await until('the demo seeded', () => fs.existsSync(path.join(dir, 'demo.json')), first);
    first.child.kill('SIGKILL');
    await first.exited;
    expect(bannerToken(first.out())).toBeUndefined();
    const state = JSON.parse(fs.readFileSync(path.join(dir, 'demo.json'), 'utf8'));
    expect(state).toMatchObject({ token_printed: false, token_id: expect.stringMatching(/^tok_/) });

    const second = launch(['start'], envFor(dir, ports));
    await until('the banner', () => second.out().includes('Checkstand is running'), second);
    const token = bannerToken(second.out())!;
    expect(second.out()).toContain(`NEW TOKEN: the previous start stopped before printing its token, so that one (${state.token_id}) is revoked.`);
    expect(await status(`http://127.0.0.1:${ports.api}/v1/orders`, token)).toBe(200);
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'demo.json'), 'utf8'))).toMatchObject({ token_printed: true, team_id: state.team_id });
    const list = await run(process.execPath, [BIN, 'token', 'list', '--team', state.team_id, '--json'], { env: envFor(dir, ports) });
    const old = JSON.parse(list.stdout).find((t: { id: string }) => t.id === state.token_id);
    expect(old.revoked_at).not.toBeNull();
    await stop(second);

    // A third start prints no token (it was shown), but the banner and how to get one.
    const third = launch(['start'], envFor(dir, ports));
    await until('the banner', () => third.out().includes('Checkstand is running'), third);
    expect(bannerToken(third.out())).toBeUndefined();
    expect(third.out()).toContain(`npx checkstand token create --team ${state.team_id}`);
    expect(third.out()).toContain(`http://127.0.0.1:${ports.api}/demo`);
    await stop(third);
  }, 400_000);

  it('token create works while the embedded server runs, through an owner-only socket in the data dir', async () => {
    const dir = freshDir();
    const ports = { api: await freePort(), sandbox: await freePort() };
    const server = launch(['start'], { ...envFor(dir, ports), CHECKSTAND_SANDBOX: 'off' });
    await until('the banner', () => server.out().includes('Checkstand is running'), server);
    // The empty data dir's database was created (initdb, migrations) by a short-lived child: PGlite's
    // memory only grows, and doing it in the server left it at ≈850 MB for good (peak ≈900 MB).
    expect(server.err()).toContain('creating the embedded database (first start');
    const peakMb = Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${server.child.pid}/status`, 'utf8'))?.[1]) / 1024;
    expect(peakMb).toBeLessThan(600);
    const teamId = JSON.parse(fs.readFileSync(path.join(dir, 'demo.json'), 'utf8')).team_id as string;
    const socket = path.join(dir, 'control.sock');
    expect(fs.statSync(socket).isSocket()).toBe(true);
    expect(fs.statSync(socket).mode & 0o777).toBe(0o600);

    const created = JSON.parse((await run(process.execPath, [BIN, 'token', 'create', '--team', teamId, '--name', 'while-running', '--json'], { env: envFor(dir, ports) })).stdout);
    expect(created).toMatchObject({ token: expect.stringMatching(/^csk_/), name: 'while-running', team_id: teamId });
    expect(await status(`http://127.0.0.1:${ports.api}/v1/orders`, created.token)).toBe(200);
    await run(process.execPath, [BIN, 'token', 'revoke', created.id], { env: envFor(dir, ports) });
    expect(await status(`http://127.0.0.1:${ports.api}/v1/orders`, created.token)).toBe(401);

    // A command that needs the database itself says who holds it and what still works.
    const migrate = await run(process.execPath, [BIN, 'migrate'], { env: envFor(dir, ports) }).catch((e: { code: number; stderr: string }) => e);
    expect((migrate as { code: number }).code).toBe(2);
    expect((migrate as { stderr: string }).stderr).toMatch(/A Checkstand server \(pid \d+, http:\/\/127\.0\.0\.1:\d+\) runs on it: `checkstand token …` works while it runs/);
    await stop(server);
    expect(fs.existsSync(socket)).toBe(false);
  }, 300_000);

  it('a busy sandbox port fails in one line naming SANDBOX_PORT', async () => {
    const dir = freshDir();
    const ports = { api: await freePort(), sandbox: await freePort() };
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(ports.sandbox, '127.0.0.1', r));
    const failed = launch(['start'], envFor(dir, ports));
    expect(await failed.exited).toBe(1);
    await new Promise((r) => blocker.close(r));
    expectOneLineError(failed.err(), new RegExp(`^checkstand: port ${ports.sandbox} on 127\\.0\\.0\\.1 \\(SANDBOX_PORT\\) is already in use`));
    expect(fs.readdirSync(dir)).toEqual([]);
  }, 120_000);
});

describe('PostgreSQL settings', () => {
  const KEY = 'ab'.repeat(32);
  /** A data dir that must never be created: nothing is written on disk in PostgreSQL mode. */
  const untouched = () => path.join(freshDir(), 'must-not-exist');

  async function serveFails(env: Record<string, string>): Promise<{ code: number; stderr: string; dir: string }> {
    const dir = untouched();
    const r = await run(process.execPath, [BIN, 'serve'], { env: { ...process.env, CHECKSTAND_DATA_DIR: dir, PORT: '0', DATABASE_STARTUP_WAIT_MS: '0', ...env } }).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(fs.existsSync(dir)).toBe(false);
    return { ...(r as { code: number; stderr: string }), dir };
  }

  it('an unparseable DATABASE_URL, an unknown host and an unreachable server: one line each naming DATABASE_URL, exit 1, no data dir', async () => {
    const bad = await serveFails({ DATABASE_URL: 'base', CHECKSTAND_SECRET_KEY: KEY });
    expect(bad.code).toBe(1);
    expectOneLineError(bad.stderr, /^checkstand: DATABASE_URL is not a URL/);

    const host = await serveFails({ DATABASE_URL: 'postgres://u:secretpw@no-such-host.invalid:5432/db', CHECKSTAND_SECRET_KEY: KEY });
    expect(host.code).toBe(1);
    expectOneLineError(host.stderr, /^checkstand: DATABASE_URL names a host that does not resolve: "no-such-host\.invalid"/);

    const port = await freePort();
    const down = await serveFails({ DATABASE_URL: `postgres://u:secretpw@127.0.0.1:${port}/db`, CHECKSTAND_SECRET_KEY: KEY });
    expect(down.code).toBe(1);
    expectOneLineError(down.stderr, new RegExp(`^checkstand: the database in DATABASE_URL \\(postgres://u:\\*\\*\\*@127\\.0\\.0\\.1:${port}/db\\) is not reachable: .*ECONNREFUSED.*DATABASE_STARTUP_WAIT_MS`));
    for (const r of [bad, host, down]) expect(r.stderr).not.toContain('secretpw');
  }, 120_000);

  it('without CHECKSTAND_SECRET_KEY: refused in one line naming it, and no secret.key written', async () => {
    const r = await serveFails({ DATABASE_URL: 'postgres://u@127.0.0.1:1/db', CHECKSTAND_SECRET_KEY: '' });
    expect(r.code).toBe(1);
    expectOneLineError(r.stderr, /^checkstand: CHECKSTAND_SECRET_KEY is required with DATABASE_URL/);
  }, 60_000);
});

describe('the API a newcomer meets', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it('GET / redirects to the docs when no demo funnel is served', async () => {
    const r = await fetch(`${app.url}/`, { redirect: 'manual' });
    expect(r.status).toBe(302);
    expect(r.headers.get('location')).toBe('/docs');
  });

  it('/healthz writes no request log line at info; other routes do', async () => {
    const before = app.logs.length;
    const h = await fetch(`${app.url}/healthz`, { headers: { 'x-request-id': 'healthz-probe-1' } });
    expect(h.status).toBe(200);
    const other = await fetch(`${app.url}/v1/orders`, { headers: { 'x-request-id': 'not-a-probe-1' } });
    expect(other.status).toBe(401);
    const lines = app.logs.slice(before).join('\n');
    expect(lines).toContain('not-a-probe-1');
    expect(lines).not.toContain('healthz-probe-1');
  });

  it('a timeline entry id (evt_…) asked for as a webhook event answers 404 saying where it lives', async () => {
    const t = await app.newTeam();
    const f = await seedFunnel(app, t.teamId);
    const lead = await t.api.post('/checkout/leads', { campaign_id: f.campaignId, customer: { email: email('tl'), first_name: 'A', last_name: 'B' }, products: [{ offer_id: f.offers.serum, quantity: 1 }] });
    expect(lead.status).toBe(201);
    const order = await t.api.get(`/v1/orders/${lead.body.data.order_number}`);
    const entry = order.body.data.events[0];
    expect(entry.id).toMatch(/^evt_/);
    const r = await t.api.get(`/v1/events/${entry.id}`);
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe('not_found');
    expect(r.body.message).toContain('is an order timeline entry, not a webhook event');
    expect(r.body.message).toContain('GET /v1/orders/{order_number}');
    // A webhook event id is still looked up as one.
    const unknown = await t.api.get('/v1/events/ev_doesnotexist0');
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).not.toContain('timeline');
  });
});
