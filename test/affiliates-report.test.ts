import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { email } from './support/fixtures.ts';
import { affiliateWorld, type AffiliateWorld, createAffiliate, createOrder } from './support/affiliates.ts';

// /v1/reports/affiliates: per affiliate (and sub id) over a period, throttled orders excluded;
// the merchant's own view shows the throttled ones apart.

let w: AffiliateWorld;
beforeAll(async () => {
  w = await affiliateWorld();
});
afterAll(async () => {
  await w?.close();
});

describe('affiliate report', () => {
  it('leads (throttled ones included), conversions, revenue, upsells, refunds, commission and EPC, without the throttled conversions', { timeout: 120_000 }, async () => {
    const a = await createAffiliate(w.team.api, { commission: { type: 'fixed', amount: 1000, hold_days: 0 } });
    const other = await createAffiliate(w.team.api);
    const start = new Date().toISOString();
    // A lead that never pays.
    const lead = await w.team.api.post('/checkout/leads', { campaign_id: w.funnel.campaignId, customer: { email: email('lead') }, affiliate: { affiliate_id: a.id, sub1: 'fb' } });
    expect(lead.status, lead.text).toBe(201);
    // Three conversions (sub1 fb, fb, tt), one upsell, one partial refund; one throttled conversion; another affiliate's.
    const c1 = await createOrder(w, { affiliate: { affiliate_id: a.id, sub1: 'fb' } });
    const c2 = await createOrder(w, { affiliate: { affiliate_id: a.id, sub1: 'fb' } });
    await createOrder(w, { affiliate: { affiliate_id: a.id, sub1: 'tt' } });
    const throttled = await createOrder(w, { affiliate: { affiliate_id: a.id, sub1: 'fb' }, is_throttle: true });
    const throttledUpsell = await w.team.api.post('/checkout/orders/upsell', { order_number: throttled.body.data.order_number, upsell_id: w.funnel.upsellId, quantity: 1 });
    expect(throttledUpsell.status).toBe(200);
    await createOrder(w, { affiliate: { affiliate_id: other.id } });
    const up = await w.team.api.post('/checkout/orders/upsell', { order_number: c1.body.data.order_number, upsell_id: w.funnel.upsellId, quantity: 1 });
    expect(up.status, up.text).toBe(200);
    const refund = await w.team.api.post(`/v1/orders/${c2.body.data.order_number}/refunds`, { amount: 1500 });
    expect(refund.status, refund.text).toBe(201);

    const r = await w.team.api.get(`/v1/reports/affiliates?affiliate_id=${a.id}&created_gte=${encodeURIComponent(start)}`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toEqual([
      {
        affiliate_id: a.id,
        sub_id: null,
        currency: 'USD',
        // The throttled order is a lead too: leads minus conversions does not tell which were throttled.
        leads: 5,
        conversions: 3,
        conversion_rate: 60,
        revenue: 3 * 4395,
        upsell_revenue: 900,
        rebill_revenue: 0,
        refunds: 1500,
        chargebacks: 0,
        chargeback_amount: 0,
        // c2's commission was reversed by its refund.
        commission: 2000,
        epc: 400,
        throttled: { conversions: 1, revenue: 4395 },
      },
    ]);

    const bySub = await w.team.api.get(`/v1/reports/affiliates?affiliate_id=${a.id}&group_by=sub1&created_gte=${encodeURIComponent(start)}`);
    expect(bySub.body.data.map((x: any) => [x.sub_id, x.leads, x.conversions, x.revenue, x.throttled.conversions])).toEqual([
      ['fb', 4, 2, 2 * 4395, 1],
      ['tt', 1, 1, 4395, 0],
    ]);

    // The whole team: one row per affiliate.
    const all = await w.team.api.get(`/v1/reports/affiliates?created_gte=${encodeURIComponent(start)}`);
    expect(all.body.data.map((x: any) => x.affiliate_id)).toEqual([a.id, other.id].sort());
  });
});
