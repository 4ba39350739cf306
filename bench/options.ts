/**
 * `npm run bench`'s options: flags, their BENCH_* variables and defaults, the usage text.
 */
import { UsageError, num, readFlags, truthy } from './common.ts';
import { MAIL_DIRS, defaultMailDir, tmpfsRoot, type MailDir } from './mail-dir.ts';
import { BENCH_CLIENTS, type BenchClient, SCENARIOS, type Scenario } from './stats.ts';

export interface Options {
  durationS: number;
  concurrency: number;
  warmupS: number;
  maxErrorRate: number;
  progressS: number;
  requestTimeoutS: number;
  webhookWaitS: number;
  idempotencyKeys: boolean;
  freshDb: boolean;
  profile: boolean;
  /** null: the server in this process (the default); N: `checkstand serve --processes N --with-worker` child processes (PostgreSQL). */
  processes: number | null;
  /** With `processes`: 0, the primary runs the outbox worker (`--with-worker`); M, M `checkstand worker` processes run it. */
  workers: number;
  /** Which funnel, i.e. which kind of payment (card, the default; extpay; threeds). */
  scenario: Scenario;
  /** How the driver calls the API: node:http (the default) or the typed client over fetch. */
  client: BenchClient;
  /** The server's log level: `warn` (the default: nothing per request) or `info`, what `checkstand start` logs (two lines per request). */
  logLevel: BenchLogLevel;
  /** Where the server's mail files go: tmpfs (the default where there is one) or the data dir (bench/mail-dir.ts). */
  mailDir: MailDir;
  /** `--callgrind`: `serve --processes 1 --with-worker` under valgrind, its instructions per funnel counted (bench/callgrind.ts). */
  callgrind: boolean;
}

/** `info` is the server's own default (config.ts): two lines per request, written to a file in the data dir. */
export const BENCH_LOG_LEVELS = ['warn', 'info'] as const;
export type BenchLogLevel = (typeof BENCH_LOG_LEVELS)[number];

/**
 * Unmeasured seconds before the window. On this project's 2-core machine V8's optimising compiler
 * is still busy for about half a minute of load (its thread fell from 0.25 to 0.04 cores over the
 * first minute) and the funnels/s rose by a third meanwhile: a shorter warm-up measures a server
 * that is still warming up (bench/README.md, "Warm-up").
 */
const DEFAULT_WARMUP_S = 30;

/**
 * `--callgrind`'s defaults: under valgrind the server runs ~40x slower, and V8 still compiles the
 * server's code (on the main thread, `--single-threaded`) for hundreds of funnels. With 60–90 s of
 * warm-up six runs of one version counted 27–36 M instructions per funnel; with 300 s, three counted
 * 18.2–20.6 M (bench/README.md, twenty-seventh round).
 */
const CALLGRIND_DEFAULTS = { warmupS: 300, durationS: 60, concurrency: 4 } as const;

