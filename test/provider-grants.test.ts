import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROVIDER_PERMISSIONS } from '../src/modules/access/permissions.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

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
});
