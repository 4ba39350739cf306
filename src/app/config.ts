import os from 'node:os';
import path from 'node:path';
import { DEFAULT_PREPARED_STATEMENTS } from '../db/statement-names.ts';
import { type OverloadSettings, type RateLimitSettings, type TrustProxy, overloadFrom, rateLimitsFrom, trustProxyFrom } from './limits/settings.ts';

export interface Config {
  /** postgres://… when set; otherwise the embedded PGlite database under dataDir. */
  databaseUrl: string | undefined;
  dataDir: string;
  host: string;
  port: number;
  /** 32-byte key (hex or base64) for AES-256-GCM of provider secrets and keyed hashes. Embedded mode generates one in dataDir. */
  secretKey: string | undefined;
  logLevel: string;
  /** LOG_FORMAT: `pretty` (pino-pretty, one readable line per entry) or `json`; unset: pretty on a terminal, JSON otherwise. */
  logFormat: 'json' | 'pretty' | undefined;
  /** The embedded database's shared_buffers (PGlite; PostgreSQL's default, 128MB, is most of its memory). */
  embeddedSharedBuffers: string;
  bodyLimitBytes: number;
  idempotencyTtlHours: number;
  publicBaseUrl: string | undefined;
  /** DATABASE_POOL_MAX: PostgreSQL connections per process (defaultPoolMax: 2 × cores + 1, at most 10); the embedded database has one. */
  dbPoolMax: number;
  /** DATABASE_PREPARED_STATEMENTS: how many statement texts a process prepares under a name (src/db/statement-names.ts); 0: none. */
  dbPreparedStatements: number;
  /** DATABASE_PROTOCOL_TRANSACTIONS: transactions without BEGIN and COMMIT statements (src/db/protocol-transactions.ts); default on. */
  dbProtocolTransactions: boolean;
  /** A new database connection that is not up within this long fails (and the request answers 503). */
  dbConnectTimeoutMs: number;
  /** How long `serve`, `worker` and the CLI wait at start for a database that is not reachable yet. */
  dbStartupWaitMs: number;
  /** `checkstand worker`'s own /metrics, /healthz and /readyz listener (on HOST); unset: none, 0: any free port. */
  workerMetricsPort: number | undefined;
  /** WORKER_POLL_MS: how often an idle worker looks for work it was not told of (src/worker/worker.ts's default when unset). */
  workerPollMs: number | undefined;
  /** WORKER_GATHER_MS: how long a worker woken for new work waits before it claims (worker.ts's gatherMsOf when unset). */
  workerGatherMs: number | undefined;
  /** Card rebills: the hour (0–23, the team's time zone) cycles fall due; the dunning retries (days after a cycle's due day); what the last failed retry does. */
  rebill: RebillSettings;
  /** Lets webhook endpoints target loopback, private, link-local and other non-public addresses (development, tests). */
  webhookAllowPrivateTargets: boolean;
  /** Per attempt: connect, send, and read the start of the answer. */
  webhookTimeoutMs: number;
  /** Delay before each retry of a failed delivery (jittered ±20%); attempts = retries + 1. */
  webhookRetryScheduleMs: number[];
  /** Consecutive failed deliveries after which an endpoint is disabled. */
  webhookDisableAfterFailures: number;
  /** smtp(s)://user:pass@host:port for autoresponder mail; unset writes each mail to dataDir/mail/<id>.eml. */
  smtpUrl: string | undefined;
  mailFrom: string;
  /** Delay before each retry of an unsent autoresponder mail; attempts = entries + 1. */
  mailRetryScheduleMs: number[];
  /** Which proxies in front may name the client address (X-Forwarded-For): per-address budgets use it. */
  trustProxy: TrustProxy;
  /** Request budgets per API token and per client address (README: Rate limits and load shedding). */
  rateLimits: RateLimitSettings;
  /** COOKIE_SECURE=true: session cookies are always Secure (else only on requests that came over HTTPS, per TRUST_PROXY). */
  cookieSecure: boolean;
  /** When to answer 503 at once instead of queueing. */
  overload: OverloadSettings;
  /** CONFIG_CACHE_TTL_MS: how long a process trusts its cached configuration (tokens, campaigns, offers, gateways, endpoints, fraud rules) that another process changed; 0: no cache. */
  configCacheTtlMs: number;
}

export interface RebillSettings {
  hour: number;
  retryDays: number[];
  afterLastRetry: 'cancel' | 'past_due';
  batchSize: number;
  /** Subscriptions a worker bills at once (their gateway calls overlap). */
  concurrency: number;
}

