import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../src/app/secrets.ts';
import { ApiClient, startTestApp, type TestApp } from './support/harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

describe('API tokens', () => {
  it('are random, prefixed, stored only as a hash, and record when they were last used', async () => {
    const teams = app.ctx.services.teams;
    const team = await teams.createTeam('T');
    const a = await teams.createToken(team.id, 'funnel');
    const b = await teams.createToken(team.id, 'funnel');
    expect(a.secret).toMatch(/^csk_[0-9A-Za-z]{40}$/);
    expect(a.secret).not.toBe(b.secret);
    const rows = await app.store.run((db) => db.selectFrom('api_tokens').selectAll().where('team_id', '=', team.id).execute());
    expect(JSON.stringify(rows)).not.toContain(a.secret);
    expect(rows.find((r) => r.id === a.token.id)!.token_hash).toBe(sha256Hex(a.secret));
    expect(rows.every((r) => r.last_used_at === null)).toBe(true);

    expect((await new ApiClient(app.url, a.secret).get('/v1/orders')).status).toBe(200);
    const used = await app.store.run((db) => db.selectFrom('api_tokens').select('last_used_at').where('id', '=', a.token.id).executeTakeFirstOrThrow());
    expect(used.last_used_at).toBeInstanceOf(Date);
  });

  it('stop working when revoked', async () => {
    const teams = app.ctx.services.teams;
    const team = await teams.createTeam('T');
    const t = await teams.createToken(team.id, 'old');
    const client = new ApiClient(app.url, t.secret);
    expect((await client.get('/v1/orders')).status).toBe(200);
    await teams.revokeToken(t.token.id);
    const r = await client.get('/v1/orders');
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('token_revoked');
  });

  it('rotate: the new token works at once, the old one through its grace period only', async () => {
    const teams = app.ctx.services.teams;
    const team = await teams.createTeam('T');
    const t = await teams.createToken(team.id, 'deploy');
    const graced = await teams.rotateToken(t.token.id, 3600);
    expect(graced.token.name).toBe('deploy');
    expect((await new ApiClient(app.url, graced.secret).get('/v1/orders')).status).toBe(200);
    expect((await new ApiClient(app.url, t.secret).get('/v1/orders')).status).toBe(200);

    const now = await teams.rotateToken(graced.token.id, 0);
    expect((await new ApiClient(app.url, graced.secret).get('/v1/orders')).status).toBe(401);
    expect((await new ApiClient(app.url, now.secret).get('/v1/orders')).status).toBe(200);

    // An expired grace period refuses the old token.
    await app.store.run((db) => db.updateTable('api_tokens').set({ expires_at: new Date(Date.now() - 1000) }).where('id', '=', t.token.id).execute());
    app.clearCaches();
    const expired = await new ApiClient(app.url, t.secret).get('/v1/orders');
    expect(expired.status).toBe(401);
    expect(expired.body.error.code).toBe('token_expired');
  });
  it('an operator rotation (CLI, control socket) keeps the limited token limited: same role, permissions, affiliate ids and expiry, one transaction', async () => {
    const teams = app.ctx.services.teams;
    const team = await app.newTeam('Rotations');
    const expiresAt = new Date(Date.now() + 30 * 86_400_000).toISOString();
    const minted = await team.api.post('/v1/api-tokens', { name: 'desk', role: 'support_l1', expires_at: expiresAt });
    expect(minted.status, minted.text).toBe(201);

    const rotated = await teams.rotateToken(minted.body.data.id, 60);
    const client = new ApiClient(app.url, rotated.secret);
    expect((await client.get('/v1/orders')).status).toBe(200);
    const refund = await client.post('/v1/orders/ord_x/refunds', { amount: 100 });
    expect(refund.status).toBe(403);
    expect(refund.body.error.code).toBe('permission_denied');
    expect(refund.body.data).toEqual({ permission: 'orders:refund' });
    expect((await client.get('/v1/api-tokens')).status).toBe(403);

    const fresh = (await team.api.get(`/v1/api-tokens/${rotated.token.id}`)).body.data;
    expect(fresh).toMatchObject({ name: 'desk', role: 'support_l1', status: 'active', replaced_by: null });
    expect(Date.parse(fresh.expires_at)).toBe(Date.parse(expiresAt));
    const old = (await team.api.get(`/v1/api-tokens/${minted.body.data.id}`)).body.data;
    expect(old.replaced_by).toBe(rotated.token.id);
    // The old one within its grace: at most 60 s more, never past its own expiry.
    expect(Date.parse(old.expires_at)).toBeLessThanOrEqual(Date.now() + 60_000);

    // An explicit permission set and affiliate ids carry over too.
    const scoped = await team.api.post('/v1/api-tokens', { name: 'reports', permissions: ['orders:view', 'affiliates:view'], affiliate_ids: ['AFF9'] });
    const scopedNext = await teams.rotateToken(scoped.body.data.id, 0);
    expect((await team.api.get(`/v1/api-tokens/${scopedNext.token.id}`)).body.data).toMatchObject({ role: null, permissions: ['affiliates:view', 'orders:view'], affiliate_ids: ['AFF9'] });
    expect((await new ApiClient(app.url, scopedNext.secret).get('/v1/transactions')).status).toBe(403);
    expect((await new ApiClient(app.url, scoped.body.data.secret).get('/v1/orders')).body.error.code).toBe('token_revoked');
  });

  it('an operator cannot rotate an expired, revoked or already rotated token: refused, nothing written', async () => {
    const teams = app.ctx.services.teams;
    const team = await teams.createTeam('T');
    const count = async () => (await teams.listTokens(team.id)).length;
    const expired = await teams.createToken(team.id, 'expired');
    await app.store.run((db) => db.updateTable('api_tokens').set({ expires_at: new Date(Date.now() - 1000) }).where('id', '=', expired.token.id).execute());
    const revoked = await teams.createToken(team.id, 'revoked');
    await teams.revokeToken(revoked.token.id);
    const once = await teams.createToken(team.id, 'once');
    await teams.rotateToken(once.token.id, 3600);
    const before = await count();

    await expect(teams.rotateToken(expired.token.id, 3600)).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('no longer active') });
    await expect(teams.rotateToken(revoked.token.id, 3600)).rejects.toMatchObject({ code: 'conflict' });
    await expect(teams.rotateToken(once.token.id, 3600)).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('already rotated') });
    await expect(teams.rotateToken('tok_nope', 3600)).rejects.toMatchObject({ code: 'not_found' });
    expect(await count()).toBe(before);
    // The expired token stays expired (a rotation never revives it).
    const r = await new ApiClient(app.url, expired.secret).get('/v1/orders');
    expect(r.body.error.code).toBe('token_expired');
  });
});
