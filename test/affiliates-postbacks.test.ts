import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/app/logger.ts';
import { AffiliatePostbacks } from '../src/modules/affiliates/postbacks.ts';
import { startWorker } from '../src/worker/worker.ts';
import { affiliateWorld, type AffiliateWorld, createAffiliate, createOrder, listAll } from './support/affiliates.ts';
import { CARD } from './support/fixtures.ts';

// Postbacks (server-to-server GETs through the outbox) and thank-you page pixels: once for each
// conversion that is not throttled, never for a throttled one.

const log = createLogger('silent');
let w: AffiliateWorld;
let receiver: { url: string; hits: Array<{ method: string; url: URL }>; failNext: Map<string, number>; close(): Promise<void> };

async function startReceiver(): Promise<typeof receiver> {
  const hits: Array<{ method: string; url: URL }> = [];
  const failNext = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://receiver');
    hits.push({ method: req.method ?? '', url });
    const left = failNext.get(url.pathname) ?? 0;
    if (left > 0) failNext.set(url.pathname, left - 1);
    res.writeHead(left > 0 ? 500 : 200).end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits, failNext, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** Drains the postback queue as the worker would, until nothing is due (retries are 20 ms apart). */
async function drain() {
  for (let idle = 0; idle < 5; ) {
    const n = await w.app.ctx.services.affiliates.postbacks.deliverDue(log);
    if (n === 0) {
      idle++;
      await new Promise((r) => setTimeout(r, 30));
    } else idle = 0;
  }
}

beforeAll(async () => {
  receiver = await startReceiver();
  w = await affiliateWorld({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_RETRY_SCHEDULE_MS: '20,20,20', WEBHOOK_TIMEOUT_MS: '3000' });
});
afterAll(async () => {
  await w?.close();
  await receiver?.close();
});

describe('postbacks and pixels', () => {
  it('fire once for each conversion that is not throttled, never for a throttled one, with URL-encoded values', { timeout: 120_000 }, async () => {
    const a = await createAffiliate(w.team.api, {
      throttle_rate: 50,
      automatic_throttling: true,
      postback_url: `${receiver.url}/pb?click={click_id}&order={order_number}&amount={amount}&cur={currency}&s1={sub1}&s2={sub2}&e={event}`,
      pixel_html: '<img src="https://track.example/p?c={click_id}&o={order_number}" width="1" height="1">',
    });
    const orders: Array<{ n: string; throttled: boolean; click: string }> = [];
    for (let i = 0; i < 6; i++) {
      const click = `c ${i}&x=/é'`;
      const r = await createOrder(w, { affiliate: { affiliate_id: a.id, click_id: click, sub1: `s/${i}`, sub2: 'two words' }, ...(i === 5 ? { is_throttle: true } : {}) });
      expect(r.status, r.text).toBe(200);
      orders.push({ n: r.body.data.order_number, throttled: r.body.data.is_throttled, click });
    }
    const fired = orders.filter((o) => !o.throttled);
    expect(fired.length).toBe(3); // rate 50 %: 2 automatic of the first 5, then one requested
    await drain();
    const hits = receiver.hits.filter((h) => h.url.pathname === '/pb');
    expect(hits).toHaveLength(fired.length);
    expect(hits.every((h) => h.method === 'GET')).toBe(true);
    expect(hits.map((h) => h.url.searchParams.get('order')).sort()).toEqual(fired.map((o) => o.n).sort());
    for (const h of hits) {
      const o = orders.find((x) => x.n === h.url.searchParams.get('order'))!;
      expect(h.url.searchParams.get('click')).toBe(o.click);
      expect(h.url.searchParams.get('amount')).toBe('43.95');
      expect(h.url.searchParams.get('cur')).toBe('USD');
      expect(h.url.searchParams.get('s2')).toBe('two words');
      expect(h.url.searchParams.get('e')).toBe('conversion');
    }
    // Draining again sends nothing more: once per conversion.
    await drain();
    expect(receiver.hits.filter((h) => h.url.pathname === '/pb')).toHaveLength(fired.length);
    const log = await listAll(w.team.api, `/v1/affiliate-postbacks?affiliate_id=${a.id}`);
    expect(log).toHaveLength(fired.length);
    expect(log.every((p) => p.status === 'succeeded' && p.attempt_count === 1 && p.last_status_code === 200)).toBe(true);

    // Pixels: the rendered HTML for an order that is not throttled, nothing for a throttled one.
    const shown = await w.team.api.get(`/v1/orders/${fired[0]!.n}/pixels`);
    expect(shown.status, shown.text).toBe(200);
    expect(shown.body.data.fire).toBe(true);
    expect(shown.body.data.pixels[0].html).toBe(
      `<img src="https://track.example/p?c=${encodeURIComponent(fired[0]!.click).replace(/'/g, '%27')}&o=${fired[0]!.n}" width="1" height="1">`,
    );
    for (const o of orders.filter((x) => x.throttled)) {
      const none = await w.team.api.get(`/v1/orders/${o.n}/pixels`);
      expect(none.body.data).toMatchObject({ fire: false, pixels: [] });
    }
  });

  it('a failing receiver is retried on the schedule, every attempt is logged, and replay sends it again', { timeout: 60_000 }, async () => {
    const a = await createAffiliate(w.team.api, { postback_url: `${receiver.url}/flaky?o={order_number}` });
    receiver.failNext.set('/flaky', 2);
    const r = await createOrder(w, { affiliate: { affiliate_id: a.id } });
    expect(r.status, r.text).toBe(200);
    await drain();
    const [p] = await listAll(w.team.api, `/v1/affiliate-postbacks?affiliate_id=${a.id}`);
    const full = await w.team.api.get(`/v1/affiliate-postbacks/${p.id}`);
    expect(full.body.data).toMatchObject({ status: 'succeeded', attempt_count: 3, url: `${receiver.url}/flaky?o=${r.body.data.order_number}` });
    expect(full.body.data.attempts.map((x: any) => x.status_code)).toEqual([500, 500, 200]);

    const replay = await w.team.api.post(`/v1/affiliate-postbacks/${p.id}/replay`);
    expect(replay.status, replay.text).toBe(202);
    await drain();
    expect(receiver.hits.filter((h) => h.url.pathname === '/flaky')).toHaveLength(4);
    const after = await w.team.api.get(`/v1/affiliate-postbacks/${p.id}`);
    expect(after.body.data.attempts).toHaveLength(4);
  });

  it('a slow affiliate URL holds one postback, not the queue: the drain claims and sends the next batch meanwhile', { timeout: 120_000 }, async () => {
    // A receiver of its own that answers its first request only when released, every other at once.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const safety = setTimeout(release, 20_000);
    const hits: string[] = [];
    const server = http.createServer((req, res) => {
      hits.push(req.url ?? '');
      if (hits.length === 1) void held.then(() => res.writeHead(200).end('ok'));
      else res.writeHead(200).end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const a = await createAffiliate(w.team.api, { postback_url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/slow?o={order_number}` });
      for (let i = 0; i < 5; i++) expect((await createOrder(w, { affiliate: { affiliate_id: a.id } })).status).toBe(200);
      const postbacks = new AffiliatePostbacks(w.app.store, { allowPrivateTargets: true, timeoutMs: 60_000, retryScheduleMs: [20], batchSize: 2, concurrency: 4 }, () => {});
      const drained = postbacks.deliverDue(log);
      try {
        // Batch one is two postbacks, one of them held; with whole batches the drain would claim
        // nothing more until it is released, with one slot taken it claims the next two.
        const deadline = Date.now() + 15_000;
        while (hits.length < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
        expect(hits.length).toBeGreaterThanOrEqual(4);
      } finally {
        release();
      }
      expect(await drained).toBeGreaterThanOrEqual(5);
      expect(new Set(hits).size).toBe(5);
      const recorded = await listAll(w.team.api, `/v1/affiliate-postbacks?affiliate_id=${a.id}`);
      expect(recorded.map((p) => p.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded', 'succeeded']);
    } finally {
      clearTimeout(safety);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('refuses templates with unknown placeholders or that are not http(s)', async () => {
    const bad = await w.team.api.post('/v1/affiliates', { id: 'bad-template', name: 'x', postback_url: 'https://t.example/?x={nope}' });
    expect(bad.status).toBe(422);
    expect(bad.text).toContain('{nope}');
    const ftp = await w.team.api.post('/v1/affiliates', { id: 'bad-scheme', name: 'x', postback_url: 'ftp://t.example/{click_id}' });
    expect(ftp.status).toBe(422);
  });

  it('refuses placeholders in the host: a click id or sub id from the customer\'s link never picks where a postback goes', async () => {
    for (const [i, url] of ['https://{sub1}.t.example/pb', 'https://t.example{click_id}/pb', 'https://{click_id}@t.example/pb', 'http://t.example:{sub2}/pb', 'https://{sub1}/pb'].entries()) {
      const r = await w.team.api.post('/v1/affiliates', { id: `host-placeholder-${i}`, name: 'x', postback_url: url });
      expect(r.status, url).toBe(422);
      expect(r.body.error.fields, url).toContainEqual({ path: 'postback_url', message: 'may use placeholders only after the host (in the path, query or fragment)' });
      expect((await w.team.api.get(`/v1/affiliates/host-placeholder-${i}`)).status).toBe(404);
    }
    const ok = await createAffiliate(w.team.api, { postback_url: 'https://t.example/pb/{sub1}?c={click_id}#{order_number}' });
    const patched = await w.team.api.patch(`/v1/affiliates/${ok.id}`, { postback_url: 'https://{sub1}.t.example/pb' });
    expect(patched.status).toBe(422);
    expect(patched.body.error.fields[0].path).toBe('postback_url');
    expect((await w.team.api.get(`/v1/affiliates/${ok.id}`)).body.data.postback_url).toBe('https://t.example/pb/{sub1}?c={click_id}#{order_number}');
  });

  it('a test order (a listed test card) is no conversion: no throttle decision, no commission, no postback, not in the report', { timeout: 120_000 }, async () => {
    const a = await createAffiliate(w.team.api, {
      throttle_rate: 50,
      automatic_throttling: true,
      commission: { type: 'fixed', amount: 500, on_upsells: true, hold_days: 0 },
      postback_url: `${receiver.url}/test-card?o={order_number}&e={event}`,
      postback_events: ['conversion', 'upsell', 'refund'],
    });
    const pan = '4242424242424242';
    expect((await w.team.api.post('/v1/test-cards', { card_number: pan })).status).toBe(201);
    const start = new Date().toISOString();
    const r = await createOrder(w, { affiliate: { affiliate_id: a.id, click_id: 'qa' }, card: { ...CARD, card_number: pan } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ is_test: true, payment_status: 'completed', is_throttled: false, affiliate: { affiliate_id: a.id } });
    const n = r.body.data.order_number;
    const up = await w.team.api.post('/checkout/orders/upsell', { order_number: n, upsell_id: w.funnel.upsellId, quantity: 1 });
    expect(up.status, up.text).toBe(200);
    const refund = await w.team.api.post(`/v1/orders/${n}/refunds`, { amount: 500 });
    expect(refund.status, refund.text).toBe(201);
    await drain();
    expect(receiver.hits.filter((h) => h.url.pathname === '/test-card')).toHaveLength(0);
    expect(await listAll(w.team.api, `/v1/affiliates/${a.id}/throttle/ledger`)).toHaveLength(0);
    expect(await listAll(w.team.api, `/v1/affiliate-commissions?affiliate_id=${a.id}`)).toHaveLength(0);
    expect(await listAll(w.team.api, `/v1/affiliate-postbacks?affiliate_id=${a.id}`)).toHaveLength(0);
    expect((await w.team.api.get(`/v1/orders/${n}`)).body.data.events.map((e: any) => e.type)).not.toContain('affiliate.converted');
    expect((await w.team.api.get(`/v1/orders/${n}/pixels`)).body.data).toMatchObject({ fire: false, pixels: [] });
    expect((await w.team.api.get(`/v1/reports/affiliates?affiliate_id=${a.id}&created_gte=${encodeURIComponent(start)}`)).body.data).toEqual([]);

    // The throttle count was not touched: the affiliate's first live order is its first conversion.
    const live = await createOrder(w, { affiliate: { affiliate_id: a.id } });
    expect(live.status, live.text).toBe(200);
    const ledger = await listAll(w.team.api, `/v1/affiliates/${a.id}/throttle/ledger`);
    expect(ledger).toHaveLength(1);
    expect(ledger[0]).toMatchObject({ order_number: live.body.data.order_number, conversions_before: 0, throttled_before: 0 });
    const report = await w.team.api.get(`/v1/reports/affiliates?affiliate_id=${a.id}&created_gte=${encodeURIComponent(start)}`);
    expect(report.body.data).toHaveLength(1);
    expect(report.body.data[0]).toMatchObject({ leads: 1, conversions: ledger[0].throttled ? 0 : 1, upsell_revenue: 0, refunds: 0 });
  });

  it('optional events: an upsell and a refund call the URL with e=upsell and e=refund; a throttled order never calls it', { timeout: 120_000 }, async () => {
    const a = await createAffiliate(w.team.api, { postback_url: `${receiver.url}/events?o={order_number}&e={event}&t={transaction_id}`, postback_events: ['conversion', 'upsell', 'refund'] });
    const orders: Record<string, string> = {};
    for (const [name, throttled] of [['live', false], ['throttled', true]] as const) {
      const r = await createOrder(w, { affiliate: { affiliate_id: a.id }, is_throttle: throttled });
      expect(r.status, r.text).toBe(200);
      expect(r.body.data.is_throttled).toBe(throttled);
      const n = r.body.data.order_number;
      orders[name] = n;
      const up = await w.team.api.post('/checkout/orders/upsell', { order_number: n, upsell_id: w.funnel.upsellId, quantity: 1 });
      expect(up.status, up.text).toBe(200);
      const refund = await w.team.api.post(`/v1/orders/${n}/refunds`, { transaction_id: up.body.data.transaction_id });
      expect(refund.status, refund.text).toBe(201);
    }
    await drain();
    const hits = receiver.hits.filter((h) => h.url.pathname === '/events');
    expect(hits.map((h) => h.url.searchParams.get('o'))).not.toContain(orders.throttled);
    expect(hits.map((h) => h.url.searchParams.get('e')).sort()).toEqual(['conversion', 'refund', 'upsell']);
    expect(hits.every((h) => h.url.searchParams.get('o') === orders.live && h.url.searchParams.get('t'))).toBe(true);
    const log = await listAll(w.team.api, `/v1/affiliate-postbacks?affiliate_id=${a.id}`);
    expect(log.map((p) => p.event).sort()).toEqual(['conversion', 'refund', 'upsell']);
  });

  it('the worker delivers postbacks by itself (no manual drain)', { timeout: 60_000 }, async () => {
    const a = await createAffiliate(w.team.api, { postback_url: `${receiver.url}/by-worker?o={order_number}` });
    const worker = startWorker(w.app.ctx, log, { schedules: [], pollMs: 20 });
    let n: string;
    try {
      const r = await createOrder(w, { affiliate: { affiliate_id: a.id } });
      expect(r.status, r.text).toBe(200);
      n = r.body.data.order_number;
      await expect.poll(() => receiver.hits.filter((h) => h.url.pathname === '/by-worker').length, { timeout: 20_000 }).toBe(1);
      // The receiver has the request before the worker commits its outcome: wait for the record.
      await expect.poll(async () => (await listAll(w.team.api, `/v1/affiliate-postbacks?affiliate_id=${a.id}`))[0]?.status, { timeout: 20_000 }).toBe('succeeded');
    } finally {
      await worker.stop();
    }
    const hits = receiver.hits.filter((h) => h.url.pathname === '/by-worker');
    expect(hits).toHaveLength(1);
    expect(hits[0]!.url.searchParams.get('o')).toBe(n);
  });

  it('the postback URL must reach a public address unless private targets are allowed', { timeout: 120_000 }, async () => {
    const strict = await affiliateWorld();
    try {
      const r = await strict.team.api.post('/v1/affiliates', { id: 'loopback', name: 'x', postback_url: 'http://127.0.0.1:9/pb?o={order_number}' });
      expect(r.status, r.text).toBe(422);
      expect(r.body.error.fields[0].path).toBe('postback_url');
    } finally {
      await strict.close();
    }
  });
});
