import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import client from 'prom-client';
import type { Logger } from 'pino';
import { errorBody } from '../app/envelope.ts';
import { processMetrics } from '../app/metrics.ts';
import type { Store } from '../db/database.ts';

export interface WorkerMetricsServer {
  url: string;
  close(): Promise<void>;
}

/**
 * `checkstand worker` has no API, so its metrics (`checkstand_db_up`, connection errors, rebills,
 * Node's own) and probes get a small HTTP listener of their own when WORKER_METRICS_PORT is set:
 * `/metrics` (Prometheus), `/healthz` (the process), `/readyz` (503 while the database is away).
 */
export async function startWorkerMetrics(store: Store, opts: { host: string; port: number }, log?: Logger): Promise<WorkerMetricsServer> {
  const registry = new client.Registry();
  processMetrics(registry, store);
  const json = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body));
  };
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const answer = async () => {
      if (req.method !== 'GET') return json(res, 404, errorBody('route_not_found', `No such endpoint: ${req.method} ${path}`));
      if (path === '/metrics') {
        res.writeHead(200, { 'content-type': registry.contentType }).end(await registry.metrics());
        return;
      }
      if (path === '/healthz') return json(res, 200, { status: 'ok' });
      if (path === '/readyz') {
        try {
          await store.run((db) => sql`select 1`.execute(db));
          return json(res, 200, { status: 'ready', database: store.kind });
        } catch {
          return json(res, 503, { status: 'database_unreachable' });
        }
      }
      return json(res, 404, errorBody('route_not_found', `No such endpoint: GET ${path}`));
    };
    answer().catch((err: unknown) => {
      log?.error({ err }, 'worker metrics request failed');
      if (!res.headersSent) json(res, 500, errorBody('internal', 'Something went wrong on our side. The error has been logged.'));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${opts.host}:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