/** Dunning in the spirit of Stripe's smart retries: 1, 3, 5 and 7 days after the due day, then cancelled. */
export const DEFAULT_REBILL_RETRY_DAYS = [1, 3, 5, 7];

function rebillFrom(env: NodeJS.ProcessEnv): RebillSettings {
  const hour = intFrom(env.REBILL_HOUR, 3, 'REBILL_HOUR');
  if (hour > 23) throw new Error(`REBILL_HOUR must be an hour from 0 to 23, got "${env.REBILL_HOUR}"`);
  const raw = env.REBILL_RETRY_DAYS?.trim();
  const retryDays = raw === undefined || raw === '' ? DEFAULT_REBILL_RETRY_DAYS : raw === 'none' ? [] : raw.split(',').map((p) => intFrom(p.trim(), NaN, 'REBILL_RETRY_DAYS'));
  if (retryDays.some((d, i) => !(d > 0) || (i > 0 && d <= retryDays[i - 1]!))) {
    throw new Error(`REBILL_RETRY_DAYS must be increasing whole days after the due day (e.g. 1,3,5,7) or "none", got "${env.REBILL_RETRY_DAYS}"`);
  }
  const after = env.REBILL_AFTER_LAST_RETRY || 'cancel';
  if (after !== 'cancel' && after !== 'past_due') throw new Error(`REBILL_AFTER_LAST_RETRY must be cancel or past_due, got "${after}"`);
  return { hour, retryDays, afterLastRetry: after, batchSize: intFrom(env.REBILL_BATCH_SIZE, 50, 'REBILL_BATCH_SIZE') || 50, concurrency: intFrom(env.REBILL_CONCURRENCY, 4, 'REBILL_CONCURRENCY') || 1 };
}

/**
 * DATABASE_POOL_MAX's default: twice this machine's cores and one (Prisma's default
 * connection_limit), at most 10 (the pg driver's default, and this setting's until 2026-12): 5
 * on 2 cores, 9 on 4, 10 from 5 on. One Node process keeps only so many statements in flight, and
 * more connections than that are more PostgreSQL backends competing for the cores (on a machine
 * shared with PostgreSQL, as the bench's, 10 against 5 cost a quarter more of PostgreSQL's CPU per
 * funnel: bench/README, twenty-second round). A process's requests queue for a connection instead;
 * none is held across a provider's call (payment phases: ARCHITECTURE.md).
 */
export function defaultPoolMax(cores = os.availableParallelism()): number {
  return Math.min(10, 2 * cores + 1);
}

/** DATABASE_POOL_MAX: a pool of no connection would leave every request waiting for one. */
function poolMaxFrom(value: string | undefined): number {
  const n = intFrom(value, defaultPoolMax(), 'DATABASE_POOL_MAX');
  if (n < 1) throw new Error(`DATABASE_POOL_MAX must be at least 1, got "${value}"`);
  return n;
}

function intFrom(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${value}"`);
  return n;
}

