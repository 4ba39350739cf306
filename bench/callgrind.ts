/**
 * `npm run bench -- --callgrind`: the server's instructions per funnel, counted by valgrind's
 * callgrind, where CPU milliseconds cannot tell two versions apart. On a shared machine the same
 * code's CPU per funnel moved by half within an hour (bench/README, twenty-seventh round); the
 * instructions a run executes do not depend on the machine's other tenants, its caches or the
 * hypervisor. `serve --processes 1 --with-worker` runs under valgrind with node's
 * `--single-threaded` (V8 compiles and collects on the main thread, not on helper threads whose
 * timing varies). What still varies is how much of V8's compiling falls in the window: after a
 * 60–90-s warm-up six runs of one version counted 27–36 M instructions per funnel, after 300 s
 * (the bench's default under --callgrind) three runs counted 18.2–20.6 M.
 *
 * The counters are zeroed when the measured window starts and dumped when it ends (valgrind's
 * gdbserver, as `callgrind_control -z` / `-d` do); every thread of the server process is counted
 * (its HTTP, the outbox worker, the mail file writer). PostgreSQL, the sandbox and the driver are not. Under
 * valgrind the server runs about 40 times slower, so the run's speed figures are not the server's.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** The command the server process runs under, and the node flags it needs there. */
export interface CallgrindWrap {
  command: string[];
  nodeFlags: string[];
}

/** Why this machine cannot count instructions (no valgrind, or no vgdb beside it), or null when it can. */
export function callgrindMissing(): string | null {
  for (const tool of ['valgrind', 'vgdb']) {
    // Found is enough: vgdb has no --version (it exits 1 for it).
    if (spawnSync(tool, ['--help'], { stdio: 'ignore' }).error) return `--callgrind needs ${tool} (Debian: apt-get install valgrind)`;
  }
  return null;
}

/** valgrind's callgrind, its output files in `outDir` (one per dump: callgrind.out.<pid>.<n>). */
export function callgrindWrap(outDir: string): CallgrindWrap {
  fs.mkdirSync(outDir, { recursive: true });
  return {
    command: [
      'valgrind',
      '--tool=callgrind',
      // V8 writes machine code into memory it then runs: valgrind must see those writes.
      '--smc-check=all-non-file',
      `--callgrind-out-file=${path.join(outDir, 'callgrind.out.%p')}`,
    ],
    nodeFlags: ['--single-threaded'],
  };
}

/** The instructions a callgrind dump counted (its `summary:` or `totals:` line), or null when there is none. */
export function dumpInstructions(text: string): number | null {
  const m = /^(?:summary|totals):\s+(\d+)/m.exec(text);
  return m ? Number(m[1]) : null;
}

/** Zeroes the process's counters: what it executed until now is not counted. */
export function zeroCounters(pid: number): void {
  control('zero', pid);
}

/**
 * Dumps the process's counters and answers the instructions since they were last zeroed (or
 * dumped), and the dump's file (by function: callgrind_annotate, KCachegrind): the file callgrind
 * writes for the process in `outDir`, waited for (a busy process under valgrind takes the command
 * between two of its time slices), read once per look.
 */
export function dumpCounters(pid: number, outDir: string, waitMs = 120_000): { instructions: number; file: string } {
  const before = new Set(fs.readdirSync(outDir));
  const said = control('dump', pid);
  const until = Date.now() + waitMs;
  for (;;) {
    const written = fs.readdirSync(outDir).filter((f) => f.startsWith(`callgrind.out.${pid}.`) && !before.has(f));
    const newest = written.sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop())).at(-1);
    const file = newest && path.join(outDir, newest);
    const text = file ? fs.readFileSync(file, 'utf8') : '';
    // The file is complete once its totals line is written (its last); the count is its summary's.
    if (file && /^totals:/m.test(text)) return { instructions: dumpInstructions(text)!, file };
    if (Date.now() > until) throw new Error(`callgrind wrote no dump for process ${pid} in ${outDir} (vgdb said: ${said || 'nothing'})`);
    sleepMs(200);
  }
}

/** A callgrind monitor command sent through valgrind's gdbserver (what callgrind_control does): its output, both streams. */
function control(command: 'zero' | 'dump', pid: number): string {
  const r = spawnSync('vgdb', [`--pid=${pid}`, command], { encoding: 'utf8', timeout: 120_000, env: { ...process.env, ...namingEnv(pid) } });
  const said = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim();
  if (r.error || r.status !== 0) throw new Error(`vgdb --pid=${pid} ${command} failed (${r.error?.message ?? `exit ${r.status}`}): ${said}`);
  return said;
}

/**
 * The variables valgrind names its gdbserver's pipes with (`…-by-<USER>-on-<HOST>`), as the
 * process under it has them: serve's HOST is the address it listens on, not this machine's name,
 * and vgdb finds the pipes only under the same names.
 */
function namingEnv(pid: number): Record<string, string | undefined> {
  let text = '';
  try {
    text = fs.readFileSync(`/proc/${pid}/environ`, 'utf8');
  } catch {
    return {};
  }
  const theirs = new Map(text.split('\0').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)] as const));
  return Object.fromEntries(['HOST', 'USER', 'LOGNAME'].map((k) => [k, theirs.get(k)]));
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));
/** Blocks this thread (the bench's main thread, between two phases of the driver's thread). */
function sleepMs(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}
