import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomToken } from '../src/app/ids.ts';
import { sha256Hex } from '../src/app/secrets.ts';
import { ApiClient } from './support/harness.ts';
import { SANDBOX_CARDS } from '../src/sandbox/cards.ts';
import { CARD, email } from './support/fixtures.ts';
import { affiliateWorld, type AffiliateWorld, createAffiliate, createOrder, listAll } from './support/affiliates.ts';

// Attribution (the affiliate block on the checkout requests), the affiliates CRUD, the order
// filters, and what an affiliate-scoped caller may see.

let w: AffiliateWorld;
beforeAll(async () => {
  w = await affiliateWorld();
});
afterAll(async () => {
  await w?.close();
});

const lead = (body: Record<string, unknown>) =>
  w.team.api.post('/checkout/leads', { campaign_id: w.funnel.campaignId, customer: { email: email('attr') }, products: [{ offer_id: w.funnel.offers.serum, quantity: 1 }], ...body });

/** A token that sees only these affiliates (and may read orders): as the Affiliate role or an Affiliate Provider would. */
async function scopedToken(affiliateIds: string[]): Promise<ApiClient> {
  const secret = `csk_${randomToken(40)}`;
  await w.app.store.run((db) =>
    db
      .insertInto('api_tokens')
      .values({
        id: `tok_${randomToken()}`,
        team_id: w.team.teamId,
        name: 'affiliate dashboard',
        token_hash: sha256Hex(secret),
        token_hint: secret.slice(-4),
        permissions: ['team:view', 'affiliates:view', 'orders:view'],
        affiliate_ids: affiliateIds,
      })
      .execute(),
  );
  return new ApiClient(w.app.url, secret);
}

describe('affiliates CRUD', () => {
  it('the merchant chooses the id; a taken id is 409; update, list, delete', async () => {
    const a = await createAffiliate(w.team.api, { id: 'net-42', name: 'Network 42', throttle_rate: 12.5, commission: { type: 'percent', percent: 7.5 } });
    expect(a).toMatchObject({ id: 'net-42', status: 'active', throttle_rate: 12.5, automatic_throttling: false, commission: { type: 'percent', percent: 7.5 } });
    expect((await w.team.api.post('/v1/affiliates', { id: 'net-42', name: 'again' })).status).toBe(409);
    expect((await w.team.api.post('/v1/affiliates', { id: 'bad id!', name: 'x' })).status).toBe(422);
    expect((await w.team.api.post('/v1/affiliates', { id: 'rate', name: 'x', throttle_rate: 101 })).status).toBe(422);
    const p = await w.team.api.patch('/v1/affiliates/net-42', { status: 'paused', automatic_throttling: true });
    expect(p.status, p.text).toBe(200);
    expect(p.body.data).toMatchObject({ status: 'paused', automatic_throttling: true, throttle_rate: 12.5 });
    expect((await w.team.api.get('/v1/affiliates/net-42')).body.data.name).toBe('Network 42');
    expect((await listAll(w.team.api, '/v1/affiliates')).map((x) => x.id)).toContain('net-42');
    expect((await w.team.api.delete('/v1/affiliates/net-42')).status).toBe(200);
    expect((await w.team.api.get('/v1/affiliates/net-42')).status).toBe(404);
    expect((await w.team.api.post('/v1/affiliates', { id: 'net-42', name: 'reuse' })).status).toBe(409);
    // Another team never sees it.
    const other = await w.app.newTeam('Other');
    expect((await other.api.get('/v1/affiliates')).body.data).toEqual([]);
  });
});

