/**
 * The load driver. Runs in a worker thread of the bench process (see run.ts), so that the
 * client's own work (fetch, JSON) runs on its own event loop and does not queue behind the
 * server's: the main thread is the server alone.
 *
 * `concurrency` virtual customers each run the scenario's funnel back to back (`card` below; the
 * `extpay` and `threeds` funnels at extpayFlow and threedsFlow):
 *   POST /checkout/leads → POST /checkout/orders/payment (card, charged on the sandbox gateway)
 *   → POST /checkout/orders/upsell (the $9 guide, charged on the saved card) → POST /checkout/orders/complete
 * as HTTP/1.1 on the driver's own kept-alive sockets (raw-http.ts; `--client http`: node:http with
 * keep-alive, plain-http.ts; `--client sdk`: the typed client over fetch); the
 * provider's pages (sandbox) with plain fetch, redirects not followed, as a browser's requests. A flow is measured when it *starts* inside
 * the measured window; all of its requests are then recorded, and flows still in flight at
 * the end of the window are finished (drain) before the result is posted.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { Checkstand } from '@checkstand/client';
import { plainApi } from './plain-http.ts';
import { rawApi } from './raw-http.ts';
import { ownThreadId } from './sched.ts';
import { EXTPAY_CARDS } from '../src/sandbox/extpay-provider.ts';
import { THREEDS_CARDS } from '../src/sandbox/threeds-gateway.ts';
import {
  benchCardExp,
  bump,
  type DriverInput,
  type DriverMessage,
  ENDPOINTS,
  type Endpoint,
  type EndpointSamples,
  type Scenario,
  percentile,
  sortedCopy,
  type StepTotals,
} from './stats.ts';

const input = workerData as DriverInput;
const port = parentPort!;
const post = (m: DriverMessage) => port.postMessage(m);

const CARD = { card_number: '4111111111111111', card_exp: benchCardExp(), card_cvv: '123' };
/** The extpay sandbox's card that is paid at once. */
const EXTPAY_CARD = EXTPAY_CARDS.paid;
/** The 3-D Secure sandbox's card that always asks for the challenge. */
const THREEDS_CARD = THREEDS_CARDS.challenge;
/** Where the providers send the browser back; never fetched (the driver reads the redirect's Location). */
const RETURN_URL = 'https://shop.bench.example/return';
const CANCEL_URL = 'https://shop.bench.example/cancel';

const samples = Object.fromEntries(
  ENDPOINTS.map((e) => [e, { latencies: [], statuses: {}, errors: {}, outcomes: {} } satisfies EndpointSamples]),
) as unknown as Record<Endpoint, EndpointSamples>;
const totals = Object.fromEntries(ENDPOINTS.map((e) => [e, { ok: 0, ambiguous: 0, refused: 0, outcomes: {} } satisfies StepTotals])) as unknown as Record<Endpoint, StepTotals>;

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
// --client http: the same calls over node:http (plain-http.ts), cheaper for this thread; --client raw
// (the default): HTTP/1.1 written on kept-alive sockets (raw-http.ts), cheaper still, its timeout the socket's.
const raw = input.client === 'raw' ? rawApi(input.baseUrl, input.token, input.requestTimeoutMs) : null;
const cs = {
  api: (raw ??
    (input.client === 'sdk'
      ? new Checkstand({ baseUrl: input.baseUrl, token: input.token, maxRetries: 0, autoIdempotencyKeys: false }).api
      : plainApi(input.baseUrl, input.token))) as Pick<Checkstand['api'], 'POST'>,
};
/** The raw client times its requests out itself: no AbortSignal (and its timer) per request. */
const callSignal = (): AbortSignal | undefined => (raw ? undefined : AbortSignal.timeout(input.requestTimeoutMs));

/** Times one call; the body is always read (openapi-fetch parses it), so the socket goes back to the pool. */
async function call(send: (signal: AbortSignal | undefined) => Promise<{ data?: unknown; error?: unknown; response: { status: number } }>): Promise<Answer> {
  const started = performance.now();
  try {
    const r = await send(callSignal());
    return { status: r.response.status, body: r.data ?? r.error, ms: performance.now() - started };
  } catch (err) {
    const e = err as { name?: string; code?: string; cause?: { code?: string } };
    return { status: `network:${e.cause?.code ?? (e.name === 'AbortError' ? undefined : e.code) ?? e.name ?? 'error'}`, body: undefined, ms: performance.now() - started };
  }
}

