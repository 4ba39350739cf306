/** A fixed-window budget: at most `max` requests per `windowMs`; `null` is no budget at all (`off`). */
export interface Budget {
  max: number;
  windowMs: number;
}

export type RateLimitStoreKind = 'memory' | 'postgres';

export interface RateLimitSettings {
  /** `memory`: per process. `postgres`: one budget shared by every `serve` process on the database. */
  store: RateLimitStoreKind;
  /** Per API token, GET and HEAD on /checkout and /v1. */
  tokenReads: Budget | null;
  /** Per API token, every other method on /checkout and /v1. */
  tokenWrites: Budget | null;
  /** Per client address (IPv6 by /64): reads and writes on everything but the exempt routes and /webhooks. */
  ipReads: Budget | null;
  ipWrites: Budget | null;
  /** Per client address: answers 401 on /checkout and /v1; once spent, every request there is refused until the window ends. */
  failedAuth: Budget | null;
  /** Per client address on /webhooks/* (providers retry a refused delivery). */
  webhooks: Budget | null;
}

export interface OverloadSettings {
  /** Requests being served at once past which new ones are answered 503 at once; 0 turns the cap off. */
  maxInFlight: number;
  /** Mean event-loop delay over a sample past which requests are answered 503; 0 turns it off. */
  maxEventLoopDelayMs: number;
  /** Heap and RSS ceilings past which requests are answered 503; 0 turns each off. */
  maxHeapUsedBytes: number;
  maxRssBytes: number;
  /** How often the event-loop delay and memory are sampled. */
  sampleIntervalMs: number;
  /** Retry-After of a 503 `overloaded`. */
  retryAfterSeconds: number;
}

/** Stripe's model: 100 reads and 100 writes per second per key in live mode. */
export const DEFAULT_RATE_LIMITS: RateLimitSettings = {
  store: 'memory',
  tokenReads: { max: 100, windowMs: 1_000 },
  tokenWrites: { max: 100, windowMs: 1_000 },
  ipReads: { max: 200, windowMs: 1_000 },
  ipWrites: { max: 200, windowMs: 1_000 },
  failedAuth: { max: 20, windowMs: 60_000 },
  webhooks: { max: 100, windowMs: 1_000 },
};

export const DEFAULT_OVERLOAD: OverloadSettings = {
  maxInFlight: 256,
  maxEventLoopDelayMs: 100,
  maxHeapUsedBytes: 0,
  maxRssBytes: 0,
  sampleIntervalMs: 1_000,
  retryAfterSeconds: 2,
};

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;
const BUDGET = /^(\d+)\s*\/\s*(\d*)\s*(ms|s|m|h)$/;

/** `100/1s`, `20/1m`, `5/500ms`, `1000/h` (a missing count means 1), or `off`. */
export function budgetFrom(value: string | undefined, fallback: Budget | null, name: string): Budget | null {
  if (value === undefined || value.trim() === '') return fallback;
  if (value.trim() === 'off') return null;
  const m = BUDGET.exec(value.trim());
  const windowMs = m ? Number(m[2] || '1') * UNIT_MS[m[3] as keyof typeof UNIT_MS] : 0;
  if (!m || windowMs <= 0) throw new Error(`${name} must look like 100/1s (requests per window: ms, s, m or h) or be off, got "${value}"`);
  return { max: Number(m[1]), windowMs };
}

function count(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${value}"`);
  return n;
}

function storeFrom(value: string | undefined): RateLimitStoreKind {
  if (value === undefined || value === '' || value === 'memory') return 'memory';
  if (value === 'postgres') return 'postgres';
  throw new Error(`RATE_LIMIT_STORE must be memory or postgres, got "${value}"`);
}

export function rateLimitsFrom(env: NodeJS.ProcessEnv): RateLimitSettings {
  const d = DEFAULT_RATE_LIMITS;
  return {
    store: storeFrom(env.RATE_LIMIT_STORE),
    tokenReads: budgetFrom(env.RATE_LIMIT_TOKEN_READS, d.tokenReads, 'RATE_LIMIT_TOKEN_READS'),
    tokenWrites: budgetFrom(env.RATE_LIMIT_TOKEN_WRITES, d.tokenWrites, 'RATE_LIMIT_TOKEN_WRITES'),
    ipReads: budgetFrom(env.RATE_LIMIT_IP_READS, d.ipReads, 'RATE_LIMIT_IP_READS'),
    ipWrites: budgetFrom(env.RATE_LIMIT_IP_WRITES, d.ipWrites, 'RATE_LIMIT_IP_WRITES'),
    failedAuth: budgetFrom(env.RATE_LIMIT_FAILED_AUTH, d.failedAuth, 'RATE_LIMIT_FAILED_AUTH'),
    webhooks: budgetFrom(env.RATE_LIMIT_WEBHOOKS, d.webhooks, 'RATE_LIMIT_WEBHOOKS'),
  };
}

export function overloadFrom(env: NodeJS.ProcessEnv): OverloadSettings {
  const d = DEFAULT_OVERLOAD;
  return {
    maxInFlight: count(env.OVERLOAD_MAX_IN_FLIGHT, d.maxInFlight, 'OVERLOAD_MAX_IN_FLIGHT'),
    maxEventLoopDelayMs: count(env.OVERLOAD_MAX_EVENT_LOOP_DELAY_MS, d.maxEventLoopDelayMs, 'OVERLOAD_MAX_EVENT_LOOP_DELAY_MS'),
    maxHeapUsedBytes: count(env.OVERLOAD_MAX_HEAP_USED_BYTES, d.maxHeapUsedBytes, 'OVERLOAD_MAX_HEAP_USED_BYTES'),
    maxRssBytes: count(env.OVERLOAD_MAX_RSS_BYTES, d.maxRssBytes, 'OVERLOAD_MAX_RSS_BYTES'),
    sampleIntervalMs: Math.max(10, count(env.OVERLOAD_SAMPLE_INTERVAL_MS, d.sampleIntervalMs, 'OVERLOAD_SAMPLE_INTERVAL_MS')),
    retryAfterSeconds: Math.max(1, count(env.OVERLOAD_RETRY_AFTER_SECONDS, d.retryAfterSeconds, 'OVERLOAD_RETRY_AFTER_SECONDS')),
  };
}

/**
 * Fastify's `trustProxy`: unset trusts no proxy (the client address is the socket's); `true`
 * trusts every hop; otherwise a comma-separated list of proxy addresses or CIDR ranges. Behind
 * a load balancer, set it, or every client shares the balancer's address and its budgets.
 */
export type TrustProxy = boolean | string[];

export function trustProxyFrom(value: string | undefined): TrustProxy {
  const v = value?.trim() ?? '';
  if (v === '' || /^(false|0|no|off)$/i.test(v)) return false;
  if (/^(true|yes|on)$/i.test(v)) return true;
  return v.split(',').map((s) => s.trim()).filter(Boolean);
}