/** A duration setting: an integer number of milliseconds from `min` to `max`; undefined when unset. */
export function msFromEnv(env: NodeJS.ProcessEnv, name: string, min: number, max: number): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer number of milliseconds from ${min} to ${max}, got ${raw}`);
  return n;
}

function boolFrom(value: string | undefined, fallback: boolean, name: string): boolean {
  if (value === undefined || value === '') return fallback;
  if (/^(true|1|yes|on)$/i.test(value)) return true;
  if (/^(false|0|no|off)$/i.test(value)) return false;
  throw new Error(`${name} must be true or false, got "${value}"`);
}

function logFormatFrom(value: string | undefined): Config['logFormat'] {
  if (value === undefined || value === '') return undefined;
  if (value === 'json' || value === 'pretty') return value;
  throw new Error(`LOG_FORMAT must be json or pretty, got "${value}"`);
}

/** A PostgreSQL memory setting: a number with kB, MB or GB. */
function memoryFrom(value: string | undefined, fallback: string, name: string): string {
  if (value === undefined || value === '') return fallback;
  if (!/^\d+(kB|MB|GB)$/.test(value)) throw new Error(`${name} must be a size such as 16MB (kB, MB or GB), got "${value}"`);
  return value;
}

/** Svix-like: immediately, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h — about 28 hours in all. */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];

/** 1 min, 5 min, 30 min, 2 h, 6 h: six attempts over about 9 hours. */
export const DEFAULT_MAIL_RETRY_SCHEDULE_MS = [60_000, 300_000, 1_800_000, 7_200_000, 21_600_000];

function msListFrom(value: string | undefined, fallback: number[], name: string): number[] {
  if (value === undefined || value.trim() === '') return fallback;
  return value.split(',').map((part) => {
    const n = Number(part.trim());
    if (part.trim() === '' || !Number.isInteger(n) || n < 0) throw new Error(`${name} must be a comma-separated list of milliseconds, got "${value}"`);
    return n;
  });
}

/** Default 1 s: the longest another process may act on a token or configuration changed elsewhere. */
export const DEFAULT_CONFIG_CACHE_TTL_MS = 1_000;

export function configCacheTtlMsFrom(env: NodeJS.ProcessEnv): number {
  return intFrom(env.CONFIG_CACHE_TTL_MS, DEFAULT_CONFIG_CACHE_TTL_MS, 'CONFIG_CACHE_TTL_MS');
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return {
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: path.resolve(env.CHECKSTAND_DATA_DIR || './data'),
    host: env.HOST || '127.0.0.1',
    port: intFrom(env.PORT, 3000, 'PORT'),
    secretKey: env.CHECKSTAND_SECRET_KEY || undefined,
    logLevel: env.LOG_LEVEL || 'info',
    logFormat: logFormatFrom(env.LOG_FORMAT),
    embeddedSharedBuffers: memoryFrom(env.CHECKSTAND_EMBEDDED_SHARED_BUFFERS, '16MB', 'CHECKSTAND_EMBEDDED_SHARED_BUFFERS'),
    bodyLimitBytes: intFrom(env.BODY_LIMIT_BYTES, 256 * 1024, 'BODY_LIMIT_BYTES'),
    idempotencyTtlHours: intFrom(env.IDEMPOTENCY_TTL_HOURS, 24, 'IDEMPOTENCY_TTL_HOURS'),
    publicBaseUrl: env.PUBLIC_BASE_URL || undefined,
    dbPoolMax: poolMaxFrom(env.DATABASE_POOL_MAX),
    dbPreparedStatements: intFrom(env.DATABASE_PREPARED_STATEMENTS, DEFAULT_PREPARED_STATEMENTS, 'DATABASE_PREPARED_STATEMENTS'),
    dbProtocolTransactions: boolFrom(env.DATABASE_PROTOCOL_TRANSACTIONS, true, 'DATABASE_PROTOCOL_TRANSACTIONS'),
    dbConnectTimeoutMs: intFrom(env.DATABASE_CONNECT_TIMEOUT_MS, 5_000, 'DATABASE_CONNECT_TIMEOUT_MS'),
    dbStartupWaitMs: intFrom(env.DATABASE_STARTUP_WAIT_MS, 30_000, 'DATABASE_STARTUP_WAIT_MS'),
    workerMetricsPort: env.WORKER_METRICS_PORT ? intFrom(env.WORKER_METRICS_PORT, 0, 'WORKER_METRICS_PORT') : undefined,
    workerPollMs: msFromEnv(env, 'WORKER_POLL_MS', 10, 3_600_000),
    workerGatherMs: msFromEnv(env, 'WORKER_GATHER_MS', 0, 10_000),
    rebill: rebillFrom(env),
    webhookAllowPrivateTargets: boolFrom(env.WEBHOOK_ALLOW_PRIVATE_TARGETS, false, 'WEBHOOK_ALLOW_PRIVATE_TARGETS'),
    webhookTimeoutMs: intFrom(env.WEBHOOK_TIMEOUT_MS, 10_000, 'WEBHOOK_TIMEOUT_MS'),
    webhookRetryScheduleMs: msListFrom(env.WEBHOOK_RETRY_SCHEDULE_MS, DEFAULT_WEBHOOK_RETRY_SCHEDULE_MS, 'WEBHOOK_RETRY_SCHEDULE_MS'),
    webhookDisableAfterFailures: intFrom(env.WEBHOOK_DISABLE_AFTER_FAILURES, 5, 'WEBHOOK_DISABLE_AFTER_FAILURES'),
    smtpUrl: env.SMTP_URL || undefined,
    mailFrom: env.MAIL_FROM || 'Checkstand <no-reply@checkstand.local>',
    mailRetryScheduleMs: msListFrom(env.MAIL_RETRY_SCHEDULE_MS, DEFAULT_MAIL_RETRY_SCHEDULE_MS, 'MAIL_RETRY_SCHEDULE_MS'),
    trustProxy: trustProxyFrom(env.TRUST_PROXY),
    rateLimits: rateLimitsFrom(env),
    cookieSecure: boolFrom(env.COOKIE_SECURE, false, 'COOKIE_SECURE'),
    overload: overloadFrom(env),
    configCacheTtlMs: configCacheTtlMsFrom(env),
  };
}
