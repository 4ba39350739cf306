import { randomBytes } from 'node:crypto';
import { configCache } from '../../app/cache.ts';
import type { Config } from '../../app/config.ts';
import { ApiError, invalid, notFound } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import { iso, type ListQuery } from '../../app/schemas.ts';
import type { Secrets } from '../../app/secrets.ts';
import type { Executor, Store, Tx } from '../../db/database.ts';
import { cursorSeq, type ListableTable, type Page, toPage } from '../../db/pagination.ts';
import type { Row, RowPatch } from '../../db/schema.ts';
import type { Drainer } from '../../worker/worker.ts';
import { type EmittedEvent, type EventSink, type EventsService } from '../events/service.ts';
import * as repo from './repo.ts';
import type {
  Attempt,
  CreateEndpoint,
  DeliveriesQuery,
  OrderDeliveriesQuery,
  Delivery,
  DeliveryWithAttempts,
  Endpoint,
  EndpointWithSecret,
  UpdateEndpoint,
} from './schemas.ts';
import { WebhookDeliveries } from './delivery.ts';
import { resolveAll, type ResolveAll, targetRefusal } from './targets.ts';
import { presentFields } from '../../db/helpers.ts';

export { GONE_REASON, USER_AGENT } from './delivery.ts';
/** The delivery pieces affiliate postbacks reuse: the guarded sender, the retry schedule, the SSRF check at registration. */
export { postWebhook, type SendResult } from './sender.ts';
export { retryAfterMs, retryDelayMs } from './schedule.ts';
export { targetRefusal } from './targets.ts';

export interface WebhooksOptions {
  /** Let endpoints target loopback, private and other non-public addresses (development and tests only). */
  allowPrivateTargets: boolean;
  timeoutMs: number;
  /** Delay before each retry; a delivery is attempted `retryScheduleMs.length + 1` times. */
  retryScheduleMs: readonly number[];
  /** Consecutive failed deliveries after which the endpoint is disabled. */
  disableAfterFailures: number;
  /** An endpoint whose deliveries have failed continuously for longer than this is disabled. Default 5 days. */
  disableAfterMs?: number;
  /** A worker's hold on the deliveries it claimed; must outlast one attempt. Default max(60 s, 2 × timeout + 10 s). */
  leaseMs?: number;
  /** Deliveries claimed together (one statement). Default 10. */
  batchSize?: number;
  /**
   * Deliveries a drain has in flight at most (to all endpoints together); it claims another batch
   * once no more than `concurrency - batchSize` are. Default 2 × batchSize; at least batchSize (drainInWindow).
   */
  concurrency?: number;
  resolve?: ResolveAll;
  random?: () => number;
}

export function webhookOptionsFrom(config: Config): WebhooksOptions {
  return {
    allowPrivateTargets: config.webhookAllowPrivateTargets,
    timeoutMs: config.webhookTimeoutMs,
    retryScheduleMs: config.webhookRetryScheduleMs,
    disableAfterFailures: config.webhookDisableAfterFailures,
  };
}

/** A delivery a worker holds: its lease (`locked_until`) is its claim ticket when it records the outcome. */
export type { ClaimedDelivery } from './delivery.ts';

function newSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

// ---- the one place rows become what the API shows (never team_id, seq or a secret)

export function deliveryView(d: repo.DeliveryWithType): Delivery {
  return {
    object: 'webhook_delivery',
    id: d.id,
    endpoint_id: d.endpoint_id,
    event_id: d.event_id,
    event_type: d.event_type,
    status: d.status,
    attempt_count: d.attempt_count,
    next_attempt_at: iso(d.next_attempt_at),
    last_status_code: d.last_status_code,
    last_error: d.last_error,
    created_at: d.created_at.toISOString(),
    updated_at: d.updated_at.toISOString(),
  };
}

