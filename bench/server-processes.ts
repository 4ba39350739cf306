/**
 * `npm run bench -- --processes N`: the API as real `checkstand serve --processes N --with-worker`
 * processes (a cluster primary that runs the outbox worker, and N API children sharing one port);
 * with `--workers M`, `checkstand serve --processes N` and M `checkstand worker` processes beside it
 * (README, "Past one machine": they share only PostgreSQL). And what the bench reads about
 * them from /proc (Linux): CPU time of every process, and their resident memory.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleIsCurrent } from '../bin/build-state.js';
import type { CallgrindWrap } from './callgrind.ts';
import { CLUSTER_CHILD_ENV, WORKER_CHILD } from '../src/cli/cluster.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'bin/checkstand.js');

/**
 * What the server processes will run. `checkstand` runs the bundle in build/ only while it is
 * current with the sources, else the sources through tsx (bin/build-state.js), which measured
 * ≈ 30 MB more RSS per process (bench/README.md, thirty-first round): a bench run after an edit
 * would measure code no deployment runs. So a stale bundle is rebuilt first (`npm run
 * build:server`, a fraction of a second). CHECKSTAND_FROM_SOURCES=1 measures the sources on purpose.
 */
export function serverCode(
  env: NodeJS.ProcessEnv = process.env,
  root = ROOT,
  build: () => void = () => execFileSync(process.execPath, [path.join(root, 'scripts/build-server.mjs')], { cwd: root, stdio: 'ignore' }),
): { code: 'build' | 'sources'; rebuilt: boolean } {
  if (env.CHECKSTAND_FROM_SOURCES === '1') return { code: 'sources', rebuilt: false };
  if (bundleIsCurrent(root, env)) return { code: 'build', rebuilt: false };
  build();
  if (!bundleIsCurrent(root, env)) throw new Error('npm run build:server did not leave a current bundle in build/');
  return { code: 'build', rebuilt: true };
}

/**
 * What a script's `#!/usr/bin/env -S [NAME=value …] node …` line starts: the variables env sets
 * and node's flags (neither for a plain `#!/usr/bin/env node`). The bench starts `checkstand`
 * through `process.execPath` (with its profiling flags), so it gives these itself, to measure the
 * server as `npx checkstand serve` runs it.
 */
export function shebangCommand(file: string = BIN): { env: Record<string, string>; nodeFlags: string[] } {
  const first = fs.readFileSync(file, 'utf8').split('\n', 1)[0]!;
  const m = /^#!\s*\/usr\/bin\/env\s+(?:-S\s+)?((?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*)node((?:\s+\S+)*)\s*$/.exec(first);
  if (!m) throw new Error(`${file}: its first line is not a "#!/usr/bin/env [-S] [NAME=value …] node …" line: ${first}`);
  const env = Object.fromEntries(m[1]!.trim().split(/\s+/).filter(Boolean).map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]));
  return { env, nodeFlags: m[2]!.trim().split(/\s+/).filter(Boolean) };
}
/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in ticks of 10 ms. */
const MS_PER_TICK = 10;

