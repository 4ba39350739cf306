import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extpayWebhookUrl } from '../src/app/seed.ts';
import { EXTPAY_EVENT_TYPES } from '../src/providers/extpay/webhook.ts';
import { EXTPAY_INTEGRATION_PERMISSIONS, sandboxApiBaseUrl } from '../src/providers/extpay/types.ts';
import { EXTPAY_PERMISSIONS } from '../src/sandbox/extpay-provider.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

/**
 * The extpay connection doctor (issue 18), over HTTP against the Whop sandbox: every check fails on
 * purpose and passes once the cause is fixed, and the doctor changes nothing at the provider but the
 * one test delivery. Each case has its own provider company, so no other connection's secret can
 * verify its deliveries (but the one that shares a company on purpose). The app runs behind a loopback
 * TCP forwarder named by PUBLIC_BASE_URL, as behind a proxy: the doctor's webhook address is the configured one.
 */
let app: TestApp;
let team: TestTeam;
let sandbox: { url: string; close(): Promise<void> };
let proxy: { url: string; forwardTo(port: number): void; close(): Promise<void> };
let hookUrl: string;

/** A loopback address that forwards every connection to a port given later (the app's, once it listens). */
async function publicAddress(): Promise<typeof proxy> {
  let target = 0;
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target, '127.0.0.1');
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    open.add(client).add(upstream);
    for (const s of [client, upstream]) s.on('error', end).on('close', end);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    forwardTo: (port) => (target = port),
    close: () => new Promise<void>((r) => { for (const s of open) s.destroy(); server.close(() => r()); }),
  };
}

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  proxy = await publicAddress();
  app = await startTestApp({ PUBLIC_BASE_URL: proxy.url });
  proxy.forwardTo(Number(new URL(app.url).port));
  team = await app.newTeam();
  hookUrl = `${proxy.url}/webhooks/extpay`;
}, 60_000);
afterAll(async () => {
  await app?.close();
  await proxy?.close();
  await sandbox?.close();
});

type Check = { name: string; status: 'pass' | 'warn' | 'fail'; message: string; fix: string | null; details?: Record<string, unknown> };
type Env = 'sandbox' | 'production';

async function company(env: Env, settings: Record<string, unknown>) {
  const r = await fetch(`${sandbox.url}/extpay/${env}/sandbox/companies`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(settings) });
  expect(r.status, await r.clone().text()).toBe(200);
}

let n = 0;
/** A sandbox company set up as the merchant should, and a connection to it; `over` breaks one thing. */
async function setup(over: { company?: Record<string, unknown>; connection?: Record<string, unknown> } = {}) {
  n += 1;
  const id = `biz_doctor${n}${Date.now() % 100000}`;
  const key = `key_doctor_${n}_${Date.now()}`;
  const secret = `ws_doctor_secret_${n}`;
  await company('sandbox', { company_id: id, api_keys: [{ key }], webhook_url: hookUrl, webhook_secret: secret, ...over.company });
  const c = await team.api.post('/v1/extpay-connections', {
    name: `doctor ${n}`,
    api_key: key,
    company_id: id,
    environment: 'Sandbox',
    webhook_secret: secret,
    base_url: sandboxApiBaseUrl(sandbox.url, 'sandbox'),
    ...over.connection,
  });
  expect(c.status, c.text).toBe(201);
  return { id, key, secret, connectionId: c.body.data.id as string };
}

async function doctor(connectionId: string): Promise<{ status: string; checks: Check[] }> {
  const r = await team.api.post(`/v1/extpay-connections/${connectionId}/doctor`, {});
  expect(r.status, r.text).toBe(200);
  expect(r.body.success).toBe(true);
  return r.body.data;
}
const check = (report: { checks: Check[] }, name: string) => {
  const c = report.checks.find((x) => x.name === name);
  expect(c, `${name} in ${JSON.stringify(report.checks.map((x) => x.name))}`).toBeDefined();
  return c!;
};

