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
});
