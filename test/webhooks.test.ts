import http from 'node:http';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/app/logger.ts';
import type { Row } from '../src/db/schema.ts';
import type { EventType } from '../src/modules/events/catalogue.ts';
import { WebhooksService, type WebhooksOptions, webhookOptionsFrom } from '../src/modules/webhooks/service.ts';
import { startWorker } from '../src/worker/worker.ts';
import { type ApiResponse, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

const log = createLogger('silent');
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SECRET = /^whsec_[A-Za-z0-9+/]{32}$/;

let app: TestApp;
let teamA: TestTeam;
let teamB: TestTeam;

beforeAll(async () => {
  // Loopback receivers are allowed here, explicitly; retries are tiny so tests stay fast.
  app = await startTestApp({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_RETRY_SCHEDULE_MS: '20,20,20,20,20', WEBHOOK_TIMEOUT_MS: '3000' });
  teamA = await app.newTeam('Webhooks A');
  teamB = await app.newTeam('Webhooks B');
});
afterAll(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.close()));
  await app?.close();
});

// ---- local receivers

interface Receipt {
  headers: Record<string, string>;
  body: string;
  /** Unix seconds when the request arrived. */
  at: number;
}

type Answer = { status: number; headers?: Record<string, string>; body?: string; delayMs?: number; until?: Promise<unknown> };

interface Receiver {
  url: string;
  receipts: Receipt[];
  close(): Promise<void>;
}

const receivers: Receiver[] = [];

