/**
 * For test/e2e/dashboard-developers.e2e.test.ts: the dashboard's server booted as
 * dashboard-support.ts's bootDashboard does, with extra settings (loopback webhook receivers
 * allowed), a local webhook receiver, and draining the webhook queue on demand.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../../src/app/logger.ts';
import { seedDemo } from '../../src/app/seed.ts';
import { startSandbox } from '../../src/sandbox/server.ts';
import { ApiClient, startTestApp } from '../support/harness.ts';
import { CHROMIUM_PATH, type DashboardEnv, ensureDashboardBuilt, paidOrder } from './dashboard-support.ts';

/** bootDashboard with more server settings (`WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true'`, …). */
export async function bootDashboardWith(settings: Record<string, string>): Promise<DashboardEnv> {
  if (!fs.existsSync(CHROMIUM_PATH)) throw new Error(`no Chromium at ${CHROMIUM_PATH}: install Debian's chromium or set CHROMIUM_PATH`);
  ensureDashboardBuilt();
  const dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'checkstand-dashboard-'));
  const sandbox = await startSandbox({ port: 0 });
  const app = await startTestApp({ CHECKSTAND_DATA_DIR: dataDir, ...settings });
  const seed = await seedDemo(app.ctx, { sandboxUrl: sandbox.url });
  return {
    app,
    url: app.url,
    seed,
    merchant: new ApiClient(app.url, seed.token),
    dataDir,
    async close() {
      await app.close();
      await sandbox.close();
      await fsp.rm(dataDir, { recursive: true, force: true });
    },
  };
}

export interface Receiver {
  url: string;
  /** The `webhook-id` header of each request, in order. */
  received: string[];
  close(): Promise<void>;
}

/** A webhook receiver on a loopback port answering 200. */
export async function webhookReceiver(): Promise<Receiver> {
  const received: string[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received.push(String(req.headers['webhook-id'] ?? ''));
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const silent = createLogger('silent');

/** Runs the webhook worker's drain (what the worker process does on its poll) until `done` holds. */
export async function drainWebhooksUntil(env: DashboardEnv, done: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error('the webhook queue did not reach the expected state');
    await env.app.ctx.services.webhooks.drainer.drain(env.app.ctx, silent);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Runs every drainer of the worker (mail, webhooks, postbacks) until `done` holds. */
export async function drainAllUntil(env: DashboardEnv, done: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error('the queues did not reach the expected state');
    for (const d of env.app.ctx.drainers) await d.drain(env.app.ctx, silent);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A paid order completed (POST /checkout/orders/complete): order.completed is emitted, the purchase mail queued. */
export async function completedOrder(env: DashboardEnv): Promise<string> {
  const orderNumber = await paidOrder(env);
  const r = await env.merchant.post('/checkout/orders/complete', { order_number: orderNumber });
  if (r.status !== 200) throw new Error(`the order was not completed: ${r.status} ${r.text}`);
  return orderNumber;
}
