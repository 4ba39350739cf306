import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLE_PERMISSIONS } from '../src/modules/access/permissions.ts';
import { ApiClient, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

let app: TestApp;
let team: TestTeam;
beforeAll(async () => {
  app = await startTestApp();
  team = await app.newTeam('Tokens');
});
afterAll(async () => app?.close());

async function mint(api: ApiClient, body: Record<string, unknown>) {
  const r = await api.post('/v1/api-tokens', body);
  return { r, client: r.status === 201 ? new ApiClient(app.url, r.body.data.secret) : null };
}

describe('/v1/api-tokens (while the embedded server runs)', () => {
  it('creates a token bound to a role: the secret once, then only its hint; it acts with that role', async () => {
    const { r, client } = await mint(team.api, { name: 'support desk', role: 'support_l1' });
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({ object: 'api_token', name: 'support desk', role: 'support_l1', status: 'active', created_by: expect.stringMatching(/^tok_/) });
    expect(r.body.data.secret).toMatch(/^csk_[0-9A-Za-z]{40}$/);
    expect(r.body.data.permissions).toEqual([...ROLE_PERMISSIONS.support_l1].sort());

    const listed = await team.api.get('/v1/api-tokens');
    expect(listed.status).toBe(200);
    expect(listed.text).not.toContain(r.body.data.secret);
    expect(listed.body.data.map((t: { id: string }) => t.id)).toContain(r.body.data.id);
    const one = await team.api.get(`/v1/api-tokens/${r.body.data.id}`);
    expect(one.body.data.secret).toBeUndefined();
    expect(one.body.data.hint).toBe(`csk_…${r.body.data.secret.slice(-4)}`);

    expect((await client!.get('/v1/orders')).status).toBe(200);
    const refused = await client!.post('/v1/orders/ord_x/refunds', { amount: 100 });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ type: 'permission_error', code: 'permission_denied' });
    expect(refused.body.data).toEqual({ permission: 'orders:refund' });
    expect((await client!.get('/v1/api-tokens')).status).toBe(403);
    // last used, to the minute
    expect((await team.api.get(`/v1/api-tokens/${r.body.data.id}`)).body.data.last_used_at).not.toBeNull();
  });

  it('an explicit permission set is least privilege: exactly those permissions', async () => {
    const { r, client } = await mint(team.api, { name: 'reader', permissions: ['orders:view', 'orders:view'] });
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({ role: null, permissions: ['orders:view'] });
    expect((await client!.get('/v1/orders')).status).toBe(200);
    expect((await client!.get('/v1/campaigns')).status).toBe(403);
  });

  it('nobody mints a token above their own permissions (self-escalation)', async () => {
    const { client: manager } = await mint(team.api, { name: 'token admin', permissions: ['api_tokens:manage', 'orders:view'] });
    const before = (await team.api.get('/v1/api-tokens?limit=100')).body.data.length;
    const up = await manager!.post('/v1/api-tokens', { name: 'escalate', permissions: ['orders:view', 'orders:refund'] });
    expect(up.status).toBe(403);
    expect(up.body.error.code).toBe('permission_denied');
    expect(up.body.data).toEqual({ missing: ['orders:refund'] });
    const owner = await manager!.post('/v1/api-tokens', { name: 'escalate', role: 'owner' });
    expect(owner.status).toBe(403);
    const down = await manager!.post('/v1/api-tokens', { name: 'narrower', permissions: ['orders:view'] });
    expect(down.status).toBe(201);
    expect((await team.api.get('/v1/api-tokens?limit=100')).body.data.length).toBe(before + 1);
    // Rotation cannot escalate either: the token manager cannot rotate the owner's full token.
    const ownerToken = (await team.api.get('/v1/api-tokens?limit=100')).body.data.find((t: { name: string }) => t.name === 'test');
    expect((await manager!.post(`/v1/api-tokens/${ownerToken.id}/rotate`, {})).status).toBe(403);
  });

  it('rotate with grace: the new secret works at once, the old until its grace ends; grace 0 revokes at once', async () => {
    const { r, client: old } = await mint(team.api, { name: 'deploy', role: 'account_manager' });
    const rotated = await team.api.post(`/v1/api-tokens/${r.body.data.id}/rotate`, { grace_seconds: 3600 });
    expect(rotated.status).toBe(201);
    const { token, previous } = rotated.body.data;
    expect(token).toMatchObject({ name: 'deploy', role: 'account_manager', status: 'active' });
    expect(previous).toMatchObject({ id: r.body.data.id, replaced_by: token.id, status: 'active' });
    const graceEnd = Date.parse(previous.expires_at) - Date.now();
    expect(graceEnd).toBeGreaterThan(3000_000);
    expect(graceEnd).toBeLessThanOrEqual(3600_000);
    expect((await new ApiClient(app.url, token.secret).get('/v1/orders')).status).toBe(200);
    expect((await old!.get('/v1/orders')).status).toBe(200);
    // Rotated once: rotating the old one again is refused.
    expect((await team.api.post(`/v1/api-tokens/${r.body.data.id}/rotate`, {})).status).toBe(409);

    const now = await team.api.post(`/v1/api-tokens/${token.id}/rotate`, { grace_seconds: 0 });
    expect(now.body.data.previous.status).toBe('revoked');
    const gone = await new ApiClient(app.url, token.secret).get('/v1/orders');
    expect(gone.status).toBe(401);
    expect(gone.body.error.code).toBe('token_revoked');
    expect((await new ApiClient(app.url, now.body.data.token.secret).get('/v1/orders')).status).toBe(200);
  });

  it('revoke takes effect on the next request', async () => {
    const { r, client } = await mint(team.api, { name: 'temp', role: 'support_l2' });
    expect((await client!.get('/v1/orders')).status).toBe(200);
    const revoked = await team.api.delete(`/v1/api-tokens/${r.body.data.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.data.status).toBe('revoked');
    expect((await client!.get('/v1/orders')).body.error.code).toBe('token_revoked');
    expect((await team.api.get('/v1/api-tokens?status=revoked')).body.data.map((t: { id: string }) => t.id)).toContain(r.body.data.id);
  });

  it('an affiliate token needs its affiliate ids; it reaches only the routes that narrow to them', async () => {
    const missing = await team.api.post('/v1/api-tokens', { name: 'aff', role: 'affiliate' });
    expect(missing.status).toBe(422);
    const { r, client } = await mint(team.api, { name: 'aff', role: 'affiliate', affiliate_ids: ['AFF1'] });
    expect(r.body.data.affiliate_ids).toEqual(['AFF1']);
    const orders = await client!.get('/v1/affiliate-orders');
    expect(orders.status).toBe(200);
    expect(orders.body.data).toEqual([]);
    for (const path of ['/v1/orders', '/v1/transactions', '/v1/subscriptions', '/v1/fulfillments', '/v1/customers/cus_x', '/v1/events']) {
      const r = await client!.get(path);
      expect(r.status, path).toBe(403);
      expect(r.body.error.code).toBe('permission_denied');
    }
    // The same holds for any token given affiliate ids, whatever its permissions.
    const { client: scoped } = await mint(team.api, { name: 'scoped reader', permissions: ['orders:view', 'revenue:view'], affiliate_ids: ['AFF1'] });
    expect((await scoped!.get('/v1/affiliate-orders')).status).toBe(200);
    expect((await scoped!.get('/v1/orders')).status).toBe(403);
    expect((await scoped!.get('/v1/transactions')).status).toBe(403);
    const me = await client!.get('/v1/permissions');
    expect(me.body.data.you).toMatchObject({ kind: 'token', role: 'affiliate', affiliate_ids: ['AFF1'] });
  });

  it('refuses bad input with a clear 4xx and writes nothing', async () => {
    const before = (await team.api.get('/v1/api-tokens?limit=100')).body.data.length;
    const cases: [unknown, number, string][] = [
      [{ name: 'x' }, 422, 'exactly one of role and permissions'],
      [{ name: 'x', role: 'support_l1', permissions: ['orders:view'] }, 422, 'exactly one'],
      [{ name: 'x', permissions: ['orders:everything'] }, 422, 'unknown'],
      [{ name: 'x', role: 'emperor' }, 422, 'role'],
      [{ name: '', role: 'support_l1' }, 422, 'name'],
      [{ name: 'x', role: 'support_l1', expires_at: '2001-01-01T00:00:00Z' }, 422, 'future'],
      [{ name: 'x', role: 'support_l1', secret: 'mine' }, 422, 'secret'],
    ];
    for (const [body, status, text] of cases) {
      const r = await team.api.post('/v1/api-tokens', body);
      expect(r.status, JSON.stringify(body)).toBe(status);
      expect(JSON.stringify(r.body).toLowerCase()).toContain(text);
    }
    expect((await team.api.get('/v1/api-tokens?limit=100')).body.data.length).toBe(before);
    const other = await app.newTeam('Other');
    const mine = (await team.api.get('/v1/api-tokens?limit=1')).body.data[0].id;
    expect((await other.api.get(`/v1/api-tokens/${mine}`)).status).toBe(404);
    expect((await other.api.delete(`/v1/api-tokens/${mine}`)).status).toBe(404);
    expect((await other.api.post(`/v1/api-tokens/${mine}/rotate`, {})).status).toBe(404);
    expect((await team.api.get(`/v1/api-tokens/${mine}`)).body.data.status).toBe('active');
  });
});
