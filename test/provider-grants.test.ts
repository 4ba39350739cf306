import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROVIDER_PERMISSIONS } from '../src/modules/access/permissions.ts';
import { ApiClient, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

let app: TestApp;
let merchant: TestTeam;
let cs: string;
let aff: string;
beforeAll(async () => {
  app = await startTestApp();
  merchant = await app.newTeam('Merchant');
  cs = (await app.ctx.services.teams.createTeam('Acme Support', 'provider')).id;
  aff = (await app.ctx.services.teams.createTeam('Acme Affiliates', 'provider')).id;
});
afterAll(async () => app?.close());

describe('/v1/provider-grants', () => {
  it('grants a Customer Service Provider its base set plus the optional permissions chosen, changes and revokes it', async () => {
    const r = await merchant.api.post('/v1/provider-grants', { provider_id: cs, kind: 'customer_service', permissions: ['coupons:manage'] });
    expect(r.status, r.text).toBe(201);
    expect(r.body.data).toMatchObject({ object: 'provider_grant', provider_id: cs, kind: 'customer_service', optional_permissions: ['coupons:manage'] });
    expect(r.body.data.permissions.sort()).toEqual([...PROVIDER_PERMISSIONS.customer_service.base, 'coupons:manage'].sort());
    expect(r.body.data.permissions).not.toContain('gateways:manage');

    const again = await merchant.api.post('/v1/provider-grants', { provider_id: cs, kind: 'customer_service' });
    expect(again.status).toBe(409);

    const changed = await merchant.api.patch(`/v1/provider-grants/${r.body.data.id}`, { permissions: ['webhooks:manage'] });
    expect(changed.body.data.optional_permissions).toEqual(['webhooks:manage']);
    expect(changed.body.data.permissions).not.toContain('coupons:manage');

    const listed = await merchant.api.get('/v1/provider-grants');
    expect(listed.body.data.map((g: { id: string }) => g.id)).toEqual([r.body.data.id]);

    expect((await merchant.api.delete(`/v1/provider-grants/${r.body.data.id}`)).status).toBe(200);
    expect((await merchant.api.get(`/v1/provider-grants/${r.body.data.id}`)).status).toBe(404);
    expect((await merchant.api.get('/v1/provider-grants')).body.data).toEqual([]);
    // Revoked: the provider can be granted afresh.
    expect((await merchant.api.post('/v1/provider-grants', { provider_id: cs, kind: 'customer_service' })).status).toBe(201);
  });

  it('an Affiliate Provider is scoped to its affiliate ids', async () => {
    const r = await merchant.api.post('/v1/provider-grants', { provider_id: aff, kind: 'affiliate', affiliate_ids: ['AFF1', 'AFF2'] });
    expect(r.status, r.text).toBe(201);
    expect(r.body.data).toMatchObject({ kind: 'affiliate', affiliate_ids: ['AFF1', 'AFF2'], permissions: [...PROVIDER_PERMISSIONS.affiliate.base] });
  });

  it('never grants a provider billing, settings, credentials, tokens, users or the audit log; bad input writes nothing', async () => {
    const p = (await app.ctx.services.teams.createTeam('Greedy', 'provider')).id;
    const forbidden = ['billing:manage', 'settings:manage', 'gateways:manage', 'connections:manage', 'api_tokens:manage', 'users:manage', 'users:view', 'audit:view', 'providers:manage'];
    for (const permission of forbidden) {
      const r = await merchant.api.post('/v1/provider-grants', { provider_id: p, kind: 'customer_service', permissions: [permission] });
      expect(r.status, permission).toBe(422);
      expect(r.body.error.fields[0].path).toBe('permissions');
    }
    const cases: [Record<string, unknown>, number][] = [
      [{ provider_id: p, kind: 'affiliate', permissions: ['orders:view'] }, 422],
      [{ provider_id: p, kind: 'customer_service', affiliate_ids: ['AFF1'] }, 422],
      [{ provider_id: p, kind: 'reseller' }, 422],
      [{ provider_id: merchant.teamId, kind: 'customer_service' }, 422],
      [{ provider_id: (await app.newTeam('Just a merchant')).teamId, kind: 'customer_service' }, 404],
      [{ provider_id: 'team_nope', kind: 'customer_service' }, 404],
    ];
    for (const [body, status] of cases) {
      const r = await merchant.api.post('/v1/provider-grants', body);
      expect(r.status, JSON.stringify(body)).toBe(status);
    }
    const rows = await app.store.run((db) => db.selectFrom('provider_grants').select('id').where('provider_id', '=', p).execute());
    expect(rows).toEqual([]);
  });
  it('least privilege: a caller grants (or changes a grant to) only permissions it holds itself; 403 permission_denied naming them, nothing written', async () => {
    const p = (await app.ctx.services.teams.createTeam('Escalating Support', 'provider')).id;
    const base = [...PROVIDER_PERMISSIONS.customer_service.base];
    const mint = async (permissions: string[]) => {
      const r = await merchant.api.post('/v1/api-tokens', { name: 'provider admin', permissions });
      expect(r.status, r.text).toBe(201);
      return new ApiClient(app.url, r.body.data.secret);
    };
    const grantsOf = () => app.store.run((db) => db.selectFrom('provider_grants').selectAll().where('provider_id', '=', p).execute());

    // providers:manage alone cannot hand out refund rights.
    const bare = await mint(['providers:manage', 'users:view']);
    const refused = await bare.post('/v1/provider-grants', { provider_id: p, kind: 'customer_service' });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('permission_denied');
    expect(refused.body.data.missing).toEqual(expect.arrayContaining(['orders:refund', 'orders:void', 'orders:view']));
    expect(refused.body.data.missing).not.toContain('providers:manage');
    expect(refused.body.message).toContain('orders:refund');
    expect(await grantsOf()).toEqual([]);

    // Holding the base set but not coupons:manage: the base grant is fine, coupons are not.
    const holder = await mint(['providers:manage', 'users:view', ...base]);
    const withCoupons = await holder.post('/v1/provider-grants', { provider_id: p, kind: 'customer_service', permissions: ['coupons:manage'] });
    expect(withCoupons.status).toBe(403);
    expect(withCoupons.body.data).toEqual({ missing: ['coupons:manage'] });
    expect(await grantsOf()).toEqual([]);
    const granted = await holder.post('/v1/provider-grants', { provider_id: p, kind: 'customer_service' });
    expect(granted.status, granted.text).toBe(201);

    const patched = await holder.patch(`/v1/provider-grants/${granted.body.data.id}`, { permissions: ['coupons:manage'] });
    expect(patched.status).toBe(403);
    expect(patched.body.data).toEqual({ missing: ['coupons:manage'] });
    expect((await grantsOf())[0]!.permissions).toEqual([]);
    // The same change by a caller who holds it goes through.
    expect((await merchant.api.patch(`/v1/provider-grants/${granted.body.data.id}`, { permissions: ['coupons:manage'] })).status).toBe(200);
    // And a caller who lacks the base set cannot touch an existing grant either (it would re-issue refund rights).
    const touched = await bare.patch(`/v1/provider-grants/${granted.body.data.id}`, { permissions: [] });
    expect(touched.status).toBe(403);
    expect((await grantsOf())[0]!.permissions).toEqual(['coupons:manage']);
    // An affiliate provider needs affiliates:view and orders:view.
    const aff2 = (await app.ctx.services.teams.createTeam('Escalating Affiliates', 'provider')).id;
    const affRefused = await bare.post('/v1/provider-grants', { provider_id: aff2, kind: 'affiliate', affiliate_ids: ['AFF1'] });
    expect(affRefused.status).toBe(403);
    expect(affRefused.body.data.missing.sort()).toEqual(['affiliates:view', 'orders:view', 'team:view']);
    expect(await app.store.run((db) => db.selectFrom('provider_grants').select('id').where('provider_id', '=', aff2).execute())).toEqual([]);
  });
});