export interface ServerProcesses {
  url: string;
  /** The bundle in build/ or the TypeScript sources (serverCode), and whether the bench rebuilt the bundle first. */
  code: ReturnType<typeof serverCode>;
  /** The primary and its children running now, and the `checkstand worker` processes (`--workers M`) and theirs. */
  pids(): number[];
  /**
   * What `pid` is, as the report labels it: `primary` (the cluster primary; with `--processes 1`
   * and the worker in it, the one serve process), `api`, `worker`, or a helper's command name
   * (tsx's `esbuild`).
   */
  role(pid: number): string;
  /** The last lines the processes wrote (for a failure message). */
  output(): string;
  /** SIGTERM to the primary (it stops the children and the worker), SIGKILL after `timeoutMs`. */
  stop(timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Whether a role (ServerProcesses.role) is one of Checkstand's own processes, not a helper such as tsx's `esbuild`. */
export function isCheckstandRole(role: string): boolean {
  return role === 'primary' || role === 'api' || role === 'worker';
}

const running = (c: ChildProcess) => c.exitCode === null && c.signalCode === null;

function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/** The command line of the server processes, as the report names them. */
export function serverCommand(processes: number, workers: number): string {
  return workers > 0 ? `checkstand serve --processes ${processes} + ${workers} × checkstand worker` : `checkstand serve --processes ${processes} --with-worker`;
}

/** What the server processes are: `primary + 2 API processes + the worker`, `1 API process + 1 worker process`. */
export function serverProcessesLabel(processes: number, workers: number): string {
  const apis = `${processes} API process${processes === 1 ? '' : 'es'}`;
  if (workers === 0) return processes === 1 ? `${apis}, with the worker` : `primary + ${apis} + the worker`;
  return `${processes === 1 ? apis : `primary + ${apis}`} + ${workers} worker process${workers === 1 ? '' : 'es'}`;
}

/**
 * Starts `checkstand serve --processes N --with-worker` on `port` (or, with `workers` > 0,
 * `serve --processes N` and that many `checkstand worker` processes); resolves once serve's banner
 * says every child listens. A worker needs no signal of readiness: it drains what is queued when
 * it starts, and the bench's warm-up covers its start.
 */
export async function startServerProcesses(
  processes: number,
  port: number,
  env: NodeJS.ProcessEnv,
  opts: { timeoutMs?: number; cpuProfileDir?: string; workers?: number; wrap?: CallgrindWrap } = {},
): Promise<ServerProcesses> {
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const workerCount = opts.workers ?? 0;
  // `--cpu-prof` on the primary: its API children inherit the primary's node flags (cluster's execArgv).
  const profiling = opts.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfileDir}`] : [];
  // --callgrind: serve runs under valgrind (bench/callgrind.ts); its pid is the node process's own.
  const [program, ...programArgs] = opts.wrap ? [...opts.wrap.command, process.execPath, ...opts.wrap.nodeFlags] : [process.execPath];
  // As `npx checkstand …` starts node (read once per run, for serve and every worker).
  const command = shebangCommand();
  const code = serverCode(env);
  let out = '';
  const keep = (d: Buffer) => {
    out = (out + String(d)).slice(-20_000);
  };
  /** A `checkstand` command as a child process: its output kept for a failure message, killed if the bench exits first. */
  const start = (args: string[], childEnv: NodeJS.ProcessEnv) => {
    const c = spawn(program!, [...programArgs, ...command.nodeFlags, ...profiling, BIN, ...args], { env: { ...childEnv, ...command.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    process.once('exit', () => {
      if (running(c)) c.kill('SIGKILL');
    });
    c.stdout!.on('data', keep);
    c.stderr!.on('data', keep);
    return c;
  };
  const child = start(['serve', '--processes', String(processes), ...(workerCount > 0 ? [] : ['--with-worker'])], { ...env, HOST: '127.0.0.1', PORT: String(port) });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`checkstand serve --processes ${processes} was not ready within ${timeoutMs} ms:\n${out.slice(-3000)}`));
    }, timeoutMs);
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      clearTimeout(timer);
      reject(new Error(`checkstand serve --processes ${processes} exited (${signal ?? code}) before it was ready:\n${out.slice(-3000)}`));
    };
    child.once('exit', onExit);
    const check = () => {
      if (!out.includes('Checkstand is running')) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      child.stdout!.off('data', check);
      resolve();
    };
    child.stdout!.on('data', check);
  });
  const primaryPid = child.pid!;
  const workers = Array.from({ length: workerCount }, () => start(['worker'], env));
  const workerPids = new Set(workers.map((w) => w.pid!));
  /** SIGTERM, SIGKILL after `ms`; resolves with how it exited. */
  const stopOne = async (c: ChildProcess, ms: number) => {
    if (running(c)) c.kill('SIGTERM');
    const timer = setTimeout(() => c.kill('SIGKILL'), ms);
    try {
      return await exited(c);
    } finally {
      clearTimeout(timer);
    }
  };
  return {
    url: `http://127.0.0.1:${port}`,
    code,
    role: (pid) => {
      if (workerPids.has(pid)) return 'worker';
      // `serve --processes 1` has no cluster primary: beside worker processes it is the API process; with the worker in it, `primary` (API and worker).
      if (pid === primaryPid) return processes === 1 && workerCount > 0 ? 'api' : 'primary';
      const name = processName(pid);
      // serve's own worker child (`--with-worker` with --processes > 1) is forked with its role in its environment.
      if (name === 'node') return clusterRole(pid) === WORKER_CHILD ? 'worker' : 'api';
      return name;
    },
    pids: () => [
      ...(running(child) ? [primaryPid, ...descendants(primaryPid)] : []),
      ...workers.filter(running).flatMap((w) => [w.pid!, ...descendants(w.pid!)]),
    ],
    output: () => out,
    async stop(stopTimeoutMs = 60_000) {
      // The workers first (each finishes what it holds), then serve; the first that did not exit 0 is the answer.
      const results = [...(await Promise.all(workers.map((w) => stopOne(w, stopTimeoutMs)))), await stopOne(child, stopTimeoutMs)];
      return results.find((r) => r.code !== 0) ?? results[results.length - 1]!;
    },
  };
}

