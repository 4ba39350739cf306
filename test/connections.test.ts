import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxApiBaseUrl } from '../src/providers/extpay/types.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

let app: TestApp;
let team: TestTeam;
let sandbox: { url: string; close(): Promise<void> };

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  app = await startTestApp();
  team = await app.newTeam();
});
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});

async function company(env: 'sandbox' | 'production', companyId: string, keys: Array<{ key: string; permissions?: string[] }>) {
  const r = await fetch(`${sandbox.url}/extpay/${env}/sandbox/companies`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ company_id: companyId, api_keys: keys }),
  });
  expect(r.status, await r.clone().text()).toBeLessThan(300);
}

function connection(overrides: Record<string, unknown> = {}) {
  return { name: 'Whop sandbox', api_key: 'key_sandbox_full_1', company_id: 'biz_sandboxco', environment: 'Sandbox', webhook_secret: 'ws_secret_1', base_url: sandboxApiBaseUrl(sandbox.url, 'sandbox'), ...overrides };
}

describe('extpay connections (spec 2.7)', () => {
  it('are created Active with secrets sealed and never returned', async () => {
    const r = await team.api.post('/v1/extpay-connections', connection());
    expect(r.status, r.text).toBe(201);
    expect(r.body.data).toMatchObject({ object: 'extpay_connection', type: 'extpay', status: 'active', environment: 'sandbox', test_mode: true, company_id: 'biz_sandboxco', webhook_secret_configured: true });
    expect(r.text).not.toContain('key_sandbox_full_1');
    expect(r.text).not.toContain('ws_secret_1');
    const row = await app.store.run((db) => db.selectFrom('extpay_connections').selectAll().where('id', '=', r.body.data.id).executeTakeFirstOrThrow());
    expect(JSON.stringify(row)).not.toContain('key_sandbox_full_1');
    expect(JSON.stringify(row)).not.toContain('ws_secret_1');
    expect((await team.api.get(`/v1/extpay-connections/${r.body.data.id}`)).text).not.toContain('key_sandbox_full_1');
  });

  it('validate the company id prefix and environment', async () => {
    const bad = await team.api.post('/v1/extpay-connections', connection({ company_id: 'acme', environment: 'staging' }));
    expect(bad.status).toBe(422);
    expect(bad.body.error.fields.map((f: { path: string }) => f.path).sort()).toEqual(['company_id', 'environment']);
    expect((await team.api.post('/v1/extpay-connections', connection({ environment: 'production', base_url: undefined }))).body.data.base_url).toBe('https://api.whop.com/api/v1');
  });

  it('report exactly one of three test outcomes', async () => {
    await company('sandbox', 'biz_testco', [
      { key: 'key_full_permissions' },
      { key: 'key_read_only', permissions: ['payment:basic:read'] },
    ]);
    await company('production', 'biz_prodco', [{ key: 'key_production_only' }]);
    const mk = async (o: Record<string, unknown>) => (await team.api.post('/v1/extpay-connections', connection({ company_id: 'biz_testco', ...o }))).body.data.id as string;
    const test = async (id: string) => (await team.api.post(`/v1/extpay-connections/${id}/test`, {})).body.data;
    expect(await test(await mk({ api_key: 'key_full_permissions' }))).toMatchObject({ result: 'connected' });
    expect(await test(await mk({ api_key: 'key_read_only' }))).toMatchObject({ result: 'cannot_create_checkouts' });
    expect(await test(await mk({ api_key: 'key_wrong' }))).toMatchObject({ result: 'failed_to_authenticate' });
    // The production account's key on the sandbox environment fails: nothing carries over.
    expect(await test(await mk({ api_key: 'key_production_only', company_id: 'biz_prodco' }))).toMatchObject({ result: 'failed_to_authenticate' });
    expect(await test(await mk({ api_key: 'key_full_permissions', company_id: 'biz_otherco' }))).toMatchObject({ result: 'failed_to_authenticate' });
  });

  it('resolve per spec 4.1 rule 8: pinned, else any Active, else not configured', async () => {
    const other = await app.newTeam('resolver');
    const resolve = (pinned?: string) => app.store.run((db) => app.ctx.services.connections.resolveForOrder(db, other.teamId, pinned));
    await expect(resolve()).rejects.toMatchObject({ code: 'provider_not_configured' });
    const a = (await other.api.post('/v1/extpay-connections', connection({ name: 'A' }))).body.data.id;
    const b = (await other.api.post('/v1/extpay-connections', connection({ name: 'B' }))).body.data.id;
    expect((await resolve()).id).toBe(a);
    expect((await resolve(b)).id).toBe(b);
    await other.api.post(`/v1/extpay-connections/${b}/deactivate`, {});
    await expect(resolve(b)).rejects.toMatchObject({ code: 'provider_not_configured' });
    await other.api.post(`/v1/extpay-connections/${b}/activate`, {});
    expect((await resolve(b)).id).toBe(b);
    const del = await other.api.delete(`/v1/extpay-connections/${a}`);
    expect(del.body.data).toMatchObject({ deleted: true, status: 'inactive' });
    await expect(resolve(a)).rejects.toMatchObject({ code: 'provider_not_configured' });
    expect((await resolve()).id).toBe(b);
    expect((await other.api.get(`/v1/extpay-connections/${a}`)).status).toBe(404);
    expect((await other.api.get('/v1/extpay-connections')).body.data.map((c: { id: string }) => c.id)).toEqual([b]);
  });

  it("another team's connection is 404 everywhere, unchanged", async () => {
    const mine = (await team.api.post('/v1/extpay-connections', connection({ name: 'mine' }))).body.data.id;
    const other = await app.newTeam('intruder');
    for (const [m, p, body] of [
      ['GET', `/v1/extpay-connections/${mine}`, undefined],
      ['PATCH', `/v1/extpay-connections/${mine}`, { name: 'taken' }],
      ['POST', `/v1/extpay-connections/${mine}/deactivate`, {}],
      ['POST', `/v1/extpay-connections/${mine}/test`, {}],
      ['DELETE', `/v1/extpay-connections/${mine}`, undefined],
    ] as const) {
      expect((await other.api.request(m, p, body)).status, `${m} ${p}`).toBe(404);
    }
    expect((await team.api.get(`/v1/extpay-connections/${mine}`)).body.data).toMatchObject({ name: 'mine', status: 'active' });
  });
});
