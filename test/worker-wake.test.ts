import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, msFromEnv } from '../src/app/config.ts';
import { type AppContext, createContext } from '../src/app/context.ts';
import { createLogger } from '../src/app/logger.ts';
import type { EventType } from '../src/modules/events/catalogue.ts';
import { DEFAULT_GATHER_MS, gatherMsOf, type RunningWorker, startWorker } from '../src/worker/worker.ts';
import { email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

/**
 * The outbox worker without polling (issue 13): it sleeps with a poll interval far longer than any
 * assertion waits, and is woken by the database's notification when a delivery or a mail is
 * created — including by another process, here a second context whose in-process nudges the API
 * never calls. And the statements it spends per delivery and per mail.
 */

const log = createLogger('silent');
/** The safety-net poll of the workers here: nothing in these tests may wait for it. */
const POLL_MS = 60_000;
/** Generous for a loaded machine; still a third of POLL_MS, so only a wake-up can pass. */
const PROMPT_MS = 20_000;

let app: TestApp;
let team: TestTeam;
let funnel: Funnel;
let dataDir: string;
const workers: RunningWorker[] = [];
const servers: http.Server[] = [];

beforeAll(async () => {
  // No SMTP_URL: mail goes to .eml files under the data directory, written by the worker.
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkstand-wake-'));
  app = await startTestApp({ CHECKSTAND_DATA_DIR: dataDir, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_RETRY_SCHEDULE_MS: '60000', WEBHOOK_TIMEOUT_MS: '3000' });
  team = await app.newTeam('Worker wake');
  funnel = await seedFunnel(app, team.teamId);
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop()));
});
afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
  await app?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

interface Receiver {
  url: string;
  ids: string[];
}

