/**
 * A database that goes away under a running server (the in-process half of the database-fault
 * work; test/reliability/db-restart.test.ts restarts a real PostgreSQL cluster under real
 * processes). Faults are injected where the driver meets the server: a statement fails with the
 * error PostgreSQL sends when it is shut down (57P01), or no connection can be made (ECONNREFUSED).
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startWorkerMetrics } from '../src/worker/metrics-server.ts';
import { email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

let app: TestApp;
let team: TestTeam;
let funnel: Funnel;
const TEST_PAN = '4242424242424242';
const card = { card_number: TEST_PAN, card_exp: '12/39', card_cvv: '123' };

/** What a statement gets when the server is restarted under it (pg's error, as node-postgres raises it). */
const adminShutdown = () => Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01', severity: 'FATAL' });
const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED', errno: -111, syscall: 'connect' });

type Rule = (sql: string) => boolean;
let failWhen: Rule | null = null;
const originalQuery = pg.Client.prototype.query;

/** Every statement the rule picks fails as if the server had just shut down. */
function injectFaults(rule: Rule): void {
  failWhen = rule;
}

/** Fails the statements matching `pattern`, `times` times. */
function failNext(pattern: RegExp, times = 1): Rule {
  let left = times;
  return (sql) => {
    if (left > 0 && pattern.test(sql)) {
      left--;
      return true;
    }
    return false;
  };
}

function anyOf(...rules: Rule[]): Rule {
  return (sql) => rules.some((r) => r(sql));
}

