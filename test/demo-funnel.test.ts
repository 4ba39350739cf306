import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/app/logger.ts';
import { type DemoSeed, seedDemo } from '../src/app/seed.ts';
import { buildServer } from '../src/app/server.ts';
import type { Http } from '../src/app/http.ts';
import { SANDBOX_CARDS } from '../src/sandbox/cards.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { DEMO_TOKEN_NAME, type DemoFunnelOptions, demoFunnelOptions, enableDemoFunnel } from '../web/demo/funnel.ts';
import { ApiClient, startTestApp, type TestApp } from './support/harness.ts';

let app: TestApp;
let sandbox: { url: string; close(): Promise<void> };
let seed: DemoSeed;
let options: DemoFunnelOptions;
let demoServer: Http;
/** The demo pages and their backend, as a browser reaches them: no token. */
let browser: ApiClient;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, slowMs: 50 });
  app = await startTestApp();
  seed = await seedDemo(app.ctx, { sandboxUrl: sandbox.url });
  options = (await demoFunnelOptions(app.ctx, seed))!;
  // Routes are added before listen, as `npm start` does; this server shares the test app's services.
  demoServer = await buildServer(app.ctx, createLogger('warn'));
  enableDemoFunnel(demoServer, options);
  await demoServer.listen({ host: '127.0.0.1', port: 0 });
  const addr = demoServer.server.address();
  browser = new ApiClient(`http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`, undefined);
});
afterAll(async () => {
  await demoServer?.close();
  await app?.close();
  await sandbox?.close();
});

