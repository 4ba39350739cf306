import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox } from '../src/sandbox/server.ts';
import { CARD, email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { login, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';
import { nmiSandboxGateway } from './support/nmi.ts';

/** A Customer Service Provider's user, logged in for real, acting on a merchant team through its grant. */
let app: TestApp;
let merchant: TestTeam;
let funnel: Funnel;
let gatewayId: string;
let providerId: string;
let sandbox: { url: string; close(): Promise<void> };
const password = 'correct horse battery staple';

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  app = await startTestApp();
  merchant = await app.newTeam('Merchant');
  funnel = await seedFunnel(app, merchant.teamId);
  gatewayId = (await nmiSandboxGateway(merchant, sandbox.url)).id;
  expect((await merchant.api.patch(`/v1/campaigns/${funnel.campaignId}`, { gateway_id: gatewayId })).status).toBe(200);
  providerId = (await app.ctx.services.teams.createTeam('Acme Support', 'provider')).id;
  await app.ctx.services.users.createUser({ teamId: providerId, email: 'agent@acme-support.test', password });
});
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});

async function paidOrder(): Promise<string> {
  const r = await merchant.api.post('/checkout/orders', {
    campaign_id: funnel.campaignId,
    currency: 'USD',
    customer: { email: email() },
    products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
    payment: CARD,
  });
  expect(r.status, r.text).toBe(200);
  return r.body.data.order_number;
}

describe('a Customer Service Provider', () => {
  it('refunds through its grant but never reads gateway credentials, tokens, users, settings or the audit log; the audit log names it', async () => {
    const grant = await merchant.api.post('/v1/provider-grants', { provider_id: providerId, kind: 'customer_service' });
    expect(grant.status).toBe(201);
    const order = await paidOrder();

    const agent = await login(app.url, { email: 'agent@acme-support.test', password, team_id: merchant.teamId });
    const me = await agent.get('/v1/permissions');
    expect(me.status, me.text).toBe(200);
    expect(me.body.data.you).toMatchObject({ kind: 'provider_user', role: 'customer_service' });

    expect((await agent.get(`/v1/orders/${order}`)).status).toBe(200);
    const refund = await agent.post(`/v1/orders/${order}/refunds`, { amount: 700, reason: 'customer called' });
    expect(refund.status, refund.text).toBe(201);

    for (const path of [`/v1/gateways/${gatewayId}`, '/v1/gateways', '/v1/extpay-connections', '/v1/api-tokens', '/v1/members', '/v1/audit-log', '/v1/provider-grants', '/v1/transactions']) {
      const r = await agent.get(path);
      expect(r.status, path).toBe(403);
      expect(r.text).not.toContain('security_key');
    }
    expect((await agent.patch('/v1/team', { name: 'taken over' })).status).toBe(403);
    expect((await agent.patch(`/v1/gateways/${gatewayId}`, { name: 'mine' })).status).toBe(403);
    expect((await agent.post('/v1/api-tokens', { name: 'backdoor', role: 'owner' })).status).toBe(403);

    const entry = (await merchant.api.get('/v1/audit-log?action=order.refunded')).body.data[0];
    expect(entry).toMatchObject({ actor: { kind: 'provider_user', label: 'agent@acme-support.test', provider_id: providerId }, target: { id: order }, data: { amount: 700 } });

    // Revoked: the next request is refused, the session notwithstanding.
    expect((await merchant.api.delete(`/v1/provider-grants/${grant.body.data.id}`)).status).toBe(200);
    const after = await agent.get(`/v1/orders/${order}`);
    expect([401, 403]).toContain(after.status);
  });
});
