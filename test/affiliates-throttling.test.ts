import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { affiliateWorld, type AffiliateWorld, createAffiliate, createOrder, listAll, pool } from './support/affiliates.ts';

// Spec 2.3 over HTTP: conversions are Create Order calls approved by the sandbox card gateway; the
// throttle decision of each is read back from the order (`is_throttled`) and the throttle ledger.

let w: AffiliateWorld;
beforeAll(async () => {
  w = await affiliateWorld();
});
afterAll(async () => {
  await w?.close();
});

/**
 * `count` conversions for the affiliate, `concurrency` at once; `requested(i)` sends is_throttle: true.
 * A 503 (on PostgreSQL, more requests than the pool's connections can wait longer than the pool's
 * acquire timeout on a slow machine) is answered as a client would: the order is sent again. A
 * request that failed before its conversion committed recorded no decision, so the ledger holds
 * exactly one row per approved answer.
 */
async function convert(affiliateId: string, count: number, concurrency: number, requested: (i: number) => boolean = () => false) {
  return pool(count, concurrency, async (i) => {
    let r = await createOrder(w, { affiliate: { affiliate_id: affiliateId, sub1: `s${i % 3}` }, ...(requested(i) ? { is_throttle: true } : {}) });
    for (let retry = 0; r.status === 503 && retry < 20; retry++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      r = await createOrder(w, { affiliate: { affiliate_id: affiliateId, sub1: `s${i % 3}` }, ...(requested(i) ? { is_throttle: true } : {}) });
    }
    expect(r.status, r.text).toBe(200);
    return { order: r.body.data.order_number as string, throttled: r.body.data.is_throttled as boolean, requested: requested(i) };
  });
}

/** The ledger in decision order, each row checked against spec 2.3's bound at that moment. */
async function ledgerOf(affiliateId: string, ratePercent: number) {
  const rows = (await listAll(w.team.api, `/v1/affiliates/${affiliateId}/throttle/ledger`)).reverse();
  rows.forEach((r, n) => {
    expect(r.conversions_before).toBe(n);
    const throttledAfter = r.throttled_before + (r.throttled ? 1 : 0);
    const next = rows[n + 1];
    if (next) expect(next.throttled_before).toBe(throttledAfter);
    // Automatic throttling never takes the share above the rate after any conversion.
    if (r.reason === 'automatic') expect(throttledAfter * 100).toBeLessThanOrEqual(ratePercent * (n + 1));
  });
  return rows;
}

