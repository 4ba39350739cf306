import { performance } from 'node:perf_hooks';

/** One delivery attempt of a sandbox webhook, as the sandboxes' ledgers show it. */
export interface DeliveryAttempt {
  at: string;
  url: string;
  /** The receiver's HTTP status; null when it did not answer. */
  status: number | null;
  error: string | null;
  duration_ms: number;
}

/** An event a sandbox delivers: the same bytes on every attempt. */
export interface OutgoingEvent {
  body: string;
  attempts: DeliveryAttempt[];
  delivered: boolean;
}

/**
 * Where an event goes and how it is signed, read again at each attempt: an account's URL and
 * secret may change between retries, and a signature carries a fresh timestamp.
 */
export interface DeliveryTarget {
  url(): string | null;
  retryDelaysMs(): readonly number[];
  headers(): Record<string, string>;
}

/**
 * The provider sandboxes' webhook delivery and timers: retries on a schedule until a 2xx, no
 * redirects, a per-attempt timeout; `close()` stops every timer and cuts deliveries short.
 */
export class SandboxWebhookSender {
  private timers = new Set<NodeJS.Timeout>();
  private inFlight = new AbortController();
  private closed = false;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly opts: { fetch?: typeof fetch | undefined; timeoutMs: number; userAgent: string }) {
    this.fetchImpl = opts.fetch ?? fetch;
  }

  /** Runs `fn` after `ms` unless the sandbox is closed first. */
  later(ms: number, fn: () => unknown): void {
    if (this.closed) return;
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (!this.closed) fn();
    }, ms);
    this.timers.add(t);
  }

  /** Delivers on the target's retry schedule, from attempt `attemptNo`, until one is answered 2xx. */
  deliver(target: DeliveryTarget, e: OutgoingEvent, attemptNo = 0): void {
    const delays = target.retryDelaysMs();
    if (attemptNo >= delays.length) return;
    this.later(delays[attemptNo]!, async () => {
      if (e.delivered || !target.url()) return;
      const a = await this.attempt(target, e);
      if (a.status === null || a.status < 200 || a.status >= 300) this.deliver(target, e, attemptNo + 1);
    });
  }

  /** One attempt now (also the control endpoints' "redeliver"). */
  async attempt(target: DeliveryTarget, e: OutgoingEvent): Promise<DeliveryAttempt> {
    const url = target.url()!;
    const started = performance.now();
    const attempt: DeliveryAttempt = { at: new Date().toISOString(), url, status: null, error: null, duration_ms: 0 };
    try {
      const res = await this.fetchImpl(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': this.opts.userAgent, ...target.headers() },
        body: e.body,
        redirect: 'manual',
        signal: AbortSignal.any([AbortSignal.timeout(this.opts.timeoutMs), this.inFlight.signal]),
      });
      await res.arrayBuffer().catch(() => undefined);
      attempt.status = res.status;
      if (res.status >= 200 && res.status < 300) e.delivered = true;
    } catch (err) {
      const x = err as { name?: string; message?: string; cause?: { code?: unknown } };
      attempt.error =
        x.name === 'TimeoutError' ? `timed out after ${this.opts.timeoutMs} ms` : typeof x.cause?.code === 'string' ? x.cause.code : String(x.message ?? err).slice(0, 200);
    }
    attempt.duration_ms = Math.round(performance.now() - started);
    e.attempts.push(attempt);
    return attempt;
  }

  close(): void {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.inFlight.abort();
  }
}
