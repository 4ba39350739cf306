import { createHmac } from 'node:crypto';
import { randomToken } from '../app/ids.ts';
import type { DeliveryAttempt, DeliveryTarget, SandboxWebhookSender } from './webhook-sender.ts';

/**
 * The Whop stand-in's webhooks, apart from its payments: the signed event bodies (Standard Webhooks,
 * with `api_version_date` and, on updates, `previous_attributes` as Whop's current payloads carry
 * them), delivery targets, the company's webhook as Whop's webhooks API shows it (`GET /webhooks`)
 * and a test delivery (`POST /webhooks/{id}/test`, a sandbox extension: Whop documents no such
 * call). A company's clock can be skewed, so a receiver's timestamp tolerance can be tried.
 */

/** The dated API versions the sandbox knows (Whop's changelog, docs.whop.com/developer/api/versioning). */
export const SANDBOX_API_VERSION_DATES = ['2025-01-01', '2026-06-08', '2026-06-09', '2026-06-20', '2026-07-01'] as const;
/** From this version on, list parameters and plan bodies name the account (`account_id`) instead of `company_id`. */
export const ACCOUNT_ID_SINCE = '2026-06-09';
/** What a company's webhook payloads are serialized to unless told otherwise. */
export const DEFAULT_WEBHOOK_API_VERSION_DATE = '2026-07-01';

/** The event a test delivery sends unless another is named: nothing a receiver acts on. */
export const TEST_EVENT_TYPE = 'webhook.test';

/** What the outbox needs of a company; the provider's `Company` has these fields. */
export interface WebhookCompany {
  id: string;
  webhookUrl: string | null;
  webhookSecret: string | null;
  events: Set<string>;
  retryDelaysMs: number[];
  /** Added to the sandbox's clock when it signs (webhook-timestamp): a provider whose clock is off. */
  clockSkewSeconds: number;
  webhookApiVersionDate: string;
}

export interface SandboxWebhookEvent {
  id: string;
  env: string;
  companyId: string;
  type: string;
  created: string;
  /** Fixed when the event happened: every attempt sends the same bytes and the same webhook-id. */
  body: string;
  subject: string;
  attempts: DeliveryAttempt[];
  delivered: boolean;
}

interface Answer {
  status: number;
  body: unknown;
}

/**
 * Standard Webhooks: `v1,` + base64 HMAC-SHA256 over `<webhook-id>.<webhook-timestamp>.<body>`. The
 * key is the secret's bytes as given for Whop's `ws_` secrets (and any other string); a `whsec_`
 * secret is base64-decoded after its prefix, the Standard Webhooks convention.
 */
export function sandboxSigningKey(secret: string): Buffer {
  if (secret.startsWith('whsec_')) {
    const b64 = secret.slice('whsec_'.length);
    if (/^[A-Za-z0-9+/]+={0,2}$/.test(b64) && b64.length % 4 === 0) return Buffer.from(b64, 'base64');
  }
  return Buffer.from(secret, 'utf8');
}

