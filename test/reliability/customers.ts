/**
 * Customers for the crash test: each one runs the card funnel over HTTP, order after order —
 * Create Lead → Process Payment (a new card, saved) → Process Upsell on the saved card (one or
 * two steps) → Complete Order — and asks for refunds on some completed orders, the way a funnel's
 * backend calls the API: an Idempotency-Key per step.
 *
 * The server is killed under them. A step that gets no answer, a 5xx, or a 409 saying the same
 * request or payment is still in progress is retried with the same key (after the server is back
 * and a short pause), a few times; then the customer gives up on that order and starts a new one.
 */
import { ServerGate } from './gate.ts';

export const SANDBOX_CARDS = {
  approve: '4111111111111111',
  /** Approved after SANDBOX_SLOW_MS, like a real gateway's latency: the charge is out longer. */
  slow: '4000000000009995',
};

export interface TrafficOptions {
  baseUrl: string;
  token: string;
  runId: string;
  campaignId: string;
  offerId: string;
  /** Upsell steps in funnel order; the first is always taken, each later one half the time. */
  upsellIds: string[];
  customers: number;
  gate: ServerGate;
  /** Tries per step (the first included) before the customer gives up on the order. */
  triesPerStep: number;
  requestTimeoutMs: number;
  /** Share of completed orders that get refunds. */
  refundShare: number;
  /** Told about every answer (or network failure), as it arrives. */
  onAnswer?: (path: string, body: unknown, answer: Answer) => void;
}

type Step = 'lead' | 'pay' | 'upsell' | 'complete' | 'refund';
const STEPS: Step[] = ['lead', 'pay', 'upsell', 'complete', 'refund'];

export interface TrafficStats {
  ordersStarted: number;
  funnelsCompleted: number;
  paymentsApproved: number;
  paymentsDeclined: number;
  upsellsApproved: number;
  upsellsDeclined: number;
  refundsApproved: number;
  refundsRefused: number;
  requests: number;
  networkErrors: number;
  serverErrors: number;
  inProgress409: number;
  replays: number;
  /** Steps retried at least once, and steps given up (the customer moved on to a new order). */
  retried: Record<Step, number>;
  gaveUp: Record<Step, number>;
  /** Answers no step expects (a 4xx other than the in-progress 409s, a body without the fields); first few. */
  unexpected: number;
  unexpectedSamples: string[];
}

export interface Answer {
  status: number | string;
  body: any;
  replayed: boolean;
}

const zero = () => Object.fromEntries(STEPS.map((s) => [s, 0])) as Record<Step, number>;

function cardExp(): string {
  return `12/${String((new Date().getUTCFullYear() + 5) % 100).padStart(2, '0')}`;
}

export class Customers {
  readonly stats: TrafficStats = {
    ordersStarted: 0,
    funnelsCompleted: 0,
    paymentsApproved: 0,
    paymentsDeclined: 0,
    upsellsApproved: 0,
    upsellsDeclined: 0,
    refundsApproved: 0,
    refundsRefused: 0,
    requests: 0,
    networkErrors: 0,
    serverErrors: 0,
    inProgress409: 0,
    replays: 0,
    retried: zero(),
    gaveUp: zero(),
    unexpected: 0,
    unexpectedSamples: [],
  };
  private stopping = false;
  private running: Promise<void>[] = [];

  constructor(private readonly o: TrafficOptions) {}

  start(): void {
    this.running = Array.from({ length: this.o.customers }, (_, i) => this.customer(i));
  }

  /** No new steps after this; resolves when every customer has left. */
  async stop(): Promise<TrafficStats> {
    this.stopping = true;
    this.o.gate.release();
    await Promise.all(this.running);
    return this.stats;
  }