/** Records one answer; returns whether the step got what it expects. */
function record(endpoint: Endpoint, measured: boolean, a: Answer, outcome: string | null): boolean {
  allRequests++;
  const ok = outcome !== null;
  const t = totals[endpoint];
  if (ok) {
    t.ok++;
    bump(t.outcomes, outcome);
  } else if (typeof a.status === 'string' || a.status >= 500) t.ambiguous++;
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

/** One funnel's context: its number, whether it is measured, and its Idempotency-Key maker. */
interface Flow {
  user: number;
  n: number;
  measured: boolean;
  idem: (step: string) => Record<string, string>;
}

const email = (f: Flow) => `bench-${input.runId}-${f.user}-${f.n}@example.com`;

/** Times a browser's exchange with the sandbox (a provider's page): every request of it, bodies read. */
async function browse(steps: (signal: AbortSignal) => Promise<{ status: number; location: string | null }>): Promise<Answer & { location: string | null }> {
  const started = performance.now();
  try {
    const r = await steps(AbortSignal.timeout(input.requestTimeoutMs));
    return { status: r.status, body: r.location, location: r.location, ms: performance.now() - started };
  } catch (err) {
    const e = err as { name?: string; cause?: { code?: string } };
    return { status: `network:${e.cause?.code ?? e.name ?? 'error'}`, body: undefined, location: null, ms: performance.now() - started };
  }
}

/** GET a page as a browser does (the body read, so the socket goes back to the pool). */
async function getPage(url: string | URL, signal: AbortSignal): Promise<Response> {
  const res = await fetch(url, { redirect: 'manual', signal });
  await res.arrayBuffer();
  return res;
}

/** 1. Lead (card, threeds): a new customer every time. Answers the order number, or null. */
async function lead(f: Flow): Promise<string | null> {
  const a = await call((signal) =>
    cs.api.POST('/checkout/leads', {
      body: {
        campaign_id: input.campaignId,
        customer: { email: email(f), first_name: 'Bench', last_name: `User${f.n}` },
        products: [{ offer_id: input.offerId, quantity: 1 }],
      },
      headers: f.idem('lead'),
      signal,
    }),
  );
  const orderNumber: unknown = a.body?.data?.order_number;
  const ok = (a.status === 201 || a.status === 200) && typeof orderNumber === 'string';
  return record('POST /checkout/leads', f.measured, a, ok ? `${a.status} ${a.status === 201 ? 'created' : 'updated'}` : null) ? (orderNumber as string) : null;
}

/**
 * Capture after the provider's page (extpay, threeds). 200 is settled, by this call ("Payment
 * captured.") or by the provider's webhook that got there first ("Payment already captured.").
 * 202 (the provider holds the money, or the gateway reviews) is not an error: asked again after
 * 100, 200, 400 … ms, at most `captureRetries` more times, as an integrator would; still 202 after
 * that is an error of the step. Every call is a sample.
 */
async function capture(f: Flow, orderNumber: string, paymentId: string | null): Promise<boolean> {
  for (let attempt = 0; ; attempt++) {
    const a = await call((signal) =>
      cs.api.POST('/checkout/orders/capture', {
        body: { order_number: orderNumber, ...(paymentId ? { payment_id: paymentId } : {}) },
        headers: f.idem(`capture-${attempt}`),
        signal,
      }),
    );
    const settled = a.status === 200 && a.body?.success === true && a.body?.data?.payment_status === 'completed';
    const held = a.status === 202 && a.body?.data?.payment_status === 'pending_external_confirmation';
    if (held && attempt < input.captureRetries) {
      record('POST /checkout/orders/capture', f.measured, a, '202 pending, asked again');
      await new Promise((r) => setTimeout(r, Math.min(100 * 2 ** attempt, 2000)));
      continue;
    }
    const outcome = settled ? (a.body?.message === 'Payment already captured.' ? '200 already captured (webhook first)' : '200 captured') : null;
    return record('POST /checkout/orders/capture', f.measured, a, outcome);
  }
}

/** One-click upsell on the saved card or payment method; extpay accepts it (202) and its webhook adds it. */
async function upsell(f: Flow, orderNumber: string): Promise<boolean> {
  const a = await call((signal) =>
    cs.api.POST('/checkout/orders/upsell', { body: { order_number: orderNumber, upsell_id: input.upsellId, quantity: 1 }, headers: f.idem('upsell'), signal }),
  );
  const same = a.body?.data?.order_number === orderNumber;
  const added = a.status === 200 && a.body?.success === true && same;
  // Spec 4.3: 202 pending_external_confirmation. 200 when the provider's payment.succeeded was
  // recorded before this answer (that answer stands). 402 (declined) is an error: the bench's card pays.
  const accepted = input.scenario === 'extpay' && a.status === 202 && a.body?.data?.upsell_status === 'pending_external_confirmation' && same;
  return record('POST /checkout/orders/upsell', f.measured, a, added ? '200 added' : accepted ? '202 accepted' : null);
}

/** Complete Order: fulfillment, order.completed webhook and purchase e-mail queued (after Capture: already done, same answer). */
async function complete(f: Flow, orderNumber: string): Promise<boolean> {
  const a = await call((signal) => cs.api.POST('/checkout/orders/complete', { body: { order_number: orderNumber }, headers: f.idem('complete'), signal }));
  const completed = a.status === 200 && a.body?.success === true && a.body?.data?.status === 'completed';
  return record('POST /checkout/orders/complete', f.measured, a, completed ? '200 completed' : null);
}

/** card: lead → pay (4111…, approved at once, card vaulted) → upsell (saved card) → complete. */
async function cardFlow(f: Flow): Promise<boolean> {
  const orderNumber = await lead(f);
  if (!orderNumber) return false;
  // 2. Process Payment: the sandbox gateway approves 4111 1111 1111 1111 and vaults the card.
  const pay = await call((signal) =>
    cs.api.POST('/checkout/orders/payment', { body: { order_number: orderNumber, payment: { method: 'card', ...CARD } }, headers: f.idem('pay'), signal }),
  );
  const approved = pay.status === 200 && pay.body?.success === true && pay.body?.message === 'Payment approved.';
  if (!record('POST /checkout/orders/payment', f.measured, pay, approved ? '200 approved' : null)) return false;
  // 3. One-click upsell on the saved card: a second sandbox charge. 4. Complete Order.
  return (await upsell(f, orderNumber)) && (await complete(f, orderNumber));
}

/**
 * extpay: Create Order (no lead: spec 4.1 rule 1) → the provider's hosted page (GET it, POST its
 * form with a paying card and setup_future_usage off_session; its 303 to the return URL carries the
 * receipt) → Capture with that receipt (racing the provider's payment.succeeded webhook) → upsell
 * (charged on the saved method: 202, settled by webhook) → complete.
 */
async function extpayFlow(f: Flow): Promise<boolean> {
  const order = await call((signal) =>
    cs.api.POST('/checkout/orders', {
      body: {
        campaign_id: input.campaignId,
        currency: input.currency,
        customer: { email: email(f), first_name: 'Bench', last_name: `User${f.n}` },
        products: [{ offer_id: input.offerId, quantity: 1 }],
        payment: { method: 'extpay', return_url: RETURN_URL, external_payment_id: input.extpayConnectionId! },
      },
      headers: f.idem('order'),
      signal,
    }),
  );
  const d = order.body?.data;
  const orderNumber: unknown = d?.order_number;
  const purchaseUrl: unknown = d?.checkout?.purchase_url;
  const redirect = order.status === 200 && d?.payment_status === 'pending_redirect' && typeof orderNumber === 'string' && typeof purchaseUrl === 'string';
  if (!record('POST /checkout/orders', f.measured, order, redirect ? '200 pending_redirect' : null)) return false;

  const page = await browse(async (signal) => {
    const shown = await getPage(purchaseUrl as string, signal);
    if (shown.status !== 200) return { status: shown.status, location: null };
    const u = new URL(purchaseUrl as string);
    const form = new URLSearchParams({
      session: u.searchParams.get('session') ?? '',
      email: email(f),
      name: `Bench User${f.n}`,
      card_number: EXTPAY_CARD,
      setup_future_usage: 'off_session',
    });
    const res = await fetch(`${u.origin}${u.pathname}`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form, signal });
    await res.arrayBuffer();
    return { status: res.status, location: res.headers.get('location') };
  });
  const back = page.location ? new URL(page.location) : null;
  const receipt = back?.searchParams.get('payment_id') ?? null;
  const paid = page.status === 303 && back?.searchParams.get('status') === 'success' && receipt !== null;
  if (!record('sandbox: extpay pay page', f.measured, page, paid ? '303 paid, back with the receipt' : null)) return false;

  return (await capture(f, orderNumber as string, receipt)) && (await upsell(f, orderNumber as string)) && (await complete(f, orderNumber as string));
}

