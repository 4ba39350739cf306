/**
 * The merchant's webhook receiver: a node:http server on 127.0.0.1 (free port) in its own worker
 * thread of the bench process. It answers every POST 204 at once, counts distinct `webhook-id`
 * values (and duplicates), records each delivery's lag (arrival minus the event's `created_at`),
 * and verifies the signature of a sample of deliveries — the first 100, then one in 10 — with the
 * standardwebhooks package's `new Webhook(secret).verify(body, headers)`, as a merchant would.
 *
 * Messages: posts `{ type: 'ready', url, tid }` (tid: its kernel thread id, for its CPU); takes `{ type: 'secret', secret }` (the endpoint's
 * `whsec_…`, known only once the endpoint is registered), answers `{ type: 'stats' }` with
 * `{ type: 'stats', stats }` and `{ type: 'final' }` with `{ type: 'final', stats }` (lags
 * included), then closes.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parentPort } from 'node:worker_threads';
import { Webhook } from 'standardwebhooks';
import type { ReceiverFinal, ReceiverStats } from './stats.ts';
import { ownThreadId } from './sched.ts';

const port = parentPort!;
const VERIFY_FIRST = 100;
const VERIFY_EVERY = 10;

let webhook: Webhook | null = null;
const seen = new Set<string>();
const lagsMs: number[] = [];
const stats: ReceiverStats = { received: 0, unique: 0, duplicates: 0, byType: {}, verified: 0, badSignatures: 0, malformed: 0, firstBad: [] };

function bad(line: string): void {
  if (stats.firstBad.length < 10) stats.firstBad.push(line.slice(0, 300));
}

function header(req: http.IncomingMessage, name: string): string {
  const v = req.headers[name];
  return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
}

function handle(req: http.IncomingMessage, body: string): void {
  const arrived = Date.now();
  stats.received++;
  const id = header(req, 'webhook-id');
  let event: { type?: unknown; created_at?: unknown } | undefined;
  try {
    event = JSON.parse(body) as typeof event;
  } catch {
    event = undefined;
  }
  if (!id || !event || typeof event.type !== 'string') {
    stats.malformed++;
    bad(`malformed delivery: webhook-id "${id}", body ${body.slice(0, 120)}`);
    return;
  }
  if (seen.has(id)) {
    stats.duplicates++;
  } else {
    seen.add(id);
    stats.unique++;
    stats.byType[event.type] = (stats.byType[event.type] ?? 0) + 1;
    const created = typeof event.created_at === 'string' ? Date.parse(event.created_at) : NaN;
    if (Number.isFinite(created)) lagsMs.push(arrived - created);
  }
  if (stats.received <= VERIFY_FIRST || stats.received % VERIFY_EVERY === 0) {
    if (!webhook) {
      stats.badSignatures++;
      bad(`delivery ${id} arrived before the endpoint secret was known`);
      return;
    }
    try {
      webhook.verify(body, {
        'webhook-id': id,
        'webhook-timestamp': header(req, 'webhook-timestamp'),
        'webhook-signature': header(req, 'webhook-signature'),
      });
      stats.verified++;
    } catch (err) {
      stats.badSignatures++;
      bad(`signature of ${id} did not verify: ${(err as Error).message}`);
    }
  }
}

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    res.writeHead(204).end();
    if (req.method === 'POST') handle(req, Buffer.concat(chunks).toString('utf8'));
  });
});
server.keepAliveTimeout = 5000;

port.on('message', (m: { type?: string; secret?: string }) => {
  if (m?.type === 'secret' && typeof m.secret === 'string') webhook = new Webhook(m.secret);
  else if (m?.type === 'stats') port.postMessage({ type: 'stats', stats: { ...stats, byType: { ...stats.byType }, firstBad: [...stats.firstBad] } });
  else if (m?.type === 'final') {
    const final: ReceiverFinal = { ...stats, lagsMs };
    server.closeAllConnections();
    server.close(() => {
      port.postMessage({ type: 'final', stats: final });
      port.close();
    });
  }
});

server.listen(0, '127.0.0.1', () => {
  const { port: p } = server.address() as AddressInfo;
  port.postMessage({ type: 'ready', url: `http://127.0.0.1:${p}/webhooks/checkstand`, tid: ownThreadId() });
});
