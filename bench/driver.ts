/**
 * The load driver. Runs in a worker thread of the bench process (see run.ts), so that the
 * client's own work (fetch, JSON) runs on its own event loop and does not queue behind the
 * server's: the main thread is the server alone.
 *
 * `concurrency` virtual customers each run the card funnel back to back:
 *   POST /checkout/leads → POST /checkout/orders/payment (card, charged on the sandbox gateway)
 *   → POST /checkout/orders/upsell (the $9 guide, charged on the saved card) → POST /checkout/orders/complete
 * over Node's global fetch (undici, keep-alive). A flow is measured when it *starts* inside
 * the measured window; all of its requests are then recorded, and flows still in flight at
 * the end of the window are finished (drain) before the result is posted.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { Checkstand } from '@checkstand/client';
import {
  benchCardExp,
  bump,
  type DriverInput,
  type DriverMessage,
  ENDPOINTS,
  type Endpoint,
  type EndpointSamples,
  percentile,
  sortedCopy,
  type StepTotals,
} from './stats.ts';

const input = workerData as DriverInput;
const port = parentPort!;
const post = (m: DriverMessage) => port.postMessage(m);

const CARD = { card_number: '4111111111111111', card_exp: benchCardExp(), card_cvv: '123' };

const samples = Object.fromEntries(
  ENDPOINTS.map((e) => [e, { latencies: [], statuses: {}, errors: {}, outcomes: {} } satisfies EndpointSamples]),
) as unknown as Record<Endpoint, EndpointSamples>;
const totals = Object.fromEntries(ENDPOINTS.map((e) => [e, { ok: 0, ambiguous: 0, refused: 0 } satisfies StepTotals])) as unknown as Record<Endpoint, StepTotals>;

const t0 = performance.now();
const measureStart = t0 + input.warmupMs;
let measureEnd = measureStart + input.durationMs;
let stopRequested = false;

let flowsCompleted = 0;
let flowsFailed = 0;
const flowLatencies: number[] = [];
const warmup = { flows: 0, errors: 0 };
const firstErrors: string[] = [];

// For the progress line: every flow and request of any phase.
let allFlowsDone = 0;
let allFlowsFailed = 0;
let allFlowsCompleted = 0;
let allRequests = 0;
let allErrors = 0;
let inFlight = 0;
let intervalFlowLatencies: number[] = [];

port.on('message', (m: { type?: string }) => {
  if (m?.type === 'stop') {
    stopRequested = true;
    measureEnd = Math.min(measureEnd, performance.now());
  }
});

interface Answer {
  status: number | string;
  body: any;
  ms: number;
}

// The typed client (packages/client) with nothing added: no retries, no Idempotency-Key unless
// --idempotency-keys asks for one, so each measured call is exactly one request.
const cs = new Checkstand({ baseUrl: input.baseUrl, token: input.token, maxRetries: 0, autoIdempotencyKeys: false });

/** Times one call; the body is always read (openapi-fetch parses it), so the socket goes back to the pool. */
async function call(send: (signal: AbortSignal) => Promise<{ data?: unknown; error?: unknown; response: Response }>): Promise<Answer> {
  const started = performance.now();
  try {
    const r = await send(AbortSignal.timeout(input.requestTimeoutMs));
    return { status: r.response.status, body: r.data ?? r.error, ms: performance.now() - started };
  } catch (err) {
    const e = err as { name?: string; cause?: { code?: string } };
    return { status: `network:${e.cause?.code ?? e.name ?? 'error'}`, body: undefined, ms: performance.now() - started };
  }
}

/** Records one answer; returns whether the step got what it expects. */
function record(endpoint: Endpoint, measured: boolean, a: Answer, outcome: string | null): boolean {
  allRequests++;
  const ok = outcome !== null;
  const t = totals[endpoint];
  if (ok) t.ok++;
  else if (typeof a.status === 'string' || a.status >= 500) t.ambiguous++;
  else t.refused++;
  if (!ok) {
    allErrors++;
    if (firstErrors.length < 10) {
      const detail = typeof a.body === 'object' && a.body ? JSON.stringify(a.body).slice(0, 300) : String(a.body ?? '').slice(0, 300);
      firstErrors.push(`${endpoint} → ${a.status} ${detail}`);
    }
  }
  if (!measured) {
    if (!ok) warmup.errors++;
    return ok;
  }
  const s = samples[endpoint];
  s.latencies.push(a.ms);
  bump(s.statuses, String(a.status));
  if (ok) bump(s.outcomes, outcome);
  else bump(s.errors, String(a.status));
  return ok;
}

let seq = 0;