export function attemptView(a: Row<'webhook_attempts'>): Attempt {
  return {
    object: 'webhook_attempt',
    id: a.id,
    attempt: a.attempt,
    status_code: a.status_code,
    duration_ms: a.duration_ms,
    response_body: a.response_body,
    error: a.error,
    created_at: a.created_at.toISOString(),
  };
}

/**
 * Merchant webhook endpoints and the delivery of events to them, the Standard Webhooks way.
 * As an EventSink it writes one delivery per subscribed endpoint in the transaction that emits
 * the event (the transactional outbox); its drainer claims due deliveries under a lease, sends
 * them outside any transaction, and records each attempt with the delivery's next state.
 */
export class WebhooksService implements EventSink {
  readonly drainer: Drainer;
  /** The worker side: claiming, sending and recording deliveries (delivery.ts). */
  readonly deliveries: WebhookDeliveries;
  private readonly resolve: ResolveAll;
  /**
   * The ids of a team's active endpoints subscribed to an event type, cached per process and
   * dropped after each endpoint write here. An endpoint the worker disables is left to expire:
   * a delivery written for it meanwhile is cancelled when claimed (delivery.ts).
   */
  private readonly subscribers;

  constructor(
    private readonly store: Store,
    private readonly secrets: Secrets,
    private readonly events: EventsService,
    private readonly opts: WebhooksOptions,
  ) {
    this.resolve = opts.resolve ?? resolveAll;
    this.subscribers = configCache<{ endpointIds: readonly string[] }>(store, 'webhook_endpoints');
    this.deliveries = new WebhookDeliveries(store, secrets, opts);
    this.drainer = { name: 'webhook-deliveries', drain: (_ctx, log) => this.deliveries.deliverDue(log), drainsToTheEnd: true };
  }

  get maxAttempts(): number {
    return this.deliveries.maxAttempts;
  }

  // ---- the outbox side: in the emitter's transaction

  async onEvent(trx: Tx, event: EmittedEvent): Promise<void> {
    const { endpointIds } = (await this.subscribers.get(`${event.team_id}\u0000${event.type}`, async () => ({
      endpointIds: Object.freeze((await repo.subscribedEndpoints(trx, event.team_id, event.type)).map((e) => e.id)),
    })))!;
    await repo.insertDeliveries(
      trx,
      endpointIds.map((endpointId) => ({
        id: newId('webhookDelivery'),
        team_id: event.team_id,
        endpoint_id: endpointId,
        event_id: event.id,
        status: 'pending' as const,
      })),
    );
  }

  // ---- endpoints

  async createEndpoint(teamId: string, input: CreateEndpoint): Promise<EndpointWithSecret> {
    await this.requireAllowedTarget(input.url);
    const secret = newSecret();
    const row = await this.store.run((db) =>
      repo.insertEndpoint(db, {
        id: newId('webhookEndpoint'),
        team_id: teamId,
        url: input.url,
        description: input.description ?? null,
        event_types: JSON.stringify(input.event_types),
        secret: this.secrets.encrypt(secret),
        previous_secret: null,
        previous_secret_expires_at: null,
        disabled_at: null,
        disabled_reason: null,
      }),
    );
    this.subscribers.clear();
    return { ...this.endpointView(row), secret };
  }

  async getEndpoint(teamId: string, id: string): Promise<Endpoint> {
    const row = await this.store.run((db) => repo.findEndpoint(db, teamId, id));
    if (!row) throw notFound('Webhook endpoint');
    return this.endpointView(row);
  }

  async listEndpoints(teamId: string, query: ListQuery): Promise<Page<Endpoint>> {
    return this.store.run(async (db) => {
      const w = await this.windowOf(db, 'webhook_endpoints', teamId, query);
      const page = toPage(await repo.listEndpoints(db, teamId, w), query.limit);
      return { items: page.items.map((r) => this.endpointView(r)), has_more: page.has_more };
    });
  }

