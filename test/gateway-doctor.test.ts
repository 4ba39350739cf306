import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox } from '../src/sandbox/server.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

/**
 * The card gateway doctor (issue 18), over HTTP against the NMI and 3-D Secure sandboxes: each check
 * fails on purpose and passes once fixed. The app runs behind a loopback TCP forwarder named by
 * PUBLIC_BASE_URL, as behind a proxy: the doctor's webhook address is the configured one.
 */
let app: TestApp;
let team: TestTeam;
let sandbox: { url: string; close(): Promise<void> };
let proxy: { url: string; forwardTo(port: number): void; close(): Promise<void> };

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
}, 60_000);
afterAll(async () => {
  await app?.close();
  await proxy?.close();
  await sandbox?.close();
});

type Check = { name: string; status: 'pass' | 'warn' | 'fail'; message: string; fix: string | null; details?: Record<string, unknown> };
let seq = 0;

async function doctor(id: string): Promise<{ status: string; checks: Check[] }> {
  const r = await team.api.post(`/v1/gateways/${id}/doctor`, {});
  expect(r.status, r.text).toBe(200);
  return r.body.data;
}
const check = (report: { checks: Check[] }, name: string) => {
  const c = report.checks.find((x) => x.name === name);
  expect(c, `${name} in ${JSON.stringify(report.checks)}`).toBeDefined();
  return c!;
};
const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('POST /v1/gateways/{id}/doctor — NMI', () => {
  async function nmi() {
    const key = `nmi_doctor_${process.pid}_${++seq}`;
    const r = await team.api.post('/v1/gateways', { name: `nmi ${key}`, kind: 'nmi', base_url: sandbox.url, credentials: { security_key: key }, test_mode: true });
    expect(r.status, r.text).toBe(201);
    return { id: r.body.data.id as string, key };
  }

  it('passes with a working key and the Customer Vault enabled', async () => {
    const g = await nmi();
    const report = await doctor(g.id);
    expect(report.checks.map((c) => [c.name, c.status])).toEqual([
      ['key_authenticates', 'pass'],
      ['customer_vault', 'pass'],
    ]);
    expect(report.status).toBe('pass');
    // Query API reads only: the merchant's ledger is still empty.
    expect(((await (await fetch(`${sandbox.url}/sandbox/nmi/ledger?security_key=${g.key}`)).json()) as { transactions: unknown[] }).transactions).toEqual([]);
  });

  it('a security key the Query API refuses fails; the right key passes', async () => {
    const g = await nmi();
    expect((await team.api.patch(`/v1/gateways/${g.id}`, { credentials: { security_key: 'invalid_typo' } })).status).toBe(200);
    const bad = await doctor(g.id);
    expect(check(bad, 'key_authenticates')).toMatchObject({ status: 'fail', fix: expect.stringMatching(/security key/i) });
    expect(check(bad, 'customer_vault').status).toBe('warn');
    await team.api.patch(`/v1/gateways/${g.id}`, { credentials: { security_key: g.key } });
    expect(check(await doctor(g.id), 'key_authenticates').status).toBe('pass');
  });

  it('a merchant account without the Customer Vault fails customer_vault; enabling it passes', async () => {
    const g = await nmi();
    expect((await post(`${sandbox.url}/sandbox/nmi/accounts`, { security_key: g.key, customer_vault_enabled: false })).status).toBe(200);
    const bad = await doctor(g.id);
    expect(check(bad, 'key_authenticates').status).toBe('pass');
    expect(check(bad, 'customer_vault')).toMatchObject({ status: 'fail', message: expect.stringMatching(/not enabled/) });
    await post(`${sandbox.url}/sandbox/nmi/accounts`, { security_key: g.key, customer_vault_enabled: true });
    expect(check(await doctor(g.id), 'customer_vault').status).toBe('pass');
  });
});

