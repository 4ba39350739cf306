import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/app/config.ts';
import { createContext } from '../src/app/context.ts';
import { createLogger } from '../src/app/logger.ts';
import { budgetFrom } from '../src/app/limits/settings.ts';
import { sha256Hex } from '../src/app/secrets.ts';
import { buildServer } from '../src/app/server.ts';
import { openStore } from '../src/db/database.ts';
import { ApiClient, type ApiResponse, startTestApp, type TestApp } from './support/harness.ts';

/** Windows far longer than any test: every count below lands in one window. */
const LONG = '10m';

function expectRateLimited(r: ApiResponse, limit: number) {
  expect(r.status).toBe(429);
  expect(r.body).toEqual({
    success: false,
    message: expect.stringContaining('Retry-After'),
    data: null,
    error: { type: 'rate_limit_error', code: 'rate_limited' },
  });
  expect(r.headers.get('ratelimit-limit')).toBe(String(limit));
  expect(r.headers.get('ratelimit-remaining')).toBe('0');
  const retryAfter = Number(r.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(600);
  expect(Number(r.headers.get('ratelimit-reset'))).toBe(retryAfter);
}

/** Spends `n` requests that must all be served, checking the budget counts down by one each. */
async function spend(n: number, limit: number, send: () => Promise<ApiResponse>) {
  for (let i = 1; i <= n; i++) {
    const r = await send();
    expect(r.status, `request ${i} of ${n}`).toBeLessThan(429);
    expect(r.headers.get('ratelimit-limit')).toBe(String(limit));
    expect(r.headers.get('ratelimit-remaining')).toBe(String(limit - i));
    expect(Number(r.headers.get('ratelimit-reset'))).toBeGreaterThan(0);
  }
}

async function limitedCount(app: TestApp, bucket: string): Promise<number> {
  const text = (await app.anonymous.get('/metrics')).text;
  const line = text.split('\n').find((l) => l.startsWith(`checkstand_rate_limited_total{bucket="${bucket}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

const campaign = (name: string) => ({ name, currency: 'USD' });

describe('budget settings', () => {
  it('read <requests>/<window> or off, and refuse anything else at start', () => {
    const fallback = { max: 1, windowMs: 1 };
    expect(budgetFrom('100/1s', fallback, 'X')).toEqual({ max: 100, windowMs: 1_000 });
    expect(budgetFrom('20/1m', fallback, 'X')).toEqual({ max: 20, windowMs: 60_000 });
    expect(budgetFrom('5/250ms', fallback, 'X')).toEqual({ max: 5, windowMs: 250 });
    expect(budgetFrom('1000/h', fallback, 'X')).toEqual({ max: 1000, windowMs: 3_600_000 });
    expect(budgetFrom(undefined, fallback, 'X')).toBe(fallback);
    expect(budgetFrom('off', fallback, 'X')).toBeNull();
    for (const bad of ['100', '100/0s', 'ten/1s', '100/1d', '-1/1s']) expect(() => budgetFrom(bad, fallback, 'X')).toThrow(/X must look like/);
    expect(() => loadConfig({ RATE_LIMIT_STORE: 'redis' })).toThrow(/RATE_LIMIT_STORE/);
  });

  it('a budget that is off is never spent', async () => {
    const app = await startTestApp({ RATE_LIMIT_TOKEN_READS: 'off', RATE_LIMIT_IP_READS: 'off' });
    try {
      const { api } = await app.newTeam();
      const r = await api.get('/v1/orders');
      expect(r.status).toBe(200);
      expect(r.headers.get('ratelimit-limit')).toBeNull();
      expect((await api.post('/v1/campaigns', campaign('off'))).headers.get('ratelimit-limit')).not.toBeNull();
    } finally {
      await app.close();
    }
  }, 60_000);
});

describe('per-token budgets', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ RATE_LIMIT_TOKEN_READS: `5/${LONG}`, RATE_LIMIT_TOKEN_WRITES: `3/${LONG}` });
  });
  afterAll(async () => app?.close());

  it('serve exactly the budget, then answer 429 in the envelope with Retry-After and RateLimit-* headers', async () => {
    const { api } = await app.newTeam();
    await spend(5, 5, () => api.get('/v1/orders'));
    expectRateLimited(await api.get('/v1/orders'), 5);
    expectRateLimited(await api.get('/v1/campaigns'), 5);
    expect(await limitedCount(app, 'token_read')).toBe(2);
    // Operations routes spend no budget.
    expect((await app.anonymous.get('/healthz')).status).toBe(200);
    expect((await app.anonymous.get('/readyz')).status).toBe(200);
  });

  it('are per token: another token of the same team has its own budget', async () => {
    const team = await app.newTeam();
    const { secret } = await app.ctx.services.teams.createToken(team.teamId, 'second');
    const other = new ApiClient(app.url, secret);
    await spend(5, 5, () => team.api.get('/v1/orders'));
    expectRateLimited(await team.api.get('/v1/orders'), 5);
    await spend(5, 5, () => other.get('/v1/orders'));
    expectRateLimited(await other.get('/v1/orders'), 5);
  });

  it('keep reads and writes apart', async () => {
    const { api } = await app.newTeam();
    await spend(3, 3, () => api.post('/v1/campaigns', campaign('W')));
    expectRateLimited(await api.post('/v1/campaigns', campaign('W')), 3);
    expectRateLimited(await api.patch('/v1/campaigns/cmp_missing', { name: 'X' }), 3);
    await spend(5, 5, () => api.get('/v1/campaigns'));
    expectRateLimited(await api.get('/v1/campaigns'), 5);
  });

  it('a request refused with 429 leaves its Idempotency-Key unused', async () => {
    const { api } = await app.newTeam();
    await spend(3, 3, () => api.post('/v1/campaigns', campaign('I')));
    const refused = await api.post('/v1/campaigns', campaign('I'), { 'idempotency-key': 'k-429' });
    expect(refused.status).toBe(429);
    const keys = await app.store.run((db) => db.selectFrom('idempotency_keys').select('key').where('key', '=', 'k-429').execute());
    expect(keys).toEqual([]);
  });
});

describe('per-address budgets', () => {
  let app: TestApp;
  const from = (ip: string) => ({ 'x-forwarded-for': ip });
  beforeAll(async () => {
    app = await startTestApp({
      TRUST_PROXY: '127.0.0.1',
      RATE_LIMIT_IP_READS: `4/${LONG}`,
      RATE_LIMIT_IP_WRITES: `2/${LONG}`,
      RATE_LIMIT_WEBHOOKS: `2/${LONG}`,
      RATE_LIMIT_FAILED_AUTH: `3/${LONG}`,
    });
  });
  afterAll(async () => app?.close());

  it('one address shares its budget across tokens; another address has its own', async () => {
    const a = await app.newTeam();
    const b = await app.newTeam();
    const ip = from('203.0.113.10');
    expect((await a.api.get('/v1/orders', ip)).status).toBe(200);
    expect((await b.api.get('/v1/orders', ip)).status).toBe(200);
    expect((await a.api.get('/v1/orders', ip)).status).toBe(200);
    const last = await b.api.get('/v1/orders', ip);
    expect(last.status).toBe(200);
    expect(last.headers.get('ratelimit-remaining')).toBe('0');
    expectRateLimited(await a.api.get('/v1/orders', ip), 4);
    expectRateLimited(await b.api.get('/v1/orders', ip), 4);
    // Writes from that address have their own budget; other addresses are untouched.
    expect((await a.api.post('/v1/campaigns', campaign('A'), ip)).status).toBe(201);
    expect((await a.api.get('/v1/orders', from('203.0.113.11'))).status).toBe(200);
    expect((await app.anonymous.get('/healthz', ip)).status).toBe(200);
    expect((await app.anonymous.get('/metrics', ip)).status).toBe(200);
    expect(await limitedCount(app, 'ip_read')).toBe(2);
  });

  it('provider webhooks have a per-address budget of their own', async () => {
    const ip = from('203.0.113.20');
    const { api } = await app.newTeam();
    for (let i = 0; i < 2; i++) {
      const r = await app.anonymous.post('/webhooks/extpay', { type: 'x' }, ip);
      expect(r.status).not.toBe(429);
    }
    expectRateLimited(await app.anonymous.post('/webhooks/extpay', { type: 'x' }, ip), 2);
    expect((await api.post('/v1/campaigns', campaign('after webhooks'), ip)).status).toBe(201);
    expect(await limitedCount(app, 'webhook')).toBe(1);
  });

  it('failed authentications: after the budget, 429 even with a valid token until the window ends; other addresses unaffected', async () => {
    const ip = from('203.0.113.30');
    const { api, token } = await app.newTeam();
    expect((await api.get('/v1/orders', ip)).status).toBe(200);
    const guesser = new ApiClient(app.url, `csk_${'x'.repeat(40)}`);
    for (let i = 0; i < 3; i++) {
      const r = await guesser.get('/v1/orders', ip);
      expect(r.status).toBe(401);
      expect(r.body.error.code).toBe('unauthenticated');
    }
    expectRateLimited(await guesser.get('/v1/orders', ip), 3);
    expectRateLimited(await api.get('/v1/orders', ip), 3);
    expectRateLimited(await app.anonymous.post('/checkout/leads', {}, ip), 3);
    expect((await new ApiClient(app.url, token).get('/v1/orders', from('203.0.113.31'))).status).toBe(200);
    expect(await limitedCount(app, 'failed_auth')).toBe(3);
  });
});

describe('the PostgreSQL store (RATE_LIMIT_STORE=postgres)', () => {
  it('counts in the rate_limits table under a hash of the token, never the token', async () => {
    const app = await startTestApp({ RATE_LIMIT_STORE: 'postgres', RATE_LIMIT_TOKEN_READS: `3/${LONG}` });
    try {
      const { api, token } = await app.newTeam();
      await spend(3, 3, () => api.get('/v1/orders'));
      expectRateLimited(await api.get('/v1/orders'), 3);
      const rows = await app.store.run((db) => db.selectFrom('rate_limits').selectAll().execute());
      expect(JSON.stringify(rows)).not.toContain(token);
      const mine = rows.find((r) => r.key === `token_read:${sha256Hex(token).slice(0, 32)}`);
      expect(mine?.count).toBe(4);
    } finally {
      await app.close();
    }
  }, 60_000);

  // Two `serve` processes on one PostgreSQL: a second server with its own pool on the same database.
  it.runIf(process.env.TEST_DATABASE_URL)('shares one budget between two server instances on one database', async () => {
    const env = { RATE_LIMIT_STORE: 'postgres', RATE_LIMIT_TOKEN_READS: `4/${LONG}` };
    const first = await startTestApp(env);
    const url = (first.store.pool as unknown as { options: { connectionString: string } }).options.connectionString;
    const store = await openStore({ databaseUrl: url, dataDir: '.vitest-tmp', poolMax: 2 });
    const ctx = createContext({ ...loadConfig(env), port: 0 }, store, first.ctx.secrets);
    const second = await buildServer(ctx, createLogger('silent', new Writable({ write: (_c, _e, cb) => cb() })));
    try {
      await second.listen({ host: '127.0.0.1', port: 0 });
      const addr = second.server.address();
      const secondUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
      const { api, token } = await first.newTeam();
      const other = new ApiClient(secondUrl, token);
      expect((await api.get('/v1/orders')).headers.get('ratelimit-remaining')).toBe('3');
      expect((await other.get('/v1/orders')).headers.get('ratelimit-remaining')).toBe('2');
      expect((await api.get('/v1/orders')).headers.get('ratelimit-remaining')).toBe('1');
      expect((await other.get('/v1/orders')).headers.get('ratelimit-remaining')).toBe('0');
      expectRateLimited(await api.get('/v1/orders'), 4);
      expectRateLimited(await other.get('/v1/orders'), 4);
    } finally {
      await second.close();
      await ctx.services.mail.close();
      await store.close();
      await first.close();
    }
  }, 60_000);
});