describe('throttling (spec 2.3)', () => {
  // The 1,000 conversions run in CI's PostgreSQL pass (STRESS=1, .ci/run); `npm test` runs 200
  // (the same check after every conversion, ~70 s instead of ~6 min on a loaded 2-core machine).
  const N = Number(process.env.THROTTLE_CONVERSIONS ?? (process.env.STRESS === '1' ? 1000 : 200));
  it(`rate 30 % over ${N} conversions: after every conversion throttled ≤ ⌊0.3 × conversions⌋, and ${(3 * N) / 10} at the end`, { timeout: 1_800_000 }, async () => {
    const a = await createAffiliate(w.team.api, { throttle_rate: 30, automatic_throttling: true });
    const results = await convert(a.id, N, 8);
    const rows = await ledgerOf(a.id, 30);
    expect(rows).toHaveLength(N);
    rows.forEach((r, n) => expect(r.throttled_before + (r.throttled ? 1 : 0)).toBe(Math.floor((3 * (n + 1)) / 10)));
    expect(rows.filter((r) => r.throttled)).toHaveLength(Math.floor((3 * N) / 10));
    expect(rows.every((r) => r.reason !== 'requested')).toBe(true);
    // The answers and the orders agree with the ledger.
    const byOrder = new Map(rows.map((r) => [r.order_number, r.throttled]));
    for (const x of results) expect(x.throttled).toBe(byOrder.get(x.order));
    expect(await listAll(w.team.api, `/v1/orders?affiliate_id=${a.id}&is_throttled=true`)).toHaveLength(Math.floor((3 * N) / 10));
    expect(await listAll(w.team.api, `/v1/orders?affiliate_id=${a.id}&is_throttled=false`)).toHaveLength(N - Math.floor((3 * N) / 10));
  });

  it('10 % arriving with is_throttle: true and rate 30 %: 20 % automatic, 30 % in all', { timeout: 300_000 }, async () => {
    const a = await createAffiliate(w.team.api, { throttle_rate: 30, automatic_throttling: true });
    await convert(a.id, 100, 1, (i) => i % 10 === 9);
    const rows = await ledgerOf(a.id, 30);
    expect(rows.filter((r) => r.reason === 'requested')).toHaveLength(10);
    expect(rows.filter((r) => r.reason === 'automatic')).toHaveLength(20);
    expect(rows.filter((r) => r.throttled)).toHaveLength(30);
  });

  it('40 % arriving with is_throttle: true and rate 30 %: no automatic throttle, 40 % throttled', { timeout: 300_000 }, async () => {
    const a = await createAffiliate(w.team.api, { throttle_rate: 30, automatic_throttling: true });
    const results = await convert(a.id, 100, 1, (i) => i % 5 < 2);
    const rows = await ledgerOf(a.id, 30);
    expect(rows.filter((r) => r.reason === 'automatic')).toHaveLength(0);
    expect(rows.filter((r) => r.throttled)).toHaveLength(40);
    for (const x of results) expect(x.throttled).toBe(x.requested);
  });

  it('no rate configured: is_throttle true just throttles (and counts in the ledger), false throttles nothing', async () => {
    const a = await createAffiliate(w.team.api);
    const [t, f] = await convert(a.id, 2, 1, (i) => i === 0);
    expect(t!.throttled).toBe(true);
    expect(f!.throttled).toBe(false);
    const rows = await ledgerOf(a.id, 0);
    expect(rows.map((r) => [r.reason, r.throttled, r.rate])).toEqual([
      ['requested', true, null],
      ['none', false, null],
    ]);
    // Without any affiliate, is_throttle true throttles too.
    const plain = await createOrder(w, { is_throttle: true });
    expect(plain.body.data.is_throttled).toBe(true);
  });

  it('false never un-throttles: a lead sent with is_throttle true stays throttled when paid with false', async () => {
    const a = await createAffiliate(w.team.api, { throttle_rate: 0, automatic_throttling: true });
    const lead = await w.team.api.post('/checkout/leads', {
      campaign_id: w.funnel.campaignId,
      customer: { email: `keep.${Date.now()}@example.com` },
      products: [{ offer_id: w.funnel.offers.serum, quantity: 1 }],
      is_throttle: true,
      affiliate: { affiliate_id: a.id },
    });
    expect(lead.status, lead.text).toBe(201);
    expect(lead.body.data.is_throttled).toBe(true);
    const paid = await w.team.api.post('/checkout/orders/payment', {
      order_number: lead.body.data.order_number,
      gateway_id: w.gatewayId,
      is_throttle: false,
      payment: { card_number: '4111111111111111', card_exp: '12/39', card_cvv: '123' },
    });
    expect(paid.status, paid.text).toBe(200);
    expect(paid.body.data.is_throttled).toBe(true);
    const [row] = await ledgerOf(a.id, 0);
    expect(row).toMatchObject({ requested: true, throttled: true, reason: 'requested' });
  });

  // Only PostgreSQL proves this: PGlite runs one transaction at a time, so there the 50 conversions are
  // serialized by the database itself and the affiliate's row lock is never contended. CI's PostgreSQL
  // pass (TEST_DATABASE_URL) is the run that counts; on PGlite it only checks the bound still holds.
  it('50 concurrent conversions for one affiliate never push the share above the rate (a race only on PostgreSQL; PGlite serializes transactions)', { timeout: 300_000 }, async () => {
    const a = await createAffiliate(w.team.api, { throttle_rate: 30, automatic_throttling: true });
    const results = await convert(a.id, 50, 50);
    const rows = await ledgerOf(a.id, 30);
    expect(rows).toHaveLength(50);
    rows.forEach((r, n) => expect(r.throttled_before + (r.throttled ? 1 : 0)).toBeLessThanOrEqual(Math.floor((3 * (n + 1)) / 10)));
    expect(results.filter((x) => x.throttled)).toHaveLength(15);
  });

  it('a per-campaign rate is counted on its own; changing a rate starts the count over', async () => {
    const a = await createAffiliate(w.team.api, { throttle_rate: 0, automatic_throttling: true, campaign_throttle_rates: { [w.funnel.campaignId]: 50 } });
    const first = await convert(a.id, 4, 1);
    expect(first.map((x) => x.throttled)).toEqual([false, true, false, true]);
    const rows = await ledgerOf(a.id, 50);
    expect(rows.every((r) => r.counted_in === 'campaign' && r.rate === 50)).toBe(true);
    const patched = await w.team.api.patch(`/v1/affiliates/${a.id}`, { campaign_throttle_rates: { [w.funnel.campaignId]: 100 } });
    expect(patched.status, patched.text).toBe(200);
    const after = await convert(a.id, 2, 1);
    expect(after.map((x) => x.throttled)).toEqual([true, true]);
    const all = (await listAll(w.team.api, `/v1/affiliates/${a.id}/throttle/ledger`)).reverse();
    expect(all.slice(4).map((r) => r.conversions_before)).toEqual([0, 1]);
  });

  it('simulate answers what a replay with another rate decides, and writes nothing', { timeout: 300_000 }, async () => {
    const requested = (i: number) => i % 7 === 3;
    const a = await createAffiliate(w.team.api, { throttle_rate: 30, automatic_throttling: true });
    const b = await createAffiliate(w.team.api, { throttle_rate: 12.5, automatic_throttling: true });
    await convert(a.id, 40, 1, requested);
    const sim = await w.team.api.post(`/v1/affiliates/${a.id}/throttle/simulate`, { throttle_rate: 12.5, include_decisions: true });
    expect(sim.status, sim.text).toBe(200);
    // The same conversions, really decided at 12.5 % by another affiliate.
    await convert(b.id, 40, 1, requested);
    const real = await ledgerOf(b.id, 12.5);
    expect(sim.body.data.decisions.map((d: any) => [d.requested, d.throttled, d.reason])).toEqual(real.map((r) => [r.requested, r.throttled, r.reason]));
    expect(sim.body.data).toMatchObject({ conversions: 40, throttled: real.filter((r) => r.throttled).length, automatic: real.filter((r) => r.reason === 'automatic').length });
    // The same rate replays the actual decisions; nothing was written by either simulation.
    const same = await w.team.api.post(`/v1/affiliates/${a.id}/throttle/simulate`, { throttle_rate: 30 });
    expect(same.body.data.throttled).toBe(same.body.data.actual.throttled);
    expect(same.body.data.automatic).toBe(same.body.data.actual.automatic);
    expect(await listAll(w.team.api, `/v1/affiliates/${a.id}/throttle/ledger`)).toHaveLength(40);
  });
});