describe('POST /v1/gateways/{id}/doctor — 3-D Secure', () => {
  const SECRET = 'whsec_3ds_doctor';

  async function threeds(opts: { credentials?: Record<string, string>; omitRisk?: boolean; sandboxUrl?: string | null; sandboxSecret?: string; test_mode?: boolean } = {}) {
    const apiKey = `sk_test_doctor_${process.pid}_${++seq}`;
    const r = await team.api.post('/v1/gateways', {
      name: `3ds ${seq}`,
      kind: 'threeds',
      base_url: `${sandbox.url}/3ds`,
      credentials: { api_key: apiKey, ...(opts.omitRisk ? {} : { risk_sdk_key: 'pk_test_risk' }), webhook_secret: SECRET, ...opts.credentials },
      ...(opts.test_mode !== undefined ? { test_mode: opts.test_mode } : {}),
    });
    expect(r.status, r.text).toBe(201);
    const id = r.body.data.id as string;
    const webhookUrl = r.body.data.webhook_url as string;
    expect(webhookUrl).toBe(`${proxy.url}/webhooks/gateways/${id}`);
    await configure(apiKey, { webhook_url: opts.sandboxUrl === undefined ? webhookUrl : opts.sandboxUrl, webhook_secret: opts.sandboxSecret ?? SECRET });
    return { id, apiKey, webhookUrl };
  }
  const configure = (apiKey: string, settings: Record<string, unknown>) => post(`${sandbox.url}/3ds/sandbox/accounts`, { api_key: apiKey, ...settings });

  it('passes when the key, mode, risk SDK key and webhook are right', async () => {
    const g = await threeds();
    const report = await doctor(g.id);
    expect(report.checks.map((c) => c.name)).toEqual(['key_mode', 'risk_sdk_key', 'key_authenticates', 'webhook_url', 'webhook_round_trip', 'clock_skew']);
    for (const c of report.checks) expect(c, JSON.stringify(c)).toMatchObject({ status: 'pass', fix: null });
  });

  it('key mode: an sk_test_ key on a live gateway fails; test mode on passes', async () => {
    const g = await threeds();
    await team.api.patch(`/v1/gateways/${g.id}`, { test_mode: false });
    expect(check(await doctor(g.id), 'key_mode')).toMatchObject({ status: 'fail', message: expect.stringMatching(/test \(sk_test_\) key but the gateway is in live mode/) });
    await team.api.patch(`/v1/gateways/${g.id}`, { test_mode: true });
    expect(check(await doctor(g.id), 'key_mode').status).toBe('pass');
  });

  it('a live key on a test-mode gateway fails key_mode and does not authenticate at the sandbox', async () => {
    const g = await threeds({ credentials: { api_key: `sk_live_doctor_${Date.now()}` }, test_mode: true });
    const bad = await doctor(g.id);
    expect(check(bad, 'key_mode').status).toBe('fail');
    expect(check(bad, 'key_authenticates').status).toBe('fail');
  });

  it('no risk SDK key fails; saving one passes', async () => {
    const g = await threeds({ omitRisk: true });
    expect(check(await doctor(g.id), 'risk_sdk_key')).toMatchObject({ status: 'fail', fix: expect.stringContaining('risk_sdk_key') });
    await team.api.patch(`/v1/gateways/${g.id}`, { credentials: { api_key: g.apiKey, risk_sdk_key: 'pk_test_risk', webhook_secret: SECRET } });
    expect(check(await doctor(g.id), 'risk_sdk_key').status).toBe('pass');
  });

  it('wrong secret: the gateway signs with another; saving the right one passes', async () => {
    const g = await threeds({ sandboxSecret: 'whsec_the_gateways_real_one' });
    expect(check(await doctor(g.id), 'webhook_round_trip')).toMatchObject({ status: 'fail', message: expect.stringMatching(/saved webhook secret/) });
    await team.api.patch(`/v1/gateways/${g.id}`, { credentials: { api_key: g.apiKey, risk_sdk_key: 'pk_test_risk', webhook_secret: 'whsec_the_gateways_real_one' } });
    expect(check(await doctor(g.id), 'webhook_round_trip').status).toBe('pass');
  });

  it("wrong URL: the gateway's webhook points elsewhere; pointing it here passes", async () => {
    const g = await threeds({ sandboxUrl: 'http://127.0.0.1:9/elsewhere' });
    const bad = await doctor(g.id);
    expect(check(bad, 'webhook_url')).toMatchObject({ status: 'fail', details: { expected: g.webhookUrl } });
    await configure(g.apiKey, { webhook_url: g.webhookUrl });
    const good = await doctor(g.id);
    expect(check(good, 'webhook_url').status).toBe('pass');
    expect(check(good, 'webhook_round_trip').status).toBe('pass');
  });

  it("skewed clock: the gateway's signing time is measured; over five minutes the receiver refuses, and fixing the clock passes", async () => {
    const g = await threeds();
    await configure(g.apiKey, { clock_skew_seconds: 900 });
    const bad = await doctor(g.id);
    expect(check(bad, 'clock_skew')).toMatchObject({ status: 'fail', message: expect.stringMatching(/ahead of/) });
    expect(check(bad, 'clock_skew').details!.skew_seconds).toBeGreaterThanOrEqual(895);
    expect(check(bad, 'clock_skew').details!.skew_seconds).toBeLessThanOrEqual(905);
    expect(check(bad, 'webhook_round_trip')).toMatchObject({ status: 'fail', message: expect.stringMatching(/timestamp/) });

    await configure(g.apiKey, { clock_skew_seconds: -120 });
    const late = await doctor(g.id);
    expect(check(late, 'clock_skew')).toMatchObject({ status: 'warn', message: expect.stringMatching(/behind/) });
    expect(check(late, 'webhook_round_trip').status).toBe('pass');

    await configure(g.apiKey, { clock_skew_seconds: 0 });
    const good = await doctor(g.id);
    expect(check(good, 'clock_skew').status).toBe('pass');
    expect(Math.abs(check(good, 'clock_skew').details!.skew_seconds as number)).toBeLessThanOrEqual(5);
  });

  it('a webhook kind the gateway does not send is named; subscribing to all three passes', async () => {
    const g = await threeds();
    await configure(g.apiKey, { webhook_events: ['PAYMENT_SUCCEEDED', 'PAYMENT_FAILED'] });
    const bad = await doctor(g.id);
    expect(check(bad, 'webhook_url')).toMatchObject({ status: 'fail', details: { missing: ['PAYMENT_UNDER_REVIEW'] }, message: expect.stringContaining('PAYMENT_UNDER_REVIEW') });
    expect(check(bad, 'webhook_url').fix).toContain('PAYMENT_UNDER_REVIEW');
    await configure(g.apiKey, { webhook_events: ['PAYMENT_SUCCEEDED', 'PAYMENT_FAILED', 'PAYMENT_UNDER_REVIEW'] });
    expect(check(await doctor(g.id), 'webhook_url').status).toBe('pass');
  });

  it('no webhook secret saved: the round trip fails with the fix; saving it passes', async () => {
    const g = await threeds();
    expect((await team.api.patch(`/v1/gateways/${g.id}`, { credentials: { api_key: g.apiKey, risk_sdk_key: 'pk_test_risk' } })).status).toBe(200);
    const bad = await doctor(g.id);
    expect(check(bad, 'webhook_round_trip')).toMatchObject({ status: 'fail', message: expect.stringMatching(/No webhook secret/), fix: expect.stringContaining('webhook_secret') });
    expect(check(bad, 'clock_skew').status).toBe('warn');
    expect(check(bad, 'webhook_url').status).toBe('pass');
    await team.api.patch(`/v1/gateways/${g.id}`, { credentials: { api_key: g.apiKey, risk_sdk_key: 'pk_test_risk', webhook_secret: SECRET } });
    expect(check(await doctor(g.id), 'webhook_round_trip').status).toBe('pass');
  });

  it('key_authenticates fails on its own: a revoked sk_test_ key on a test-mode gateway; a working key passes', async () => {
    const g = await threeds();
    await configure(g.apiKey, { api_key_revoked: true });
    const bad = await doctor(g.id);
    expect(check(bad, 'key_mode').status).toBe('pass');
    expect(check(bad, 'risk_sdk_key').status).toBe('pass');
    expect(check(bad, 'key_authenticates')).toMatchObject({ status: 'fail', fix: expect.stringMatching(/secret API key/) });
    for (const name of ['webhook_url', 'webhook_round_trip', 'clock_skew']) expect(check(bad, name).status, name).toBe('warn');
    await configure(g.apiKey, { api_key_revoked: false });
    const good = await doctor(g.id);
    for (const c of good.checks) expect(c, JSON.stringify(c)).toMatchObject({ status: 'pass' });
  });

  it("checks the record's webhook_url, never the Host the doctor request names (no PUBLIC_BASE_URL)", async () => {
    // Without PUBLIC_BASE_URL the address comes from HOST:PORT, as the record shows it (the harness listens on a port picked later, so the record says :0).
    const bare = await startTestApp();
    try {
      const t = await bare.newTeam();
      const apiKey = `sk_test_doctor_host_${process.pid}_${++seq}`;
      const made = await t.api.post('/v1/gateways', { name: 'host', kind: 'threeds', base_url: `${sandbox.url}/3ds`, credentials: { api_key: apiKey, risk_sdk_key: 'pk_test_risk', webhook_secret: SECRET } });
      expect(made.status, made.text).toBe(201);
      const record = made.body.data.webhook_url as string;
      await configure(apiKey, { webhook_url: `${bare.url}/webhooks/gateways/${made.body.data.id}`, webhook_secret: SECRET });
      const { port } = new URL(bare.url);
      const answer = await new Promise<{ status: number; body: any }>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: `/v1/gateways/${made.body.data.id}/doctor`, headers: { host: 'attacker.example:8080', authorization: `Bearer ${t.token}`, 'content-type': 'application/json' } }, (res) => {
          let text = '';
          res.on('data', (c) => (text += c)).on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
        });
        req.on('error', reject).end('{}');
      });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(check(answer.body.data, 'webhook_url')).toMatchObject({ status: 'fail', details: { expected: record } });
      expect(JSON.stringify(answer.body.data)).not.toContain('attacker.example');
    } finally {
      await bare.close();
    }
  });

  it('is 404 for another team', async () => {
    const g = await threeds();
    const other = await app.newTeam('other');
    expect((await other.api.post(`/v1/gateways/${g.id}/doctor`, {})).status).toBe(404);
  });
});
