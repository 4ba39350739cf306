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
  totalsCounter(registry, {
    name: 'checkstand_db_connection_errors_total',
    help: 'Database statements and connections that failed because the database was unreachable, restarting or out of connection slots',
    read: () => health.connectionErrors,
  });
  totalsCounter(registry, {
    name: 'checkstand_db_checkouts_total',
    help: "Database connections handed out, by line: outcome (a provider's answer being recorded, served first when connections are short) and new (everything else)",
    label: 'line',
    read: () => store.checkouts,
  });
  totalsCounter(registry, {
    name: 'checkstand_rebills_total',
    help: "Card subscription rebills by this process's queue and Rebill Now: claimed due, charged, declined, recovered (a past-due one charged), cancelled by dunning, ended at period end, unknown, failed",
    label: 'outcome',
    read: () => REBILL_OUTCOMES,
  });
}

/**
 * A counter that reports running totals kept elsewhere (a plain number, or one per label value):
 * at each scrape it is advanced by what each total grew since the last one.
 */
function totalsCounter(
  registry: client.Registry,
  c: { name: string; help: string; read: () => number } | { name: string; help: string; label: string; read: () => Readonly<Record<string, number>> },
): void {
  const counted = new Map<string, number>();
  const labelled = 'label' in c;
  new client.Counter({
    name: c.name,
    help: c.help,
    labelNames: labelled ? [c.label] : [],
    registers: [registry],
    collect() {
      const totals = labelled ? c.read() : { '': c.read() };
      for (const [value, n] of Object.entries(totals)) {
        const grew = n - (counted.get(value) ?? 0);
        if (labelled) this.inc({ [c.label]: value }, grew);
        else this.inc(grew);
        counted.set(value, n);
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
