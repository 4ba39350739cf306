/**
 * `checkstand serve --processes 2`: two API processes answer on one port, `--with-worker` runs
 * the outbox worker in a third child (with the API processes' V8 flags; a killed one is replaced
 * too), a killed API process is replaced while the port keeps answering, SIGTERM stops everything
 * with exit 0; on the embedded
 * database more than one process is refused with a one-line error naming the setting.
 *
 * Real `node bin/checkstand.js serve` processes on a scratch PostgreSQL database (the pattern of
 * test/reliability/processes.ts, copied here). Which process answered is read from the
 * `x-checkstand-pid` header that CHECKSTAND_DEBUG_PID_HEADER=1 turns on; each request uses a new
 * connection (the primary hands out connections, not requests).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import v8 from 'node:v8';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { API_HEAP_GROWING_PERCENT, API_SEMI_SPACE_MB, apiProcessExecArgv, applyHeapGrowth } from '../src/cli/cluster.ts';
import { childPids, processName, shebangCommand } from '../bench/server-processes.ts';
import { freePort } from './reliability/processes.ts';

const BIN = path.resolve('bin/checkstand.js');
const SERVER_URL = process.env.TEST_DATABASE_URL;
const SECRET_KEY = 'd4'.repeat(32);

const live = new Set<ChildProcess>();
const killLive = () => {
  for (const c of live) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
};
process.once('exit', killLive);
// A test that failed before stopping its processes: they go when the file ends (vitest's worker
// may outlive it, and an idle serve would keep running).
afterAll(killLive);

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A process is alive while signal 0 reaches it. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** GET on a fresh connection (no keep-alive): status and the answering pid, or the network error. */
function get(port: number, p: string): Promise<{ status: number; pid: number | undefined } | { error: string }> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: p, agent: false, timeout: 5000 }, (res) => {
      res.resume();
      res.on('end', () => {
        const raw = res.headers['x-checkstand-pid'];
        resolve({ status: res.statusCode ?? 0, pid: raw ? Number(raw) : undefined });
      });
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err) => resolve({ error: (err as NodeJS.ErrnoException).code ?? err.message }));
  });
}

/** The pids that answered `n` requests, each on its own connection; throws on any non-200. */
async function answeringPids(port: number, n: number): Promise<Set<number>> {
  const pids = new Set<number>();
  for (let i = 0; i < n; i++) {
    const r = await get(port, '/healthz');
    if ('error' in r) throw new Error(`GET /healthz failed: ${r.error}`);
    if (r.status !== 200) throw new Error(`GET /healthz answered ${r.status}`);
    if (r.pid === undefined) throw new Error('no x-checkstand-pid header: CHECKSTAND_DEBUG_PID_HEADER is not honoured');
    pids.add(r.pid);
  }
  return pids;
}

/**
 * `checkstand <command> …args` (serve unless told), run by node with `nodeFlags`, or (`asCommand`)
 * run as a command, as `npx checkstand` runs it: the script itself, its shebang line starting node;
 * its stdout and stderr together in `output`.
 */
class Serve {
  readonly child: ChildProcess;
  output = '';
  constructor(args: string[], env: NodeJS.ProcessEnv, opts: { command?: string; nodeFlags?: string[]; asCommand?: boolean } = {}) {
    const argv = [opts.command ?? 'serve', ...args];
    this.child = opts.asCommand
      ? // The shebang's `env` finds node on PATH: this test's own node first.
        spawn(BIN, argv, { env: { ...env, PATH: `${path.dirname(process.execPath)}${path.delimiter}${env.PATH ?? ''}` }, stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn(process.execPath, [...(opts.nodeFlags ?? []), BIN, ...argv], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    live.add(this.child);
    this.child.once('exit', () => live.delete(this.child));
    this.child.stdout!.on('data', (d: Buffer) => (this.output += String(d)));
    this.child.stderr!.on('data', (d: Buffer) => (this.output += String(d)));
  }
  /** Resolves once its output holds `text`; fails if it exits first or `timeoutMs` passes. */
  async printed(text: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.output.includes(text)) {
      if (this.child.exitCode !== null || this.child.signalCode !== null) throw new Error(`exited before printing "${text}":\n${this.output}`);
      if (Date.now() > deadline) throw new Error(`did not print "${text}" within ${timeoutMs} ms:\n${this.output.slice(-3000)}`);
      await sleep(50);
    }
  }
  exited(timeoutMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    const c = this.child;
    if (c.exitCode !== null || c.signalCode !== null) return Promise.resolve({ code: c.exitCode, signal: c.signalCode });
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`serve did not exit within ${timeoutMs} ms:\n${this.output.slice(-3000)}`)), timeoutMs);
      c.once('exit', (code, signal) => {
        clearTimeout(t);
        resolve({ code, signal });
      });
    });
  }
}

function baseEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, CHECKSTAND_SECRET_KEY: SECRET_KEY, LOG_LEVEL: 'info', CHECKSTAND_DEBUG_PID_HEADER: '1' };
  delete env.SERVE_PROCESSES;
  delete env.NODE_ENV;
  return env;
}

describe.skipIf(!SERVER_URL)('serve --processes 2 on PostgreSQL (needs TEST_DATABASE_URL; skipped without it)', () => {
  const dbName = `serve_procs_${randomBytes(5).toString('hex')}`;
  let dbUrl = '';
  let port = 0;
  let serve: Serve | undefined;

  const admin = async (q: string) => {
    const c = new pg.Client({ connectionString: SERVER_URL, connectionTimeoutMillis: 10_000 });
    await c.connect();
    try {
      await c.query(q);
    } finally {
      await c.end();
    }
  };

  beforeAll(async () => {
    await admin(`CREATE DATABASE ${dbName}`);
    const u = new URL(SERVER_URL!);
    u.pathname = `/${dbName}`;
    dbUrl = u.toString();
    port = await freePort();
  });

  afterAll(async () => {
    if (serve && serve.child.exitCode === null && serve.child.signalCode === null) {
      serve.child.kill('SIGKILL');
      await serve.exited(10_000).catch(() => {});
    }
    await admin(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  });

  it('answers on one port from two processes, runs the worker in a child of its own, replaces a killed one, and stops on SIGTERM with exit 0', async () => {
    serve = new Serve(['--processes', '2', '--with-worker'], { ...baseEnv(), DATABASE_URL: dbUrl, HOST: '127.0.0.1', PORT: String(port) });
    const primary = serve.child.pid!;

    // Ready when the banner (printed once every child listens) is out.
    await serve.printed('Checkstand is running', 90_000);
    // The banner's lines may reach the pipe in more than one chunk: wait for its Processes line too.
    await serve.printed('Processes    ', 30_000);
    expect(serve.output.match(/Checkstand is running/g)).toHaveLength(1);
    expect(serve.output).toMatch(/Processes {4}2 API processes/);
    // --with-worker: the outbox worker runs in a third child, not in the primary.
    const workerPid = Number(/the worker, pid (\d+)/.exec(serve.output)?.[1]);
    expect(workerPid, serve.output).toBeGreaterThan(0);
    expect(alive(workerPid)).toBe(true);

    const first = await answeringPids(port, 12);
    expect(first.size).toBe(2);
    expect(first.has(primary)).toBe(false);
    expect(first.has(workerPid)).toBe(false);
    // Each API process and the worker's run with the smaller young generation; the primary with Node's own.
    const cmdline = (pid: number) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    for (const pid of [...first, workerPid]) expect(cmdline(pid)).toEqual(expect.arrayContaining([`--max-semi-space-size=${API_SEMI_SPACE_MB}`, `--heap-growing-percent=${API_HEAP_GROWING_PERCENT}`]));
    expect(cmdline(primary).some((a) => a.startsWith('--max-semi-space-size'))).toBe(false);
    // The primary set no V8 flag for a worker of its own (the child has them from its start), and the worker runs.
    expect(serve.output).not.toContain('V8 old-generation growth set');
    await serve.printed('worker started', 60_000);
    const workerStarts = () => serve!.output.split('worker started').length - 1;
    expect(workerStarts()).toBe(1);

    // SIGKILL the worker's process: a new one takes its place (the bench's --processes 2 runs check that it delivers).
    process.kill(workerPid, 'SIGKILL');
    await serve.printed('the outbox worker died: starting a new one', 30_000);
    await serve.printed('the outbox worker restarted', 30_000);
    const restarted = Date.now() + 60_000;
    while (workerStarts() < 2) {
      if (Date.now() > restarted) throw new Error(`the replacement worker did not start within 60 s:\n${serve.output.slice(-3000)}`);
      await sleep(100);
    }
    expect(alive(workerPid)).toBe(false);

    // SIGKILL one child: once the primary has seen it die, the port keeps answering (from the
    // other child), and a new child takes its place. (A connection handed to the child in the
    // instant it dies is lost with it, as with any crashed server; the primary stops handing
    // connections to it when it learns of the exit, which is what the log line says.)
    const [victim, survivor] = [...first] as [number, number];
    process.kill(victim, 'SIGKILL');
    await serve.printed('API process died: starting a new one', 30_000);
    const replaced = Date.now() + 60_000;
    let seen = new Set<number>();
    for (;;) {
      seen = await answeringPids(port, 6);
      expect(seen.has(victim)).toBe(false);
      if (seen.size === 2) break;
      if (Date.now() > replaced) throw new Error(`no replacement for the killed API process within 60 s (answering: ${[...seen].join(', ')}):\n${serve.output.slice(-3000)}`);
      await sleep(100);
    }
    expect(seen.has(survivor)).toBe(true);
    const replacement = [...seen].find((p) => p !== survivor)!;
    expect(replacement).not.toBe(victim);
    expect(alive(victim)).toBe(false);

    // SIGTERM to the primary: every process stops (the two API processes and the replacement worker), the primary exits 0.
    // Its node children: not tsx's esbuild helper, there when the sources run without a current bundle.
    const children = childPids(primary).filter((pid) => processName(pid) === 'node');
    expect(children).toHaveLength(3);
    expect(children).toEqual(expect.arrayContaining([survivor, replacement]));
    expect(children).not.toContain(workerPid);
    serve.child.kill('SIGTERM');
    const end = await serve.exited(60_000);
    expect(end).toEqual({ code: 0, signal: null });
    for (const pid of [survivor, replacement]) expect(alive(pid), `API process ${pid} still running after the primary exited`).toBe(false);
    for (const pid of children) expect(alive(pid), `child ${pid} still running after the primary exited`).toBe(false);
    const after = await get(port, '/healthz');
    expect('error' in after ? after.error : after.status).toBe('ECONNREFUSED');
  });

  it("serve --processes 1 run as a command has an API child's young generation and two malloc arenas from its shebang, and sets its old generation's growth itself", async () => {
    // The shell's MALLOC_ARENA_MAX is replaced by the shebang's (README, "Memory").
    const env = { ...baseEnv(), DATABASE_URL: dbUrl, HOST: '127.0.0.1', PORT: String(await freePort()), LOG_FORMAT: 'json', MALLOC_ARENA_MAX: '8' };
    const one = new Serve(['--processes', '1'], env, { asCommand: true });
    await one.printed('Checkstand is running', 60_000);
    // `env -S` replaced itself with node: the process serving is node, with the flag on its command line and the variable in its environment.
    const args = fs.readFileSync(`/proc/${one.child.pid}/cmdline`, 'utf8').split('\0');
    expect(processName(one.child.pid!)).toBe('node');
    expect(args.slice(1, args.indexOf(BIN))).toEqual([`--max-semi-space-size=${API_SEMI_SPACE_MB}`]);
    const environ = fs.readFileSync(`/proc/${one.child.pid}/environ`, 'utf8').split('\0');
    expect(environ.filter((v) => v.startsWith('MALLOC_ARENA_MAX='))).toEqual(['MALLOC_ARENA_MAX=2']);
    one.child.kill('SIGTERM');
    expect(await one.exited(30_000)).toEqual({ code: 0, signal: null });
    expect(one.output).toContain(`"v8_flag":"--heap-growing-percent=${API_HEAP_GROWING_PERCENT}"`);
  });

  it("a checkstand worker process sets an API process's old-generation growth, unless the user gave it", async () => {
    const env = { ...baseEnv(), DATABASE_URL: dbUrl, LOG_FORMAT: 'json' };
    const run = async (nodeFlags: string[]) => {
      const w = new Serve([], env, { command: 'worker', nodeFlags });
      await w.printed('worker started', 60_000);
      w.child.kill('SIGTERM');
      expect(await w.exited(30_000)).toEqual({ code: 0, signal: null });
      return w.output;
    };
    expect(await run([])).toContain(`"v8_flag":"--heap-growing-percent=${API_HEAP_GROWING_PERCENT}"`);
    expect(await run(['--heap-growing-percent=100'])).not.toContain('"v8_flag"');
  });
});

describe('the node flags of an API process', () => {
  const growing = `--heap-growing-percent=${API_HEAP_GROWING_PERCENT}`;
  it("are the checkstand command's own: its shebang gives node an API process's young generation, and glibc two malloc arenas", () => {
    expect(shebangCommand(BIN)).toEqual({ env: { MALLOC_ARENA_MAX: '2' }, nodeFlags: [`--max-semi-space-size=${API_SEMI_SPACE_MB}`] });
    expect(fs.statSync(BIN).mode & 0o111, 'bin/checkstand.js is executable').not.toBe(0);
  });
  it('are read from a shebang line as env runs it: its NAME=value words before node, node\'s flags after', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkstand-shebang-'));
    const read = (line: string) => {
      const file = path.join(dir, 'cmd.js');
      fs.writeFileSync(file, `${line}\nconsole.log(1);\n`);
      return shebangCommand(file);
    };
    try {
      expect(read('#!/usr/bin/env node')).toEqual({ env: {}, nodeFlags: [] });
      expect(read('#!/usr/bin/env -S node --a=1 --b')).toEqual({ env: {}, nodeFlags: ['--a=1', '--b'] });
      expect(read('#!/usr/bin/env -S A_1=x=y B= node --c')).toEqual({ env: { A_1: 'x=y', B: '' }, nodeFlags: ['--c'] });
      expect(() => read('#!/bin/sh')).toThrow(/first line/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
  it('adds the smaller young generation and the old generation\'s growth to the primary\'s own flags', () => {
    expect(apiProcessExecArgv(['--enable-source-maps'], undefined)).toEqual(['--enable-source-maps', `--max-semi-space-size=${API_SEMI_SPACE_MB}`, growing]);
  });
  it('keeps a value the user gave, as a flag or in NODE_OPTIONS', () => {
    expect(apiProcessExecArgv(['--max-semi-space-size=16'], undefined)).toEqual(['--max-semi-space-size=16', growing]);
    expect(apiProcessExecArgv([], '--inspect --max_semi_space_size=32')).toEqual([growing]);
    expect(apiProcessExecArgv(['--heap_growing_percent=100'], undefined)).toEqual(['--heap_growing_percent=100', `--max-semi-space-size=${API_SEMI_SPACE_MB}`]);
  });
  it("sets the old generation's growth in a serve that is its own API process, unless the user gave it", () => {
    const set = vi.spyOn(v8, 'setFlagsFromString').mockImplementation(() => {});
    const log = { info: () => {} };
    try {
      expect(applyHeapGrowth(log, 'one API process', ['--enable-source-maps'], '--max-semi-space-size=8')).toBe(growing);
      expect(set).toHaveBeenCalledWith(growing);
      set.mockClear();
      expect(applyHeapGrowth(log, 'one API process', ['--heap-growing-percent=100'], undefined)).toBeNull();
      expect(applyHeapGrowth(log, 'one API process', [], '--heap_growing_percent=50')).toBeNull();
      expect(set).not.toHaveBeenCalled();
    } finally {
      set.mockRestore();
    }
  });
});

describe('serve --processes 2 on the embedded database', () => {
  it('is refused at once with one line naming the setting', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkstand-procs-'));
    try {
      const env: NodeJS.ProcessEnv = { ...baseEnv(), CHECKSTAND_DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: String(await freePort()) };
      delete env.DATABASE_URL;
      const s = new Serve(['--processes', '2'], env);
      const end = await s.exited(60_000);
      expect(end.code).not.toBe(0);
      const lines = s.output.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^checkstand: --processes 2 needs PostgreSQL \(DATABASE_URL\)/);
      expect(fs.readdirSync(dataDir)).toEqual([]);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