describe('POST /v1/extpay-connections/{id}/doctor', () => {
  it('a connection set up right passes every named check, and the provider is left as it was', async () => {
    const s = await setup();
    const before = await (await fetch(`${sandbox.url}/extpay/sandbox/sandbox/ledger?company_id=${s.id}`)).json();
    const report = await doctor(s.connectionId);
    expect(report.checks.map((c) => c.name)).toEqual(['key_authenticates', 'environment', 'api_version', 'company_matches_key', 'permissions', 'webhook_url', 'webhook_events', 'webhook_round_trip', 'clock_skew']);
    for (const c of report.checks) expect(c, JSON.stringify(c)).toMatchObject({ status: 'pass', fix: null });
    expect(report.status).toBe('pass');
    expect(check(report, 'clock_skew').details!.skew_seconds).toBeTypeOf('number');
    const after = (await (await fetch(`${sandbox.url}/extpay/sandbox/sandbox/ledger?company_id=${s.id}`)).json()) as Record<string, unknown[]>;
    for (const k of ['checkout_configurations', 'payments', 'memberships', 'refunds', 'disputes', 'payment_methods', 'events']) expect(after[k], k).toEqual((before as Record<string, unknown[]>)[k]);
  });

  it('wrong secret: the signed test delivery does not verify; pasting the right one fixes it', async () => {
    const s = await setup({ connection: { webhook_secret: 'ws_pasted_from_production' } });
    const bad = await doctor(s.connectionId);
    expect(bad.status).toBe('fail');
    expect(check(bad, 'webhook_round_trip')).toMatchObject({ status: 'fail', message: expect.stringMatching(/saved webhook secret/), fix: expect.stringMatching(/secret/) });
    expect(check(bad, 'key_authenticates').status).toBe('pass');
    expect((await team.api.patch(`/v1/extpay-connections/${s.connectionId}`, { webhook_secret: s.secret })).status).toBe(200);
    expect(check(await doctor(s.connectionId), 'webhook_round_trip').status).toBe('pass');
  });

  it("two connections of one company: this one's wrong secret fails the round trip even though the other's verified it; the right secret passes", async () => {
    const s = await setup();
    const mk = await team.api.post('/v1/extpay-connections', { name: 'twin', api_key: s.key, company_id: s.id, environment: 'Sandbox', webhook_secret: 'ws_pasted_from_elsewhere', base_url: sandboxApiBaseUrl(sandbox.url, 'sandbox') });
    expect(mk.status, mk.text).toBe(201);
    const twin = mk.body.data.id as string;
    const bad = await doctor(twin);
    // The receiver answered 2xx (the first connection's secret verified the delivery): that alone no longer passes.
    expect(check(bad, 'webhook_round_trip')).toMatchObject({ status: 'fail', message: expect.stringMatching(/another connection of company/), fix: expect.stringMatching(/secret/) });
    expect(check(bad, 'clock_skew').status).toBe('pass');
    expect(check(await doctor(s.connectionId), 'webhook_round_trip').status).toBe('pass');
    expect((await team.api.patch(`/v1/extpay-connections/${twin}`, { webhook_secret: s.secret })).status).toBe(200);
    expect(check(await doctor(twin), 'webhook_round_trip')).toMatchObject({ status: 'pass' });
  });

  it('no secret saved: the round trip fails with the fix', async () => {
    const s = await setup();
    await team.api.patch(`/v1/extpay-connections/${s.connectionId}`, { webhook_secret: null });
    expect(check(await doctor(s.connectionId), 'webhook_round_trip')).toMatchObject({ status: 'fail', message: expect.stringMatching(/No webhook secret/) });
  });

  it('missing webhook kinds are named; subscribing to all eleven fixes it', async () => {
    const some = EXTPAY_EVENT_TYPES.filter((t) => t !== 'refund.updated' && t !== 'setup_intent.succeeded');
    const s = await setup({ company: { webhook_events: some } });
    const bad = await doctor(s.connectionId);
    expect(check(bad, 'webhook_events')).toMatchObject({ status: 'fail', details: { missing: ['refund.updated', 'setup_intent.succeeded'] } });
    expect(check(bad, 'webhook_events').message).toContain('refund.updated, setup_intent.succeeded');
    await company('sandbox', { company_id: s.id, webhook_events: [...EXTPAY_EVENT_TYPES, 'payment.authorized'] });
    expect(check(await doctor(s.connectionId), 'webhook_events').status).toBe('pass');
  });

  it("wrong URL: the provider's webhook points elsewhere; pointing it at this install fixes it", async () => {
    const s = await setup({ company: { webhook_url: 'http://127.0.0.1:9/old-install/webhooks/extpay' } });
    const bad = await doctor(s.connectionId);
    expect(check(bad, 'webhook_url')).toMatchObject({ status: 'fail', details: { expected: hookUrl, found: ['http://127.0.0.1:9/old-install/webhooks/extpay'] } });
    expect(check(bad, 'webhook_url').fix).toContain(hookUrl);
    await company('sandbox', { company_id: s.id, webhook_url: hookUrl });
    const good = await doctor(s.connectionId);
    expect(check(good, 'webhook_url').status).toBe('pass');
    expect(check(good, 'webhook_round_trip').status).toBe('pass');
  });

  it('skewed clock: measured and reported; over five minutes the receiver refuses, and fixing the clock passes', async () => {
    const s = await setup({ company: { clock_skew_seconds: 900 } });
    const bad = await doctor(s.connectionId);
    const skew = check(bad, 'clock_skew');
    expect(skew.status).toBe('fail');
    expect(skew.details!.skew_seconds).toBeGreaterThanOrEqual(895);
    expect(skew.details!.skew_seconds).toBeLessThanOrEqual(905);
    expect(check(bad, 'webhook_round_trip')).toMatchObject({ status: 'fail', message: expect.stringMatching(/timestamp/) });

    await company('sandbox', { company_id: s.id, clock_skew_seconds: -120 });
    const late = await doctor(s.connectionId);
    expect(check(late, 'clock_skew')).toMatchObject({ status: 'warn', message: expect.stringMatching(/behind/) });
    expect(check(late, 'webhook_round_trip').status).toBe('pass');

    await company('sandbox', { company_id: s.id, clock_skew_seconds: 0 });
    const good = await doctor(s.connectionId);
    expect(check(good, 'clock_skew').status).toBe('pass');
    expect(Math.abs(check(good, 'clock_skew').details!.skew_seconds as number)).toBeLessThanOrEqual(5);
  });

  it("wrong environment: a production key on a sandbox connection is named as such; the sandbox key fixes it", async () => {
    const s = await setup();
    const prodKey = `key_doctor_prod_${Date.now()}`;
    await company('production', { company_id: s.id, api_keys: [{ key: prodKey }] });
    await team.api.patch(`/v1/extpay-connections/${s.connectionId}`, { api_key: prodKey });
    const bad = await doctor(s.connectionId);
    expect(check(bad, 'key_authenticates').status).toBe('fail');
    expect(check(bad, 'environment')).toMatchObject({ status: 'fail', message: expect.stringMatching(/production environment/) });
    expect(check(bad, 'webhook_round_trip').status).toBe('warn');
    await team.api.patch(`/v1/extpay-connections/${s.connectionId}`, { api_key: s.key });
    const good = await doctor(s.connectionId);
    expect(check(good, 'key_authenticates').status).toBe('pass');
    expect(check(good, 'environment').status).toBe('pass');
  });

  it('a key of another company fails company_matches_key; the right company passes', async () => {
    const s = await setup();
    const other = await team.api.post('/v1/extpay-connections', { name: 'typo', api_key: s.key, company_id: 'biz_sometypo', environment: 'Sandbox', webhook_secret: s.secret, base_url: sandboxApiBaseUrl(sandbox.url, 'sandbox') });
    const bad = await doctor(other.body.data.id);
    expect(check(bad, 'key_authenticates').status).toBe('pass');
    expect(check(bad, 'company_matches_key')).toMatchObject({ status: 'fail', message: expect.stringContaining('biz_sometypo') });
    expect(check(await doctor(s.connectionId), 'company_matches_key').status).toBe('pass');
  });

  it('names every permission the key lacks; granting them passes', async () => {
    const lacking = ['access_pass:update', 'member:manage', 'payment:dispute:read', 'developer:manage_webhook'];
    const s = await setup();
    await company('sandbox', { company_id: s.id, api_keys: [{ key: s.key, permissions: EXTPAY_PERMISSIONS.filter((p) => !lacking.includes(p)) }] });
    const bad = await doctor(s.connectionId);
    const perms = check(bad, 'permissions');
    expect(perms.status).toBe('fail');
    expect([...(perms.details!.missing as string[])].sort()).toEqual([...lacking].sort());
    for (const p of lacking) expect(perms.fix).toContain(p);
    // Without developer:manage_webhook the webhook cannot be read: a warning with the URL to check by hand.
    expect(check(bad, 'webhook_url')).toMatchObject({ status: 'warn', fix: expect.stringContaining(hookUrl) });
    await company('sandbox', { company_id: s.id, api_keys: [{ key: s.key }] });
    const good = await doctor(s.connectionId);
    expect(check(good, 'permissions').status).toBe('pass');
    expect(check(good, 'webhook_url').status).toBe('pass');
  });

  it('a key that lacks only developer:manage_webhook (the doctor alone uses it) warns, and the webhook is checked by hand', async () => {
    const s = await setup();
    await company('sandbox', { company_id: s.id, api_keys: [{ key: s.key, permissions: EXTPAY_PERMISSIONS.filter((p) => p !== 'developer:manage_webhook') }] });
    const report = await doctor(s.connectionId);
    expect(check(report, 'permissions')).toMatchObject({ status: 'warn', details: { missing: ['developer:manage_webhook'] } });
    expect(check(report, 'webhook_url').status).toBe('warn');
    // Without Whop's webhooks list there is no hook to ask for a test: the doctor signs one itself.
    expect(check(report, 'webhook_round_trip')).toMatchObject({ status: 'warn', message: expect.stringMatching(/signed here/) });
    expect(report.status).toBe('warn');
  });

  it('a pinned Api-Version-Date the provider does not know fails api_version, and what it hides is "not checked"; clearing the pin passes', async () => {
    const s = await setup({ connection: { api_version_date: '2024-02-30' } });
    const bad = await doctor(s.connectionId);
    expect(check(bad, 'api_version').status).toBe('fail');
    // Every probe was refused for the version before the company or a permission was looked at.
    for (const name of ['company_matches_key', 'permissions']) expect(check(bad, name), name).toMatchObject({ status: 'warn', message: expect.stringMatching(/^Not checked: .*Api-Version-Date/) });
    const cleared = await team.api.patch(`/v1/extpay-connections/${s.connectionId}`, { api_version_date: null });
    expect(cleared.body.data.api_version_date).toBe('2026-07-01');
    const good = await doctor(s.connectionId);
    for (const name of ['api_version', 'company_matches_key', 'permissions']) expect(check(good, name).status, name).toBe('pass');
  });

  it('every permission the integration uses, missing alone, is named in details.missing', async () => {
    const all = [...new Set(Object.values(EXTPAY_INTEGRATION_PERMISSIONS).flat())];
    expect(all).toHaveLength(14);
    for (const lacking of all) {
      const s = await setup();
      await company('sandbox', { company_id: s.id, api_keys: [{ key: s.key, permissions: EXTPAY_PERMISSIONS.filter((p) => p !== lacking) }] });
      const perms = check(await doctor(s.connectionId), 'permissions');
      expect(perms, lacking).toMatchObject({ status: lacking === 'developer:manage_webhook' ? 'warn' : 'fail', details: { missing: [lacking] } });
      expect(perms.fix, lacking).toContain(lacking);
    }
  });

  it('the webhook address is the configured one, never the Host the doctor request names (no PUBLIC_BASE_URL)', async () => {
    const bare = await startTestApp();
    try {
      const t = await bare.newTeam();
      const s = await setup();
      const made = await t.api.post('/v1/extpay-connections', { name: 'host', api_key: s.key, company_id: s.id, environment: 'Sandbox', webhook_secret: s.secret, base_url: sandboxApiBaseUrl(sandbox.url, 'sandbox') });
      expect(made.status, made.text).toBe(201);
      const { port } = new URL(bare.url);
      const answer = await new Promise<{ status: number; body: any }>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: `/v1/extpay-connections/${made.body.data.id}/doctor`, headers: { host: 'attacker.example:8080', authorization: `Bearer ${t.token}`, 'content-type': 'application/json' } }, (res) => {
          let text = '';
          res.on('data', (c) => (text += c)).on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
        });
        req.on('error', reject).end('{}');
      });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      // The company's webhook points at the proxied app, not at this install's configured address (HOST:PORT, :0 under the harness).
      expect(check(answer.body.data, 'webhook_url')).toMatchObject({ status: 'fail', details: { expected: extpayWebhookUrl(bare.ctx.config) } });
      expect(JSON.stringify(answer.body.data)).not.toContain('attacker.example');
    } finally {
      await bare.close();
    }
  });

  it("is another team's 404 and needs connections:manage", async () => {
    const s = await setup();
    const other = await app.newTeam('other');
    expect((await other.api.post(`/v1/extpay-connections/${s.connectionId}/doctor`, {})).status).toBe(404);
    expect((await app.anonymous.post(`/v1/extpay-connections/${s.connectionId}/doctor`, {})).status).toBe(401);
  });
});