  async updateEndpoint(teamId: string, id: string, patch: UpdateEndpoint): Promise<Endpoint> {
    const fields = presentFields(patch);
    if (!fields) return this.getEndpoint(teamId, id);
    const { is_active, event_types, ...rest } = fields;
    // Check ownership before resolving the URL: another team's id is a 404, not a DNS lookup.
    if (rest.url !== undefined) {
      await this.getEndpoint(teamId, id);
      await this.requireAllowedTarget(rest.url);
    }
    const row = await this.store.transaction(async (trx) => {
      const current = await repo.findEndpoint(trx, teamId, id, { forUpdate: true });
      if (!current) throw notFound('Webhook endpoint');
      let state: RowPatch<'webhook_endpoints'> = {};
      if (is_active === true && !current.is_active) state = { is_active: true, disabled_at: null, disabled_reason: null, consecutive_failures: 0 };
      if (is_active === false && current.is_active) {
        await repo.cancelPendingDeliveries(trx, teamId, id, 'endpoint disabled by the merchant');
        state = { is_active: false, disabled_at: new Date(), disabled_reason: 'disabled by the merchant' };
      }
      return repo.updateEndpoint(trx, teamId, id, {
        ...rest,
        ...(event_types ? { event_types: JSON.stringify(event_types) } : {}),
        ...state,
      });
    });
    this.subscribers.clear();
    if (!row) throw notFound('Webhook endpoint');
    return this.endpointView(row);
  }

  /**
   * Soft delete: the endpoint stops receiving events, its pending deliveries are cancelled, and
   * it stays (with its delivery log) as an inactive endpoint that PATCH `is_active: true` revives.
   */
  async deleteEndpoint(teamId: string, id: string): Promise<Endpoint> {
    const row = await this.store.transaction(async (trx) => {
      const current = await repo.findEndpoint(trx, teamId, id, { forUpdate: true });
      if (!current) throw notFound('Webhook endpoint');
      await repo.cancelPendingDeliveries(trx, teamId, id, 'endpoint deleted by the merchant');
      return repo.updateEndpoint(trx, teamId, id, { is_active: false, disabled_at: current.disabled_at ?? new Date(), disabled_reason: 'deleted by the merchant' });
    });
    this.subscribers.clear();
    if (!row) throw notFound('Webhook endpoint');
    return this.endpointView(row);
  }

  /**
   * A new secret, shown once. The current one becomes the previous secret and keeps signing
   * beside it for `graceSeconds` (0: dropped at once); a secret older than that is dropped.
   */
  async rotateSecret(teamId: string, id: string, graceSeconds: number): Promise<EndpointWithSecret> {
    const secret = newSecret();
    const row = await this.store.transaction(async (trx) => {
      const current = await repo.findEndpoint(trx, teamId, id, { forUpdate: true });
      if (!current) throw notFound('Webhook endpoint');
      return repo.updateEndpoint(trx, teamId, id, {
        secret: this.secrets.encrypt(secret),
        previous_secret: graceSeconds > 0 ? current.secret : null,
        previous_secret_expires_at: graceSeconds > 0 ? new Date(Date.now() + graceSeconds * 1000) : null,
      });
    });
    if (!row) throw notFound('Webhook endpoint');
    return { ...this.endpointView(row), secret };
  }

  // ---- deliveries

  async listDeliveries(teamId: string, endpointId: string, query: DeliveriesQuery): Promise<Page<Delivery>> {
    return this.store.run(async (db) => {
      if (!(await repo.findEndpoint(db, teamId, endpointId))) throw notFound('Webhook endpoint');
      const w = await this.windowOf(db, 'webhook_deliveries', teamId, query);
      const page = toPage(await repo.listDeliveries(db, teamId, endpointId, { ...w, status: query.status }), query.limit);
      return { items: page.items.map(deliveryView), has_more: page.has_more };
    });
  }

