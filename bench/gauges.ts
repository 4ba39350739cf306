/**
 * The bench's gauges of threads and processes (CPU from /proc, event-loop utilisation) and its
 * helper threads' small protocol (the receiver's stats, closing a thread).
 */
import fs from 'node:fs';
import type { EventLoopUtilization } from 'node:perf_hooks';
import type { Worker } from 'node:worker_threads';
import { EML_WRITER_THREAD } from '../src/modules/mail/transport.ts';
import { type ServerProcesses, isCheckstandRole, statCpuMs } from './server-processes.ts';
import type { ReceiverStats } from './stats.ts';
import { nextMessage } from './threads.ts';

/**
 * CPU time (user + system, ms) of the server in this process: its main thread and the mail file
 * transport's writer thread (found by its name, EML_WRITER_THREAD, in /proc/self/task/<tid>/comm;
 * 0 before it started), from /proc (Linux). Null elsewhere. The writer lives as long as the server.
 */
export function serverThreadsCpuMs(): { main: number; mailWriter: number } | null {
  const main = statCpuMs(`/proc/self/task/${process.pid}/stat`);
  if (main === null) return null;
  let mailWriter = 0;
  for (const tid of fs.readdirSync('/proc/self/task')) {
    try {
      if (tid !== String(process.pid) && fs.readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim() === EML_WRITER_THREAD) mailWriter += statCpuMs(`/proc/self/task/${tid}/stat`) ?? 0;
    } catch {
      // the thread ended meanwhile
    }
  }
  return { main, mailWriter };
}

/** The bench's own threads: they stand for other machines (the shoppers, the gateway, the merchant's receiver). */
export type BenchThread = 'driver' | 'sandbox' | 'receiver';

/** `f` of each bench thread. */
export function eachBenchThread<T>(f: (t: BenchThread) => T): Record<BenchThread, T> {
  return { driver: f('driver'), sandbox: f('sandbox'), receiver: f('receiver') };
}

/** Each bench thread's CPU so far (user + system, ms), read from its kernel task; null where its id is unknown or off Linux. */
export function benchThreadsCpuMs(tids: Record<BenchThread, number | null>): Record<BenchThread, number | null> {
  return eachBenchThread((t) => (tids[t] === null ? null : statCpuMs(`/proc/self/task/${tids[t]}/stat`)));
}

/** The Checkstand processes of `--processes` (primary, API children, workers): not tsx's esbuild helpers. */
export function serverMainPids(servers: ServerProcesses): number[] {
  return servers.pids().filter((pid) => isCheckstandRole(servers.role(pid)));
}

/** A thread's event-loop utilisation since `since`, or null when it is gone. */
export function threadElu(worker: Worker | undefined, since: EventLoopUtilization | undefined): number | null {
  if (!worker || !since) return null;
  try {
    return Math.round(worker.performance.eventLoopUtilization(since).utilization * 1000) / 1000;
  } catch {
    return null;
  }
}

export async function receiverStats(receiver: Worker): Promise<ReceiverStats> {
  const answer = nextMessage<{ type: 'stats'; stats: ReceiverStats }>(receiver, 'stats', 10_000);
  receiver.postMessage({ type: 'stats' });
  return (await answer).stats;
}

/** Ends a helper thread: asks it to close (answered by `answerType`), terminates it if it does not. */
export async function closeThread(worker: Worker | undefined, message: string, answerType: string): Promise<void> {
  if (!worker) return;
  try {
    const answered = nextMessage(worker, answerType, 5_000);
    worker.postMessage({ type: message });
    await answered;
  } catch {
    // It exited already, or did not answer in time.
  }
  await worker.terminate();
}

// ---------------------------------------------------------------------------------- the scenario's provider
