import type { Logger } from 'pino';
import { configCache } from '../../app/cache.ts';
import { newId } from '../../app/ids.ts';
import { type Secrets, SealedValues } from '../../app/secrets.ts';
import type { Store, Tx } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import { drainInWindow } from '../../worker/window.ts';
import { eventView } from '../events/service.ts';
import * as repo from './repo.ts';
import { retryAfterMs, retryDelayMs } from './schedule.ts';
import { postWebhook, type SendResult } from './sender.ts';
import { WebhookSigner } from './signing.ts';
import type { WebhooksOptions } from './service.ts';

export const USER_AGENT = 'Checkstand-Webhooks/1';
export const GONE_REASON = 'endpoint answered 410 Gone';
const DEFAULT_DISABLE_AFTER_MS = 5 * 86_400_000;

export type ClaimedDelivery = repo.ClaimedDelivery;

/** What an attempt came to, decided from the HTTP answer alone. */
type Verdict = 'succeeded' | 'gone' | 'retry' | 'refused';

function verdictOf(r: SendResult): Verdict {
  if (r.kind === 'failed') return r.refused ? 'refused' : 'retry';
  if (r.statusCode >= 200 && r.statusCode < 300) return 'succeeded';
  if (r.statusCode === 410) return 'gone';
  return 'retry';
}

function attemptError(r: SendResult): string | null {
  if (r.kind === 'failed') return r.error;
  if (r.statusCode >= 300 && r.statusCode < 400) return `redirect not followed (${r.statusCode}${r.location ? ` to ${r.location.slice(0, 300)}` : ''})`;
  if (r.statusCode >= 200 && r.statusCode < 300) return null;
  return `HTTP ${r.statusCode}`;
}

/**
 * The worker side of webhooks: due deliveries claimed in batches under a lease (so several workers
 * never send the same one), sent concurrently outside any transaction, Standard Webhooks signed,
 * and each attempt recorded with the delivery's next state (retry on the schedule or the
 * receiver's Retry-After, fail, or disable the endpoint after repeated failures or a 410).
 */
export class WebhookDeliveries {
  private readonly disableAfterMs: number;
  private readonly leaseMs: number;
  private readonly batchSize: number;
  private readonly random: () => number;
  /** Outcomes waiting for the statement that records them together (recordTogether). */
  private outcomes: { record: repo.AttemptRecord; settle(err: unknown, held: boolean): void }[] = [];

  constructor(
    private readonly store: Store,
    secrets: Secrets,
    private readonly opts: WebhooksOptions,
  ) {
    this.disableAfterMs = opts.disableAfterMs ?? DEFAULT_DISABLE_AFTER_MS;
    this.leaseMs = opts.leaseMs ?? Math.max(60_000, 2 * opts.timeoutMs + 10_000);
    this.batchSize = opts.batchSize ?? 10;
    this.random = opts.random ?? Math.random;
    this.signers = new SealedValues(secrets, (secret) => new WebhookSigner(secret));
  }

  /** Endpoints' signers, their secrets opened once per sealed value (a delivery no longer decrypts them). */
  private readonly signers: SealedValues<WebhookSigner>;

  get maxAttempts(): number {
    return this.opts.retryScheduleMs.length + 1;
  }

  /**
   * Claims up to a batch of due deliveries under a lease, with their endpoint and event, in one
   * statement (exposed so tests can play a worker that dies).
   */
  claimDue(limit: number = this.batchSize): Promise<ClaimedDelivery[]> {
    return this.store.run((db) => repo.claimDueDeliveries(db, limit, this.leaseMs));
  }

  /**
   * One drain: batches claimed in a sliding window (drainInWindow), each delivery sent outside any
   * transaction and its outcome recorded; it returns once a claim comes back short.
   */
  deliverDue(log: Logger): Promise<number> {
    return drainInWindow({
      claim: () => this.claimDue(),
      handle: (c) =>
        this.deliver(c, log).catch((err: unknown) =>
          // The lease runs out and another drain takes the delivery again: nothing is lost.
          log.error({ err, delivery_id: c.id }, 'webhook delivery could not be recorded'),
        ),
      batchSize: this.batchSize,
      concurrency: this.opts.concurrency,
    });
  }

