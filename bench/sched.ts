/**
 * How much of the window the measured work spent waiting for a core, rather than on one: the
 * kernel's run-queue figures (`/proc/<pid>/schedstat`, `/proc/self/task/<tid>/schedstat`) and the
 * hypervisor's steal (`/proc/stat`). On a shared 2-core machine the server's thread is "busy" (its
 * event loop never idle) for longer than it runs: a wakeup it causes (a PostgreSQL backend, the
 * sandbox) takes its core, and it waits, runnable, until one is free. CPU milliseconds say what a
 * funnel cost; these say how much of the wall time went to waiting, so a reader can tell a slow
 * run of the same code from a slower code. Linux only: null elsewhere.
 */
import fs from 'node:fs';

/**
 * The calling thread's kernel id (`/proc/thread-self` links to `<pid>/task/<tid>`), so that a
 * worker thread can tell the bench which task's counters are its own; null off Linux.
 */
export function ownThreadId(): number | null {
  try {
    const tid = Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
    return Number.isInteger(tid) && tid > 0 ? tid : null;
  } catch {
    return null;
  }
}

/** One task's counters, ns: time on a CPU and time runnable on a run queue, since it started. */
export interface SchedTimes {
  runNs: number;
  waitNs: number;
}

/** `schedstat`'s first two fields ("<ns on cpu> <ns waiting on a runqueue> <timeslices>"), or null when the text is not that. */
export function parseSchedstat(text: string): SchedTimes | null {
  const [run, wait] = text.trim().split(/\s+/).map(Number);
  if (run === undefined || wait === undefined || !Number.isFinite(run) || !Number.isFinite(wait)) return null;
  return { runNs: run, waitNs: wait };
}

/** A task's counters from its schedstat file, or null when it is gone or the kernel has none. */
export function readSchedstat(file: string): SchedTimes | null {
  try {
    return parseSchedstat(fs.readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}

/** The counters of each process's main thread (`/proc/<pid>/schedstat` is its thread-group leader's). */
export function schedSnapshot(pids: number[]): Map<number, SchedTimes> {
  const snap = new Map<number, SchedTimes>();
  for (const pid of pids) {
    const t = readSchedstat(`/proc/${pid}/schedstat`);
    if (t) snap.set(pid, t);
  }
  return snap;
}

/**
 * Run-queue wait between two snapshots, ms, of the tasks in the second: all of them together and
 * the one that waited most. A task that started in between counts from zero; one that ended is lost.
 */
export function waitBetween(start: Map<number, SchedTimes>, end: Map<number, SchedTimes>): { totalMs: number; maxMs: number; byPid: Map<number, number> } {
  let total = 0;
  let max = 0;
  const byPid = new Map<number, number>();
  for (const [pid, t] of end) {
    const ms = (t.waitNs - (start.get(pid)?.waitNs ?? 0)) / 1e6;
    byPid.set(pid, ms);
    total += ms;
    max = Math.max(max, ms);
  }
  return { totalMs: total, maxMs: max, byPid };
}

/** The machine's CPU time from `/proc/stat`'s "cpu" line, in clock ticks: stolen by the hypervisor, and all of it. */
export interface CpuTicks {
  steal: number;
  total: number;
}

/** `/proc/stat`'s aggregate line ("cpu  user nice system idle iowait irq softirq steal guest guest_nice"), or null without one. */
export function parseProcStat(text: string): CpuTicks | null {
  const line = text.split('\n').find((l) => l.startsWith('cpu '));
  if (!line) return null;
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  if (f.length < 8 || f.some((n) => !Number.isFinite(n))) return null;
  // guest and guest_nice are already inside user and nice.
  const total = f.slice(0, 8).reduce((s, n) => s + n, 0);
  return { steal: f[7]!, total };
}

export function readCpuTicks(): CpuTicks | null {
  try {
    return parseProcStat(fs.readFileSync('/proc/stat', 'utf8'));
  } catch {
    return null;
  }
}

/** The share of all cores' time the hypervisor ran something else between two readings (0 to 1), null when unknown. */
export function stealShare(start: CpuTicks | null, end: CpuTicks | null): number | null {
  if (!start || !end) return null;
  const total = end.total - start.total;
  return total > 0 ? (end.steal - start.steal) / total : null;
}
