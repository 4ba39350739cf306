import type { FastifyInstance } from 'fastify';
import client from 'prom-client';
import type { Store } from '../db/database.ts';
import { REBILL_OUTCOMES } from '../modules/checkout/rebill.ts';

/**
 * What every long-running process reports, the API and `checkstand worker` alike: Node's defaults,
 * the database pool, whether the database answers (`checkstand_db_up`), connection errors, and
 * this process's rebills.
 */
export function processMetrics(registry: client.Registry, store: Store): void {
  client.collectDefaultMetrics({ register: registry });
  const pool = store.pool;
  new client.Gauge({
    name: 'checkstand_db_pool_connections',
    help: 'Database pool connections by state (total, idle, waiting clients)',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      this.set({ state: 'total' }, pool.totalCount);
      this.set({ state: 'idle' }, pool.idleCount);
      this.set({ state: 'waiting' }, store.waitingCount);
    },
  });

  const health = store.health;
  new client.Gauge({
    name: 'checkstand_db_up',
    help: '1 while the database answers, 0 from a connection error until a statement succeeds again',
    registers: [registry],
    collect() {
      this.set(health.up ? 1 : 0);
    },
  });
  let countedErrors = 0;
  new client.Counter({
    name: 'checkstand_db_connection_errors_total',
    help: 'Database statements and connections that failed because the database was unreachable, restarting or out of connection slots',
    registers: [registry],
    collect() {
      this.inc(health.connectionErrors - countedErrors);
      countedErrors = health.connectionErrors;
    },
  });

  const checkoutsCounted = { outcome: 0, new: 0 };
  new client.Counter({
    name: 'checkstand_db_checkouts_total',
    help: "Database connections handed out, by line: outcome (a provider's answer being recorded, served first when connections are short) and new (everything else)",
    labelNames: ['line'] as const,
    registers: [registry],
    collect() {
      for (const line of ['outcome', 'new'] as const) {
        this.inc({ line }, store.checkouts[line] - checkoutsCounted[line]);
        checkoutsCounted[line] = store.checkouts[line];
      }
    },
  });

  const rebillCounted: Record<string, number> = {};
  new client.Counter({
    name: 'checkstand_rebills_total',
    help: "Card subscription rebills by this process's queue and Rebill Now: claimed due, charged, declined, recovered (a past-due one charged), cancelled by dunning, ended at period end, unknown, failed",
    labelNames: ['outcome'] as const,
    registers: [registry],
    collect() {
      for (const [outcome, n] of Object.entries(REBILL_OUTCOMES)) {
        this.inc({ outcome }, n - (rebillCounted[outcome] ?? 0));
        rebillCounted[outcome] = n;
      }
    },
  });
}

/** A registry per server instance, so several servers in one process (tests) do not collide. */
export function registerMetrics(app: FastifyInstance, store: Store): client.Registry {
  const registry = new client.Registry();

  const requests = new client.Counter({
    name: 'checkstand_http_requests_total',
    help: 'HTTP requests by route template, method and status code',
    labelNames: ['method', 'route', 'status_code'] as const,
    registers: [registry],
  });
  const duration = new client.Histogram({
    name: 'checkstand_http_request_duration_seconds',
    help: 'HTTP request latency by route template, method and status code',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  processMetrics(registry, store);

  app.addHook('onResponse', async (req, reply) => {
    // The route template, never the raw URL: ids in paths would explode the label set.
    const route = req.routeOptions.url ?? 'unmatched';
    const labels = { method: req.method, route, status_code: String(reply.statusCode) };
    requests.inc(labels);
    duration.observe(labels, reply.elapsedTime / 1000);
  });

  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
    reply.type(registry.contentType);
    return registry.metrics();
  });
  return registry;
}
