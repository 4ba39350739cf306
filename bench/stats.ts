/** Shared types and arithmetic for the bench threads (driver.ts, receiver.ts) and the runner (run.ts). */

/**
 * The funnels the bench can drive (`--scenario`), one per kind of payment: `card` (the default, the
 * figures before scenarios existed), `extpay` (the external checkout provider's hosted page,
 * Capture and its webhook) and `threeds` (the card gateway that demands 3-D Secure).
 */
export const SCENARIOS = ['card', 'extpay', 'threeds'] as const;
export type Scenario = (typeof SCENARIOS)[number];

/**
 * Every step a funnel can time: the API's calls, and the two steps a browser makes on the
 * provider's side (the sandbox), each timed as a whole (its page and its form or link).
 */
export const ENDPOINTS = [
  'POST /checkout/leads',
  'POST /checkout/orders',
  'POST /checkout/orders/payment',
  'sandbox: extpay pay page',
  'sandbox: 3DS challenge',
  'POST /checkout/orders/capture',
  'POST /checkout/orders/upsell',
  'POST /checkout/orders/complete',
] as const;
export type Endpoint = (typeof ENDPOINTS)[number];

/** The steps on the sandbox (the provider's pages), not the API: no p99 target applies to them. */
export const SANDBOX_STEPS: ReadonlySet<Endpoint> = new Set(['sandbox: extpay pay page', 'sandbox: 3DS challenge']);

/** Each scenario's steps, in order. The card funnel's four are the ones the bench always had. */
export const SCENARIO_STEPS: Record<Scenario, readonly Endpoint[]> = {
  card: ['POST /checkout/leads', 'POST /checkout/orders/payment', 'POST /checkout/orders/upsell', 'POST /checkout/orders/complete'],
  extpay: ['POST /checkout/orders', 'sandbox: extpay pay page', 'POST /checkout/orders/capture', 'POST /checkout/orders/upsell', 'POST /checkout/orders/complete'],
  threeds: [
    'POST /checkout/leads',
    'POST /checkout/orders/payment',
    'sandbox: 3DS challenge',
    'POST /checkout/orders/capture',
    'POST /checkout/orders/upsell',
    'POST /checkout/orders/complete',
  ],
};

/** Short names for the report. */
export const STEP_NAMES: Record<Endpoint, string> = {
  'POST /checkout/leads': 'lead',
  'POST /checkout/orders': 'order',
  'POST /checkout/orders/payment': 'pay',
  'sandbox: extpay pay page': 'pay-page',
  'sandbox: 3DS challenge': 'challenge',
  'POST /checkout/orders/capture': 'capture',
  'POST /checkout/orders/upsell': 'upsell',
  'POST /checkout/orders/complete': 'complete',
};

/** 12/30; a later year once 2030 has come, so the bench does not start failing on card expiry. */
export function benchCardExp(now = new Date()): string {
  const yy = now.getUTCFullYear() % 100;
  return `12/${String(Math.max(30, yy + 3)).padStart(2, '0')}`;
}

/** What the runner hands the driver thread. */
export interface DriverInput {
  baseUrl: string;
  token: string;
  campaignId: string;
  offerId: string;
  /** The demo's step-2 upsell (the $9 guide): a real charge on the saved card. */
  upsellId: string;
  scenario: Scenario;
  /** The campaign's currency (Create Order needs it: extpay). */
  currency: string;
  /** extpay: the demo's connection, pinned with `payment.external_payment_id`. */
  extpayConnectionId: string | null;
  /** threeds: the demo's 3-D Secure gateway, chosen with Process Payment's `gateway_id`. */
  threedsGatewayId: string | null;
  /** Capture answered 202: how many more times the driver asks (backing off), at most. */
  captureRetries: number;
  concurrency: number;
  warmupMs: number;
  durationMs: number;
  progressEveryMs: number;
  requestTimeoutMs: number;
  /** Send an Idempotency-Key on every POST (off by default: the flow a plain funnel makes). */
  idempotencyKeys: boolean;
  /** Makes e-mails unique across runs against the same database. */
  runId: string;
  /** How the driver calls the API: HTTP/1.1 on kept-alive sockets (`raw`, the default), node:http (`http`) or the typed client over fetch (`sdk`). */
  client: BenchClient;
}

export const BENCH_CLIENTS = ['raw', 'http', 'sdk'] as const;
export type BenchClient = (typeof BENCH_CLIENTS)[number];