async function receiver(): Promise<Receiver> {
  const ids: string[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      ids.push(String(req.headers['webhook-id']));
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hooks`, ids };
}

/** Another worker process as far as waking goes: its own services, so the API's in-process nudges never reach it. */
function separateWorkerContext(): AppContext {
  return createContext(app.ctx.config, app.store, app.ctx.secrets);
}

function startSeparateWorker(opts: { gatherMs?: number } = {}): RunningWorker {
  const w = startWorker(separateWorkerContext(), log, { schedules: [], pollMs: POLL_MS, ...opts });
  workers.push(w);
  return w;
}

function fakeOrder(n: number) {
  return { object: 'order', order_number: `ord_wake${n}`, status: 'completed', total: 4395 + n, currency: 'USD', customer: { email: `wake${n}@example.com` } };
}

/** Emits in the API's context and nudges it in-process, as the use cases do after their commit. */
async function emit(type: EventType, n: number, order?: { order_number: string }) {
  const object = order ?? fakeOrder(n);
  const event = await app.store.transaction((trx) => app.ctx.services.events.emit(trx, team.teamId, type, { orderId: order?.order_number ?? null, object }));
  app.ctx.services.events.nudge();
  return event;
}

/** A real order, created over HTTP (a lead), as the event of its completion carries it. */
async function createOrder() {
  const r = await team.api.post('/checkout/leads', {
    campaign_id: funnel.campaignId,
    customer: { email: email('wake'), first_name: 'Ada', last_name: 'Lovelace' },
    products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data as { order_number: string };
}

async function until(cond: () => boolean | Promise<boolean>, ms: number): Promise<number> {
  const started = Date.now();
  while (!(await cond())) {
    if (Date.now() - started > ms) throw new Error(`not reached within ${ms} ms`);
    await sleep(20);
  }
  return Date.now() - started;
}

async function createEndpoint(url: string, eventTypes: string[] = ['order.upsell_added']) {
  const r = await team.api.post('/v1/webhook-endpoints', { url, event_types: eventTypes });
  expect(r.status, r.text).toBe(201);
  return r.body.data as { id: string };
}

async function deleteEndpoint(id: string) {
  await team.api.delete(`/v1/webhook-endpoints/${id}`);
}

/** Counts the statements sent on pooled connections while `fn` runs (the API is idle meanwhile). */
async function countStatements(fn: () => Promise<unknown>): Promise<string[]> {
  const seen: string[] = [];
  let on = true;
  const patched = new WeakSet<object>();
  const onAcquire = (client: { query: (...args: unknown[]) => unknown }) => {
    if (patched.has(client)) return;
    patched.add(client);
    const query = client.query.bind(client);
    client.query = (...args: unknown[]) => {
      if (on) {
        const first = args[0] as string | { text?: string };
        seen.push((typeof first === 'string' ? first : (first?.text ?? '')).replace(/\s+/g, ' ').trim().slice(0, 60));
      }
      return query(...args);
    };
  };
  app.store.pool.on('acquire', onAcquire as never);
  try {
    await fn();
  } finally {
    on = false;
    app.store.pool.off('acquire', onAcquire as never);
  }
  return seen;
}

describe('waking without polling', () => {
  it('a separate worker, idle with a 60 s poll, delivers a webhook created meanwhile at once, and a replay over HTTP too', async () => {
    const rx = await receiver();
    const ep = await createEndpoint(rx.url);
    startSeparateWorker();
    // Let it finish its first drain and go to sleep.
    await sleep(500);

    const event = await emit('order.upsell_added', 1);
    await until(() => rx.ids.includes(event.id), PROMPT_MS);

    // The receiver has the request before the worker has recorded its outcome: wait for the record
    // (a replay of a delivery still being recorded is refused with a 409, as it should be).
    let delivery: { id: string; status: string } | undefined;
    await until(async () => {
      const list = await team.api.get(`/v1/webhook-endpoints/${ep.id}/deliveries`);
      expect(list.status, list.text).toBe(200);
      delivery = list.body.data.find((d: { event_id: string }) => d.event_id === event.id);
      return delivery?.status === 'succeeded';
    }, PROMPT_MS);

    const replay = await team.api.post(`/v1/webhook-deliveries/${delivery!.id}/replay`);
    expect(replay.status, replay.text).toBeLessThan(300);
    await until(() => rx.ids.filter((id) => id === event.id).length === 2, PROMPT_MS);
    await deleteEndpoint(ep.id);
  });

  it('a separate idle worker sends a purchase mail queued meanwhile at once', async () => {
    startSeparateWorker();
    await sleep(500);
    const event = await emit('order.completed', 2, await createOrder());
    const mailOf = () => app.store.run((db) => db.selectFrom('mail_messages').select(['id', 'status', 'last_error']).where('event_id', '=', event.id).executeTakeFirst());
    await until(async () => (await mailOf())?.status === 'sent', PROMPT_MS);
    const mail = (await team.api.get(`/v1/mail/${(await mailOf())!.id}`)).body.data;
    expect(mail).toMatchObject({ status: 'sent', transport: 'file' });
    expect(fs.existsSync(mail.eml_path)).toBe(true);
  });

  it('a separate worker woken for a delivery waits its gather window: the deliveries committed meanwhile go out in the same claim', async () => {
    // Long enough for three commits 100 ms apart on a loaded machine (WORKER_GATHER_MS's default is 25 ms).
    const GATHER_MS = 3_000;
    const rx = await receiver();
    const ep = await createEndpoint(rx.url);
    const worker = startSeparateWorker({ gatherMs: GATHER_MS });
    // Its first drain, and the one LISTEN's start asks for (after a gather), are over: that one
    // starts when LISTEN takes effect, which a loaded machine can delay.
    await until(() => worker.listening, PROMPT_MS);
    await sleep(GATHER_MS + 1_000);

    const ids: string[] = [];
    let emittedMs = 0;
    let deliveredMs = 0;
    const statements = await countStatements(async () => {
      const started = Date.now();
      // Three transactions, each notifying on its commit; the worker, idle, is woken by the first.
      for (let i = 0; i < 3; i++) {
        ids.push((await emit('order.upsell_added', 400 + i)).id);
        await sleep(100);
      }
      emittedMs = Date.now() - started;
      await until(() => ids.every((id) => rx.ids.includes(id)), PROMPT_MS);
      deliveredMs = Date.now() - started;
      await sleep(300);
    });
    expect(emittedMs, 'the three commits took longer than the gather window').toBeLessThan(GATHER_MS);
    const claims = statements.filter((s) => s.startsWith('WITH claimed AS ( UPDATE webhook_deliveries'));
    expect(claims, statements.join('\n')).toHaveLength(1);
    // It waited for the window before claiming (the first commit woke it).
    expect(deliveredMs).toBeGreaterThanOrEqual(GATHER_MS);
    expect([...rx.ids].filter((id) => ids.includes(id)).sort()).toEqual([...ids].sort());
    await deleteEndpoint(ep.id);
  });

  it('two separate workers, both woken for every event, deliver each of 30 events exactly once', async () => {
    const rx = await receiver();
    const ep = await createEndpoint(rx.url);
    startSeparateWorker();
    startSeparateWorker();
    await sleep(500);
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push((await emit('order.upsell_added', 100 + i)).id);
    await until(() => rx.ids.length >= 30, PROMPT_MS);
    await sleep(300);
    expect([...rx.ids].sort()).toEqual([...ids].sort());
    await deleteEndpoint(ep.id);
  });
});

describe('the LISTEN connection', () => {
  // PGlite is in-process: there is no connection to lose.
  it.runIf(Boolean(process.env.TEST_DATABASE_URL))('comes back after the server drops it, drains what was created meanwhile, and listens again', async () => {
    const rx = await receiver();
    const ep = await createEndpoint(rx.url);
    startSeparateWorker();
    await sleep(500);
    // What a restart does to it: the server ends the backend.
    const ended = await app.store.run((db) =>
      sql<{ pid: number }>`SELECT pg_terminate_backend(pid) AS ok, pid FROM pg_stat_activity
        WHERE datname = current_database() AND query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()`.execute(db),
    );
    expect(ended.rows.length).toBeGreaterThanOrEqual(1);
    // Created while nobody listens: its notification is lost, the drain after reconnecting finds it.
    const during = await emit('order.upsell_added', 201);
    await until(() => rx.ids.includes(during.id), PROMPT_MS);
    await sleep(300);
    const after = await emit('order.upsell_added', 202);
    await until(() => rx.ids.includes(after.id), PROMPT_MS);
    await deleteEndpoint(ep.id);
  });
});

describe('statements per outcome', () => {
  it('a webhook delivery costs one claim and one statement for its outcome; a mail one claim and one statement', async () => {
    const rx = await receiver();
    const ep = await createEndpoint(rx.url, ['order.completed']);
    const event = await emit('order.completed', 3, await createOrder());

    const webhookStatements = await countStatements(() => app.ctx.services.webhooks.drainer.drain(app.ctx, log));
    expect(rx.ids).toContain(event.id);
    expect(webhookStatements, webhookStatements.join('\n')).toHaveLength(2);

    const mailStatements = await countStatements(() => app.ctx.services.mail.drainer.drain(app.ctx, log));
    const mail = await app.store.run((db) => db.selectFrom('mail_messages').select('status').where('event_id', '=', event.id).executeTakeFirstOrThrow());
    expect(mail.status).toBe('sent');
    expect(mailStatements, mailStatements.join('\n')).toHaveLength(2);

    const delivery = (await team.api.get(`/v1/webhook-endpoints/${ep.id}/deliveries`)).body.data.find((d: { event_id: string }) => d.event_id === event.id);
    expect(delivery).toMatchObject({ status: 'succeeded' });
    await deleteEndpoint(ep.id);
  });

  it('the answers of one claim that come back together are recorded in one statement: a success, a retry, and one whose lease another worker took', async () => {
    await app.ctx.services.webhooks.drainer.drain(app.ctx, log);
    // The receiver holds the three requests and answers them in one tick: 200, 500 (a retry), 200.
    const held: { id: string; res: http.ServerResponse }[] = [];
    let release: () => void = () => {};
    const allArrived = new Promise<void>((resolve) => (release = resolve));
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        held.push({ id: String(req.headers['webhook-id']), res });
        if (held.length === 3) release();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    const ep = await createEndpoint(`http://127.0.0.1:${(server.address() as { port: number }).port}/hooks`);
    const [ok, failing, takenOver] = [await emit('order.upsell_added', 301), await emit('order.upsell_added', 302), await emit('order.upsell_added', 303)];
    const deliveryOf = (eventId: string) =>
      app.store.run((db) =>
        db.selectFrom('webhook_deliveries').select(['id', 'status', 'attempt_count', 'locked_until', 'next_attempt_at']).where('event_id', '=', eventId).where('endpoint_id', '=', ep.id).executeTakeFirstOrThrow(),
      );
    const otherLease = new Date(Date.now() + 3_600_000);
    const takenOverId = (await deliveryOf(takenOver.id)).id;
    void allArrived.then(async () => {
      // Another worker holds the third one now (its lease ran out and was taken): ours must not change it.
      await app.store.run((db) => db.updateTable('webhook_deliveries').set({ locked_until: otherLease }).where('id', '=', takenOverId).execute());
      for (const h of held) h.res.writeHead(h.id === failing.id ? 500 : 200).end('ok');
    });

    const statements = await countStatements(() => app.ctx.services.webhooks.drainer.drain(app.ctx, log));
    // The claim, the test's own takeover, and the three outcomes in one statement.
    expect(statements.filter((t) => !t.startsWith('update "webhook_deliveries" set "locked_until"')), statements.join('\n')).toHaveLength(2);
    expect(await deliveryOf(ok.id)).toMatchObject({ status: 'succeeded', attempt_count: 1, locked_until: null, next_attempt_at: null });
    const retried = await deliveryOf(failing.id);
    expect(retried).toMatchObject({ status: 'pending', attempt_count: 1, locked_until: null });
    expect(retried.next_attempt_at!.getTime()).toBeGreaterThan(Date.now() + 30_000);
    // Left as the other worker holds it; its attempt is on record all the same.
    expect(await deliveryOf(takenOver.id)).toMatchObject({ status: 'pending', attempt_count: 0, locked_until: otherLease });
    const attempts = await app.store.run((db) =>
      db
        .selectFrom('webhook_attempts as a')
        .innerJoin('webhook_deliveries as d', 'd.id', 'a.delivery_id')
        .select(['d.event_id', 'a.attempt', 'a.status_code'])
        .where('d.endpoint_id', '=', ep.id)
        .orderBy('a.status_code')
        .execute(),
    );
    expect(attempts.map((a) => [a.event_id === failing.id ? 'failing' : 'other', a.attempt, a.status_code])).toEqual([
      ['other', 1, 200],
      ['other', 1, 200],
      ['failing', 1, 500],
    ]);
    await deleteEndpoint(ep.id);
  });

  it('the mails of one claim that went out are recorded in one statement: three mails, one claim and one update', async () => {
    await app.ctx.services.mail.drainer.drain(app.ctx, log);
    const events: { id: string }[] = [];
    for (let i = 0; i < 3; i++) events.push(await emit('order.completed', 10 + i, await createOrder()));

    const statements = await countStatements(() => app.ctx.services.mail.drainer.drain(app.ctx, log));
    const mails = await app.store.run((db) =>
      db.selectFrom('mail_messages').select(['status', 'attempt_count', 'transport_ref']).where('event_id', 'in', events.map((e) => e.id)).execute(),
    );
    expect(mails.map((m) => [m.status, m.attempt_count])).toEqual([
      ['sent', 1],
      ['sent', 1],
      ['sent', 1],
    ]);
    // Each keeps its own Message-ID.
    expect(new Set(mails.map((m) => m.transport_ref)).size).toBe(3);
    expect(statements, statements.join('\n')).toHaveLength(2);
  });
});