async function flow(user: number): Promise<void> {
  const started = performance.now();
  const measured = started >= measureStart && started < measureEnd;
  const n = ++seq;
  const idem = (step: string): Record<string, string> => (input.idempotencyKeys ? { 'idempotency-key': `bench-${input.runId}-${n}-${step}` } : {});

  // 1. Lead: a new customer every time.
  const lead = await call((signal) =>
    cs.api.POST('/checkout/leads', {
      body: {
        campaign_id: input.campaignId,
        customer: { email: `bench-${input.runId}-${user}-${n}@example.com`, first_name: 'Bench', last_name: `User${n}` },
        products: [{ offer_id: input.offerId, quantity: 1 }],
      },
      headers: idem('lead'),
      signal,
    }),
  );
  const orderNumber: unknown = lead.body?.data?.order_number;
  const leadOk = record(
    'POST /checkout/leads',
    measured,
    lead,
    (lead.status === 201 || lead.status === 200) && typeof orderNumber === 'string' ? `${lead.status} ${lead.status === 201 ? 'created' : 'updated'}` : null,
  );

  let ok = leadOk;
  if (ok) {
    // 2. Process Payment: the sandbox gateway approves 4111 1111 1111 1111 and vaults the card.
    const pay = await call((signal) =>
      cs.api.POST('/checkout/orders/payment', { body: { order_number: orderNumber as string, payment: { method: 'card', ...CARD } }, headers: idem('pay'), signal }),
    );
    const approved = pay.status === 200 && pay.body?.success === true && pay.body?.message === 'Payment approved.';
    ok = record('POST /checkout/orders/payment', measured, pay, approved ? '200 approved' : null);
  }
  if (ok) {
    // 3. One-click upsell on the saved card: a second sandbox charge.
    const up = await call((signal) =>
      cs.api.POST('/checkout/orders/upsell', { body: { order_number: orderNumber as string, upsell_id: input.upsellId, quantity: 1 }, headers: idem('upsell'), signal }),
    );
    const added = up.status === 200 && up.body?.success === true && up.body?.data?.order_number === orderNumber;
    ok = record('POST /checkout/orders/upsell', measured, up, added ? '200 added' : null);
  }
  if (ok) {
    // 4. Complete Order: fulfillment, order.completed webhook and purchase e-mail queued.
    const done = await call((signal) => cs.api.POST('/checkout/orders/complete', { body: { order_number: orderNumber as string }, headers: idem('complete'), signal }));
    const completed = done.status === 200 && done.body?.success === true && done.body?.data?.status === 'completed';
    ok = record('POST /checkout/orders/complete', measured, done, completed ? '200 completed' : null);
  }

  const ended = performance.now();
  allFlowsDone++;
  if (ok) allFlowsCompleted++;
  else allFlowsFailed++;
  intervalFlowLatencies.push(ended - started);
  if (!measured) {
    if (started < measureStart) warmup.flows++;
    return;
  }
  if (ok) {
    flowsCompleted++;
    flowLatencies.push(ended - started);
  } else {
    flowsFailed++;
  }
}

async function user(index: number): Promise<void> {
  // Stagger the first requests a little so the users do not move in lockstep.
  await new Promise((r) => setTimeout(r, (index * 7) % 50));
  while (performance.now() < measureEnd && !stopRequested) {
    inFlight++;
    try {
      await flow(index);
    } finally {
      inFlight--;
    }
  }
}

let phase: 'warmup' | 'measure' | 'drain' = 'warmup';
/** Phases only move forward; the runner hears of each once. */
function enter(next: 'measure' | 'drain'): void {
  if (next === 'measure' && phase !== 'warmup') return;
  if (next === 'drain' && phase === 'drain') return;
  if (next === 'drain' && phase === 'warmup') enter('measure');
  phase = next;
  post({ type: 'phase', phase: next, at: Date.now() });
}
let lastTick = performance.now();
const ticker = setInterval(() => {
  const now = performance.now();
  if (phase === 'warmup' && now >= measureStart) enter('measure');
  if (phase === 'measure' && now >= measureEnd) enter('drain');
  if (now - lastTick < input.progressEveryMs) return;
  const sorted = sortedCopy(intervalFlowLatencies);
  post({
    type: 'progress',
    phase,
    elapsedS: (now - t0) / 1000,
    flowsDone: allFlowsDone,
    flowsFailed: allFlowsFailed,
    requests: allRequests,
    errors: allErrors,
    intervalFlowsPerS: (sorted.length * 1000) / (now - lastTick),
    intervalP50Ms: percentile(sorted, 50),
    intervalP99Ms: percentile(sorted, 99),
    inFlight,
  });
  intervalFlowLatencies = [];
  lastTick = now;
}, 100);

if (input.warmupMs <= 0) enter('measure');
await Promise.all(Array.from({ length: input.concurrency }, (_, i) => user(i)));
clearInterval(ticker);
enter('drain');
post({ type: 'phase', phase: 'done', at: Date.now() });
post({
  type: 'result',
  measuredMs: Math.max(0, Math.min(input.durationMs, measureEnd - measureStart)),
  flowsCompleted,
  flowsFailed,
  flowLatencies,
  warmup,
  endpoints: samples,
  totals,
  allFlowsCompleted,
  firstErrors,
});