/** The children of `pid` (from /proc/<pid>/task/<tid>/children, every thread's). */
export function childPids(pid: number): number[] {
  const pids = new Set<number>();
  try {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      try {
        for (const p of fs.readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/)) if (p) pids.add(Number(p));
      } catch {
        // the thread ended
      }
    }
  } catch {
    // the process ended
  }
  return [...pids];
}

/** Every process under `pid`: the API children and theirs (tsx's esbuild service in each). */
export function descendants(pid: number): number[] {
  const all: number[] = [];
  const queue = childPids(pid);
  while (queue.length) {
    const p = queue.shift()!;
    all.push(p);
    queue.push(...childPids(p));
  }
  return all;
}

/** A cluster child's role as serve forked it (CLUSTER_CHILD_ENV in its environment), or undefined. */
function clusterRole(pid: number): string | undefined {
  try {
    const env = fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    return env.find((e) => e.startsWith(`${CLUSTER_CHILD_ENV}=`))?.slice(CLUSTER_CHILD_ENV.length + 1);
  } catch {
    return undefined;
  }
}

/** The command name of `pid` (`node`, `esbuild`, …), or '?' when it is gone. */
export function processName(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '?';
  }
}

/**
 * User + system CPU, ms, of a `/proc/…/stat` file: `/proc/<pid>/stat` (a whole process, all its
 * threads) or `/proc/self/task/<tid>/stat` (one thread of this process). Null when it is gone or not on Linux.
 */
export function statCpuMs(file: string): number | null {
  try {
    const stat = fs.readFileSync(file, 'utf8');
    // After "pid (comm) ": state is field 3, utime 14 and stime 15 (1-based) → indexes 11 and 12 here.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * MS_PER_TICK;
  } catch {
    return null;
  }
}

/** User + system CPU of the whole process `pid` (all its threads), ms; null when it is gone or not on Linux. */
export function processCpuMs(pid: number): number | null {
  return statCpuMs(`/proc/${pid}/stat`);
}

/**
 * The PostgreSQL server's processes on this machine (postmaster, backends, checkpointer, WAL
 * writer…: every process named `postgres` in /proc), when `databaseUrl` names this machine
 * (127.0.0.1, ::1, localhost or a socket directory); empty otherwise or off Linux: a remote
 * server's CPU is not this machine's, and another local server would be counted instead.
 */
export function localPostgresPids(databaseUrl: string | undefined): number[] {
  if (!databaseUrl) return [];
  let host: string;
  try {
    const u = new URL(databaseUrl);
    host = u.searchParams.get('host') ?? u.hostname;
  } catch {
    return [];
  }
  if (!(host === '' || host.startsWith('/') || host === 'localhost' || host === '127.0.0.1' || host === '[::1]' || host === '::1')) return [];
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return [];
  }
  return entries.filter((e) => /^\d+$/.test(e) && processName(Number(e)) === 'postgres').map(Number);
}

/** Resident memory of `pid` in bytes (VmRSS), null when it is gone or not on Linux. */
export function rssBytes(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** CPU ms of each pid now. */
export function cpuSnapshot(pids: number[]): Map<number, number> {
  const snap = new Map<number, number>();
  for (const pid of pids) {
    const ms = processCpuMs(pid);
    if (ms !== null) snap.set(pid, ms);
  }
  return snap;
}

/**
 * CPU spent between two snapshots by the processes of the second: a process that started in
 * between counts from zero (a replaced child); one that died in between is lost.
 */
export function cpuBetweenMs(start: Map<number, number>, end: Map<number, number>): number {
  let ms = 0;
  for (const [pid, t] of end) ms += t - (start.get(pid) ?? 0);
  return ms;
}