beforeAll(async () => {
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const first = args[0] as string | { text?: string } | undefined;
    const text = typeof first === 'string' ? first : first?.text;
    if (failWhen && typeof text === 'string' && failWhen(text)) {
      // A query object of its own (a protocol transaction's statement or Sync) is failed the way
      // node-postgres fails one it cannot send; a text or config gets a rejected promise.
      if (first instanceof pg.Query) {
        process.nextTick(() => (first as unknown as { handleError(e: unknown, c: unknown): void }).handleError(adminShutdown(), undefined));
        return undefined;
      }
      return Promise.reject(adminShutdown());
    }
    return (originalQuery as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof pg.Client.prototype.query;
  app = await startTestApp();
  team = await app.newTeam();
  funnel = await seedFunnel(app, team.teamId);
  expect((await team.api.post('/v1/test-cards', { card_number: TEST_PAN })).status).toBe(201);
});
afterEach(() => {
  failWhen = null;
  delete (app.store.pool as { connect?: unknown }).connect;
});
afterAll(async () => {
  pg.Client.prototype.query = originalQuery;
  await app?.close();
});

async function metric(name: string): Promise<number> {
  const text = (await app.anonymous.get('/metrics')).text;
  const m = new RegExp(`^${name} (\\d+)`, 'm').exec(text);
  return Number(m?.[1]);
}

describe('database unavailable', () => {
  it('a request answers 503 database_unavailable with Retry-After, /readyz says 503, /healthz 200, db_up 0; all back once it returns', async () => {
    const errorsBefore = await metric('checkstand_db_connection_errors_total');
    // No connection can be made (the server is down): pg-pool's connect fails.
    (app.store.pool as { connect: unknown }).connect = () => Promise.reject(refused());

    const r = await team.api.get('/v1/orders?limit=1');
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('2');
    expect(r.body).toMatchObject({ success: false, data: null, error: { type: 'api_error', code: 'database_unavailable' } });
    expect(r.text).not.toMatch(/ECONNREFUSED|at .*\.ts:\d+/);
    expect((await app.anonymous.get('/readyz')).status).toBe(503);
    expect((await app.anonymous.get('/healthz')).status).toBe(200);
    expect(await metric('checkstand_db_up')).toBe(0);
    expect(await metric('checkstand_db_connection_errors_total')).toBeGreaterThan(errorsBefore);
    expect(app.logs.some((l) => l.includes('"request failed: database unavailable"'))).toBe(true);

    delete (app.store.pool as { connect?: unknown }).connect;
    expect((await team.api.get('/v1/orders?limit=1')).status).toBe(200);
    expect((await app.anonymous.get('/readyz')).status).toBe(200);
    expect(await metric('checkstand_db_up')).toBe(1);
  });

  it('a statement cut by a restart fails only its request (503), and nothing of its transaction is kept', async () => {
    injectFaults(failNext(/insert into "order_lines"/));
    const r = await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email('cut') }, products: [{ offer_id: funnel.offers.serum, quantity: 1 }] });
    expect(r.status, r.text).toBe(503);
    expect(r.body.error.code).toBe('database_unavailable');
    // The order row of that transaction was rolled back with it.
    const orders = await app.store.run((db) => db.selectFrom('orders').select('id').where('team_id', '=', team.teamId).where('status', '=', 'lead').execute());
    expect(orders).toEqual([]);
  });

  it('an Idempotency-Key whose request died with the database is released: the retry runs and gets a normal answer', async () => {
    const key = `db-fault-${Date.now()}`;
    // The product's insert fails, and so does the key's release at the end (the database is still away).
    injectFaults(anyOf(failNext(/insert into "products"/), failNext(/delete from "idempotency_keys"/)));
    const first = await team.api.post('/v1/products', { name: 'Lost in a restart' }, { 'idempotency-key': key });
    expect(first.status, first.text).toBe(503);
    expect(app.ctx.services.idempotency.unsettledCount).toBe(1);

    failWhen = null;
    const retry = await team.api.post('/v1/products', { name: 'Lost in a restart' }, { 'idempotency-key': key });
    expect(retry.status, retry.text).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(app.ctx.services.idempotency.unsettledCount).toBe(0);
    const again = await team.api.post('/v1/products', { name: 'Lost in a restart' }, { 'idempotency-key': key });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data.id).toBe(retry.body.data.id);
  });

  it('a response whose key could not be stored is stored when the database returns, and replayed', async () => {
    const key = `db-fault-done-${Date.now()}`;
    // The database goes away as the response is being stored, and stays away (every statement from
    // then on fails, the audit row's and the health probe's too) until the test brings it back.
    let gone = false;
    injectFaults((sql) => (gone ||= /update "idempotency_keys"/.test(sql)));
    const first = await team.api.post('/v1/products', { name: 'Stored late' }, { 'idempotency-key': key });
    expect(first.status).toBe(201);
    expect(app.ctx.services.idempotency.unsettledCount).toBe(1);
    failWhen = null;
    const again = await team.api.post('/v1/products', { name: 'Stored late' }, { 'idempotency-key': key });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data.id).toBe(first.body.data.id);
  });

  it('an upsell decided without a provider call (a test card) settles its claim in the same commit: a restart right after cannot leave it in flight', async () => {
    const paid = await team.api.post('/checkout/orders', {
      campaign_id: funnel.campaignId,
      currency: 'USD',
      customer: { email: email('up') },
      products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
      payment: card,
    });
    expect(paid.status, paid.text).toBe(200);
    const orderNumber = paid.body.data.order_number as string;
    // From the first commit after the claim is written, the database is gone.
    let claimed = false;
    let committed = false;
    injectFaults((sql) => {
      if (/insert into "order_upsells"/.test(sql)) claimed = true;
      // The commit: a COMMIT, or the Sync of a protocol transaction (src/db/protocol-transactions.ts).
      else if (claimed && /^(commit|sync)$/i.test(sql.trim())) {
        if (committed) return true;
        committed = true;
        return false;
      }
      return committed;
    });
    const up = await team.api.post('/checkout/orders/upsell', { order_number: orderNumber, upsell_id: funnel.upsellId, quantity: 1 });
    failWhen = null;
    expect(committed).toBe(true);
    expect(up.status, up.text).toBe(200);
    const claims = await app.store.run((db) => db.selectFrom('order_upsells').select(['status']).where('order_id', '=', orderNumber).execute());
    expect(claims).toEqual([{ status: 'approved' }]);
  });

  it('the recovery run releases an upsell claim whose request died before its attempt was written', async () => {
    const paid = await team.api.post('/checkout/orders', {
      campaign_id: funnel.campaignId,
      currency: 'USD',
      customer: { email: email('orphan') },
      products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
      payment: card,
    });
    const orderNumber = paid.body.data.order_number as string;
    const old = new Date(Date.now() - 10 * 60_000);
    await app.store.run((db) =>
      db
        .insertInto('order_upsells')
        .values({ id: `oup_orphan_${Date.now()}`, team_id: team.teamId, order_id: orderNumber, upsell_id: funnel.upsellId, quantity: 1, status: 'in_flight', created_at: old, updated_at: old })
        .execute(),
    );
    const tally = await app.ctx.services.checkout.reconcile.recoverUnknownAttempts(120_000);
    expect(tally.released_claims).toBe(1);
    const up = await team.api.post('/checkout/orders/upsell', { order_number: orderNumber, upsell_id: funnel.upsellId, quantity: 1 });
    expect(up.status, up.text).toBe(200);
  });

  it("the worker's own listener (WORKER_METRICS_PORT) says the same: db_up, /readyz 503 while away, 200 after", async () => {
    const w = await startWorkerMetrics(app.store, { host: '127.0.0.1', port: 0 });
    try {
      const get = async (path: string) => {
        const r = await fetch(w.url + path);
        return { status: r.status, text: await r.text() };
      };
      expect((await get('/readyz')).status).toBe(200);
      const metrics = (await get('/metrics')).text;
      expect(metrics).toMatch(/^checkstand_db_up 1$/m);
      expect(metrics).toMatch(/^checkstand_rebills_total\{outcome="charged"\} \d+$/m);
      // Away for every client: new pool connections are refused, and every statement fails as at a
      // shutdown, so one that succeeds on a client checked out before (the earlier tests' work still
      // finishing on a loaded machine) cannot mark the database up between two of these requests.
      (app.store.pool as { connect: unknown }).connect = () => Promise.reject(refused());
      injectFaults(() => true);
      expect((await get('/readyz')).status).toBe(503);
      expect((await get('/healthz')).status).toBe(200);
      expect((await get('/metrics')).text).toMatch(/^checkstand_db_up 0$/m);
      failWhen = null;
      delete (app.store.pool as { connect?: unknown }).connect;
      expect((await get('/readyz')).status).toBe(200);
      expect((await get('/metrics')).text).toMatch(/^checkstand_db_up 1$/m);
      const missing = await get('/nope');
      expect(missing.status).toBe(404);
      expect(JSON.parse(missing.text)).toMatchObject({ success: false, error: { code: 'route_not_found' } });
    } finally {
      await w.close();
    }
  });
});
