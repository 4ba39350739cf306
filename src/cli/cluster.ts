/**
 * `checkstand serve --processes N`: how many API processes, and the primary's supervision of them.
 * The children are node:cluster workers sharing the API port (the primary accepts connections and
 * hands them out in turn); each runs the ordinary `serve` path. With `--with-worker` one more child
 * runs the outbox worker (the `checkstand worker` path), so the primary only supervises: a process
 * V8 started with Node's own young generation holds nothing that grows. A child that dies is
 * replaced (an API process by an API process, the worker by a worker), with a growing delay when
 * children keep dying soon after they start, and a stop ends them all.
 */
import cluster, { type Worker } from 'node:cluster';
import os from 'node:os';
import v8 from 'node:v8';
import type { Logger } from 'pino';
import { StartupError } from '../app/runtime.ts';

/** The serve command's `--processes`: a number, or unset (then SERVE_PROCESSES, then the default). */
export type ProcessesOption = number | undefined;

export interface ProcessCount {
  count: number;
  /** Asked for (flag or SERVE_PROCESSES), as opposed to the production default. */
  explicit: boolean;
  /** The setting it came from, for messages. */
  setting: string;
}

/**
 * `--processes`, else SERVE_PROCESSES, else the number of cores when NODE_ENV=production, else 1.
 * The production default is not an explicit ask: on the embedded database it quietly stays at 1.
 */
export function resolveProcessCount(flag: ProcessesOption, env: NodeJS.ProcessEnv): ProcessCount {
  if (flag !== undefined) {
    if (!Number.isInteger(flag) || flag < 1) throw new StartupError(`--processes must be a whole number of 1 or more, got ${flag}`);
    return { count: flag, explicit: true, setting: `--processes ${flag}` };
  }
  const raw = env.SERVE_PROCESSES;
  if (raw !== undefined && raw !== '') {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1) throw new StartupError(`SERVE_PROCESSES must be a whole number of 1 or more, got "${raw}"`);
    return { count: n, explicit: true, setting: `SERVE_PROCESSES=${n}` };
  }
  if (env.NODE_ENV === 'production') return { count: os.availableParallelism(), explicit: false, setting: 'NODE_ENV=production (one per core)' };
  return { count: 1, explicit: false, setting: 'default' };
}

/**
 * The V8 young generation of each API process, in MB per semi-space (V8's default on 64-bit
 * Node 20 is 16). An API process's garbage is short-lived request objects: 4 MB semi-spaces keep
 * its RSS about 45 MB lower under load (bench/README.md, "Memory of the API processes") for no
 * measurable CPU. A `--max-semi-space-size` the user gave (node flag or NODE_OPTIONS) wins.
 */
export const API_SEMI_SPACE_MB = 4;

/**
 * How far V8 lets an API process's old generation grow past what survived its last full
 * collection before the next one, in percent. V8's own factor grows up to 4x while collections
 * look cheap, so under a steady load an API process's RSS climbed ≈ 1 MB/s to 225–250 MB over a
 * minute while its live heap stayed at ≈ 46–52 MB (two heap snapshots 45 s apart; bench/README.md,
 * eighth round). 75 keeps every API process at or under 200 MB under the bench's load for no
 * throughput this machine could measure; 50 kept them at ≈ 160 MB but cost ≈ 11% of the funnels/s
 * (more full collections). A flag the user gave wins.
 */
export const API_HEAP_GROWING_PERCENT = 75;

/** Whether the user gave V8 flag `name` (dashes or underscores), as a node flag or in NODE_OPTIONS. */
function flagGiven(name: string, execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  const pattern = new RegExp(`^--${name.replace(/-/g, '[-_]')}\\b`);
  return [...execArgv, ...(nodeOptions ?? '').split(/\s+/)].some((f) => pattern.test(f));
}

/** The node flags of an API child: the primary's own, plus the young generation's size and the old one's growth unless given. */
export function apiProcessExecArgv(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  const given = (name: string) => flagGiven(name, execArgv, nodeOptions);
  return [
    ...execArgv,
    ...(given('max-semi-space-size') ? [] : [`--max-semi-space-size=${API_SEMI_SPACE_MB}`]),
    ...(given('heap-growing-percent') ? [] : [`--heap-growing-percent=${API_HEAP_GROWING_PERCENT}`]),
  ];
}

/**
 * A long-running server process on PostgreSQL that nobody started with an API child's flags:
 * `serve --processes 1` (it serves the API itself), serve's primary when it runs the outbox worker,
 * and `checkstand worker`. V8 reads the young generation's size only at start-up, but the old
 * generation's growth at every full collection: that one is set now, unless the user gave it, and
 * the log says so (`role`: which of those processes this is). Returns the flag it set, or null.
 */
export function applyHeapGrowth(
  log: Pick<Logger, 'info'>,
  role: string,
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string | undefined = process.env.NODE_OPTIONS,
): string | null {
  if (flagGiven('heap-growing-percent', execArgv, nodeOptions)) return null;
  const flag = `--heap-growing-percent=${API_HEAP_GROWING_PERCENT}`;
  v8.setFlagsFromString(flag);
  log.info({ v8_flag: flag }, `V8 old-generation growth set (${role})`);
  return flag;
}