  private async call(path: string, body: unknown, key: string): Promise<Answer> {
    this.stats.requests++;
    try {
      const res = await fetch(this.o.baseUrl + path, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.o.token}`, accept: 'application/json', 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.o.requestTimeoutMs),
      });
      const text = await res.text();
      let parsed: any = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        /* a non-JSON body stays text */
      }
      const replayed = res.headers.get('idempotent-replayed') === 'true';
      if (replayed) this.stats.replays++;
      const answer = { status: res.status, body: parsed, replayed };
      this.o.onAnswer?.(path, body, answer);
      return answer;
    } catch (err) {
      const e = err as { name?: string; cause?: { code?: string } };
      const answer = { status: `network:${e.cause?.code ?? e.name ?? 'error'}`, body: undefined, replayed: false };
      this.o.onAnswer?.(path, body, answer);
      return answer;
    }
  }

  /** Worth retrying with the same key: no answer, a 5xx, or "still in progress". */
  private retryable(a: Answer): boolean {
    if (typeof a.status === 'string') {
      this.stats.networkErrors++;
      return true;
    }
    if (a.status >= 500) {
      this.stats.serverErrors++;
      return true;
    }
    const code = String(a.body?.error?.code ?? '');
    if (a.status === 409 && /in_flight|in_progress/.test(code)) {
      this.stats.inProgress409++;
      return true;
    }
    return false;
  }

  /** One step, retried with its key; null when the customer gave up (or the run is stopping). */
  private async step(step: Step, path: string, body: unknown, key: string): Promise<Answer | null> {
    for (let attempt = 1; attempt <= this.o.triesPerStep; attempt++) {
      if (this.stopping) return null;
      if (attempt > 1) {
        if (attempt === 2) this.stats.retried[step]++;
        await this.o.gate.waitOpen();
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 300 * attempt));
        if (this.stopping) return null;
      }
      const a = await this.call(path, body, key);
      if (!this.retryable(a)) return a;
    }
    this.stats.gaveUp[step]++;
    return null;
  }

  private unexpected(step: Step, a: Answer): void {
    this.stats.unexpected++;
    if (this.stats.unexpectedSamples.length < 12) {
      const detail = typeof a.body === 'object' && a.body ? JSON.stringify({ message: a.body.message, error: a.body.error }) : String(a.body ?? '');
      this.stats.unexpectedSamples.push(`${step} → ${a.status}${a.replayed ? ' (replayed)' : ''} ${detail.slice(0, 240)}`);
    }
  }

  private async customer(index: number): Promise<void> {
    await new Promise((r) => setTimeout(r, index * 13));
    const card = index % 2 === 0 ? SANDBOX_CARDS.approve : SANDBOX_CARDS.slow;
    for (let n = 1; !this.stopping; n++) {
      await this.o.gate.waitOpen();
      if (this.stopping) return;
      await this.order(index, n, card);
    }
  }

  /** One order through the funnel; returns when it completed, failed or was given up. */
  private async order(index: number, n: number, card: string): Promise<void> {
    const s = this.stats;
    const k = `crash-${this.o.runId}-${index}-${n}`;
    s.ordersStarted++;

    const lead = await this.step(
      'lead',
      '/checkout/leads',
      {
        campaign_id: this.o.campaignId,
        customer: { email: `${k}@example.com`, first_name: 'Crash', last_name: `Customer${index}` },
        products: [{ offer_id: this.o.offerId, quantity: 1 }],
      },
      `${k}-lead`,
    );
    if (!lead) return;
    const orderNumber: unknown = lead.body?.data?.order_number;
    if ((lead.status !== 201 && lead.status !== 200) || typeof orderNumber !== 'string') return this.unexpected('lead', lead);

    const pay = await this.step(
      'pay',
      '/checkout/orders/payment',
      {
        order_number: orderNumber,
        billing: { line1: '1 Main St', city: 'Springfield', postal_code: '62701', country: 'US' },
        payment: { method: 'card', card_number: card, card_exp: cardExp(), card_cvv: '123' },
      },
      `${k}-pay`,
    );
    if (!pay) return;
    if (pay.status === 402) {
      s.paymentsDeclined++;
      return;
    }
    if (pay.status !== 200 || pay.body?.success !== true) return this.unexpected('pay', pay);
    s.paymentsApproved++;

    let upsellTxn: string | undefined;
    for (const [i, upsellId] of this.o.upsellIds.entries()) {
      if (i > 0 && Math.random() < 0.5) continue; // this customer says no to the later offer
      const up = await this.step('upsell', '/checkout/orders/upsell', { order_number: orderNumber, upsell_id: upsellId, quantity: 1 }, `${k}-upsell-${i}`);
      if (!up) return;
      if (up.status === 402) s.upsellsDeclined++;
      else if (up.status === 200 && up.body?.success === true) {
        s.upsellsApproved++;
        upsellTxn ??= up.body?.data?.transaction_id;
      } else return this.unexpected('upsell', up);
    }

    const done = await this.step('complete', '/checkout/orders/complete', { order_number: orderNumber }, `${k}-complete`);
    if (!done) return;
    if (done.status !== 200 || done.body?.data?.status !== 'completed') return this.unexpected('complete', done);
    s.funnelsCompleted++;

    // Refunds on some completed orders: partial, full, partial then the rest, or the upsell's charge.
    if (Math.random() >= this.o.refundShare) return;
    const r = Math.random();
    const plan: Array<Record<string, unknown>> =
      r < 0.3
        ? [{ reason: 'crash test: full' }]
        : r < 0.6
          ? [{ amount: 500, reason: 'crash test: partial' }]
          : r < 0.85 || !upsellTxn
            ? [{ amount: 500, reason: 'crash test: partial' }, { reason: 'crash test: the rest' }]
            : [{ transaction_id: upsellTxn, reason: 'crash test: upsell' }];
    for (const [i, body] of plan.entries()) {
      const refund = await this.step('refund', `/v1/orders/${encodeURIComponent(orderNumber)}/refunds`, body, `${k}-refund-${i}`);
      if (!refund) return;
      if (refund.status === 201) s.refundsApproved++;
      else if (refund.status === 422 && refund.body?.error?.code === 'refund_declined') s.refundsRefused++;
      else return this.unexpected('refund', refund);
    }
  }
}