describe('attribution', () => {
  it('the lead keeps its affiliate block to the order; first touch wins; shown on the views and filterable', async () => {
    const a = await createAffiliate(w.team.api);
    const b = await createAffiliate(w.team.api);
    const l = await lead({ affiliate: { affiliate_id: a.id, click_id: 'clk-1', sub1: 'fb', sub5: 'five' } });
    expect(l.status, l.text).toBe(201);
    expect(l.body.data.affiliate).toEqual({ affiliate_id: a.id, click_id: 'clk-1', sub1: 'fb', sub2: null, sub3: null, sub4: null, sub5: 'five' });
    const n = l.body.data.order_number;
    const again = await w.team.api.post('/checkout/leads', { order_number: n, affiliate: { affiliate_id: b.id } });
    expect(again.status, again.text).toBe(200);
    expect(again.body.data.affiliate.affiliate_id).toBe(a.id);
    const paid = await w.team.api.post('/checkout/orders/payment', { order_number: n, gateway_id: w.gatewayId, payment: CARD, affiliate: { affiliate_id: b.id, click_id: 'clk-2' } });
    expect(paid.status, paid.text).toBe(200);
    expect(paid.body.data.affiliate).toMatchObject({ affiliate_id: a.id, click_id: 'clk-1' });
    const got = await w.team.api.get(`/v1/orders/${n}`);
    expect(got.body.data.affiliate).toMatchObject({ affiliate_id: a.id, sub1: 'fb' });
    expect(got.body.data.events.map((e: any) => e.type)).toContain('affiliate.converted');
    const listed = await listAll(w.team.api, `/v1/orders?affiliate_id=${a.id}`);
    expect(listed.map((o) => o.order_number)).toEqual([n]);
    expect(await listAll(w.team.api, `/v1/orders?affiliate_id=${b.id}`)).toEqual([]);
  });

  it('last touch when the team says so, until the conversion', async () => {
    expect((await w.team.api.request('PUT', '/v1/affiliate-settings', { attribution: 'last_touch' })).status).toBe(200);
    try {
      const a = await createAffiliate(w.team.api);
      const b = await createAffiliate(w.team.api);
      const l = await lead({ affiliate: { affiliate_id: a.id, sub1: 'x' } });
      const paid = await w.team.api.post('/checkout/orders/payment', { order_number: l.body.data.order_number, gateway_id: w.gatewayId, payment: CARD, affiliate: { affiliate_id: b.id } });
      expect(paid.body.data.affiliate).toEqual({ affiliate_id: b.id, click_id: null, sub1: null, sub2: null, sub3: null, sub4: null, sub5: null });
      const ledger = await w.team.api.get(`/v1/affiliates/${b.id}/throttle/ledger`);
      expect(ledger.body.data).toHaveLength(1);
    } finally {
      await w.team.api.request('PUT', '/v1/affiliate-settings', { attribution: 'first_touch' });
    }
  });

  it('Reprocess Payment takes an affiliate block too: under last touch the declined order is credited to the affiliate that reprocessed it', async () => {
    expect((await w.team.api.request('PUT', '/v1/affiliate-settings', { attribution: 'last_touch' })).status).toBe(200);
    try {
      const a = await createAffiliate(w.team.api);
      const b = await createAffiliate(w.team.api);
      const declined = await createOrder(w, { affiliate: { affiliate_id: a.id, click_id: 'first' }, card: { ...CARD, card_number: SANDBOX_CARDS.doNotHonor } });
      expect(declined.status, declined.text).toBe(402);
      expect(declined.body.data.affiliate).toMatchObject({ affiliate_id: a.id, click_id: 'first' });
      const n = declined.body.data.order_number;
      const again = await w.team.api.post('/checkout/orders/reprocess', { order_number: n, gateway_id: w.gatewayId, payment: CARD, affiliate: { affiliate_id: b.id, click_id: 'second', sub3: 'retry' } });
      expect(again.status, again.text).toBe(200);
      expect(again.body.data.affiliate).toEqual({ affiliate_id: b.id, click_id: 'second', sub1: null, sub2: null, sub3: 'retry', sub4: null, sub5: null });
      expect(await listAll(w.team.api, `/v1/affiliates/${a.id}/throttle/ledger`)).toHaveLength(0);
      const ledger = await listAll(w.team.api, `/v1/affiliates/${b.id}/throttle/ledger`);
      expect(ledger.map((r) => r.order_number)).toEqual([n]);
      // After the conversion nothing moves it, last touch or not.
      await w.team.api.post('/checkout/leads', { order_number: n, affiliate: { affiliate_id: a.id } });
      expect((await w.team.api.get(`/v1/orders/${n}`)).body.data.affiliate.affiliate_id).toBe(b.id);
    } finally {
      await w.team.api.request('PUT', '/v1/affiliate-settings', { attribution: 'first_touch' });
    }
  });

  it('an unknown affiliate id is a 422 on affiliate.affiliate_id and writes nothing', async () => {
    const before = await listAll(w.team.api, '/v1/orders');
    const r = await createOrder(w, { affiliate: { affiliate_id: 'nobody' } });
    expect(r.status).toBe(422);
    expect(r.body.error.fields).toEqual([{ path: 'affiliate.affiliate_id', message: 'no such affiliate' }]);
    const l = await lead({ affiliate: { affiliate_id: 'nobody' } });
    expect(l.status).toBe(422);
    expect(await listAll(w.team.api, '/v1/orders')).toHaveLength(before.length);
    expect((await createOrder(w, { affiliate: { affiliate_id: 'x', sub1: 'a'.repeat(256) } })).status).toBe(422);
  });

  it('/v1/orders filters is_throttled (it answered 422 before)', async () => {
    const t = await createOrder(w, { is_throttle: true });
    const throttled = await listAll(w.team.api, '/v1/orders?is_throttled=true');
    expect(throttled.map((o) => o.order_number)).toContain(t.body.data.order_number);
    expect(throttled.every((o) => o.is_throttled)).toBe(true);
    expect((await listAll(w.team.api, '/v1/orders?is_throttled=false')).every((o) => !o.is_throttled)).toBe(true);
  });
});