/**
 * threeds: lead → pay through the 3-D Secure gateway (`gateway_id`; challenge card; return and
 * cancel URLs; risk session) → its hosted page (GET it, then the Authenticate link: 302 to the
 * return URL) → Capture (racing the gateway's PAYMENT_SUCCEEDED webhook) → upsell (merchant-initiated
 * on the saved card, no redirect) → complete.
 */
async function threedsFlow(f: Flow): Promise<boolean> {
  const orderNumber = await lead(f);
  if (!orderNumber) return false;
  const pay = await call((signal) =>
    cs.api.POST('/checkout/orders/payment', {
      body: {
        order_number: orderNumber,
        gateway_id: input.threedsGatewayId!,
        payment: {
          method: 'card',
          ...CARD,
          card_number: THREEDS_CARD,
          risk_session_id: `rs_bench_${input.runId}_${f.n}`,
          return_url: `${RETURN_URL}?order_number=${encodeURIComponent(orderNumber)}`,
          cancel_url: `${CANCEL_URL}?order_number=${encodeURIComponent(orderNumber)}`,
        },
      },
      headers: f.idem('pay'),
      signal,
    }),
  );
  const redirectUrl: unknown = pay.body?.data?.redirect_url;
  const redirect = pay.status === 200 && pay.body?.data?.payment_status === 'pending_redirect' && typeof redirectUrl === 'string';
  if (!record('POST /checkout/orders/payment', f.measured, pay, redirect ? '200 pending_redirect' : null)) return false;

  const page = await browse(async (signal) => {
    const shown = await getPage(redirectUrl as string, signal);
    if (shown.status !== 200) return { status: shown.status, location: null };
    const done = new URL(redirectUrl as string);
    done.pathname += '/complete';
    done.searchParams.set('result', 'success');
    const res = await getPage(done, signal);
    return { status: res.status, location: res.headers.get('location') };
  });
  const authenticated = page.status === 302 && (page.location?.startsWith(RETURN_URL) ?? false);
  if (!record('sandbox: 3DS challenge', f.measured, page, authenticated ? '302 authenticated, back to the return URL' : null)) return false;

  return (await capture(f, orderNumber, null)) && (await upsell(f, orderNumber)) && (await complete(f, orderNumber));
}

const FLOWS: Record<Scenario, (f: Flow) => Promise<boolean>> = { card: cardFlow, extpay: extpayFlow, threeds: threedsFlow };

async function flow(user: number): Promise<void> {
  const started = performance.now();
  const measured = started >= measureStart && started < measureEnd;
  const n = ++seq;
  const idem = (step: string): Record<string, string> => (input.idempotencyKeys ? { 'idempotency-key': `bench-${input.runId}-${n}-${step}` } : {});
  const ok = await FLOWS[input.scenario]({ user, n, measured, idem });

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
  post({ type: 'phase', phase: next, at: Date.now(), tid: ownThreadId() });
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
raw?.close();
enter('drain');
post({ type: 'phase', phase: 'done', at: Date.now(), tid: ownThreadId() });
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
