/**
 * bench/sched.ts: the run-queue wait (`schedstat`) and the hypervisor's steal (`/proc/stat`) the
 * bench reports beside the CPU per funnel, so a run slowed by the machine can be told apart.
 */
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { statCpuMs } from '../bench/server-processes.ts';
import { ownThreadId, parseProcStat, parseSchedstat, readCpuTicks, readSchedstat, schedSnapshot, stealShare, waitBetween } from '../bench/sched.ts';

const linux = process.platform === 'linux';

describe('schedstat', () => {
  it('reads ns on a CPU and ns waiting for one, and refuses what is not those', () => {
    expect(parseSchedstat('5129988 41429 2\n')).toEqual({ runNs: 5129988, waitNs: 41429 });
    expect(parseSchedstat('')).toBeNull();
    expect(parseSchedstat('12')).toBeNull();
    expect(parseSchedstat('a b c')).toBeNull();
  });

  it('sums the wait of the tasks in the second snapshot; one that started in between counts from zero', () => {
    const start = new Map([
      [1, { runNs: 10e6, waitNs: 2e6 }],
      [2, { runNs: 10e6, waitNs: 1e6 }],
      [9, { runNs: 1e6, waitNs: 5e6 }], // ended before the second snapshot: lost
    ]);
    const end = new Map([
      [1, { runNs: 20e6, waitNs: 7e6 }], // waited 5 ms
      [2, { runNs: 30e6, waitNs: 2e6 }], // waited 1 ms
      [3, { runNs: 1e6, waitNs: 3e6 }], // new: 3 ms
    ]);
    expect(waitBetween(start, end)).toEqual({ totalMs: 9, maxMs: 5, byPid: new Map([[1, 5], [2, 1], [3, 3]]) });
    expect(waitBetween(new Map(), new Map())).toEqual({ totalMs: 0, maxMs: 0, byPid: new Map() });
  });

  it.skipIf(!linux)("grows with this process's main thread running, and skips a process that is gone", async () => {
    const before = readSchedstat(`/proc/${process.pid}/schedstat`);
    expect(before).not.toBeNull();
    const until = performance.now() + 30;
    while (performance.now() < until) {
      // on a CPU for 30 ms (or waiting for one)
    }
    const after = readSchedstat(`/proc/${process.pid}/schedstat`)!;
    expect(after.runNs + after.waitNs).toBeGreaterThan(before!.runNs + before!.waitNs);
    // A pid that cannot exist (above pid_max's largest value).
    expect(readSchedstat('/proc/4194305/schedstat')).toBeNull();
    expect([...schedSnapshot([process.pid, 4194305]).keys()]).toEqual([process.pid]);
  });

  it.skipIf(!linux)('is the main thread\'s for a process: a busy worker thread does not count in it', async () => {
    const before = readSchedstat(`/proc/${process.pid}/schedstat`)!;
    const worker = new Worker('const t = Date.now() + 300; while (Date.now() < t) {}', { eval: true });
    await new Promise((resolve) => worker.once('exit', resolve));
    const after = readSchedstat(`/proc/${process.pid}/schedstat`)!;
    // The worker spun for 300 ms; the main thread, waiting for it in its event loop, ran far less.
    expect((after.runNs - before.runNs) / 1e6).toBeLessThan(200);
  });
});

describe('a thread\'s own id', () => {
  it.skipIf(!linux)('is the process id on the main thread; a worker thread\'s is its own task, whose CPU is its spinning', async () => {
    expect(ownThreadId()).toBe(process.pid);
    // The thread spins until its own task has used 150 ms of CPU, read from inside (the same file
    // ownThreadId() names), so a loaded machine that gives it little of a core only makes it take longer.
    // It listens with on(), not once(): a worker with no listener left ends, and its task's file with it,
    // possibly before this thread reads it (what failed on a loaded CI machine).
    const src = `
      const { parentPort } = require('node:worker_threads');
      const fs = require('node:fs');
      const tid = Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
      const cpu = () => { const s = fs.readFileSync('/proc/thread-self/stat', 'utf8'); const f = s.slice(s.lastIndexOf(')') + 2).split(' '); return (Number(f[11]) + Number(f[12])) * 10; }; // 100 clock ticks a second, as MS_PER_TICK
      parentPort.on('message', () => {
        const start = cpu(), giveUp = Date.now() + 60000;
        while (cpu() - start < 150 && Date.now() < giveUp) { for (let i = 0; i < 1e5; i++); }
        parentPort.postMessage(cpu() - start);
      });
      parentPort.postMessage(tid);`;
    const worker = new Worker(src, { eval: true });
    const tid = await new Promise<number>((resolve) => worker.once('message', resolve));
    expect(tid).not.toBe(process.pid);
    const before = statCpuMs(`/proc/self/task/${tid}/stat`);
    expect(before).not.toBeNull();
    const mainBefore = statCpuMs(`/proc/self/task/${process.pid}/stat`)!;
    worker.postMessage('spin');
    const spun = await new Promise<number>((resolve) => worker.once('message', resolve));
    const after = statCpuMs(`/proc/self/task/${tid}/stat`);
    expect(after).not.toBeNull(); // the thread is still there
    const mainAfter = statCpuMs(`/proc/self/task/${process.pid}/stat`)!;
    await worker.terminate();
    expect(spun).toBeGreaterThanOrEqual(150);
    // Read from outside by its id, the thread's CPU is its spinning (to a clock tick or two)…
    expect(after! - before!).toBeGreaterThanOrEqual(spun - 20);
    // …and the main thread, waiting in its event loop, is not charged with it.
    expect(mainAfter - mainBefore).toBeLessThan(spun);
  }, 90_000);
});

describe('/proc/stat steal', () => {
  const stat = (steal: number, idle: number) => `cpu  100 0 50 ${idle} 5 0 3 ${steal} 0 0\ncpu0 50 0 25 ${idle / 2} 2 0 1 ${steal / 2} 0 0\nintr 1\n`;

  it('reads the aggregate line: steal and every kind of time but guest (already in user)', () => {
    expect(parseProcStat(stat(2, 800))).toEqual({ steal: 2, total: 100 + 50 + 800 + 5 + 3 + 2 });
    expect(parseProcStat('cpu0 1 2 3 4 5 6 7 8\n')).toBeNull();
    expect(parseProcStat('cpu  1 2 3\n')).toBeNull();
  });

  it('is the share of all cores stolen between two readings', () => {
    const a = parseProcStat(stat(10, 800));
    const b = parseProcStat(stat(60, 1250)); // 50 stolen of 500 ticks
    expect(stealShare(a, b)).toBeCloseTo(0.1, 5);
    expect(stealShare(a, a)).toBeNull();
    expect(stealShare(null, b)).toBeNull();
  });

  it.skipIf(!linux)('is read from this machine', () => {
    const t = readCpuTicks();
    expect(t).not.toBeNull();
    expect(t!.total).toBeGreaterThan(0);
    expect(t!.steal).toBeGreaterThanOrEqual(0);
  });
});
