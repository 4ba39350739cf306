import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { affiliateWorld, type AffiliateWorld, createAffiliate, createOrder, listAll } from './support/affiliates.ts';

// The commission ledger: one row per commissioned charge, pending → payable after the hold,
// reversed by a refund or a void of that charge, never for a throttled order.

let w: AffiliateWorld;
beforeAll(async () => {
  w = await affiliateWorld();
});
afterAll(async () => {
  await w?.close();
});

const commissionsOf = (affiliateId: string) => listAll(w.team.api, `/v1/affiliate-commissions?affiliate_id=${affiliateId}`);

describe('commissions', () => {
  it('a percentage of the first payment, payable at once with no hold, reversed when the charge is refunded', async () => {
    const a = await createAffiliate(w.team.api, { commission: { type: 'percent', percent: 10, hold_days: 0 } });
    const r = await createOrder(w, { affiliate: { affiliate_id: a.id, sub1: 'fb' } });
    expect(r.status, r.text).toBe(200);
    const [c] = await commissionsOf(a.id);
    expect(c).toMatchObject({ kind: 'conversion', amount: 439, currency: 'USD', status: 'payable', order_number: r.body.data.order_number, transaction_id: r.body.data.transaction_id, sub1: 'fb' });
    const refund = await w.team.api.post(`/v1/orders/${r.body.data.order_number}/refunds`, { amount: 500 });
    expect(refund.status, refund.text).toBe(201);
    const [after] = await commissionsOf(a.id);
    expect(after).toMatchObject({ id: c.id, status: 'reversed', reversal_reason: 'refund' });
    expect(after.reversed_at).not.toBeNull();
  });

  it("a fixed amount held for the team's default days stays pending; a void reverses it", async () => {
    const set = await w.team.api.request('PUT', '/v1/affiliate-settings', { commission_hold_days: 14 });
    expect(set.status, set.text).toBe(200);
    const a = await createAffiliate(w.team.api, { commission: { type: 'fixed', amount: 750 } });
    const r = await createOrder(w, { affiliate: { affiliate_id: a.id } });
    const [c] = await commissionsOf(a.id);
    expect(c).toMatchObject({ kind: 'conversion', amount: 750, status: 'pending' });
    const days = (Date.parse(c.payable_at) - Date.parse(c.created_at)) / 86_400_000;
    expect(days).toBeGreaterThan(13.99);
    expect(days).toBeLessThan(14.01);
    const v = await w.team.api.post(`/v1/orders/${r.body.data.order_number}/void`, {});
    expect(v.status, v.text).toBe(201);
    expect((await commissionsOf(a.id))[0]).toMatchObject({ status: 'reversed', reversal_reason: 'void' });
  });

  it('a pending commission becomes payable once its hold has passed; one still held stays pending', async () => {
    const a = await createAffiliate(w.team.api, { commission: { type: 'fixed', amount: 300, hold_days: 30 } });
    const due = await createOrder(w, { affiliate: { affiliate_id: a.id } });
    const held = await createOrder(w, { affiliate: { affiliate_id: a.id } });
    expect([due.status, held.status]).toEqual([200, 200]);
    const rows = await commissionsOf(a.id);
    expect(rows.map((c) => c.status)).toEqual(['pending', 'pending']);
    const c = rows.find((x) => x.order_number === due.body.data.order_number);
    // Thirty days later for this one: its payable_at moves into the past.
    await w.app.store.run((db) =>
      db.updateTable('affiliate_commissions').set({ payable_at: new Date(Date.now() - 60_000) }).where('team_id', '=', w.team.teamId).where('id', '=', c.id).execute(),
    );
    const after = await commissionsOf(a.id);
    expect(after.find((x) => x.id === c.id)).toMatchObject({ status: 'payable', amount: 300 });
    expect(after.find((x) => x.id !== c.id)).toMatchObject({ status: 'pending', order_number: held.body.data.order_number });
    expect(await listAll(w.team.api, `/v1/affiliate-commissions?affiliate_id=${a.id}&status=payable`)).toHaveLength(1);
  });

  it('upsells earn too when the rule says so; a refund of the upsell reverses only its commission', async () => {
    const a = await createAffiliate(w.team.api, { commission: { type: 'percent', percent: 20, on_upsells: true, hold_days: 0 } });
    const r = await createOrder(w, { affiliate: { affiliate_id: a.id } });
    const up = await w.team.api.post('/checkout/orders/upsell', { order_number: r.body.data.order_number, upsell_id: w.funnel.upsellId, quantity: 1 });
    expect(up.status, up.text).toBe(200);
    const rows = await commissionsOf(a.id);
    expect(rows.map((x) => [x.kind, x.amount]).sort()).toEqual([
      ['conversion', 879],
      ['upsell', 180],
    ]);
    const refund = await w.team.api.post(`/v1/orders/${r.body.data.order_number}/refunds`, { transaction_id: up.body.data.transaction_id });
    expect(refund.status, refund.text).toBe(201);
    const after = await commissionsOf(a.id);
    expect(after.find((x) => x.kind === 'upsell').status).toBe('reversed');
    expect(after.find((x) => x.kind === 'conversion').status).toBe('payable');
  });

  it('never for a throttled order, requested or automatic', async () => {
    const a = await createAffiliate(w.team.api, { throttle_rate: 100, automatic_throttling: true, commission: { type: 'fixed', amount: 100, on_upsells: true, hold_days: 0 } });
    const auto = await createOrder(w, { affiliate: { affiliate_id: a.id } });
    expect(auto.body.data.is_throttled).toBe(true);
    const up = await w.team.api.post('/checkout/orders/upsell', { order_number: auto.body.data.order_number, upsell_id: w.funnel.upsellId, quantity: 1 });
    expect(up.status, up.text).toBe(200);
    const b = await createAffiliate(w.team.api, { commission: { type: 'fixed', amount: 100, hold_days: 0 } });
    const requested = await createOrder(w, { affiliate: { affiliate_id: b.id }, is_throttle: true });
    expect(requested.body.data.is_throttled).toBe(true);
    expect(await commissionsOf(a.id)).toHaveLength(0);
    expect(await commissionsOf(b.id)).toHaveLength(0);
  });

  it('rebills earn too when the rule says so, and keep the attribution of the first order', { timeout: 60_000 }, async () => {
    const a = await createAffiliate(w.team.api, { commission: { type: 'percent', percent: 10, on_rebills: true, hold_days: 0 } });
    const r = await createOrder(w, { affiliate: { affiliate_id: a.id, sub2: 'rb' }, offer: w.funnel.offers.trial });
    expect(r.status, r.text).toBe(200);
    const n = r.body.data.order_number;
    expect((await w.team.api.post('/checkout/orders/complete', { order_number: n })).status).toBe(200);
    const [sub] = (await w.team.api.get(`/v1/subscriptions?order_number=${n}`)).body.data;
    const rebill = await w.team.api.post(`/v1/subscriptions/${sub.id}/rebill`, {});
    expect(rebill.status, rebill.text).toBeLessThan(300);
    const rows = await commissionsOf(a.id);
    const renewal = rows.find((x) => x.kind === 'rebill');
    expect(renewal).toMatchObject({ amount: 290, status: 'payable', sub2: 'rb' });
    expect(renewal.order_number).not.toBe(n);
    expect((await w.team.api.get(`/v1/orders/${renewal.order_number}`)).body.data.affiliate).toMatchObject({ affiliate_id: a.id, sub2: 'rb' });
  });
});
