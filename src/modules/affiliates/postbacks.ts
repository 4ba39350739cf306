import type { Logger } from 'pino';
import { ApiError, notFound } from '../../app/errors.ts';
import { randomToken } from '../../app/ids.ts';
import type { Store, Tx } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import { drainInWindow } from '../../worker/window.ts';
import type { Drainer } from '../../worker/worker.ts';
import { postWebhook, retryAfterMs, retryDelayMs, type SendResult } from '../webhooks/service.ts';
import { placeholderBeforePath, renderTemplate, type TemplateValues } from './render.ts';
import * as repo from './repo.ts';

export const POSTBACK_USER_AGENT = 'Checkstand-Postbacks/1';

export interface PostbackOptions {
  allowPrivateTargets: boolean;
  timeoutMs: number;
  /** The webhooks' schedule (WEBHOOK_RETRY_SCHEDULE_MS): a postback is tried `length + 1` times. */
  retryScheduleMs: readonly number[];
  leaseMs?: number;
  /** Postbacks claimed together. Default 10. */
  batchSize?: number;
  /** Postbacks a drain has in flight at most; the next batch is claimed once no more than `concurrency - batchSize` are. Default 2 × batchSize (drainInWindow). */
  concurrency?: number;
  random?: () => number;
}

export type PostbackEvent = Row<'affiliate_postbacks'>['event'];

function attemptError(r: SendResult): string | null {
  if (r.kind === 'failed') return r.error;
  if (r.statusCode >= 200 && r.statusCode < 300) return null;
  if (r.statusCode >= 300 && r.statusCode < 400) return `redirect not followed (${r.statusCode})`;
  return `HTTP ${r.statusCode}`;
}

/**
 * Server-to-server postbacks to affiliates: a row queued in the transaction of the conversion (or
 * upsell, rebill, reversal) with the URL rendered then, delivered after commit by the worker as the
 * webhooks are (claimed under a lease with FOR UPDATE SKIP LOCKED, the webhooks' retry schedule with
 * jitter and Retry-After, every attempt logged, the SSRF guard on the address dialled, manual replay).
 * A GET: affiliate networks read postbacks from the query string. 2xx succeeds; 410 and a refused
 * target fail at once; anything else is retried until the schedule is used up.
 */
export class AffiliatePostbacks {
  readonly drainer: Drainer;
  private readonly leaseMs: number;

  constructor(
    private readonly store: Store,
    private readonly opts: PostbackOptions,
    private readonly nudge: () => void,
  ) {
    this.leaseMs = opts.leaseMs ?? Math.max(60_000, 2 * opts.timeoutMs + 10_000);
    this.drainer = { name: 'affiliate-postbacks', drain: (_ctx, log) => this.deliverDue(log), drainsToTheEnd: true };
  }

  /** In the caller's transaction: at most one postback per (event, source) — a charge or a refund is announced once. */
  async queue(trx: Tx, affiliate: Row<'affiliates'>, orderId: string, event: PostbackEvent, sourceId: string, values: TemplateValues): Promise<void> {
    if (!affiliate.postback_url || affiliate.status !== 'active' || !affiliate.postback_events.includes(event)) return;
    // A template saved before placeholders were refused in the host: never let an order's values pick where it goes.
    if (placeholderBeforePath(affiliate.postback_url)) return;
    await repo.insertPostback(trx, {
      id: `pb_${randomToken()}`,
      team_id: affiliate.team_id,
      affiliate_id: affiliate.id,
      order_id: orderId,
      event,
      source_id: sourceId,
      url: renderTemplate(affiliate.postback_url, { ...values, event }),
      status: 'pending',
      next_attempt_at: new Date(),
    });
  }

  claimDue(limit = this.batchSize): Promise<Row<'affiliate_postbacks'>[]> {
    return this.store.transaction((trx) => repo.claimDuePostbacks(trx, limit, this.leaseMs));
  }

  /** One drain: batches claimed in a sliding window (drainInWindow) until a claim comes back short. */
  deliverDue(log: Logger): Promise<number> {
    return drainInWindow({
      claim: () => this.claimDue(),
      handle: (p) => this.deliver(p).catch((err: unknown) => log.error({ err, postback_id: p.id }, 'affiliate postback could not be recorded')),
      batchSize: this.batchSize,
      concurrency: this.opts.concurrency,
    });
  }

  private get batchSize(): number {
    return this.opts.batchSize ?? 10;
  }

  private async deliver(claimed: Row<'affiliate_postbacks'>): Promise<void> {
    let result: SendResult;
    try {
      result = await postWebhook(claimed.url, '', { 'user-agent': POSTBACK_USER_AGENT, accept: '*/*' }, { timeoutMs: this.opts.timeoutMs, guard: !this.opts.allowPrivateTargets, method: 'GET' });
    } catch (err) {
      result = { kind: 'failed', error: `could not send: ${(err as Error).message}`.slice(0, 500), refused: false, durationMs: 0 };
    }
    const attempt = claimed.attempt_count + 1;
    const statusCode = result.kind === 'answered' ? result.statusCode : null;
    const error = attemptError(result);
    await this.store.transaction(async (trx) => {
      const current = await repo.lockPostback(trx, claimed.team_id, claimed.id);
      if (!current) return;
      await repo.insertPostbackAttempt(trx, {
        id: `pba_${randomToken()}`,
        team_id: claimed.team_id,
        postback_id: claimed.id,
        attempt,
        status_code: statusCode,
        duration_ms: result.durationMs,
        response_body: result.kind === 'answered' ? result.body : null,
        error,
      });
      // Our lease ran out and another worker holds it now: that worker owns the state.
      if (current.locked_until?.getTime() !== claimed.locked_until?.getTime()) return;
      const done = { attempt_count: attempt, last_status_code: statusCode, last_error: error, locked_until: null };
      if (statusCode !== null && statusCode >= 200 && statusCode < 300) {
        await repo.updatePostback(trx, claimed.team_id, claimed.id, { ...done, status: 'succeeded', next_attempt_at: null });
        return;
      }
      const final = statusCode === 410 || (result.kind === 'failed' && result.refused) || attempt >= this.opts.retryScheduleMs.length + 1;
      const delay = final ? null : ((result.kind === 'answered' ? retryAfterMs(result.retryAfter) : null) ?? retryDelayMs(this.opts.retryScheduleMs, attempt, this.opts.random));
      if (delay === null) await repo.updatePostback(trx, claimed.team_id, claimed.id, { ...done, status: 'failed', next_attempt_at: null });
      else await repo.updatePostback(trx, claimed.team_id, claimed.id, { ...done, status: 'pending', next_attempt_at: new Date(Date.now() + delay) });
    });
  }

  /** Sends a postback again now, whatever its state (the URL stays the one rendered at the conversion). */
  async replay(teamId: string, id: string, scope: readonly string[] | null): Promise<Row<'affiliate_postbacks'>> {
    const r = await this.store.transaction(async (trx) => {
      const p = await repo.lockPostback(trx, teamId, id);
      if (!p || (scope && !scope.includes(p.affiliate_id))) throw notFound('Postback');
      if (p.status === 'pending' && p.locked_until && p.locked_until > new Date()) throw new ApiError('conflict', 'This postback is being sent right now; replay it when the attempt is recorded.');
      return repo.updatePostback(trx, teamId, id, { status: 'pending', next_attempt_at: new Date(), locked_until: null });
    });
    this.nudge();
    return r;
  }
}