function sign(secret: string, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', sandboxSigningKey(secret)).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The id of a company's one webhook (the sandbox keeps one per company). */
export const webhookIdOf = (companyId: string) => `hook_${companyId.replace(/^biz_/, '')}`;

export class ExtpayWebhookOutbox {
  constructor(
    private readonly sender: SandboxWebhookSender,
    private readonly fetchImpl: typeof fetch = fetch,
    private readonly timeoutMs = 5_000,
  ) {}

  /** Records the event (when the company's webhook subscribes to its kind) and delivers it on the retry schedule. */
  emit(events: Map<string, SandboxWebhookEvent>, env: string, c: WebhookCompany, type: string, data: unknown, subject: string, previous?: Record<string, unknown> | null): void {
    if (!c.events.has(type)) return;
    const e = this.event(env, c, type, data, subject, previous ?? null);
    events.set(e.id, e);
    if (c.webhookUrl) this.sender.deliver(this.target(c, e), e);
  }

  private event(env: string, c: WebhookCompany, type: string, data: unknown, subject: string, previous: Record<string, unknown> | null): SandboxWebhookEvent {
    const id = `msg_${randomToken(24)}`;
    const created = new Date(Date.now() + c.clockSkewSeconds * 1000).toISOString();
    const body = JSON.stringify({
      id,
      api_version: 'v1',
      api_version_date: c.webhookApiVersionDate,
      timestamp: created,
      type,
      company_id: c.id,
      data,
      ...(previous ? { previous_attributes: previous } : {}),
    });
    return { id, env, companyId: c.id, type, created, body, subject, attempts: [], delivered: false };
  }

  /** Where a company's events go, signed with its current secret and a fresh (possibly skewed) timestamp per attempt. */
  target(c: WebhookCompany, e: SandboxWebhookEvent): DeliveryTarget {
    return {
      url: () => c.webhookUrl,
      retryDelaysMs: () => c.retryDelaysMs,
      headers: () => {
        const ts = Math.floor(Date.now() / 1000) + c.clockSkewSeconds;
        const h: Record<string, string> = { 'webhook-id': e.id, 'webhook-timestamp': String(ts) };
        // A company without a secret gets unsigned deliveries, which a receiver must refuse.
        if (c.webhookSecret) h['webhook-signature'] = sign(c.webhookSecret, e.id, ts, e.body);
        return h;
      },
    };
  }

  /** One more attempt of a recorded event, now. */
  async redeliver(c: WebhookCompany, e: SandboxWebhookEvent): Promise<DeliveryAttempt> {
    return this.sender.attempt(this.target(c, e), e);
  }

  /** The company's webhook as Whop's `Webhook` object; none until a URL is set. */
  webhookView(c: WebhookCompany) {
    if (!c.webhookUrl) return null;
    return {
      id: webhookIdOf(c.id),
      url: c.webhookUrl,
      enabled: true,
      events: [...c.events],
      api_version: 'v1',
      created_at: new Date(0).toISOString(),
      child_resource_events: false,
      testable_events: [...c.events],
      resource_id: c.id,
    };
  }

  /** `GET /webhooks?company_id=…` (`account_id` in dated versions): the company's webhooks, one page. */
  list(c: WebhookCompany): Answer {
    const hook = this.webhookView(c);
    const data = hook ? [hook] : [];
    return { status: 200, body: { data, page_info: { start_cursor: hook?.id ?? null, end_cursor: hook?.id ?? null, has_next_page: false, has_previous_page: false } } };
  }

  /**
   * `POST /webhooks/{id}/test`: signs one event of `type` (default `webhook.test`, with an empty
   * `data`) exactly as a real one and sends it once, now, to the webhook's URL; answers what the
   * receiver said. Nothing is recorded and nothing retried.
   */
  async sendTest(env: string, c: WebhookCompany, type: string | undefined): Promise<Answer> {
    if (!c.webhookUrl) return { status: 404, body: { error: { type: 'invalid_request_error', code: 'resource_missing', message: 'The company has no webhook.' } } };
    const e = this.event(env, c, type ?? TEST_EVENT_TYPE, { id: `test_${randomToken(10)}`, test: true }, 'test', null);
    const headers = this.target(c, e).headers();
    const started = Date.now();
    let statusCode: number | null = null;
    let text: string | null = null;
    let err: string | null = null;
    try {
      const res = await this.fetchImpl(c.webhookUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'checkstand-extpay-sandbox/1', ...headers },
        body: e.body,
        redirect: 'manual',
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      statusCode = res.status;
      text = (await res.text().catch(() => '')).slice(0, 2048);
    } catch (x) {
      const ex = x as { name?: string; message?: string; cause?: { code?: unknown } };
      err = ex.name === 'TimeoutError' ? `timed out after ${this.timeoutMs} ms` : typeof ex.cause?.code === 'string' ? ex.cause.code : String(ex.message ?? x).slice(0, 200);
    }
    return {
      status: 200,
      body: {
        object: 'webhook_test_delivery',
        webhook_id: webhookIdOf(c.id),
        event_id: e.id,
        event_type: e.type,
        url: c.webhookUrl,
        webhook_timestamp: Number(headers['webhook-timestamp']),
        status_code: statusCode,
        response_body: text,
        error: err,
        duration_ms: Date.now() - started,
      },
    };
  }
}