describe('the worker settings from the environment', () => {
  it('WORKER_GATHER_MS and WORKER_POLL_MS take whole milliseconds in their range, and name the setting when they are not', () => {
    expect(msFromEnv({}, 'WORKER_GATHER_MS', 0, 10_000)).toBeUndefined();
    expect(msFromEnv({ WORKER_GATHER_MS: '' }, 'WORKER_GATHER_MS', 0, 10_000)).toBeUndefined();
    expect(msFromEnv({ WORKER_GATHER_MS: '0' }, 'WORKER_GATHER_MS', 0, 10_000)).toBe(0);
    expect(msFromEnv({ WORKER_GATHER_MS: '40' }, 'WORKER_GATHER_MS', 0, 10_000)).toBe(40);
    for (const bad of ['-1', '2.5', 'soon', '10001']) {
      expect(() => msFromEnv({ WORKER_GATHER_MS: bad }, 'WORKER_GATHER_MS', 0, 10_000)).toThrow(`WORKER_GATHER_MS must be an integer number of milliseconds from 0 to 10000, got ${bad}`);
    }
    expect(() => msFromEnv({ WORKER_POLL_MS: '5' }, 'WORKER_POLL_MS', 10, 3_600_000)).toThrow(/WORKER_POLL_MS must be/);
  });

  it("gathers for DEFAULT_GATHER_MS in a worker of its own and not at all beside the API, unless WORKER_GATHER_MS or the option says otherwise", () => {
    expect(DEFAULT_GATHER_MS).toBeGreaterThan(0);
    const configured = (env: NodeJS.ProcessEnv) => loadConfig(env).workerGatherMs;
    expect(gatherMsOf({}, configured({}))).toBe(DEFAULT_GATHER_MS);
    expect(gatherMsOf({ withApi: true }, configured({}))).toBe(0);
    expect(gatherMsOf({ withApi: true }, configured({ WORKER_GATHER_MS: '40' }))).toBe(40);
    expect(gatherMsOf({}, configured({ WORKER_GATHER_MS: '0' }))).toBe(0);
    expect(gatherMsOf({ gatherMs: 7, withApi: true }, configured({ WORKER_GATHER_MS: '40' }))).toBe(7);
  });
});