async function receiver(answer: (n: number, r: Receipt) => Answer = () => ({ status: 200, body: 'ok' })): Promise<Receiver> {
  const receipts: Receipt[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      const r: Receipt = { headers, body: Buffer.concat(chunks).toString('utf8'), at: Math.floor(Date.now() / 1000) };
      receipts.push(r);
      const a = answer(receipts.length, r);
      const send = () => {
        res.writeHead(a.status, a.headers);
        res.end(a.body ?? '');
      };
      if (a.until) void a.until.then(send);
      else if (a.delayMs) setTimeout(send, a.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const r: Receiver = {
    url: `http://127.0.0.1:${port}/hooks`,
    receipts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  receivers.push(r);
  return r;
}

// ---- helpers

/** Endpoints created by a test; deleted afterwards so their pending retries do not leak into later tests. */
const createdEndpoints: { team: TestTeam; id: string }[] = [];
afterEach(async () => {
  for (const { team, id } of createdEndpoints.splice(0)) await team.api.delete(`/v1/webhook-endpoints/${id}`);
});

async function createEndpoint(team: TestTeam, url: string, over: Record<string, unknown> = {}) {
  const r = await team.api.post('/v1/webhook-endpoints', { url, event_types: ['*'], ...over });
  expect(r.status, r.text).toBe(201);
  createdEndpoints.push({ team, id: r.body.data.id });
  return r.body.data as { id: string; secret: string; [k: string]: unknown };
}

/** An order as an event carries it; upsell events by default, so the autoresponder sink (order.completed only) stays out of it. */
function fakeOrder(n = 1) {
  return { object: 'order', order_number: `ord_fake${n}`, status: 'completed', total: 4395 + n, currency: 'USD', customer: { email: `buyer${n}@example.com` } };
}

async function emit(team: TestTeam, type: EventType = 'order.upsell_added', object: Record<string, unknown> = fakeOrder()) {
  const event = await app.store.transaction((trx) => app.ctx.services.events.emit(trx, team.teamId, type, { object }));
  app.ctx.services.events.nudge();
  return event;
}

const webhooks = () => app.ctx.services.webhooks;

function drain(service: WebhooksService = webhooks()) {
  return service.drainer.drain(app.ctx, log);
}

/** Drains until the condition holds (or fails after timeoutMs). */
async function drainUntil(cond: () => boolean | Promise<boolean>, opts: { service?: WebhooksService; timeoutMs?: number } = {}) {
  const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error('condition not reached while draining');
    await drain(opts.service);
    await sleep(10);
  }
}

function service(over: Partial<WebhooksOptions>) {
  return new WebhooksService(app.store, app.ctx.secrets, app.ctx.services.events, { ...webhookOptionsFrom(app.ctx.config), ...over });
}

async function deliveryOf(eventId: string, endpointId: string): Promise<Row<'webhook_deliveries'>> {
  return app.store.run((db) =>
    db.selectFrom('webhook_deliveries').selectAll().where('event_id', '=', eventId).where('endpoint_id', '=', endpointId).executeTakeFirstOrThrow(),
  );
}

async function deliveryApi(team: TestTeam, id: string) {
  const r = await team.api.get(`/v1/webhook-deliveries/${id}`);
  expect(r.status, r.text).toBe(200);
  return r.body.data;
}

function verifyWith(secret: string, r: Receipt) {
  return new Webhook(secret).verify(r.body, r.headers);
}

function fieldPaths(res: ApiResponse): string[] {
  return (res.body?.error?.fields ?? []).map((f: { path: string }) => f.path);
}

function expect422(res: ApiResponse, path: string, message?: RegExp) {
  expect(res.status, res.text).toBe(422);
  expect(res.body).toMatchObject({ success: false, data: null, error: { code: 'validation_failed' } });
  expect(fieldPaths(res)).toContain(path);
  if (message) expect(res.text).toMatch(message);
}

// ---- the API

describe('webhook endpoints API', () => {
  it('creates an endpoint, shows the secret once, and stores it sealed', async () => {
    const rx = await receiver();
    const created = await createEndpoint(teamA, rx.url, { description: 'Fulfilment system', event_types: ['order.upsell_added', 'refund.created'] });
    expect(created).toEqual({
      object: 'webhook_endpoint',
      id: expect.stringMatching(/^we_[0-9A-Za-z]+$/),
      url: rx.url,
      description: 'Fulfilment system',
      event_types: ['order.upsell_added', 'refund.created'],
      is_active: true,
      disabled_at: null,
      disabled_reason: null,
      consecutive_failures: 0,
      secret_hint: `whsec_…${created.secret.slice(-4)}`,
      previous_secret_expires_at: null,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
      secret: expect.stringMatching(SECRET),
    });
    expect(Buffer.from(created.secret.slice(6), 'base64')).toHaveLength(24);

    const got = await teamA.api.get(`/v1/webhook-endpoints/${created.id}`);
    expect(got.status).toBe(200);
    const { secret, ...shown } = created;
    expect(got.body.data).toEqual(shown);
    expect(got.text).not.toContain(secret);
    const list = await teamA.api.get('/v1/webhook-endpoints?limit=100');
    expect(list.body.data).toContainEqual(shown);
    expect(list.text).not.toContain(secret);

    const row = await app.store.run((db) => db.selectFrom('webhook_endpoints').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow());
    expect(row.secret).not.toContain(secret.slice(6));
    expect(app.ctx.secrets.decrypt(row.secret)).toBe(secret);
  });

  it('updates url, description and event types; refuses invalid input with 422 on the field', async () => {
    const rx = await receiver();
    const ep = await createEndpoint(teamA, rx.url);
    const patched = await teamA.api.patch(`/v1/webhook-endpoints/${ep.id}`, { description: null, event_types: ['charge.voided'], url: `${rx.url}/v2` });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.data).toMatchObject({ description: null, event_types: ['charge.voided'], url: `${rx.url}/v2`, is_active: true });
    expect(patched.body.data).not.toHaveProperty('secret');

    const post = (body: unknown) => teamA.api.post('/v1/webhook-endpoints', body);
    expect422(await post({ url: 'not a url', event_types: ['*'] }), 'url');
    expect422(await post({ url: 'ftp://example.com/hook', event_types: ['*'] }), 'url');
    expect422(await post({ event_types: ['*'] }), 'url');
    expect422(await post({ url: rx.url, event_types: [] }), 'event_types');
    expect422(await post({ url: rx.url }), 'event_types');
    expect422(await post({ url: rx.url, event_types: ['order.shipped'] }), 'event_types.0', /not an event type/);
    expect422(await post({ url: rx.url, event_types: ['*', 'order.upsell_added'] }), 'event_types');
    expect422(await post({ url: rx.url, event_types: ['order.upsell_added', 'order.upsell_added'] }), 'event_types.1');
    expect422(await post({ url: rx.url, event_types: ['*'], secret: 'whsec_mine' }), 'secret');
    expect422(await teamA.api.patch(`/v1/webhook-endpoints/${ep.id}`, { event_types: [] }), 'event_types');
    expect422(await teamA.api.patch(`/v1/webhook-endpoints/${ep.id}`, { is_active: 'yes' }), 'is_active');
    expect422(await teamA.api.post(`/v1/webhook-endpoints/${ep.id}/rotate-secret`, { grace_seconds: -1 }), 'grace_seconds');
    expect422(await teamA.api.get('/v1/webhook-endpoints?colour=red'), 'query.colour');
  });

  it('pages endpoints and deliveries newest first, and filters deliveries by status', async () => {
    const team = await app.newTeam('Paging');
    const rx = await receiver();
    const one = await createEndpoint(team, rx.url);
    const two = await createEndpoint(team, rx.url);
    const first = await team.api.get('/v1/webhook-endpoints?limit=1');
    expect(first.body).toMatchObject({ success: true, has_more: true, data: [{ id: two.id }] });
    const second = await team.api.get(`/v1/webhook-endpoints?limit=1&starting_after=${two.id}`);
    expect(second.body).toMatchObject({ has_more: false, data: [{ id: one.id }] });

    const e1 = await emit(team, 'order.upsell_added', fakeOrder(1));
    const e2 = await emit(team, 'refund.created', fakeOrder(2));
    await drainUntil(async () => (await deliveryOf(e2.id, one.id)).status === 'succeeded' && (await deliveryOf(e1.id, one.id)).status === 'succeeded');
    const page = await team.api.get(`/v1/webhook-endpoints/${one.id}/deliveries?limit=1`);
    expect(page.status, page.text).toBe(200);
    expect(page.body.has_more).toBe(true);
    expect(page.body.data[0]).toEqual({
      object: 'webhook_delivery',
      id: expect.stringMatching(/^msg_/),
      endpoint_id: one.id,
      event_id: e2.id,
      event_type: 'refund.created',
      status: 'succeeded',
      attempt_count: 1,
      next_attempt_at: null,
      last_status_code: 200,
      last_error: null,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    const rest = await team.api.get(`/v1/webhook-endpoints/${one.id}/deliveries?starting_after=${page.body.data[0].id}`);
    expect(rest.body.data.map((d: { event_id: string }) => d.event_id)).toEqual([e1.id]);
    expect((await team.api.get(`/v1/webhook-endpoints/${one.id}/deliveries?status=failed`)).body.data).toEqual([]);
    expect((await team.api.get(`/v1/webhook-endpoints/${one.id}/deliveries?status=succeeded`)).body.data).toHaveLength(2);
    expect422(await team.api.get(`/v1/webhook-endpoints/${one.id}/deliveries?status=lost`), 'query.status');
  });

  it('fans out only to active endpoints of the team subscribed to the type', async () => {
    const team = await app.newTeam('Fan-out');
    const rx = await receiver();
    const all = await createEndpoint(team, rx.url);
    const upsells = await createEndpoint(team, rx.url, { event_types: ['order.upsell_added'] });
    const refunds = await createEndpoint(team, rx.url, { event_types: ['refund.created'] });
    const paused = await createEndpoint(team, rx.url);
    expect((await team.api.patch(`/v1/webhook-endpoints/${paused.id}`, { is_active: false })).body.data).toMatchObject({
      is_active: false,
      disabled_reason: 'disabled by the merchant',
      disabled_at: expect.stringMatching(ISO),
    });
    const other = await createEndpoint(teamB, rx.url);

    const event = await emit(team, 'order.upsell_added');
    const rows = await app.store.run((db) => db.selectFrom('webhook_deliveries').select(['endpoint_id', 'status']).where('event_id', '=', event.id).execute());
    expect(rows.map((r) => r.endpoint_id).sort()).toEqual([all.id, upsells.id].sort());
    expect(rows.every((r) => r.status === 'pending')).toBe(true);
    expect(rows.some((r) => r.endpoint_id === refunds.id || r.endpoint_id === other.id)).toBe(false);
  });
});

// ---- delivery

describe('delivery', () => {
  it('signs the Standard Webhooks way; the receiver verifies with the standardwebhooks package; a tampered body fails', async () => {
    const rx = await receiver();
    const ep = await createEndpoint(teamA, rx.url);
    const event = await emit(teamA, 'order.upsell_added', fakeOrder(7));
    await drainUntil(() => rx.receipts.length === 1);
    const [r] = rx.receipts;
    expect(r!.headers).toMatchObject({ 'content-type': 'application/json', 'user-agent': 'Checkstand-Webhooks/1', 'webhook-id': event.id });
    expect(r!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/=]+$/);
    expect(Math.abs(Number(r!.headers['webhook-timestamp']) - r!.at)).toBeLessThanOrEqual(1);

    const payload = verifyWith(ep.secret, r!);
    const shown = (await teamA.api.get(`/v1/events/${event.id}`)).body.data;
    expect(payload).toEqual(shown);
    expect(payload).toEqual({ object: 'event', id: event.id, type: 'order.upsell_added', created_at: expect.stringMatching(ISO), data: { object: fakeOrder(7) } });

    const tampered = { ...r!, body: r!.body.replace('"total":4402', '"total":1') };
    expect(tampered.body).not.toBe(r!.body);
    expect(() => verifyWith(ep.secret, tampered)).toThrow(/signature/i);
    expect(() => verifyWith(`whsec_${Buffer.alloc(24, 1).toString('base64')}`, r!)).toThrow();

    const d = await deliveryOf(event.id, ep.id);
    expect(d).toMatchObject({ status: 'succeeded', attempt_count: 1, last_status_code: 200, locked_until: null, next_attempt_at: null });
  });

  it('retries a failing receiver with the same webhook-id and a fresh timestamp and signature, one attempt row per try', async () => {
    const long = 'x'.repeat(5000);
    const rx = await receiver((n) =>
      n <= 2 ? { status: 500, body: long } : n === 3 ? { status: 500, headers: { 'retry-after': '1' }, body: 'later' } : { status: 200, body: 'thanks' },
    );
    const ep = await createEndpoint(teamA, rx.url);
    const event = await emit(teamA);
    await drainUntil(async () => (await deliveryOf(event.id, ep.id)).status === 'succeeded');

    expect(rx.receipts).toHaveLength(4);
    expect(new Set(rx.receipts.map((r) => r.headers['webhook-id']))).toEqual(new Set([event.id]));
    expect(new Set(rx.receipts.map((r) => r.body)).size).toBe(1);
    for (const r of rx.receipts) expect(verifyWith(ep.secret, r)).toMatchObject({ id: event.id });
    const stamps = rx.receipts.map((r) => Number(r.headers['webhook-timestamp']));
    // Retry-After: 1 before the fourth attempt: its timestamp (and so its signature) is newer.
    expect(stamps[3]!).toBeGreaterThan(stamps[0]!);
    expect(rx.receipts[3]!.headers['webhook-signature']).not.toBe(rx.receipts[0]!.headers['webhook-signature']);

    const d = await deliveryApi(teamA, (await deliveryOf(event.id, ep.id)).id);
    expect(d).toMatchObject({ status: 'succeeded', attempt_count: 4, last_status_code: 200, last_error: null, next_attempt_at: null, event_type: 'order.upsell_added' });
    expect(d.attempts.map((a: { attempt: number }) => a.attempt)).toEqual([1, 2, 3, 4]);
    expect(d.attempts.map((a: { status_code: number }) => a.status_code)).toEqual([500, 500, 500, 200]);
    for (const a of d.attempts) {
      expect(a).toMatchObject({ object: 'webhook_attempt', id: expect.stringMatching(/^watt_/), created_at: expect.stringMatching(ISO) });
      expect(Number.isInteger(a.duration_ms) && a.duration_ms >= 0).toBe(true);
    }
    expect(d.attempts[0].response_body).toBe(long.slice(0, 2048));
    expect(d.attempts[0].error).toBe('HTTP 500');
    expect(d.attempts[3]).toMatchObject({ response_body: 'thanks', error: null });
  });

  it('honours Retry-After over the schedule', async () => {
    const rx = await receiver((n) => (n === 1 ? { status: 503, headers: { 'retry-after': '1' } } : { status: 204 }));
    const ep = await createEndpoint(teamA, rx.url);
    const event = await emit(teamA);
    await drainUntil(() => rx.receipts.length === 1);
    await sleep(50);
    const d = await deliveryOf(event.id, ep.id);
    const [attempt] = (await deliveryApi(teamA, d.id)).attempts;
    expect(d).toMatchObject({ status: 'pending', attempt_count: 1, last_status_code: 503 });
    // The schedule would say 20 ms ± 20%; the receiver asked for a second.
    const wait = d.next_attempt_at!.getTime() - Date.parse(attempt.created_at);
    expect(wait).toBeGreaterThanOrEqual(950);
    expect(wait).toBeLessThanOrEqual(1050);
    await drain();
    expect(rx.receipts).toHaveLength(1);
    await drainUntil(async () => (await deliveryOf(event.id, ep.id)).status === 'succeeded');
    expect(rx.receipts).toHaveLength(2);
  });

  it('gives up after the last scheduled attempt and counts a failed delivery against the endpoint', async () => {
    const rx = await receiver(() => ({ status: 500 }));
    const ep = await createEndpoint(teamA, rx.url);
    const event = await emit(teamA);
    await drainUntil(async () => (await deliveryOf(event.id, ep.id)).status === 'failed');
    expect(rx.receipts).toHaveLength(6);
    expect(await deliveryOf(event.id, ep.id)).toMatchObject({ attempt_count: 6, next_attempt_at: null, last_status_code: 500, last_error: 'HTTP 500' });
    expect((await teamA.api.get(`/v1/webhook-endpoints/${ep.id}`)).body.data).toMatchObject({ is_active: true, consecutive_failures: 1 });
  });

  it('does not follow redirects: a 3xx is a failed attempt and the other server sees nothing', async () => {
    const elsewhere = await receiver();
    const rx = await receiver(() => ({ status: 302, headers: { location: elsewhere.url } }));
    const ep = await createEndpoint(teamA, rx.url);
    const event = await emit(teamA);
    await drainUntil(() => rx.receipts.length >= 2);
    await sleep(100);
    expect(elsewhere.receipts).toHaveLength(0);
    const d = await deliveryApi(teamA, (await deliveryOf(event.id, ep.id)).id);
    expect(d.attempts[0]).toMatchObject({ status_code: 302, error: `redirect not followed (302 to ${elsewhere.url})` });
    expect(d.status).not.toBe('succeeded');
  });

  it('records a timeout and a refused connection as attempts without a status code', async () => {
    const slow = await receiver(() => ({ status: 200, delayMs: 1000 }));
    const ep = await createEndpoint(teamA, slow.url);
    const event = await emit(teamA);
    const quick = service({ timeoutMs: 200, retryScheduleMs: [] });
    await drainUntil(async () => (await deliveryOf(event.id, ep.id)).status === 'failed', { service: quick });
    const d = await deliveryApi(teamA, (await deliveryOf(event.id, ep.id)).id);
    expect(d.attempts).toHaveLength(1);
    expect(d.attempts[0]).toMatchObject({ status_code: null, response_body: null, error: 'timed out after 200 ms' });
    expect(d.attempts[0].duration_ms).toBeGreaterThanOrEqual(190);

    const gone = await receiver();
    await gone.close();
    const ep2 = await createEndpoint(teamA, gone.url);
    const e2 = await emit(teamA);
    await drainUntil(async () => (await deliveryOf(e2.id, ep2.id)).status === 'failed', { service: quick });
    expect((await deliveryApi(teamA, (await deliveryOf(e2.id, ep2.id)).id)).attempts[0]).toMatchObject({ status_code: null, error: expect.stringContaining('ECONNREFUSED') });
  });

  /**
   * A bare HTTP/1.1 receiver over node:net: answers 200 with keep-alive, counts connections, and
   * can reset a kept connection when its next request arrives (the receiver closed it while the
   * sender reused it).
   */
  async function keptReceiver(opts: { resetSecondRequestOnFirstConnection?: boolean } = {}) {
    let connections = 0;
    let requests = 0;
    const sockets = new Set<net.Socket>();
    const server = net.createServer((socket) => {
      const n = ++connections;
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      let onThisSocket = 0;
      let buffered = '';
      socket.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('latin1');
        // One whole request: headers, then content-length bytes of body.
        for (;;) {
          const end = buffered.indexOf('\r\n\r\n');
          if (end < 0) return;
          const length = Number(/content-length: *(\d+)/i.exec(buffered.slice(0, end))?.[1] ?? 0);
          if (buffered.length < end + 4 + length) return;
          buffered = buffered.slice(end + 4 + length);
          onThisSocket++;
          if (opts.resetSecondRequestOnFirstConnection && n === 1 && onThisSocket === 2) {
            socket.resetAndDestroy();
            return;
          }
          requests++;
          socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok');
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const close = () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      });
    receivers.push({ url: '', receipts: [], close });
    return { url: `http://127.0.0.1:${port}/hooks`, connections: () => connections, requests: () => requests };
  }

  it('keeps the connection to a receiver between deliveries', async () => {
    const rx = await keptReceiver();
    const ep = await createEndpoint(teamA, rx.url);
    for (let i = 0; i < 3; i++) {
      const event = await emit(teamA);
      await drainUntil(async () => (await deliveryOf(event.id, ep.id)).status === 'succeeded');
    }
    expect(rx.requests()).toBe(3);
    // One connection for three deliveries, one after the other: the second and third reused it.
    expect(rx.connections()).toBe(1);
  });

  it('sends again on a new connection, in the same attempt, when the receiver reset the kept one before answering', async () => {
    const rx = await keptReceiver({ resetSecondRequestOnFirstConnection: true });
    const ep = await createEndpoint(teamA, rx.url);
    const first = await emit(teamA);
    await drainUntil(async () => (await deliveryOf(first.id, ep.id)).status === 'succeeded');
    const second = await emit(teamA);
    await drainUntil(async () => (await deliveryOf(second.id, ep.id)).status === 'succeeded');
    expect(rx.connections()).toBe(2);
    expect(rx.requests()).toBe(2);
    // Without the second send, the reset would have been a failed attempt, and the success the second.
    expect(await deliveryOf(second.id, ep.id)).toMatchObject({ attempt_count: 1, last_status_code: 200 });
  });
});

// ---- disabling

describe('disabling endpoints', () => {
  it('410 Gone disables the endpoint at once; the merchant sees why; nothing more is sent', async () => {
    const rx = await receiver(() => ({ status: 410 }));
    const ep = await createEndpoint(teamA, rx.url);
    const first = await emit(teamA);
    // A second delivery queued behind the first is cancelled when the endpoint is disabled.
    const queued = await emit(teamA);
    await app.store.run((db) => db.updateTable('webhook_deliveries').set({ next_attempt_at: new Date(Date.now() + 60_000) }).where('event_id', '=', queued.id).execute());
    await drainUntil(async () => (await deliveryOf(first.id, ep.id)).status === 'failed');

    const shown = (await teamA.api.get(`/v1/webhook-endpoints/${ep.id}`)).body.data;
    expect(shown).toMatchObject({ is_active: false, disabled_reason: 'endpoint answered 410 Gone', disabled_at: expect.stringMatching(ISO) });
    expect(await deliveryOf(first.id, ep.id)).toMatchObject({ attempt_count: 1, last_status_code: 410 });
    expect(await deliveryOf(queued.id, ep.id)).toMatchObject({ status: 'cancelled', last_error: 'endpoint disabled: endpoint answered 410 Gone' });

    const later = await emit(teamA);
    for (let i = 0; i < 3; i++) await drain();
    expect(rx.receipts).toHaveLength(1);
    expect(await app.store.run((db) => db.selectFrom('webhook_deliveries').select('id').where('event_id', '=', later.id).where('endpoint_id', '=', ep.id).execute())).toEqual([]);

    const replay = await teamA.api.post(`/v1/webhook-deliveries/${(await deliveryOf(first.id, ep.id)).id}/replay`);
    expect(replay.status).toBe(409);
    expect(replay.body.message).toMatch(/disabled/);

    const revived = await teamA.api.patch(`/v1/webhook-endpoints/${ep.id}`, { is_active: true });
    expect(revived.body.data).toMatchObject({ is_active: true, disabled_at: null, disabled_reason: null, consecutive_failures: 0 });
  });

  it('disables an endpoint after consecutive failed deliveries, with a readable reason', async () => {
    const rx = await receiver(() => ({ status: 500, body: 'boom' }));
    const ep = await createEndpoint(teamA, rx.url);
    const strict = service({ retryScheduleMs: [], disableAfterFailures: 3 });
    for (let i = 1; i <= 3; i++) {
      const e = await emit(teamA);
      await drainUntil(async () => (await deliveryOf(e.id, ep.id)).status === 'failed', { service: strict });
    }
    const shown = (await teamA.api.get(`/v1/webhook-endpoints/${ep.id}`)).body.data;
    expect(shown).toMatchObject({ is_active: false, consecutive_failures: 3, disabled_reason: 'disabled after 3 consecutive failed deliveries (last: HTTP 500)' });

    const revived = (await teamA.api.patch(`/v1/webhook-endpoints/${ep.id}`, { is_active: true })).body.data;
    expect(revived).toMatchObject({ is_active: true, consecutive_failures: 0, disabled_reason: null, disabled_at: null });
  });

  it('a success resets the failure count', async () => {
    let fail = true;
    const rx = await receiver(() => ({ status: fail ? 500 : 200 }));
    const ep = await createEndpoint(teamA, rx.url);
    const once = service({ retryScheduleMs: [] });
    const e1 = await emit(teamA);
    await drainUntil(async () => (await deliveryOf(e1.id, ep.id)).status === 'failed', { service: once });
    expect((await teamA.api.get(`/v1/webhook-endpoints/${ep.id}`)).body.data.consecutive_failures).toBe(1);
    fail = false;
    const e2 = await emit(teamA);
    await drainUntil(async () => (await deliveryOf(e2.id, ep.id)).status === 'succeeded', { service: once });
    expect((await teamA.api.get(`/v1/webhook-endpoints/${ep.id}`)).body.data.consecutive_failures).toBe(0);
  });

  it('disables an endpoint that has failed continuously for more than 5 days, below the count threshold', async () => {
    const rx = await receiver(() => ({ status: 502 }));
    const ep = await createEndpoint(teamA, rx.url);
    const once = service({ retryScheduleMs: [], disableAfterFailures: 100 });
    const e1 = await emit(teamA);
    await drainUntil(async () => (await deliveryOf(e1.id, ep.id)).status === 'failed', { service: once });
    const sixDaysAgo = new Date(Date.now() - 6 * 86_400_000);
    await app.store.run((db) => db.updateTable('webhook_deliveries').set({ created_at: sixDaysAgo }).where('event_id', '=', e1.id).execute());
    expect((await teamA.api.get(`/v1/webhook-endpoints/${ep.id}`)).body.data.is_active).toBe(true);

    const e2 = await emit(teamA);
    await drainUntil(async () => (await deliveryOf(e2.id, ep.id)).status === 'failed', { service: once });
    const shown = (await teamA.api.get(`/v1/webhook-endpoints/${ep.id}`)).body.data;
    expect(shown).toMatchObject({ is_active: false, consecutive_failures: 2 });
    expect(shown.disabled_reason).toBe(`disabled after failing continuously since ${sixDaysAgo.toISOString()} (more than 5 days) (last: HTTP 502)`);
  });

  it('DELETE deactivates the endpoint and cancels its pending deliveries', async () => {
    const rx = await receiver();
    const r = await teamA.api.post('/v1/webhook-endpoints', { url: rx.url, event_types: ['*'] });
    const ep = r.body.data;
    const event = await emit(teamA);
    const del = await teamA.api.delete(`/v1/webhook-endpoints/${ep.id}`);
    expect(del.status, del.text).toBe(200);
    expect(del.body.data).toMatchObject({ id: ep.id, is_active: false, disabled_reason: 'deleted by the merchant' });
    expect(await deliveryOf(event.id, ep.id)).toMatchObject({ status: 'cancelled', last_error: 'endpoint deleted by the merchant' });
    await drain();
    expect(rx.receipts).toHaveLength(0);
    expect((await teamA.api.get(`/v1/webhook-endpoints/${ep.id}`)).body.data.is_active).toBe(false);
  });
});

// ---- workers

describe('workers', () => {
  it('a worker killed mid-delivery loses nothing: after its lease runs out another worker delivers exactly once', async () => {
    const rx = await receiver();
    const ep = await createEndpoint(teamA, rx.url);
    const event = await emit(teamA);
    const doomed = service({ leaseMs: 400 });
    const claimed = await doomed.deliveries.claimDue(100);
    const mine = claimed.find((c) => c.event_id === event.id && c.endpoint_id === ep.id);
    expect(mine?.locked_until).toBeInstanceOf(Date);
    // ...and the doomed worker dies here, before sending.

    await drain();
    await drain();
    expect(rx.receipts).toHaveLength(0);
    expect(await deliveryOf(event.id, ep.id)).toMatchObject({ status: 'pending', attempt_count: 0 });

    await sleep(450);
    await drainUntil(() => rx.receipts.length === 1);
    for (let i = 0; i < 3; i++) await drain();
    expect(rx.receipts).toHaveLength(1);
    expect(await deliveryOf(event.id, ep.id)).toMatchObject({ status: 'succeeded', attempt_count: 1, locked_until: null });
  });

  it('a slow receiver holds one delivery, not the queue: the drain claims and sends the next batch meanwhile', async () => {
    const team = await app.newTeam('Slow receiver');
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const safety = setTimeout(release, 15_000);
    // The first request to arrive is answered only when released; every other one at once.
    const rx = await receiver((n) => (n === 1 ? { status: 200, until: held } : { status: 200 }));
    await createEndpoint(team, rx.url);
    for (let i = 0; i < 5; i++) await emit(team, 'order.upsell_added', fakeOrder(i));
    const slow = service({ batchSize: 2, concurrency: 4, timeoutMs: 30_000 });
    const drained = slow.drainer.drain(app.ctx, log);
    try {
      // Batch one is two deliveries, one of them held. With whole batches awaited the drain would
      // claim nothing more until it is released; with one slot taken it claims the next two.
      const deadline = Date.now() + 10_000;
      while (rx.receipts.length < 4 && Date.now() < deadline) await sleep(10);
      expect(rx.receipts.length).toBeGreaterThanOrEqual(4);
    } finally {
      release();
      clearTimeout(safety);
    }
    expect(await drained).toBeGreaterThanOrEqual(5);
    const ids = rx.receipts.map((r) => r.headers['webhook-id']);
    expect(ids).toHaveLength(5);
    expect(new Set(ids).size).toBe(5);
  });

  it('two workers draining at once deliver each of 50 events exactly once', async () => {
    const team = await app.newTeam('Two workers');
    const rx = await receiver(() => ({ status: 200, delayMs: 5 }));
    await createEndpoint(team, rx.url);
    const w1 = startWorker(app.ctx, log, { schedules: [], drainers: [service({}).drainer], pollMs: 20 });
    const w2 = startWorker(app.ctx, log, { schedules: [], drainers: [service({}).drainer], pollMs: 20 });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 50; i++) ids.push((await emit(team, 'order.upsell_added', fakeOrder(i))).id);
      const deadline = Date.now() + 20_000;
      while (rx.receipts.length < 50 && Date.now() < deadline) await sleep(25);
      await sleep(200);
      const counts = new Map<string, number>();
      for (const r of rx.receipts) counts.set(r.headers['webhook-id']!, (counts.get(r.headers['webhook-id']!) ?? 0) + 1);
      expect(rx.receipts).toHaveLength(50);
      expect([...counts.keys()].sort()).toEqual([...ids].sort());
      expect([...counts.values()].every((n) => n === 1)).toBe(true);
    } finally {
      await w1.stop();
      await w2.stop();
    }
  });
});

// ---- SSRF

describe('target addresses', () => {
  let strict: TestApp;
  let team: TestTeam;

  beforeAll(async () => {
    strict = await startTestApp();
    team = await strict.newTeam('Strict');
  });
  afterAll(async () => strict?.close());

  it('refuses loopback, private, link-local and mapped targets at registration unless allowed', async () => {
    const rx = await receiver();
    for (const [url, why] of [
      [rx.url, /127\.0\.0\.1 is a loopback address/],
      ['http://localhost:8080/hook', /localhost resolves to (127\.0\.0\.1|::1), a loopback address/],
      ['https://10.0.0.8/hook', /private/],
      ['https://192.168.1.20/hook', /private/],
      ['http://169.254.169.254/latest/meta-data', /link-local/],
      ['http://[::1]:8080/hook', /loopback/],
      ['http://[::ffff:10.1.2.3]/hook', /private/],
      ['http://[fd00::5]/hook', /unique local/],
      ['http://100.64.1.1/hook', /carrier-grade NAT/],
      ['http://0.0.0.0:3000/', /unspecified/],
    ] as const) {
      const r = await team.api.post('/v1/webhook-endpoints', { url, event_types: ['*'] });
      expect422(r, 'url', why);
      expect(r.body.message).toContain('target address not allowed');
    }
    const pub = await team.api.post('/v1/webhook-endpoints', { url: 'https://93.184.215.14/hooks', event_types: ['*'] });
    expect(pub.status, pub.text).toBe(201);
    expect422(await team.api.patch(`/v1/webhook-endpoints/${pub.body.data.id}`, { url: 'http://127.0.0.1:9/' }), 'url', /loopback/);
    expect((await team.api.get(`/v1/webhook-endpoints/${pub.body.data.id}`)).body.data.url).toBe('https://93.184.215.14/hooks');

    // The app started with WEBHOOK_ALLOW_PRIVATE_TARGETS=true accepts the same loopback receiver.
    await createEndpoint(teamA, rx.url);
    await createEndpoint(teamA, 'http://localhost:9/hook');
  });

  it('refuses at send time when private targets are not allowed there (the attempt fails for good, nothing is sent)', async () => {
    const rx = await receiver();
    const literal = await createEndpoint(teamA, rx.url);
    const named = await createEndpoint(teamA, rx.url.replace('127.0.0.1', 'localhost'));
    const event = await emit(teamA);
    const guarded = service({ allowPrivateTargets: false });
    await drainUntil(
      async () => (await deliveryOf(event.id, literal.id)).status === 'failed' && (await deliveryOf(event.id, named.id)).status === 'failed',
      { service: guarded },
    );
    expect(rx.receipts).toHaveLength(0);
    const a = (await deliveryApi(teamA, (await deliveryOf(event.id, literal.id)).id)).attempts;
    expect(a).toHaveLength(1);
    expect(a[0]).toMatchObject({ status_code: null, error: 'target address not allowed: 127.0.0.1 is a loopback address' });
    const b = (await deliveryApi(teamA, (await deliveryOf(event.id, named.id)).id)).attempts;
    expect(b).toHaveLength(1);
    expect(b[0].error).toMatch(/^target address not allowed: localhost resolves to (127\.0\.0\.1|::1), a loopback address$/);
    expect((await teamA.api.get(`/v1/webhook-endpoints/${literal.id}`)).body.data.consecutive_failures).toBe(1);
  });
});

// ---- rotation and replay

describe('secret rotation', () => {
  it('signs with both secrets during the grace period, then with the new one only', async () => {
    const rx = await receiver();
    const ep = await createEndpoint(teamA, rx.url);
    const rotated = await teamA.api.post(`/v1/webhook-endpoints/${ep.id}/rotate-secret`, {});
    expect(rotated.status, rotated.text).toBe(200);
    const fresh: string = rotated.body.data.secret;
    expect(fresh).toMatch(SECRET);
    expect(fresh).not.toBe(ep.secret);
    const graceEnds = Date.parse(rotated.body.data.previous_secret_expires_at);
    expect(Math.abs(graceEnds - (Date.now() + 86_400_000))).toBeLessThan(10_000);
    expect(rotated.body.data.secret_hint).toBe(`whsec_…${fresh.slice(-4)}`);
    const got = await teamA.api.get(`/v1/webhook-endpoints/${ep.id}`);
    expect(got.body.data).not.toHaveProperty('secret');
    expect(got.text).not.toContain(fresh);

    await emit(teamA);
    await drainUntil(() => rx.receipts.length === 1);
    const both = rx.receipts[0]!;
    expect(both.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(verifyWith(fresh, both)).toBeTruthy();
    expect(verifyWith(ep.secret, both)).toBeTruthy();

    // The grace period ends.
    await app.store.run((db) => db.updateTable('webhook_endpoints').set({ previous_secret_expires_at: new Date(Date.now() - 1000) }).where('id', '=', ep.id).execute());
    expect((await teamA.api.get(`/v1/webhook-endpoints/${ep.id}`)).body.data.previous_secret_expires_at).toBeNull();
    await emit(teamA);
    await drainUntil(() => rx.receipts.length === 2);
    const single = rx.receipts[1]!;
    expect(single.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    expect(verifyWith(fresh, single)).toBeTruthy();
    expect(() => verifyWith(ep.secret, single)).toThrow();

    // grace_seconds 0 drops the old secret at once.
    const now = (await teamA.api.post(`/v1/webhook-endpoints/${ep.id}/rotate-secret`, { grace_seconds: 0 })).body.data;
    expect(now.previous_secret_expires_at).toBeNull();
    await emit(teamA);
    await drainUntil(() => rx.receipts.length === 3);
    expect(rx.receipts[2]!.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    expect(verifyWith(now.secret, rx.receipts[2]!)).toBeTruthy();
    expect(() => verifyWith(fresh, rx.receipts[2]!)).toThrow();
  });
});

describe('manual replay', () => {
  it('re-sends a delivered event with the same webhook-id and records another attempt', async () => {
    const rx = await receiver();
    const ep = await createEndpoint(teamA, rx.url);
    const event = await emit(teamA);
    await drainUntil(() => rx.receipts.length === 1);
    const d = await deliveryOf(event.id, ep.id);
    await drainUntil(async () => (await deliveryOf(event.id, ep.id)).status === 'succeeded');

    const replay = await teamA.api.post(`/v1/webhook-deliveries/${d.id}/replay`);
    expect(replay.status, replay.text).toBe(202);
    expect(replay.body).toMatchObject({ success: true, data: { id: d.id, status: 'pending', attempt_count: 1 } });
    await drainUntil(() => rx.receipts.length === 2);
    expect(rx.receipts.map((r) => r.headers['webhook-id'])).toEqual([event.id, event.id]);
    expect(rx.receipts[1]!.body).toBe(rx.receipts[0]!.body);
    expect(verifyWith(ep.secret, rx.receipts[1]!)).toMatchObject({ id: event.id });
    await drainUntil(async () => (await deliveryOf(event.id, ep.id)).status === 'succeeded');
    expect((await deliveryApi(teamA, d.id)).attempts.map((a: { attempt: number }) => a.attempt)).toEqual([1, 2]);
  });

  it('answers 409 while an attempt is in flight', async () => {
    const rx = await receiver();
    const ep = await createEndpoint(teamA, rx.url);
    const event = await emit(teamA);
    await service({}).deliveries.claimDue(100);
    const d = await deliveryOf(event.id, ep.id);
    const r = await teamA.api.post(`/v1/webhook-deliveries/${d.id}/replay`);
    expect(r.status, r.text).toBe(409);
    expect(r.body.error.code).toBe('conflict');
    // Release the abandoned lease so later tests are not held up by it.
    await app.store.run((db) => db.updateTable('webhook_deliveries').set({ locked_until: null }).where('locked_until', 'is not', null).where('status', '=', 'pending').execute());
  });
});

// ---- tenancy

describe('another team', () => {
  it('gets 404 on every /:id route and changes nothing', async () => {
    const rx = await receiver();
    const ep = await createEndpoint(teamA, rx.url);
    const event = await emit(teamA);
    await drainUntil(async () => (await deliveryOf(event.id, ep.id)).status === 'succeeded');
    const delivery = await deliveryOf(event.id, ep.id);
    const before = (await teamA.api.get(`/v1/webhook-endpoints/${ep.id}`)).body.data;

    const attempts: [string, string, unknown][] = [
      ['GET', `/v1/webhook-endpoints/${ep.id}`, undefined],
      ['PATCH', `/v1/webhook-endpoints/${ep.id}`, { description: 'hijacked', url: 'https://93.184.215.14/steal' }],
      ['PATCH', `/v1/webhook-endpoints/${ep.id}`, { is_active: false }],
      ['PATCH', `/v1/webhook-endpoints/${ep.id}`, {}],
      ['DELETE', `/v1/webhook-endpoints/${ep.id}`, undefined],
      ['POST', `/v1/webhook-endpoints/${ep.id}/rotate-secret`, {}],
      ['GET', `/v1/webhook-endpoints/${ep.id}/deliveries`, undefined],
      ['GET', `/v1/webhook-deliveries/${delivery.id}`, undefined],
      ['POST', `/v1/webhook-deliveries/${delivery.id}/replay`, {}],
      ['GET', '/v1/webhook-endpoints/we_doesnotexist', undefined],
      ['GET', '/v1/webhook-deliveries/msg_doesnotexist', undefined],
    ];
    for (const [method, path, body] of attempts) {
      const r = await teamB.api.request(method, path, body);
      expect(r.status, `${method} ${path}: ${r.text}`).toBe(404);
      expect(r.body).toMatchObject({ success: false, data: null, error: { code: 'not_found' } });
    }
    expect((await teamB.api.get(`/v1/webhook-endpoints?starting_after=${ep.id}`)).status).toBe(422);
    expect((await teamB.api.get('/v1/webhook-endpoints?limit=100')).body.data.map((e: { id: string }) => e.id)).not.toContain(ep.id);

    expect((await teamA.api.get(`/v1/webhook-endpoints/${ep.id}`)).body.data).toEqual(before);
    expect(await deliveryOf(event.id, ep.id)).toMatchObject({ status: 'succeeded', attempt_count: 1 });
  });
});

describe('OpenAPI', () => {
  it('documents the webhook routes under the webhooks tag', async () => {
    const spec = (await app.anonymous.get('/openapi.json')).body as { paths: Record<string, Record<string, { tags?: string[] }>> };
    for (const [path, method] of [
      ['/v1/webhook-endpoints', 'post'],
      ['/v1/webhook-endpoints', 'get'],
      ['/v1/webhook-endpoints/{id}', 'get'],
      ['/v1/webhook-endpoints/{id}', 'patch'],
      ['/v1/webhook-endpoints/{id}', 'delete'],
      ['/v1/webhook-endpoints/{id}/rotate-secret', 'post'],
      ['/v1/webhook-endpoints/{id}/deliveries', 'get'],
      ['/v1/webhook-deliveries/{id}', 'get'],
      ['/v1/webhook-deliveries/{id}/replay', 'post'],
    ] as const) {
      expect(spec.paths[path]?.[method]?.tags, `${method} ${path}`).toEqual(['webhooks']);
    }
  });
});