  /** The exact bytes POSTed for an event: the event as GET /v1/events/{id} shows it, identical on every attempt. */
  payloadOf(event: Row<'events'>): string {
    return JSON.stringify(eventView(event));
  }

  /** `v1,<sig>` with the current secret, then one with the previous secret while its grace period runs. */
  signatureHeader(job: Pick<ClaimedDelivery, 'secret' | 'previous_secret' | 'previous_secret_expires_at'>, msgId: string, at: Date, body: string): string {
    const secrets = [job.secret];
    if (job.previous_secret && job.previous_secret_expires_at && job.previous_secret_expires_at.getTime() > at.getTime()) secrets.push(job.previous_secret);
    return secrets.map((sealed) => this.signers.get(sealed).sign(msgId, at, body)).join(' ');
  }

  private async deliver(job: ClaimedDelivery, log: Logger): Promise<void> {
    if (!job.is_active) {
      // Disabled after this delivery was claimed: it is cancelled without an attempt.
      await this.store.transaction(async (trx) => {
        const d = await repo.lockDelivery(trx, job.team_id, job.id);
        if (!d || !this.sameLease(d, job) || d.status !== 'pending') return;
        await repo.updateDelivery(trx, job.team_id, job.id, { status: 'cancelled', next_attempt_at: null, locked_until: null, last_error: 'endpoint disabled' });
      });
      return;
    }
    const msgId = job.event.id;
    const body = this.payloadOf(job.event);
    const now = new Date();
    let result: SendResult;
    try {
      const headers = {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'webhook-id': msgId,
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': this.signatureHeader(job, msgId, now, body),
      };
      result = await postWebhook(job.url, body, headers, { timeoutMs: this.opts.timeoutMs, guard: !this.opts.allowPrivateTargets });
    } catch (err) {
      // An unreadable secret (sealed under another service key) or an unusable URL: a failed attempt, retried.
      result = { kind: 'failed', error: `could not send: ${(err as Error).message}`.slice(0, 500), refused: false, durationMs: 0 };
    }
    await this.record(job, result, log);
  }

  /**
   * Records a success or a retry with the others that arrive in the same turn of the event loop
   * (a claim's answers come back together under load): one statement for all of them, sent once
   * the turn's I/O callbacks have run (setImmediate), so none waits for a slower receiver. Resolves
   * with whether this delivery's lease still held. A failed statement fails each of them: the
   * lease runs out and the deliveries are sent again (at least once, as always).
   */
  private recordTogether(record: repo.AttemptRecord): Promise<boolean> {
    return new Promise((resolve, reject) => {
      if (this.outcomes.length === 0) setImmediate(() => void this.flushOutcomes());
      this.outcomes.push({ record, settle: (err, held) => (err ? reject(err) : resolve(held)) });
    });
  }

  private async flushOutcomes(): Promise<void> {
    const batch = this.outcomes;
    this.outcomes = [];
    try {
      const held = await this.store.run((db) => repo.recordAttempts(db, batch.map((o) => o.record)));
      for (const o of batch) o.settle(null, held.has(o.record.deliveryId));
    } catch (err) {
      for (const o of batch) o.settle(err, false);
    }
  }

  private sameLease(current: Row<'webhook_deliveries'>, claimed: ClaimedDelivery): boolean {
    return current.locked_until?.getTime() === claimed.locked_until.getTime();
  }

