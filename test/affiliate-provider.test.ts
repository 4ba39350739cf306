import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AffiliateWorld, affiliateWorld, createAffiliate, createOrder } from './support/affiliates.ts';
import { login } from './support/harness.ts';

/** An Affiliate Provider's user, logged in for real: only its affiliates' non-throttled orders and reports. */
let w: AffiliateWorld;
beforeAll(async () => {
  w = await affiliateWorld();
});
afterAll(async () => w?.close());

describe('an Affiliate Provider', () => {
  it("sees only its affiliates' non-throttled orders and reports, and nothing that is not narrowed to them", async () => {
    const mine = await createAffiliate(w.team.api, { commission: { type: 'fixed', amount: 100, hold_days: 0 } });
    const theirs = await createAffiliate(w.team.api, { commission: { type: 'fixed', amount: 100, hold_days: 0 } });
    const visible = await createOrder(w, { affiliate: { affiliate_id: mine.id, sub1: 'fb' } });
    const throttled = await createOrder(w, { affiliate: { affiliate_id: mine.id }, is_throttle: true });
    const other = await createOrder(w, { affiliate: { affiliate_id: theirs.id } });
    expect([visible.status, throttled.status, other.status]).toEqual([200, 200, 200]);
    expect(throttled.body.data.is_throttled).toBe(true);

    const provider = await w.app.ctx.services.teams.createTeam('Acme Network', 'provider');
    await w.app.ctx.services.users.createUser({ teamId: provider.id, email: 'partner@acme-network.test', password: 'network password 2026' });
    const grant = await w.team.api.post('/v1/provider-grants', { provider_id: provider.id, kind: 'affiliate', affiliate_ids: [mine.id] });
    expect(grant.status, grant.text).toBe(201);

    const partner = await login(w.app.url, { email: 'partner@acme-network.test', password: 'network password 2026', team_id: w.team.teamId });
    const orders = await partner.get('/v1/affiliate-orders?limit=100');
    expect(orders.status, orders.text).toBe(200);
    expect(orders.body.data.map((o: { order_number: string }) => o.order_number)).toEqual([visible.body.data.order_number]);
    // No customer data: the merchant's order views are refused, the affiliates' view has none.
    expect(orders.body.data[0]).not.toHaveProperty('customer');
    expect(orders.text).not.toContain(visible.body.data.customer.email);
    expect((await partner.get(`/v1/affiliate-orders/${visible.body.data.order_number}`)).body.data).not.toHaveProperty('shipping_address');
    expect((await partner.get('/v1/orders')).status).toBe(403);
    expect((await partner.get(`/v1/orders/${visible.body.data.order_number}`)).status).toBe(403);
    expect((await partner.get(`/v1/affiliate-orders/${throttled.body.data.order_number}`)).status).toBe(404);
    expect((await partner.get(`/v1/affiliate-orders/${other.body.data.order_number}`)).status).toBe(404);

    const report = await partner.get('/v1/reports/affiliates');
    expect(report.status).toBe(200);
    expect(report.body.data.map((r: { affiliate_id: string }) => r.affiliate_id)).toEqual([mine.id]);
    expect(report.body.data[0]).toMatchObject({ conversions: 1 });
    expect(report.body.data[0]).not.toHaveProperty('throttled');

    for (const path of ['/v1/transactions', '/v1/subscriptions', `/v1/customers/${visible.body.data.customer.customer_number}`, '/v1/events', '/v1/campaigns', '/v1/gateways']) {
      expect((await partner.get(path)).status, path).toBe(403);
    }
    expect((await partner.post(`/v1/orders/${visible.body.data.order_number}/refunds`, { amount: 100 })).status).toBe(403);
  });
});
