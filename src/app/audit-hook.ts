import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import { auditData, type AuditEntry, type AuditService } from '../modules/access/audit.ts';
import type { Principal } from '../modules/access/principal.ts';
import type { Http } from './http.ts';

const TARGET_PARAMS = ['order_number', 'customer_number', 'id'] as const;

/** The object a request acted on: its path id, or the id of what it created. */
function targetOf(req: FastifyRequest, payload: unknown): { type: string | null; id: string | null } {
  const url = req.routeOptions.url ?? '';
  const type = url.split('/')[2] ?? null;
  const params = (req.params ?? {}) as Record<string, unknown>;
  for (const p of TARGET_PARAMS) if (typeof params[p] === 'string') return { type, id: params[p] as string };
  if (typeof payload === 'string' && payload.length < 65_536) {
    try {
      const data = (JSON.parse(payload) as { data?: { id?: unknown; order_number?: unknown } }).data;
      const id = data?.id ?? data?.order_number;
      if (typeof id === 'string') return { type, id };
    } catch {
      // not JSON: no target id
    }
  }
  return { type, id: null };
}

/** An entry as the log shows it: what auditData kept (no credentials, card data or free text). */
function logged(principal: Principal, entry: AuditEntry) {
  return {
    team_id: principal.teamId,
    actor: { kind: principal.kind, id: principal.actorId, provider_id: principal.providerId },
    action: entry.action,
    target: { type: entry.targetType, id: entry.targetId },
    data: entry.data,
    ip: entry.ip,
    request_id: entry.requestId,
  };
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

interface Pending {
  principal: Principal;
  entry: AuditEntry;
  attempts: number;
}

export interface AuditRetryOptions {
  /** Entries waiting at most; one more is logged as lost. */
  maxQueued: number;
  /** The first retry's delay, doubled after each failure up to `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** Tries per entry before it is given up (logged at error level, as every failure is). */
  maxAttempts: number;
}

const DEFAULT_RETRY: AuditRetryOptions = { maxQueued: 1000, baseDelayMs: 250, maxDelayMs: 5000, maxAttempts: 120 };

/**
 * Audit entries whose write failed after their action committed (a database blip): retried in
 * order with backoff, in this process, and tried once more when the server closes. Bounded: the
 * log keeps every entry that could not be written, so none is lost silently.
 */
export class AuditRetryQueue {
  private readonly queue: Pending[] = [];
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private delayMs: number;
  private closed = false;

  constructor(
    private readonly audit: AuditService,
    private readonly log: FastifyBaseLogger,
    private readonly opts: AuditRetryOptions = DEFAULT_RETRY,
  ) {
    this.delayMs = opts.baseDelayMs;
  }

  get size(): number {
    return this.queue.length;
  }

  add(principal: Principal, entry: AuditEntry): void {
    if (this.closed || this.queue.length >= this.opts.maxQueued) {
      this.log.error({ audit: logged(principal, entry) }, 'audit entry lost: the retry queue is full or closed');
      return;
    }
    this.queue.push({ principal, entry, attempts: 1 });
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.running || this.closed || this.queue.length === 0) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.flush().finally(() => {
        this.running = null;
        this.schedule();
      });
    }, this.delayMs);
    this.timer.unref();
  }

  /** Writes the waiting entries in order; stops at the first failure and backs off. */
  private async flush(): Promise<void> {
    while (this.queue.length > 0) {
      const next = this.queue[0]!;
      try {
        await this.audit.record(next.principal, next.entry);
        this.queue.shift();
        this.delayMs = this.opts.baseDelayMs;
        this.log.info({ audit: logged(next.principal, next.entry), attempts: next.attempts + 1 }, 'audit entry written on retry');
      } catch (err) {
        next.attempts += 1;
        this.delayMs = Math.min(this.delayMs * 2, this.opts.maxDelayMs);
        if (next.attempts >= this.opts.maxAttempts) {
          this.queue.shift();
          this.log.error({ audit: logged(next.principal, next.entry), attempts: next.attempts, err: messageOf(err) }, 'audit entry lost: gave up retrying');
        } else {
          this.log.warn({ attempts: next.attempts, waiting: this.queue.length, err: messageOf(err) }, 'audit entry retry failed: backing off');
        }
        return;
      }
    }
  }

  /** On close: no more waiting; each entry left is tried once more, and logged as lost if that fails too. */
  async drain(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
    while (this.queue.length > 0) {
      const next = this.queue.shift()!;
      try {
        await this.audit.record(next.principal, next.entry);
      } catch (err) {
        this.log.error({ audit: logged(next.principal, next.entry), attempts: next.attempts + 1, err: messageOf(err) }, 'audit entry lost: not written before shutdown');
      }
    }
  }
}

/**
 * onSend: a route that declares `config.audit` writes one audit_log row for each 2xx answer,
 * before the answer leaves (a replayed idempotent answer writes none: it was recorded the first time).
 * The action has committed by then: a failed write never turns that answer into an error (the
 * client would retry a refund that happened); it is logged and retried in the background.
 */
export function auditHook(audit: AuditService, retry: AuditRetryQueue) {
  return async (req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const action = req.routeOptions.config.audit;
    if (!action || !req.team || reply.statusCode >= 300 || req.idempotency?.replayed) return payload;
    const target = targetOf(req, payload);
    const entry: AuditEntry = {
      action,
      targetType: target.type,
      targetId: target.id,
      data: auditData(req.body),
      ip: req.ip ?? null,
      requestId: req.id,
    };
    try {
      await audit.record(req.team, entry);
    } catch (err) {
      req.log.error({ audit: logged(req.team, entry), err: messageOf(err) }, 'audit entry not written after its action committed: retrying in the background');
      retry.add(req.team, entry);
    }
    return payload;
  };
}

/**
 * The audit log's hooks on the API scope. Register after the idempotency onSend hook: the stored
 * answer of a committed action is saved first, whatever happens to its audit entry.
 */
export function registerAuditLog(api: Http, audit: AuditService, opts?: AuditRetryOptions): AuditRetryQueue {
  const retry = new AuditRetryQueue(audit, api.log, opts);
  api.addHook('onSend', auditHook(audit, retry));
  api.addHook('onClose', async () => retry.drain());
  return retry;
}
