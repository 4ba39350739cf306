/**
 * What the machine spent over the measured window: the server's CPU (its threads in process, or
 * every `--processes` process), the bench's own threads, PostgreSQL's processes on this machine,
 * the whole machine, the event loops' utilisation, the time spent waiting for a core, and the
 * server's RSS at the window's end. `open()` when the window opens, `close()` when it closes, then
 * `figures`; they are per wall second (cores) or ms, put per funnel by the report.
 */
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import type { Worker } from 'node:worker_threads';
import { machineCpu } from './common.ts';
import { type BenchThread, benchThreadsCpuMs, eachBenchThread, serverMainPids, serverThreadsCpuMs, threadElu } from './gauges.ts';
import type { RunQueueFigures } from './report.ts';
import { type CpuTicks, readCpuTicks, type SchedTimes, schedSnapshot, stealShare, waitBetween } from './sched.ts';
import { type ServerProcesses, cpuBetweenMs, cpuSnapshot, isCheckstandRole, localPostgresPids, rssBytes } from './server-processes.ts';

export interface CpuWindowFigures {
  wallMs: number;
  /** The server's main thread's event-loop utilisation (in process), and the bench threads'. */
  serverElu: number | null;
  threadElu: Record<BenchThread, number | null>;
  /** The bench's threads' CPU per wall second (cores), each apart; null off Linux. */
  benchThreadCores: Record<BenchThread, number | null> | null;
  /** This whole process (server in process, the bench's threads) per wall second. */
  processCores: number;
  /** The server: in process its main and mail writer threads, else every server process. */
  serverCores: number | null;
  /** In process: the server threads' CPU over the window, ms, each apart. */
  serverThreadCpuMs: { main: number; mail_writer: number } | null;
  machineCores: number;
  /** PostgreSQL's processes on this machine; null when it is elsewhere or embedded. */
  postgresCores: number | null;
  runQueue: RunQueueFigures | null;
  /** Each server process's RSS (in process: this one's), MB, and the largest Checkstand process's. */
  rssMb: { per_process: Record<string, number>; max: number } | null;
  /** `--processes`: each process's CPU over the window, ms, by its label (`api 1234`). */
  cpuMsByProcess: Record<string, number> | null;
  /** `--processes`: `primary`, `api` or `worker` by pid, for naming their CPU profiles. */
  processLabels: Map<number, string>;
  serverPids: number[];
}

export class CpuWindow {
  private start:
    | {
        at: number;
        elu: EventLoopUtilization;
        threadElu: Partial<Record<BenchThread, EventLoopUtilization>>;
        benchThreads: Record<BenchThread, number | null>;
        usage: NodeJS.CpuUsage;
        machine: { busy: number; total: number };
        serverThreads: { main: number; mailWriter: number } | null;
        serverProcesses: Map<number, number> | null;
        postgres: Map<number, number> | null;
        sched: { server: Map<number, SchedTimes>; postgres: Map<number, SchedTimes> | null; ticks: CpuTicks | null };
      }
    | undefined;

  constructor(
    private readonly d: {
      /** `--processes`: the server's processes; undefined in process. */
      servers: ServerProcesses | undefined;
      databaseUrl: string | undefined;
      /** The bench's threads' kernel ids (the driver's known once it started). */
      tids: Record<BenchThread, number | null>;
      threads: () => Record<BenchThread, Worker | undefined>;
    },
  ) {}

  private closed: CpuWindowFigures | null = null;

  /** Opened and not closed yet. */
  get isOpen(): boolean {
    return this.start !== undefined;
  }

  /** What close() measured; null before, or when the window never opened. */
  get figures(): CpuWindowFigures | null {
    return this.closed;
  }

  private serverPids(): number[] {
    return this.d.servers ? serverMainPids(this.d.servers) : [process.pid];
  }

  open(): void {
    const threads = this.d.threads();
    const pgPids = localPostgresPids(this.d.databaseUrl);
    this.start = {
      at: performance.now(),
      elu: performance.eventLoopUtilization(),
      threadElu: eachBenchThread((t) => threads[t]?.performance.eventLoopUtilization()),
      benchThreads: benchThreadsCpuMs(this.d.tids),
      usage: process.cpuUsage(),
      machine: machineCpu(),
      serverThreads: serverThreadsCpuMs(),
      serverProcesses: this.d.servers ? cpuSnapshot(this.d.servers.pids()) : null,
      postgres: pgPids.length ? cpuSnapshot(pgPids) : null,
      sched: { server: schedSnapshot(this.serverPids()), postgres: pgPids.length ? schedSnapshot(pgPids) : null, ticks: readCpuTicks() },
    };
  }

