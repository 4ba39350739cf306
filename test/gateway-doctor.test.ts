import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox } from '../src/sandbox/server.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

/**
 * The card gateway doctor (issue 18), over HTTP against the NMI and 3-D Secure sandboxes: each check
 * fails on purpose and passes once fixed.
 */
let app: TestApp;
let team: TestTeam;
let sandbox: { url: string; close(): Promise<void> };

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  app = await startTestApp();
  team = await app.newTeam();
}, 60_000);
afterAll(async () => {
  await app?.close();
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
    await configure(apiKey, { webhook_url: opts.sandboxUrl === undefined ? `${app.url}/webhooks/gateways/${id}` : opts.sandboxUrl, webhook_secret: opts.sandboxSecret ?? SECRET });
    return { id, apiKey };
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
    expect(check(bad, 'webhook_url')).toMatchObject({ status: 'fail', details: { expected: `${app.url}/webhooks/gateways/${g.id}` } });
    await configure(g.apiKey, { webhook_url: `${app.url}/webhooks/gateways/${g.id}` });
    const good = await doctor(g.id);
    expect(check(good, 'webhook_url').status).toBe('pass');
    expect(check(good, 'webhook_round_trip').status).toBe('pass');
  });

  it('is 404 for another team', async () => {
    const g = await threeds();
    const other = await app.newTeam('other');
    expect((await other.api.post(`/v1/gateways/${g.id}/doctor`, {})).status).toBe(404);
  });
});