/** Raw numbers of the measured window, per endpoint. */
export interface EndpointSamples {
  /** Latency of every measured request, ms (request sent → body read). */
  latencies: number[];
  /** Every measured answer, by HTTP status, or `network:<code>` for no answer. */
  statuses: Record<string, number>;
  /** Answers that were not what the step expects (5xx, network failures, unexpected 4xx), by status. */
  errors: Record<string, number>;
  /** Expected business outcomes, e.g. `200 approved`, `201 created`. */
  outcomes: Record<string, number>;
}

/**
 * Every answer of the whole run (warm-up, measured window and drain), per endpoint: what the
 * server-side effects (sandbox charges, webhooks, mail) are checked against.
 */
export interface StepTotals {
  /**
   * Answers the step expects (pay and upsell: approved or accepted charges; the provider's pages:
   * paid or authenticated; capture: settled; complete: completed orders).
   */
  ok: number;
  /** Errors whose effect is unknown: no answer (network, timeout) or a 5xx. */
  ambiguous: number;
  /** Other errors (a 4xx the step does not expect, an unexpected body): nothing should have happened. */
  refused: number;
  /** The expected answers by outcome (e.g. capture: `200 captured` or `200 already captured (webhook first)`). */
  outcomes: Record<string, number>;
}

export type DriverMessage =
  | { type: 'phase'; phase: 'measure' | 'drain' | 'done'; at: number; /** The driver thread's kernel id (its CPU is read from it). */ tid: number | null }
  | {
      type: 'progress';
      phase: 'warmup' | 'measure' | 'drain';
      elapsedS: number;
      flowsDone: number;
      flowsFailed: number;
      requests: number;
      errors: number;
      intervalFlowsPerS: number;
      intervalP50Ms: number;
      intervalP99Ms: number;
      inFlight: number;
    }
  | {
      type: 'result';
      /** From the first measured flow start to the last measured flow end, ms. */
      measuredMs: number;
      flowsCompleted: number;
      flowsFailed: number;
      flowLatencies: number[];
      warmup: { flows: number; errors: number };
      endpoints: Record<Endpoint, EndpointSamples>;
      /** Whole run, every phase. */
      totals: Record<Endpoint, StepTotals>;
      /** Funnels of every phase that got every expected answer. */
      allFlowsCompleted: number;
      firstErrors: string[];
    };

/** What the webhook receiver thread reports (on request, and at the end with the lags). */
export interface ReceiverStats {
  /** POSTs received, duplicates included. */
  received: number;
  /** Distinct `webhook-id` values. */
  unique: number;
  /** Deliveries of a `webhook-id` already seen (at-least-once delivery; expected to be 0 here). */
  duplicates: number;
  byType: Record<string, number>;
  /** Signatures checked with standardwebhooks' Webhook(secret).verify, and how many failed. */
  verified: number;
  badSignatures: number;
  /** Requests that were not a well-formed webhook (no webhook-id, unparseable body). */
  malformed: number;
  firstBad: string[];
}

export interface ReceiverFinal extends ReceiverStats {
  /** Per unique delivery: arrival time minus the event's `created_at`, ms. */
  lagsMs: number[];
}

export interface LatencySummary {
  count: number;
  per_s: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  max_ms: number;
  mean_ms: number;
}

/** Nearest-rank percentile of an ascending array; 0 for an empty one. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export function sortedCopy(values: readonly number[]): Float64Array {
  return Float64Array.from(values).sort();
}

const round = (v: number, digits = 2) => Math.round(v * 10 ** digits) / 10 ** digits;

export function summarize(values: readonly number[], windowMs: number): LatencySummary {
  const s = sortedCopy(values);
  let sum = 0;
  for (const v of s) sum += v;
  return {
    count: s.length,
    per_s: windowMs > 0 ? round((s.length * 1000) / windowMs, 1) : 0,
    p50_ms: round(percentile(s, 50)),
    p90_ms: round(percentile(s, 90)),
    p99_ms: round(percentile(s, 99)),
    max_ms: round(s.length ? s[s.length - 1]! : 0),
    mean_ms: round(s.length ? sum / s.length : 0),
  };
}

export function bump(counts: Record<string, number>, key: string, by = 1): void {
  counts[key] = (counts[key] ?? 0) + by;
}

export function total(counts: Record<string, number>): number {
  let n = 0;
  for (const v of Object.values(counts)) n += v;
  return n;
}