describe('an affiliate-scoped caller', () => {
  it('sees only its affiliates, never a throttled order, and no throttling', async () => {
    const mine = await createAffiliate(w.team.api, { throttle_rate: 50, automatic_throttling: true, commission: { type: 'fixed', amount: 100, hold_days: 0 } });
    const theirs = await createAffiliate(w.team.api, { commission: { type: 'fixed', amount: 100, hold_days: 0 } });
    const o1 = await createOrder(w, { affiliate: { affiliate_id: mine.id } });
    const o2 = await createOrder(w, { affiliate: { affiliate_id: mine.id } });
    const other = await createOrder(w, { affiliate: { affiliate_id: theirs.id } });
    expect([o1.body.data.is_throttled, o2.body.data.is_throttled]).toEqual([false, true]);
    const visible = o1.body.data.order_number;
    const hidden = o2.body.data.order_number;
    const api = await scopedToken([mine.id]);

    expect((await listAll(api, '/v1/affiliate-orders')).map((o) => o.order_number)).toEqual([visible]);
    expect((await listAll(api, `/v1/affiliate-orders?affiliate_id=${theirs.id}`)).map((o) => o.order_number)).toEqual([]);
    // The merchant's order views (with the customer) are refused; the affiliates' view has no customer:
    // no name, e-mail, phone, addresses, transactions or timeline.
    for (const path of ['/v1/orders', `/v1/orders/${visible}`, `/v1/orders?customer_email=${encodeURIComponent(o1.body.data.customer.email)}`]) {
      const refused = await api.get(path);
      expect(refused.status, path).toBe(403);
      expect(refused.body.error.code).toBe('permission_denied');
    }
    const email = o1.body.data.customer.email as string;
    const [listed] = await listAll(api, '/v1/affiliate-orders');
    const detail = (await api.get(`/v1/affiliate-orders/${visible}`)).body.data;
    for (const o of [listed, detail]) {
      for (const k of ['customer', 'phone', 'shipping_address', 'billing_address', 'transactions', 'disputes', 'events', 'payment_method_id', 'coupon_id']) expect(o, k).not.toHaveProperty(k);
      expect(JSON.stringify(o)).not.toContain(email);
      expect(o).toMatchObject({ order_number: visible, status: 'processing', total: 4395, currency: 'USD', is_test: false, affiliate: { affiliate_id: mine.id }, lines: [{ quantity: 1 }] });
    }
    // The merchant sees the customer.
    const full = (await w.team.api.get(`/v1/orders/${visible}`)).body.data;
    expect(full.customer).toMatchObject({ email, first_name: 'Ada' });
    expect(full.transactions.length).toBeGreaterThan(0);
    expect((await listAll(w.team.api, `/v1/orders?affiliate_id=${mine.id}`)).find((o) => o.order_number === visible).customer.email).toBe(email);
    // The merchant can read the affiliates' view too: the same orders, the same fields.
    expect(await listAll(w.team.api, `/v1/affiliate-orders?affiliate_id=${mine.id}`)).toEqual([listed]);
    expect((await w.team.api.get(`/v1/affiliate-orders/${visible}`)).body.data).toEqual(detail);
    expect((await w.team.api.get(`/v1/affiliate-orders/${hidden}`)).status).toBe(404);
    expect((await api.get(`/v1/affiliate-orders/${visible}`)).status).toBe(200);
    expect((await api.get(`/v1/affiliate-orders/${hidden}`)).status).toBe(404);
    expect((await api.get(`/v1/affiliate-orders/${other.body.data.order_number}`)).status).toBe(404);
    expect((await api.get(`/v1/orders/${hidden}/pixels`)).status).toBe(404);

    const affiliates = await listAll(api, '/v1/affiliates');
    expect(affiliates.map((a) => a.id)).toEqual([mine.id]);
    expect(affiliates[0]).not.toHaveProperty('throttle_rate');
    expect((await api.get(`/v1/affiliates/${theirs.id}`)).status).toBe(404);
    expect((await api.get(`/v1/affiliates/${mine.id}/throttle/ledger`)).status).toBe(404);
    expect((await api.post(`/v1/affiliates/${mine.id}/throttle/simulate`, { throttle_rate: 10 })).status).toBe(404);
    expect((await api.patch(`/v1/affiliates/${mine.id}`, { throttle_rate: 0 })).status).toBe(403);
    // The team's settings are team-wide, not narrowed to its affiliates.
    expect((await api.get('/v1/affiliate-settings')).status).toBe(403);

    const commissions = await listAll(api, '/v1/affiliate-commissions');
    expect(commissions.map((c) => c.order_number)).toEqual([visible]);
    const report = await api.get('/v1/reports/affiliates');
    expect(report.body.data).toHaveLength(1);
    // Leads count the throttled order too: leads minus conversions does not tell which were throttled.
    expect(report.body.data[0]).toMatchObject({ affiliate_id: mine.id, conversions: 1, leads: 2, revenue: 4395 });
    expect(report.body.data[0]).not.toHaveProperty('throttled');
    // The merchant sees both, the throttled one apart.
    const merchant = await w.team.api.get(`/v1/reports/affiliates?affiliate_id=${mine.id}`);
    expect(merchant.body.data[0]).toMatchObject({ conversions: 1, throttled: { conversions: 1, revenue: 4395 } });
  });

  it('never sees a lead, so a lead throttled at its conversion never vanishes from its view or its report', { timeout: 60_000 }, async () => {
    const shaved = await createAffiliate(w.team.api, { throttle_rate: 100, automatic_throttling: true });
    const plain = await createAffiliate(w.team.api);
    const api = await scopedToken([shaved.id, plain.id]);
    const shavedLead = await lead({ affiliate: { affiliate_id: shaved.id, sub1: 'ig' } });
    const other = await lead({ affiliate: { affiliate_id: plain.id } });
    expect([shavedLead.status, other.status]).toEqual([201, 201]);
    const n = shavedLead.body.data.order_number;
    const m = other.body.data.order_number;
    const seen = async () => ({
      orders: (await listAll(api, '/v1/affiliate-orders')).map((o) => o.order_number),
      detail: [(await api.get(`/v1/affiliate-orders/${n}`)).status, (await api.get(`/v1/affiliate-orders/${m}`)).status],
      pixels: (await api.get(`/v1/orders/${n}/pixels`)).status,
      report: (await api.get(`/v1/reports/affiliates?affiliate_id=${shaved.id}`)).body.data,
    });
    const before = await seen();
    expect(before).toMatchObject({ orders: [], detail: [404, 404], pixels: 404 });
    expect(before.report).toEqual([expect.objectContaining({ affiliate_id: shaved.id, leads: 1, conversions: 0 })]);

    const paid = await w.team.api.post('/checkout/orders/payment', { order_number: n, gateway_id: w.gatewayId, payment: CARD });
    expect(paid.status, paid.text).toBe(200);
    expect(paid.body.data.is_throttled).toBe(true);
    // Throttled at the conversion: the affiliate's view is exactly what it was.
    expect(await seen()).toEqual(before);
    const merchant = await w.team.api.get(`/v1/reports/affiliates?affiliate_id=${shaved.id}`);
    expect(merchant.body.data[0]).toMatchObject({ leads: 1, conversions: 0, throttled: { conversions: 1, revenue: 4395 } });

    // The other lead, paid and not throttled, is shown from its conversion on.
    const converted = await w.team.api.post('/checkout/orders/payment', { order_number: m, gateway_id: w.gatewayId, payment: CARD });
    expect(converted.status, converted.text).toBe(200);
    expect((await api.get(`/v1/affiliate-orders/${m}`)).status).toBe(200);
    expect((await listAll(api, '/v1/affiliate-orders')).map((o) => o.order_number)).toEqual([m]);
  });
});
