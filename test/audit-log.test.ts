import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox } from '../src/sandbox/server.ts';
import { CARD, email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { ApiClient, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';
import { nmiSandboxGateway } from './support/nmi.ts';

let app: TestApp;
let team: TestTeam;
let funnel: Funnel;
let sandbox: { url: string; close(): Promise<void> };
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  app = await startTestApp();
  team = await app.newTeam('Audited');
  funnel = await seedFunnel(app, team.teamId);
  const gw = await nmiSandboxGateway(team, sandbox.url);
  expect((await team.api.patch(`/v1/campaigns/${funnel.campaignId}`, { gateway_id: gw.id })).status).toBe(200);
});
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});

async function paidOrder(): Promise<string> {
  const r = await team.api.post('/checkout/orders', {
    campaign_id: funnel.campaignId,
    currency: 'USD',
    customer: { email: email() },
    products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
    payment: CARD,
  });
  expect(r.status).toBe(200);
  return r.body.data.order_number;
}

async function entries(query = '') {
  const r = await team.api.get(`/v1/audit-log?limit=100${query}`);
  expect(r.status).toBe(200);
  return r.body.data as { action: string; actor: { kind: string; id: string; label: string }; target: { type: string; id: string } | null; data: Record<string, unknown>; ip_address: string; request_id: string }[];
}