  /** The deliveries of one order's events (the order page's Webhooks panel); an unknown order has none. */
  async listOrderDeliveries(teamId: string, query: OrderDeliveriesQuery): Promise<Page<Delivery>> {
    return this.store.run(async (db) => {
      const w = await this.windowOf(db, 'webhook_deliveries', teamId, query);
      const page = toPage(await repo.listOrderDeliveries(db, teamId, query.order_number, { ...w, status: query.status }), query.limit);
      return { items: page.items.map(deliveryView), has_more: page.has_more };
    });
  }

  async getDelivery(teamId: string, id: string): Promise<DeliveryWithAttempts> {
    const found = await this.store.run(async (db) => {
      const d = await repo.findDelivery(db, teamId, id);
      return d ? { d, attempts: await repo.listAttempts(db, teamId, id) } : undefined;
    });
    if (!found) throw notFound('Webhook delivery');
    return { ...deliveryView(found.d), attempts: found.attempts.map(attemptView) };
  }

  /**
   * Makes the delivery due now; the worker re-sends it with the same `webhook-id` (the event id).
   * If that attempt fails, retries follow the schedule from the delivery's attempt count, so a
   * delivery that had used up its schedule gets this one attempt (replay again to retry more).
   */
  async replayDelivery(teamId: string, id: string): Promise<Delivery> {
    await this.store.transaction(async (trx) => {
      const d = await repo.lockDelivery(trx, teamId, id);
      if (!d) throw notFound('Webhook delivery');
      const endpoint = await repo.findEndpoint(trx, teamId, d.endpoint_id);
      if (!endpoint?.is_active) {
        throw new ApiError('conflict', 'The endpoint of this delivery is disabled: re-enable it (PATCH is_active: true) before replaying.');
      }
      if (d.in_flight) throw new ApiError('conflict', 'This delivery is being sent right now; replay it once the attempt is recorded.');
      await repo.updateDelivery(trx, teamId, id, { status: 'pending', next_attempt_at: repo.dueIn(0), locked_until: null });
    });
    this.events.nudge();
    const d = await this.store.run((db) => repo.findDelivery(db, teamId, id));
    if (!d) throw notFound('Webhook delivery');
    return deliveryView(d);
  }

  // ---- shared

  private async requireAllowedTarget(url: string): Promise<void> {
    if (this.opts.allowPrivateTargets) return;
    const why = await targetRefusal(new URL(url), this.resolve);
    if (why) throw invalid('url', `target address not allowed: ${why}. Webhook URLs must reach a public address.`);
  }

  private async windowOf(db: Executor, table: ListableTable, teamId: string, query: ListQuery): Promise<repo.ListWindow> {
    const afterSeq = await cursorSeq(db, table, teamId, query.starting_after);
    if (afterSeq === undefined) throw invalid('starting_after', 'no such object');
    return { afterSeq, limit: query.limit, createdGte: query.created_gte, createdLte: query.created_lte };
  }

  private endpointView(r: Row<'webhook_endpoints'>): Endpoint {
    let hint = 'whsec_…';
    try {
      hint = `whsec_…${this.secrets.decrypt(r.secret).slice(-4)}`;
    } catch {
      // Sealed under another service key: the listing stays readable; deliveries fail loudly.
    }
    return {
      object: 'webhook_endpoint',
      id: r.id,
      url: r.url,
      description: r.description,
      event_types: r.event_types,
      is_active: r.is_active,
      disabled_at: iso(r.disabled_at),
      disabled_reason: r.disabled_reason,
      consecutive_failures: r.consecutive_failures,
      secret_hint: hint,
      previous_secret_expires_at: r.previous_secret && r.previous_secret_expires_at && r.previous_secret_expires_at > new Date() ? r.previous_secret_expires_at.toISOString() : null,
      created_at: r.created_at.toISOString(),
      updated_at: r.updated_at.toISOString(),
    };
  }
}