export const USAGE = `Usage: npm run bench [-- options]

  --duration <s>        measured seconds                        (BENCH_DURATION_S, default 15)
  --concurrency <n>     concurrent funnels                      (BENCH_CONCURRENCY, default 16)
  --warmup <s>          unmeasured warm-up seconds: V8 is still optimising the
                        server's code for about half a minute under load  (BENCH_WARMUP_S, default 30)
  --max-error-rate <f>  fail above this share of errors         (BENCH_MAX_ERROR_RATE, default 0.05)
  --progress <s>        seconds between progress lines          (BENCH_PROGRESS_S, default 3)
  --timeout <s>         per-request timeout                     (BENCH_REQUEST_TIMEOUT_S, default 30)
  --webhook-wait <s>    after the load, how long to wait for the
                        worker to deliver every webhook         (BENCH_WEBHOOK_WAIT_S, default 30)
  --idempotency-keys    send Idempotency-Key on every POST      (BENCH_IDEMPOTENCY_KEYS=1)
  --profile             CPU-profile the server thread over the measured window; with --processes,
                        every server process over its whole run (node --cpu-prof)
                        (writes .cpuprofile files next to the report; slows the server a little)  (BENCH_PROFILE=1)
  --fresh-db            with DATABASE_URL: drop and create that database first and drop it after
                        (only for a database whose name contains "bench")   (BENCH_FRESH_DB=1)
  --processes <n>       with DATABASE_URL: run the API as \`checkstand serve --processes <n> --with-worker\`
                        child processes instead of in this process          (BENCH_PROCESSES; default: in process)
  --workers <m>         with --processes: the outbox worker as <m> \`checkstand worker\` processes beside
                        \`serve --processes <n>\` instead of in serve's primary   (BENCH_WORKERS; default 0)
  --scenario <name>     which funnel (kind of payment): card, extpay or threeds  (BENCH_SCENARIO, default card)
  --client <name>       how the driver calls the API: raw (HTTP/1.1 written on kept-alive
                        sockets: the lightest for the driver's thread), http (node:http,
                        keep-alive: about twice the driver's CPU) or sdk (the typed
                        @checkstand/client over fetch, several times more)
                                                                (BENCH_CLIENT, default raw)
  --log-level <level>   the server's log level: warn (nothing per request) or info (the
                        server's default: two lines per request, written to a file beside
                        the data dir; in process only)           (BENCH_LOG_LEVEL, default warn)
  --mail-dir <where>    where the server's mail files go: tmpfs (/dev/shm) or data (the data
                        dir, on its disk; on ext4 without a journal each new file pays for the
                        files the last run removed: bench/README, twenty-first round)
                                                                (BENCH_MAIL_DIR, default tmpfs where there is one)
  --callgrind           with DATABASE_URL: run \`checkstand serve --processes 1 --with-worker\` under
                        valgrind's callgrind and report the server's instructions per funnel, a
                        figure the machine's other tenants do not move (bench/callgrind.ts); the
                        server runs ~40× slower, so its speed figures are not judged. Its defaults:
                        --concurrency 4 --warmup 300 --duration 60 (≈ 7 minutes)  (BENCH_CALLGRIND=1)

Scenarios (each with the outbox worker delivering webhooks to a local receiver):
  card     lead → Process Payment (card, sandbox NMI gateway over HTTP) → one upsell → Complete Order
  extpay   Create Order (extpay) → pay on the sandbox provider's hosted page → Capture (and the
           provider's payment.succeeded webhook) → upsell (202, settled by webhook) → Complete Order
  threeds  lead → Process Payment (3-D Secure gateway: redirect) → the sandbox's challenge page →
           Capture (and the gateway's PAYMENT_SUCCEEDED webhook) → upsell → Complete Order
Database: PostgreSQL when DATABASE_URL is set, else embedded PGlite in a temporary data dir.
Report: bench/results/<timestamp>-<pglite|postgres>[-<scenario>].json (no suffix for card)`;