  /**
   * The attempt row and the delivery's next state. A success or a retry (the usual outcomes) is
   * one statement; failing for good, which may disable the endpoint, is a transaction.
   */
  private async record(claimed: ClaimedDelivery, result: SendResult, log: Logger): Promise<void> {
    const teamId = claimed.team_id;
    const attempt = claimed.attempt_count + 1;
    const verdict = verdictOf(result);
    const statusCode = result.kind === 'answered' ? result.statusCode : null;
    const error = attemptError(result);
    const delay = verdict === 'retry' ? this.nextDelay(attempt, result) : null;
    if (verdict === 'succeeded' || delay !== null) {
      const held = await this.recordTogether({
        attemptId: newId('webhookAttempt'),
        teamId,
        deliveryId: claimed.id,
        lease: claimed.locked_until,
        attempt,
        statusCode,
        durationMs: result.durationMs,
        responseBody: result.kind === 'answered' ? result.body : null,
        error,
        outcome: delay === null ? { kind: 'succeeded' } : { kind: 'retry', retryInMs: delay },
      });
      // Our lease ran out and another worker holds the delivery now: it owns the state.
      if (!held) log.warn({ delivery_id: claimed.id }, 'webhook attempt finished after its lease expired');
      return;
    }
    const disabled = await this.store.transaction(async (trx) => {
      const current = await repo.lockDelivery(trx, teamId, claimed.id);
      if (!current) return false;
      await repo.insertAttempt(trx, {
        id: newId('webhookAttempt'),
        team_id: teamId,
        delivery_id: claimed.id,
        attempt,
        status_code: statusCode,
        duration_ms: result.durationMs,
        response_body: result.kind === 'answered' ? result.body : null,
        error,
      });
      if (!this.sameLease(current, claimed)) {
        // Our lease ran out and another worker holds the delivery now: it owns the state.
        log.warn({ delivery_id: claimed.id }, 'webhook attempt finished after its lease expired');
        return false;
      }
      const done = { attempt_count: attempt, last_status_code: statusCode, last_error: error, locked_until: null };
      if (current.status !== 'pending') {
        // Cancelled while in flight (the endpoint was disabled): it stays cancelled.
        await repo.updateDelivery(trx, teamId, claimed.id, { ...done, next_attempt_at: null });
        return false;
      }
      if (verdict === 'gone') {
        await repo.updateDelivery(trx, teamId, claimed.id, { ...done, status: 'failed', next_attempt_at: null });
        await this.disableEndpoint(trx, teamId, claimed.endpoint_id, GONE_REASON);
        log.warn({ endpoint_id: claimed.endpoint_id }, 'webhook endpoint disabled: 410 Gone');
        return true;
      }
      await repo.updateDelivery(trx, teamId, claimed.id, { ...done, status: 'failed', next_attempt_at: null });
      return this.countFailedDelivery(trx, teamId, claimed.endpoint_id, error, log);
    });
    // The endpoint stopped receiving: this process stops writing deliveries for it at once (others when their cache expires).
    if (disabled) configCache(this.store, 'webhook_endpoints').clear();
  }

  /** Retry-After (seconds or an HTTP-date, at most 24 h) wins over the schedule; null when no attempt is left. */
  private nextDelay(attemptsMade: number, result: SendResult): number | null {
    if (attemptsMade >= this.maxAttempts) return null;
    const asked = result.kind === 'answered' ? retryAfterMs(result.retryAfter) : null;
    return asked ?? retryDelayMs(this.opts.retryScheduleMs, attemptsMade, this.random);
  }

  /** Answers whether the endpoint was disabled. */
  private async countFailedDelivery(trx: Tx, teamId: string, endpointId: string, lastError: string | null, log: Logger): Promise<boolean> {
    const failures = await repo.addEndpointFailure(trx, teamId, endpointId);
    const last = lastError ? ` (last: ${lastError.slice(0, 200)})` : '';
    let reason: string | null = null;
    if (failures >= this.opts.disableAfterFailures) {
      reason = `disabled after ${failures} consecutive failed deliveries${last}`;
    } else {
      const since = await repo.failingSince(trx, teamId, endpointId, failures);
      if (since && Date.now() - since.getTime() > this.disableAfterMs) {
        const days = Math.round(this.disableAfterMs / 86_400_000);
        reason = `disabled after failing continuously since ${since.toISOString()} (more than ${days} days)${last}`;
      }
    }
    if (reason) {
      await this.disableEndpoint(trx, teamId, endpointId, reason);
      log.warn({ endpoint_id: endpointId, reason }, 'webhook endpoint disabled');
    }
    return reason !== null;
  }

  private async disableEndpoint(trx: Tx, teamId: string, endpointId: string, reason: string): Promise<void> {
    await repo.updateEndpoint(trx, teamId, endpointId, { is_active: false, disabled_at: new Date(), disabled_reason: reason });
    await repo.cancelPendingDeliveries(trx, teamId, endpointId, `endpoint disabled: ${reason}`);
  }
}
