import { once } from 'node:events';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiResponse, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

interface RawConnection {
  send(text: string): void;
  /** The status code of the response, once its head has arrived. */
  status: Promise<number>;
}

/** A bare HTTP/1.1 connection, so a test decides when each byte of a request is sent. */
async function connect(url: string): Promise<RawConnection> {
  const socket = net.connect(Number(new URL(url).port), '127.0.0.1');
  await once(socket, 'connect');
  let received = '';
  const status = new Promise<number>((resolve, reject) => {
    socket.on('data', (chunk) => {
      received += String(chunk);
      const m = /^HTTP\/1\.1 (\d{3}) /.exec(received);
      if (m && received.includes('\r\n\r\n')) {
        resolve(Number(m[1]));
        socket.destroy();
      }
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`connection closed before an answer: ${received}`)));
  });
  return { send: (text) => socket.write(text), status };
}

function requestText(head: string, body = ''): string {
  return `${head}\r\nHost: 127.0.0.1\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

interface HeldRequest {
  /** Sends the rest of the body and resolves with the response's status code. */
  finish(): Promise<number>;
}

/**
 * A Create Lead whose body is only partly sent: the server has the request and runs its
 * onRequest hooks, then waits for the rest — a request in flight for as long as the test likes.
 */
async function heldLead(app: TestApp, team: TestTeam): Promise<HeldRequest> {
  const head = `POST /checkout/leads HTTP/1.1\r\nAuthorization: Bearer ${team.token}\r\nContent-Type: application/json`;
  const text = requestText(head, '{"campaign_id":"cmp_none"}');
  const conn = await connect(app.url);
  conn.send(text.slice(0, -5));
  return {
    finish() {
      conn.send(text.slice(-5));
      return conn.status;
    },
  };
}

async function metric(app: TestApp, prefix: string): Promise<number> {
  const line = (await app.anonymous.get('/metrics')).text.split('\n').find((l) => l.startsWith(prefix));
  return line ? Number(line.split(' ').pop()) : 0;
}

async function until(what: string, check: () => Promise<boolean>) {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`gave up waiting for ${what}`);
}

function expectOverloaded(r: ApiResponse, retryAfter: string) {
  expect(r.status).toBe(503);
  expect(r.headers.get('retry-after')).toBe(retryAfter);
  expect(r.body).toEqual({ success: false, message: expect.stringContaining('overloaded'), data: null, error: { type: 'api_error', code: 'overloaded' } });
}

describe('in-flight cap (OVERLOAD_MAX_IN_FLIGHT)', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ OVERLOAD_MAX_IN_FLIGHT: '3', OVERLOAD_RETRY_AFTER_SECONDS: '3' });
  });
  afterAll(async () => app?.close());

  it('answers 503 overloaded at once past the cap, keeps /healthz answering, and serves again once below it', async () => {
    const team = await app.newTeam();
    expect((await team.api.get('/v1/orders')).status).toBe(200);

    const held = [await heldLead(app, team), await heldLead(app, team)];
    await until('2 requests in flight', async () => (await metric(app, 'checkstand_http_requests_in_flight ')) === 2);
    // Below the cap: still served.
    expect((await team.api.get('/v1/orders')).status).toBe(200);
    held.push(await heldLead(app, team));
    await until('3 requests in flight', async () => (await metric(app, 'checkstand_http_requests_in_flight ')) === 3);

    expectOverloaded(await team.api.get('/v1/orders'), '3');
    expectOverloaded(await team.api.post('/checkout/leads', {}), '3');
    // Not queued: a burst past the cap is refused whole, none waits for a slot.
    const burst = await Promise.all(Array.from({ length: 40 }, () => team.api.get('/v1/orders')));
    expect(burst.map((r) => r.status)).toEqual(Array(40).fill(503));
    expect((await app.anonymous.get('/healthz')).status).toBe(200);
    expect(await metric(app, 'checkstand_requests_shed_total{reason="in_flight"}')).toBe(42);

    for (const h of held) expect(await h.finish()).toBeLessThan(500);
    await until('no request in flight', async () => (await metric(app, 'checkstand_http_requests_in_flight ')) === 0);
    expect((await team.api.get('/v1/orders')).status).toBe(200);
  }, 60_000);
});

/** Blocks this process's event loop (the server's too: it runs in this process). */
function busy(ms: number) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    /* spin */
  }
}

describe('event-loop delay (OVERLOAD_MAX_EVENT_LOOP_DELAY_MS, @fastify/under-pressure)', () => {
  const SAMPLE_MS = 100;
  /** Far above what a busy machine lags by, far below a stall. */
  const CEILING_MS = 300;
  const STALL_MS = 1_000;
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: String(CEILING_MS), OVERLOAD_SAMPLE_INTERVAL_MS: String(SAMPLE_MS) });
  });
  afterAll(async () => app?.close());

  it('answers 503 overloaded while the loop lags, keeps /healthz answering, and serves again after', async () => {
    const team = await app.newTeam();
    // Loading the database in this process stalls the loop too: start from a calm sample.
    await until('a calm loop', async () => (await team.api.get('/v1/orders')).status === 200);

    // Two stalls, each longer than a sample, with a timers phase between them, and the requests
    // written just before the second: whichever order the delay monitor and the sampler fire in,
    // the sample the requests are judged by holds a stall (or nothing at all, which counts as
    // overloaded). Counts and ordering only: no assumption about how fast this machine is.
    const orders = await connect(app.url);
    const health = await connect(app.url);
    busy(STALL_MS);
    await new Promise((r) => setTimeout(r, 0));
    await new Promise((r) => setImmediate(r));
    orders.send(requestText(`GET /v1/orders HTTP/1.1\r\nAuthorization: Bearer ${team.token}`));
    health.send(requestText('GET /healthz HTTP/1.1'));
    busy(STALL_MS);

    expect(await orders.status).toBe(503);
    expect(await health.status).toBe(200);
    expect(await metric(app, 'checkstand_requests_shed_total{reason="event_loop_delay"}')).toBeGreaterThanOrEqual(1);
    await until('the loop to catch up', async () => (await team.api.get('/v1/orders')).status === 200);
  }, 60_000);
});