export function parseOptions(argv: string[], env: NodeJS.ProcessEnv): Options | 'help' {
  const flags = readFlags(
    argv,
    ['duration', 'concurrency', 'warmup', 'max-error-rate', 'progress', 'timeout', 'webhook-wait', 'processes', 'workers', 'scenario', 'client', 'log-level', 'mail-dir'],
    ['idempotency-keys', 'fresh-db', 'profile', 'callgrind'],
  );
  if (flags === 'help') return 'help';
  const callgrind = truthy(flags.callgrind ?? env.BENCH_CALLGRIND);
  if (callgrind) {
    if (!env.DATABASE_URL) throw new UsageError('--callgrind counts the instructions of a `checkstand serve` process on PostgreSQL: set DATABASE_URL');
    if ((flags.processes ?? env.BENCH_PROCESSES ?? '1') !== '1' || (flags.workers ?? env.BENCH_WORKERS ?? '0') !== '0') {
      throw new UsageError('--callgrind runs one server process with its worker (--processes 1, no --workers)');
    }
    if (truthy(flags.profile ?? env.BENCH_PROFILE)) throw new UsageError('--callgrind and --profile: one measurement of the server at a time');
  }

  const positive = (n: number) => n > 0;
  const processesRaw = flags.processes ?? env.BENCH_PROCESSES ?? (callgrind ? '1' : '');
  return {
    durationS: num('duration', flags.duration ?? env.BENCH_DURATION_S, callgrind ? CALLGRIND_DEFAULTS.durationS : 15, positive, 'a positive number of seconds'),
    concurrency: num('concurrency', flags.concurrency ?? env.BENCH_CONCURRENCY, callgrind ? CALLGRIND_DEFAULTS.concurrency : 16, (n) => Number.isInteger(n) && n >= 1 && n <= 1000, 'an integer from 1 to 1000'),
    warmupS: num('warmup', flags.warmup ?? env.BENCH_WARMUP_S, callgrind ? CALLGRIND_DEFAULTS.warmupS : DEFAULT_WARMUP_S, (n) => n >= 0, 'zero or more seconds'),
    maxErrorRate: num('max-error-rate', flags['max-error-rate'] ?? env.BENCH_MAX_ERROR_RATE, 0.05, (n) => n >= 0 && n <= 1, 'between 0 and 1'),
    progressS: num('progress', flags.progress ?? env.BENCH_PROGRESS_S, 3, positive, 'a positive number of seconds'),
    requestTimeoutS: num('timeout', flags.timeout ?? env.BENCH_REQUEST_TIMEOUT_S, 30, positive, 'a positive number of seconds'),
    webhookWaitS: num('webhook-wait', flags['webhook-wait'] ?? env.BENCH_WEBHOOK_WAIT_S, 30, (n) => n >= 0, 'zero or more seconds'),
    idempotencyKeys: truthy(flags['idempotency-keys'] ?? env.BENCH_IDEMPOTENCY_KEYS),
    freshDb: truthy(flags['fresh-db'] ?? env.BENCH_FRESH_DB),
    profile: truthy(flags.profile ?? env.BENCH_PROFILE),
    processes: (() => {
      const raw = processesRaw;
      if (raw === '') return null;
      const n = num('processes', raw, 1, (x) => Number.isInteger(x) && x >= 1 && x <= 64, 'an integer from 1 to 64');
      if (!env.DATABASE_URL) throw new UsageError('--processes runs `checkstand serve --processes N` on PostgreSQL: set DATABASE_URL (the embedded database has one owner process)');
      return n;
    })(),
    workers: (() => {
      const raw = flags.workers ?? env.BENCH_WORKERS;
      if (raw === undefined || raw === '') return 0;
      const m = num('workers', raw, 0, (x) => Number.isInteger(x) && x >= 0 && x <= 16, 'an integer from 0 to 16');
      if (m > 0 && processesRaw === '') throw new UsageError('--workers needs --processes: in process the outbox worker runs on the server thread');
      return m;
    })(),
    scenario: oneOf('scenario', flags.scenario ?? env.BENCH_SCENARIO, SCENARIOS, 'card'),
    client: oneOf('client', flags.client ?? env.BENCH_CLIENT, BENCH_CLIENTS, 'raw'),
    logLevel: (() => {
      const level = oneOf('log-level', flags['log-level'] ?? env.BENCH_LOG_LEVEL, BENCH_LOG_LEVELS, 'warn');
      if (level !== 'warn' && processesRaw !== '') {
        throw new UsageError('--log-level runs with the server in this process: the server processes of --processes log to the bench through a pipe');
      }
      return level;
    })(),
    mailDir: (() => {
      const root = tmpfsRoot();
      const where = oneOf('mail-dir', flags['mail-dir'] ?? env.BENCH_MAIL_DIR, MAIL_DIRS, defaultMailDir(root));
      if (where === 'tmpfs' && !root) throw new UsageError('--mail-dir tmpfs: /dev/shm is not a writable tmpfs on this machine (use --mail-dir data)');
      return where;
    })(),
    callgrind,
  };
}

/** An option that names one of a few choices: unset or empty gives the default, anything else exits 2. */
function oneOf<T extends string>(name: string, raw: string | undefined, choices: readonly T[], fallback: T): T {
  if (raw === undefined || raw === '') return fallback;
  if (!(choices as readonly string[]).includes(raw)) throw new UsageError(`--${name} must be one of ${choices.join(', ')}, got "${raw}"`);
  return raw as T;
}