  /** Ends the window (once; nothing when it never opened) and keeps what it measured in `figures`. */
  close(): void {
    const s = this.start;
    if (!s) return;
    this.start = undefined;
    const wallMs = performance.now() - s.at;
    const threads = this.d.threads();
    const benchEnd = benchThreadsCpuMs(this.d.tids);
    const used = process.cpuUsage(s.usage);
    const m = machineCpu();
    // PostgreSQL's processes on this machine, looked up once (a scan of /proc) for its CPU and its waits.
    const pgPids = s.postgres || s.sched.postgres ? localPostgresPids(this.d.databaseUrl) : [];
    const servers = this.d.servers;

    let runQueue: RunQueueFigures | null = null;
    {
      const server = waitBetween(s.sched.server, schedSnapshot(this.serverPids()));
      const postgres = s.sched.postgres ? waitBetween(s.sched.postgres, schedSnapshot(pgPids)) : null;
      const byProcess = servers ? Object.fromEntries([...server.byPid].map(([pid, ms]) => [`${servers.role(pid)} ${pid}`, ms])) : null;
      if (s.sched.server.size > 0) {
        runQueue = { wallMs, serverMs: server.totalMs, serverMaxMs: server.maxMs, serverByProcess: byProcess, postgresMs: postgres?.totalMs ?? null, steal: stealShare(s.sched.ticks, readCpuTicks()) };
      }
    }

    let serverCores: number | null = null;
    let serverThreadCpuMs: CpuWindowFigures['serverThreadCpuMs'] = null;
    let rssMb: CpuWindowFigures['rssMb'] = null;
    let cpuMsByProcess: Record<string, number> | null = null;
    const processLabels = new Map<number, string>();
    let serverPids: number[] = [process.pid];
    if (servers && s.serverProcesses) {
      // Every server process: the primary, each API child, the workers.
      serverPids = servers.pids();
      const end = cpuSnapshot(serverPids);
      serverCores = end.size > 0 ? cpuBetweenMs(s.serverProcesses, end) / wallMs : null;
      const perProcess: Record<string, number> = {};
      const cpuByProcess: Record<string, number> = {};
      // The target is per Checkstand process: tsx's esbuild helpers are listed, not judged.
      const values: number[] = [];
      for (const pid of serverPids) {
        const label = servers.role(pid);
        processLabels.set(pid, label);
        const cpuEnd = end.get(pid);
        if (cpuEnd !== undefined) cpuByProcess[`${label} ${pid}`] = cpuEnd - (s.serverProcesses.get(pid) ?? 0);
        const b = rssBytes(pid);
        if (b === null) continue;
        perProcess[`${label} ${pid}`] = Math.round(b / 2 ** 20);
        if (isCheckstandRole(label)) values.push(perProcess[`${label} ${pid}`]!);
      }
      rssMb = values.length ? { per_process: perProcess, max: Math.max(...values) } : null;
      cpuMsByProcess = cpuByProcess;
    } else {
      const t = serverThreadsCpuMs();
      if (t !== null && s.serverThreads !== null) {
        serverThreadCpuMs = { main: t.main - s.serverThreads.main, mail_writer: t.mailWriter - s.serverThreads.mailWriter };
        serverCores = (serverThreadCpuMs.main + serverThreadCpuMs.mail_writer) / wallMs;
      }
      const rss = Math.round(process.memoryUsage().rss / 2 ** 20);
      rssMb = { per_process: { [`this process ${process.pid}`]: rss }, max: rss };
    }

    this.closed = {
      wallMs,
      serverElu: servers ? null : performance.eventLoopUtilization(s.elu).utilization,
      threadElu: eachBenchThread((t) => threadElu(threads[t], s.threadElu[t])),
      benchThreadCores: eachBenchThread((t) => (s.benchThreads[t] !== null && benchEnd[t] !== null ? (benchEnd[t]! - s.benchThreads[t]!) / wallMs : null)),
      processCores: (used.user + used.system) / 1000 / wallMs,
      serverCores,
      serverThreadCpuMs,
      machineCores: (m.busy - s.machine.busy) / wallMs,
      postgresCores: s.postgres ? cpuBetweenMs(s.postgres, cpuSnapshot(pgPids)) / wallMs : null,
      runQueue,
      rssMb,
      cpuMsByProcess,
      processLabels,
      serverPids,
    };
  }
}