describe('demo funnel', () => {
  it('serves the three pages; the checkout lists every sandbox test card', async () => {
    const checkout = await browser.get('/demo', { accept: 'text/html' });
    expect(checkout.status).toBe(200);
    expect(checkout.headers.get('content-type')).toMatch(/^text\/html/);
    for (const number of Object.values(SANDBOX_CARDS)) expect(checkout.text).toContain(`data-card="${number}"`);
    expect(checkout.text).toContain('Declined: insufficient funds');
    expect(checkout.text).toContain('value="4111 1111 1111 1111"');
    expect(checkout.text).not.toContain(options.token);
    for (const page of ['/demo/upsell', '/demo/thank-you', '/demo/assets/demo.js', '/demo/assets/demo.css']) {
      const r = await browser.get(page);
      expect(r.status, page).toBe(200);
      expect(r.text).not.toContain(options.token);
    }
    expect((await browser.get('/demo/assets/constructor')).status).toBe(404);
    expect((await browser.get('/demo/assets/..%2Ffunnel.ts')).status).toBe(404);
  });

  it('the config names the campaign, the offer, the upsell and the test cards, never the token', async () => {
    const r = await browser.get('/demo/api/config');
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      campaign_id: seed.campaign_id,
      currency: 'USD',
      offers: [{ id: seed.offers.serum, price: 3900, shipping: 495 }],
      // The guide (step 2, $9): the step-1 upsell is a $0 trial, which the gateway refuses to charge.
      upsell: { id: seed.upsells[1]!.upsell_id, offer: { id: seed.offers.guide, price: 900 } },
    });
    expect(r.body.data.test_cards).toContainEqual({ name: 'approve', number: '4111111111111111', response_code: '100', effect: 'Approved' });
    expect(r.text).not.toContain(options.token);
  });

  it('lead → pay (approve card) → upsell → complete, through the public API', async () => {
    const lead = await browser.post('/demo/api/lead', { email: 'ada.demo@example.com', first_name: 'Ada', last_name: 'Lovelace' });
    expect(lead.status, JSON.stringify(lead.body)).toBe(201);
    const orderNumber = lead.body.data.order_number as string;
    expect(lead.body.data).toMatchObject({ status: 'lead', campaign_id: seed.campaign_id, total: 4395 });

    const pay = await browser.post('/demo/api/pay', {
      order_number: orderNumber,
      attempt_id: 'attempt-0001',
      card_number: '4111 1111 1111 1111',
      card_exp: '12/30',
      card_cvv: '123',
      billing: { line1: '1 Main St', city: 'Springfield', postal_code: '12345', country: 'US' },
    });
    expect(pay.status, JSON.stringify(pay.body)).toBe(200);
    expect(pay.body).toMatchObject({ success: true, data: { order_number: orderNumber, payment_status: 'completed' } });

    const upsell = await browser.post('/demo/api/upsell', { order_number: orderNumber });
    expect(upsell.status, JSON.stringify(upsell.body)).toBe(200);
    expect(upsell.body.success).toBe(true);
    expect(upsell.body.data.lines.map((l: { upsell_id: string | null }) => l.upsell_id)).toContain(seed.upsells[1]!.upsell_id);
    expect(upsell.body.data.total).toBe(4395 + 900);

    const complete = await browser.post('/demo/api/complete', { order_number: orderNumber });
    expect(complete.status, JSON.stringify(complete.body)).toBe(200);
    expect(complete.body.success).toBe(true);
    expect(complete.body.data).toMatchObject({ order_number: orderNumber });

    // The merchant's view of the same order, through the API with the merchant's own token.
    const merchant = new ApiClient(app.url, seed.token);
    const order = await merchant.get(`/v1/orders/${orderNumber}`);
    expect(order.body.data.lines).toHaveLength(2);
    // Completion queued the purchase confirmation (the worker, not running here, would send it).
    const mail = await merchant.get(`/v1/mail?order_number=${orderNumber}`);
    expect(mail.body.data).toEqual([expect.objectContaining({ kind: 'purchase_confirmation', to: 'ada.demo@example.com', status: 'pending' })]);
    const shown = await merchant.get(`/v1/mail/${mail.body.data[0].id}`);
    expect(shown.body.data.text_body).toContain('Total: $52.95');
    expect(shown.body.data.text_body).toContain('- Skin Routine Guide × 1: $9.00');
  });

  it("a decline card shows the API's decline; the same attempt id replays the first answer", async () => {
    const lead = await browser.post('/demo/api/lead', { email: 'grace.demo@example.com' });
    const orderNumber = lead.body.data.order_number as string;
    const body = { order_number: orderNumber, attempt_id: 'attempt-decline-1', card_number: SANDBOX_CARDS.insufficientFunds, card_exp: '12/30', card_cvv: '123' };
    const pay = await browser.post('/demo/api/pay', body);
    expect(pay.status).toBe(402);
    expect(pay.body).toMatchObject({ success: false, data: { order_number: orderNumber } });
    expect(pay.body.message).toMatch(/declined/i);
    const again = await browser.post('/demo/api/pay', body);
    expect(again.text).toBe(pay.text);
  });

  it('refuses bad input before calling the API (422), and cannot be pointed at another campaign', async () => {
    const bad = await browser.post('/demo/api/lead', { email: 'not-an-email' });
    expect(bad.status).toBe(422);
    const extra = await browser.post('/demo/api/lead', { email: 'x@example.com', campaign_id: 'cmp_other' });
    expect(extra.status).toBe(422);
    expect(extra.body.error.fields).toEqual([{ path: 'campaign_id', message: 'is not a field you can set here' }]);
  });

  it('later starts: reads data/demo.json and replaces the previous demo-funnel token', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkstand-demo-'));
    try {
      const { token: _t, ...ids } = seed;
      fs.writeFileSync(path.join(dir, 'demo.json'), JSON.stringify(ids));
      const later = await demoFunnelOptions({ ...app.ctx, config: { ...app.ctx.config, dataDir: dir } });
      expect(later).toMatchObject({ campaignId: seed.campaign_id, offers: [seed.offers.serum], upsells: [seed.upsells[1]!.upsell_id, seed.upsells[0]!.upsell_id] });
      expect(later!.token).not.toBe(options.token);
      const tokens = (await app.ctx.services.teams.listTokens(seed.team_id)).filter((t) => t.name === DEMO_TOKEN_NAME);
      expect(tokens.filter((t) => !t.revoked_at)).toHaveLength(1);
      expect((await new ApiClient(app.url, options.token).get('/v1/orders')).status).toBe(401);
      expect((await new ApiClient(app.url, later!.token).get('/v1/orders')).status).toBe(200);

      expect(await demoFunnelOptions({ ...app.ctx, config: { ...app.ctx.config, dataDir: path.join(dir, 'none') } })).toBeUndefined();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