describe('the audit log', () => {
  it('records money actions with who, what, when and from where; a replay or a refused request writes nothing', async () => {
    const order = await paidOrder();
    const { secret } = (await team.api.post('/v1/api-tokens', { name: 'desk', role: 'support_l2' })).body.data;
    const desk = new ApiClient(app.url, secret);
    const refund = await desk.post(`/v1/orders/${order}/refunds`, { amount: 500, reason: 'damaged' }, { 'idempotency-key': 'refund-1', 'x-request-id': 'req-refund-1' });
    expect(refund.status).toBe(201);
    // The same request again is a replay: no second entry.
    expect((await desk.post(`/v1/orders/${order}/refunds`, { amount: 500, reason: 'damaged' }, { 'idempotency-key': 'refund-1' })).headers.get('idempotent-replayed')).toBe('true');
    // Refused (over the captured amount): no entry.
    expect((await desk.post(`/v1/orders/${order}/refunds`, { amount: 999_999 })).status).toBe(422);
    const voided = await team.api.post(`/v1/orders/${await paidOrder()}/void`, {});
    expect(voided.status).toBe(201);

    const refunds = await entries('&action=order.refunded');
    expect(refunds).toHaveLength(1);
    expect(refunds[0]).toMatchObject({
      action: 'order.refunded',
      actor: { kind: 'token', label: expect.stringContaining('desk') },
      target: { type: 'orders', id: order },
      data: { amount: 500, fields: ['amount', 'reason'] },
      ip_address: '127.0.0.1',
      request_id: 'req-refund-1',
    });
    // `reason` is free text (it could carry a card number): only its presence is kept.
    expect(refunds[0]!.data).not.toHaveProperty('reason');
    expect(JSON.stringify(refunds)).not.toContain('damaged');
    expect((await entries('&action=order.*')).map((e) => e.action).sort()).toEqual(['order.refunded', 'order.voided']);
  });

  it('records a subscription cancellation', async () => {
    const r = await team.api.post('/checkout/orders', {
      campaign_id: funnel.campaignId,
      currency: 'USD',
      customer: { email: email('sub') },
      products: [{ offer_id: funnel.offers.trial, quantity: 1 }],
      payment: CARD,
    });
    expect(r.status, r.text).toBe(200);
    const order = r.body.data.order_number as string;
    expect((await team.api.post('/checkout/orders/complete', { order_number: order })).status).toBe(200);
    const [sub] = (await team.api.get(`/v1/subscriptions?order_number=${order}`)).body.data as { id: string }[];
    expect(sub).toBeDefined();
    const canceled = await team.api.post(`/v1/subscriptions/${sub!.id}/cancel`, {}, { 'x-request-id': 'req-cancel-1' });
    expect(canceled.status, canceled.text).toBe(200);
    const found = await entries('&action=subscription.canceled');
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ action: 'subscription.canceled', actor: { kind: 'token' }, target: { type: 'subscriptions', id: sub!.id }, request_id: 'req-cancel-1' });
  });

  it("records a member's role change: who changed whom to what", async () => {
    const users = app.ctx.services.users;
    const password = 'correct horse battery staple 42';
    await users.createUser({ teamId: team.teamId, email: email('owner'), password });
    const member = await users.createUser({ teamId: team.teamId, email: email('agent'), password, role: 'support_l1' });
    const changed = await team.api.patch(`/v1/members/${member.id}`, { role: 'support_l2' });
    expect(changed.status, changed.text).toBe(200);
    const found = await entries('&action=member.role_changed');
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ actor: { kind: 'token', label: expect.stringContaining('test') }, target: { type: 'members', id: member.id }, data: { role: 'support_l2', fields: ['role'] } });
  });

  it('filters by actor_id and target_id (alone and together); a `%` or `_` in an action family matches only itself', async () => {
    const mint = async (name: string) => {
      const r = await team.api.post('/v1/api-tokens', { name, role: 'support_l2' });
      expect(r.status, r.text).toBe(201);
      return { id: r.body.data.id as string, api: new ApiClient(app.url, r.body.data.secret) };
    };
    const [a, b] = [await mint('agent a'), await mint('agent b')];
    const [x, y] = [await paidOrder(), await paidOrder()];
    expect((await a.api.post(`/v1/orders/${x}/refunds`, { amount: 100 })).status).toBe(201);
    expect((await a.api.post(`/v1/orders/${y}/refunds`, { amount: 100 })).status).toBe(201);
    expect((await b.api.post(`/v1/orders/${x}/refunds`, { amount: 200 })).status).toBe(201);

    const byA = await entries(`&actor_id=${a.id}`);
    expect(byA.map((e) => e.target?.id).sort()).toEqual([x, y].sort());
    expect(byA.every((e) => e.actor.id === a.id)).toBe(true);
    const onX = await entries(`&target_id=${x}`);
    expect(onX.map((e) => e.actor.id).sort()).toEqual([a.id, b.id].sort());
    const both = await entries(`&actor_id=${b.id}&target_id=${x}`);
    expect(both).toHaveLength(1);
    expect(both[0]).toMatchObject({ action: 'order.refunded', data: { amount: 200 } });
    expect(await entries(`&actor_id=${b.id}&target_id=${y}`)).toEqual([]);
    expect(await entries('&actor_id=tok_nobody')).toEqual([]);

    expect((await entries('&action=order.*')).length).toBeGreaterThan(0);
    expect(await entries(`&action=${encodeURIComponent('%.*')}`)).toEqual([]);
    expect(await entries(`&action=${encodeURIComponent('_rder.*')}`)).toEqual([]);
    expect(await entries(`&action=${encodeURIComponent('order%.*')}`)).toEqual([]);
  });

  it('records settings and credential changes without the secrets themselves', async () => {
    expect((await team.api.patch('/v1/team', { time_zone: 'Europe/Paris' })).status).toBe(200);
    const gw = await team.api.post('/v1/gateways', { name: 'Main', kind: 'nmi', base_url: 'http://127.0.0.1:9', credentials: { security_key: 'super-secret-key-777' } });
    expect(gw.status).toBe(201);
    const hook = await team.api.post('/v1/webhook-endpoints', { url: 'https://93.184.215.14/hooks', event_types: ['*'] });
    const all = await entries();
    expect(all.find((e) => e.action === 'team.updated')).toMatchObject({ data: { time_zone: 'Europe/Paris' } });
    expect(all.find((e) => e.action === 'gateway.created')).toMatchObject({ target: { type: 'gateways', id: gw.body.data.id }, data: { name: 'Main', kind: 'nmi' } });
    expect(all.find((e) => e.action === 'webhook_endpoint.created')).toMatchObject({ target: { id: hook.body.data.id } });
    const text = JSON.stringify(all);
    expect(text).not.toContain('super-secret-key-777');
    expect(text).not.toContain(hook.body.data.secret ?? 'whsec_never');
    // Token changes are audited too.
    const t = await team.api.post('/v1/api-tokens', { name: 'temp', role: 'support_l1' });
    await team.api.delete(`/v1/api-tokens/${t.body.data.id}`);
    const tokenActions = (await entries('&action=api_token.*')).filter((e) => e.target?.id === t.body.data.id).map((e) => e.action);
    expect(tokenActions.sort()).toEqual(['api_token.created', 'api_token.revoked']);
    expect(JSON.stringify(await entries('&action=api_token.*'))).not.toContain(t.body.data.secret);
  });

  it('is append-only: the database refuses to change or delete an entry', async () => {
    const count = (await entries()).length;
    expect(count).toBeGreaterThan(0);
    await expect(app.store.run((db) => sql`update audit_log set action = 'nothing'`.execute(db))).rejects.toThrow(/append-only/);
    await expect(app.store.run((db) => sql`delete from audit_log`.execute(db))).rejects.toThrow(/append-only/);
    expect((await entries()).length).toBe(count);
  });

  it('needs audit:view, and is scoped to the team', async () => {
    const { secret } = (await team.api.post('/v1/api-tokens', { name: 'l2', role: 'support_l2' })).body.data;
    const r = await new ApiClient(app.url, secret).get('/v1/audit-log');
    expect(r.status).toBe(403);
    const other = await app.newTeam('Other');
    expect((await other.api.get('/v1/audit-log')).body.data).toEqual([]);
    expect((await team.api.get('/v1/audit-log?action=' + 'x'.repeat(101))).status).toBe(422);
  });
});