/** A child that lived this long before dying is not "crashing at start": it is replaced at once. */
const HEALTHY_UPTIME_MS = 30_000;
const FIRST_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 30_000;
/** How long a stop waits for the children to finish their requests before SIGKILL. */
const STOP_TIMEOUT_MS = 30_000;

/** The environment variable a child of `serve --processes N` is forked with: its role. */
export const CLUSTER_CHILD_ENV = 'CHECKSTAND_CLUSTER_CHILD';
/** Its value for an API process, and for the outbox worker's process. */
export const API_CHILD = '1';
export const WORKER_CHILD = 'worker';

export interface ApiProcesses {
  /** Pids of the API children running now. */
  pids(): number[];
  /** Pid of the outbox worker's child running now (`withWorker`), if any. */
  workerPid(): number | undefined;
  /** SIGTERM to every child (an API process closes its server and database pool, the worker's finishes what it holds), SIGKILL after the timeout. */
  stop(): Promise<void>;
}

/**
 * Forks `count` children (running this same command line, so `serve` takes the child path in each)
 * and resolves once all of them listen, with the port they share. A child that exits before the
 * first start is complete fails the start: the same error would repeat in every replacement.
 */
export function superviseApiProcesses(count: number, log: Logger, opts: { withWorker?: boolean } = {}): Promise<{ port: number; processes: ApiProcesses }> {
  const started = new Map<number, number>();
  /** The children that run the outbox worker (one at a time), by cluster id. */
  const workerIds = new Set<number>();
  const timers = new Set<NodeJS.Timeout>();
  let closing = false;
  let ready = false;
  let quickDeaths = 0;

  cluster.setupPrimary({ execArgv: apiProcessExecArgv(process.execArgv, process.env.NODE_OPTIONS) });
  const fork = (role: typeof API_CHILD | typeof WORKER_CHILD = API_CHILD): Worker => {
    const w = cluster.fork({ [CLUSTER_CHILD_ENV]: role });
    started.set(w.id, Date.now());
    if (role === WORKER_CHILD) workerIds.add(w.id);
    return w;
  };
  const children = () => Object.values(cluster.workers ?? {}).filter((w): w is Worker => !!w);
  const roleOf = (w: Worker) => (workerIds.has(w.id) ? 'the outbox worker' : 'API process');

  const processes: ApiProcesses = {
    pids: () => children().flatMap((w) => (w.process.pid && !workerIds.has(w.id) ? [w.process.pid] : [])),
    workerPid: () => children().find((w) => workerIds.has(w.id))?.process.pid,
    async stop() {
      closing = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      const live = Object.values(cluster.workers ?? {}).filter((w): w is Worker => !!w && !w.isDead());
      await Promise.all(
        live.map(
          (w) =>
            new Promise<void>((resolve) => {
              if (w.isDead()) return resolve();
              const kill = setTimeout(() => {
                log.warn({ child_pid: w.process.pid, timeout_ms: STOP_TIMEOUT_MS }, `${roleOf(w)} did not stop in time: killing it`);
                w.process.kill('SIGKILL');
              }, STOP_TIMEOUT_MS);
              w.once('exit', () => {
                clearTimeout(kill);
                resolve();
              });
              w.process.kill('SIGTERM');
            }),
        ),
      );
    },
  };

  return new Promise((resolve, reject) => {
    const listening = new Set<number>();
    let port = 0;
    cluster.on('listening', (w, address) => {
      // The worker's process may listen too (its metrics, WORKER_METRICS_PORT): not an API process.
      if (workerIds.has(w.id)) return;
      log.info({ child_pid: w.process.pid, port: address.port }, 'API process listening');
      if (ready) return;
      listening.add(w.id);
      port = address.port;
      if (listening.size === count) {
        ready = true;
        resolve({ port, processes });
      }
    });
    cluster.on('exit', (w, code, signal) => {
      const startedAt = started.get(w.id) ?? Date.now();
      started.delete(w.id);
      const role = roleOf(w);
      const wasWorker = workerIds.delete(w.id);
      if (closing) return;
      if (!ready) {
        closing = true;
        const what = wasWorker ? `the outbox worker's process (pid ${w.process.pid}) exited (${signal ?? `code ${code}`}) while the API processes started` : `an API process (pid ${w.process.pid}) exited (${signal ?? `code ${code}`}) before it listened`;
        void processes.stop().then(() => reject(new StartupError(`${what}: its error is above`)));
        return;
      }
      const livedMs = Date.now() - startedAt;
      quickDeaths = livedMs >= HEALTHY_UPTIME_MS ? 0 : quickDeaths + 1;
      const delayMs = quickDeaths === 0 ? 0 : Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (quickDeaths - 1));
      log.error({ child_pid: w.process.pid, code, signal, lived_ms: livedMs, restart_in_ms: delayMs }, `${role} died: starting a new one`);
      const t = setTimeout(() => {
        timers.delete(t);
        if (closing) return;
        const next = fork(wasWorker ? WORKER_CHILD : API_CHILD);
        log.warn({ child_pid: next.process.pid, replaces: w.process.pid }, `${role} restarted`);
      }, delayMs);
      timers.add(t);
    });
    for (let i = 0; i < count; i++) fork();
    if (opts.withWorker) fork(WORKER_CHILD);
  });
}
