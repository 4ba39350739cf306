import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/app/logger.ts';
import { sandboxApiBaseUrl } from '../src/providers/extpay/types.ts';
import { SANDBOX_CARDS } from '../src/sandbox/cards.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { email } from './support/fixtures.ts';
import { ApiClient, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';
import { statementsSent } from './support/statements.ts';

/**
 * The configuration cache (src/app/cache.ts) never makes this process act on configuration it
 * changed itself: each owning service drops its entry after the write. The TTL here is ten minutes,
 * so an entry that was not dropped would still be served: each test fails without its invalidation.
 */
let app: TestApp;
let team: TestTeam;
let sandbox: { url: string; close(): Promise<void> };
let seq = 0;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  app = await startTestApp({ CONFIG_CACHE_TTL_MS: '600000', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
  team = await app.newTeam('Cache');
});
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});

const card = (number: string) => ({ card_number: number, card_exp: '12/39', card_cvv: '123' });

async function created(path: string, body: Record<string, unknown>): Promise<string> {
  const r = await team.api.post(path, body);
  expect(r.status, `${path}: ${r.text}`).toBe(201);
  return r.body.data.id as string;
}

async function gateway(): Promise<{ id: string; key: string }> {
  const key = `key_${process.pid}_${++seq}`;
  const id = await created('/v1/gateways', { name: `gw ${seq}`, kind: 'nmi', base_url: sandbox.url, credentials: { security_key: key }, test_mode: true, is_active: true });
  return { id, key };
}

async function shop(gatewayId: string) {
  const campaign = await created('/v1/campaigns', { name: `c ${++seq}`, currency: 'USD', gateway_id: gatewayId });
  const product = await created('/v1/products', { name: 'p' });
  const offer = await created('/v1/offers', { campaign_id: campaign, product_id: product, name: 'o', price: 2500, shipping: 500, billing: 'one_time', fulfillment_type: 'physical' });
  return { campaign, offer };
}

function order(s: { campaign: string; offer: string }, pan: string = SANDBOX_CARDS.approve) {
  return team.api.post('/checkout/orders', {
    campaign_id: s.campaign,
    currency: 'USD',
    customer: { email: email('cache'), first_name: 'Ada', last_name: 'Lovelace' },
    products: [{ offer_id: s.offer, quantity: 1 }],
    payment: card(pan),
  });
}

async function approvedSales(key: string): Promise<number> {
  const r = await fetch(`${sandbox.url}/sandbox/nmi/ledger?security_key=${encodeURIComponent(key)}`);
  const { transactions } = (await r.json()) as { transactions: { type: string; status: string }[] };
  return transactions.filter((t) => t.type === 'sale' && t.status === 'approved').length;
}

describe('API tokens: this process acts on a revocation or rotation at once', () => {
  async function apiToken(): Promise<{ id: string; api: ApiClient }> {
    const r = await team.api.post('/v1/api-tokens', { name: `t ${++seq}`, role: 'support_l1' });
    expect(r.status, r.text).toBe(201);
    return { id: r.body.data.id, api: new ApiClient(app.url, r.body.data.secret) };
  }

  it('refuses a token revoked through the API on the very next request', async () => {
    const t = await apiToken();
    expect((await t.api.get('/v1/orders')).status).toBe(200);
    expect((await team.api.delete(`/v1/api-tokens/${t.id}`)).status).toBe(200);
    const next = await t.api.get('/v1/orders');
    expect(next.status).toBe(401);
    expect(next.body.error.code).toBe('token_revoked');
  });

  it('refuses a token rotated with no grace through the API at once, and takes its replacement', async () => {
    const t = await apiToken();
    expect((await t.api.get('/v1/orders')).status).toBe(200);
    const rotated = await team.api.post(`/v1/api-tokens/${t.id}/rotate`, { grace_seconds: 0 });
    expect(rotated.status, rotated.text).toBe(201);
    expect((await t.api.get('/v1/orders')).status).toBe(401);
    expect((await new ApiClient(app.url, rotated.body.data.token.secret).get('/v1/orders')).status).toBe(200);
  });

  it('refuses a token the CLI revokes or rotates (the control socket calls these) on the next request', async () => {
    const teams = app.ctx.services.teams;
    const revoked = await teams.createToken(team.teamId, 'cli');
    const a = new ApiClient(app.url, revoked.secret);
    expect((await a.get('/v1/orders')).status).toBe(200);
    await teams.revokeToken(revoked.token.id);
    expect((await a.get('/v1/orders')).status).toBe(401);

    const rotated = await teams.createToken(team.teamId, 'cli');
    const b = new ApiClient(app.url, rotated.secret);
    expect((await b.get('/v1/orders')).status).toBe(200);
    await teams.rotateToken(rotated.token.id, 0);
    expect((await b.get('/v1/orders')).status).toBe(401);
  });

  it('judges expiry against the clock on every request, never from the cache', async () => {
    const r = await team.api.post('/v1/api-tokens', { name: 'short', role: 'support_l1', expires_at: new Date(Date.now() + 3000).toISOString() });
    expect(r.status, r.text).toBe(201);
    const t = new ApiClient(app.url, r.body.data.secret);
    expect((await t.get('/v1/orders')).status).toBe(200);
    await sleep(Math.max(0, new Date(r.body.data.expires_at).getTime() - Date.now() + 50));
    const later = await t.get('/v1/orders');
    expect(later.status).toBe(401);
    expect(later.body.error.code).toBe('token_expired');
  });
});

describe('checkout configuration: the next call uses what was just changed', () => {
  it('a deactivated gateway is not charged on the next order', async () => {
    const g = await gateway();
    const s = await shop(g.id);
    expect((await order(s)).status).toBe(200);
    expect((await team.api.patch(`/v1/gateways/${g.id}`, { is_active: false })).status).toBe(200);
    const next = await order(s);
    expect(next.status).toBe(402);
    expect(next.body.error.decline_code).toBe('no_route');
    expect(await approvedSales(g.key)).toBe(1);
  });

  it('a changed offer price is charged on the next order', async () => {
    const s = await shop((await gateway()).id);
    expect((await order(s)).body.data.total).toBe(3000);
    expect((await team.api.patch(`/v1/offers/${s.offer}`, { price: 4200 })).status).toBe(200);
    const next = await order(s);
    expect(next.status, next.text).toBe(200);
    expect(next.body.data.total).toBe(4700);
  });

  it('a campaign switched to another gateway charges through it on the next order', async () => {
    const first = await gateway();
    const second = await gateway();
    const s = await shop(first.id);
    expect((await order(s)).status).toBe(200);
    expect((await team.api.patch(`/v1/campaigns/${s.campaign}`, { gateway_id: second.id })).status).toBe(200);
    expect((await order(s)).status).toBe(200);
    expect([await approvedSales(first.key), await approvedSales(second.key)]).toEqual([1, 1]);
  });

  it('a payment orchestrator given new members routes the next order through them', async () => {
    const first = await gateway();
    const second = await gateway();
    const router = await created('/v1/payment-orchestrators', { name: 'r', strategy: 'priority', max_attempts: 1, members: [{ gateway_id: first.id, priority: 1 }] });
    const campaign = await created('/v1/campaigns', { name: 'routed', currency: 'USD', payment_orchestrator_id: router });
    const product = await created('/v1/products', { name: 'p' });
    const offer = await created('/v1/offers', { campaign_id: campaign, product_id: product, name: 'o', price: 1000, shipping: 0, billing: 'one_time', fulfillment_type: 'digital' });
    expect((await order({ campaign, offer })).status).toBe(200);
    expect((await team.api.patch(`/v1/payment-orchestrators/${router}`, { members: [{ gateway_id: second.id, priority: 1 }] })).status).toBe(200);
    expect((await order({ campaign, offer })).status).toBe(200);
    expect([await approvedSales(first.key), await approvedSales(second.key)]).toEqual([1, 1]);
  });

  it('a BIN added to the blacklist is refused on the next order', async () => {
    const s = await shop((await gateway()).id);
    expect((await order(s)).status).toBe(200);
    const entry = await created('/v1/bin-blacklist', { prefix: SANDBOX_CARDS.approve.slice(0, 6) });
    const next = await order(s);
    expect(next.status).toBe(402);
    expect(next.body.error.decline_code).toBe('bin_blocked');
    expect((await team.api.delete(`/v1/bin-blacklist/${entry}`)).status).toBe(200);
    expect((await order(s)).status).toBe(200);
  });

  it('a fraud rule created is screened by the next payment', async () => {
    const other = await app.newTeam('Cache fraud');
    const key = `key_${process.pid}_${++seq}`;
    const api = other.api;
    const post = async (path: string, body: Record<string, unknown>) => {
      const r = await api.post(path, body);
      expect(r.status, r.text).toBe(201);
      return r.body.data.id as string;
    };
    const gw = await post('/v1/gateways', { name: 'gw', kind: 'nmi', base_url: sandbox.url, credentials: { security_key: key }, test_mode: true, is_active: true });
    const campaign = await post('/v1/campaigns', { name: 'c', currency: 'USD', gateway_id: gw });
    const product = await post('/v1/products', { name: 'p' });
    const offer = await post('/v1/offers', { campaign_id: campaign, product_id: product, name: 'o', price: 1000, shipping: 0, billing: 'one_time', fulfillment_type: 'digital' });
    const pay = () =>
      api.post('/checkout/orders', { campaign_id: campaign, currency: 'USD', customer: { email: 'same@example.com' }, products: [{ offer_id: offer, quantity: 1 }], payment: card(SANDBOX_CARDS.approve) });
    expect((await pay()).status).toBe(200);
    await post('/v1/fraud-rules', { name: 'one per e-mail', metric: 'attempts', dimension: 'email', threshold: 1, window_seconds: 3600 });
    expect((await pay()).status).toBe(200);
    const blocked = await pay();
    expect(blocked.status).toBe(402);
    expect(blocked.body.error.decline_code).toBe('velocity_blocked');
  });
});

describe('a warm funnel', () => {
  it('reads no configuration row: tokens, campaigns, offers, upsells, gateways, endpoints, card lists and fraud rules come from the cache', async () => {
    const g = await gateway();
    const s = await shop(g.id);
    const upsellOffer = await created('/v1/offers', { campaign_id: s.campaign, product_id: await created('/v1/products', { name: 'u' }), name: 'u', price: 900, shipping: 0, billing: 'one_time', fulfillment_type: 'digital' });
    const upsell = await created('/v1/upsells', { campaign_id: s.campaign, offer_id: upsellOffer, step: 1, name: 'u' });
    await created('/v1/webhook-endpoints', { url: 'http://127.0.0.1:9/hooks', event_types: ['*'] });
    await created('/v1/fraud-rules', { name: 'generous', metric: 'attempts', dimension: 'email', threshold: 100, window_seconds: 60 });
    const funnel = async () => {
      const lead = await team.api.post('/checkout/leads', { campaign_id: s.campaign, customer: { email: email('warm') }, products: [{ offer_id: s.offer, quantity: 1 }] });
      expect(lead.status, lead.text).toBe(201);
      const on = lead.body.data.order_number as string;
      for (const [path, body] of [
        ['/checkout/orders/payment', { order_number: on, payment: card(SANDBOX_CARDS.approve) }],
        ['/checkout/orders/upsell', { order_number: on, upsell_id: upsell, quantity: 1 }],
        ['/checkout/orders/complete', { order_number: on }],
      ] as const) {
        const r = await team.api.post(path, body);
        expect(r.status, `${path}: ${r.text}`).toBe(200);
      }
    };
    await funnel();
    // Every statement the API sends during the second funnel (the worker does not run here).
    const statements = await statementsSent(funnel);
    const config = /\bfrom "?(api_tokens|campaigns|offers|upsells|gateways|payment_routers|webhook_endpoints|bin_blacklist|test_cards|fraud_rules)"?/i;
    expect(statements.length).toBeGreaterThan(10);
    expect(statements.filter((q) => /^\s*select/i.test(q) && config.test(q))).toEqual([]);
  });
});

describe('webhook endpoints', () => {
  it('an endpoint created receives the next event of a type that had no subscriber', async () => {
    const receipts: string[] = [];
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        receipts.push(body);
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const s = await shop((await gateway()).id);
      const complete = async () => {
        const paid = await order(s);
        expect(paid.status).toBe(200);
        const r = await team.api.post('/checkout/orders/complete', { order_number: paid.body.data.order_number });
        expect(r.status, r.text).toBe(200);
        return paid.body.data.order_number as string;
      };
      await complete();
      const endpoint = await created('/v1/webhook-endpoints', { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hooks`, event_types: ['order.completed'] });
      const orderNumber = await complete();
      const deliveries = await team.api.get(`/v1/webhook-endpoints/${endpoint}/deliveries`);
      expect(deliveries.body.data.map((d: { event_type: string }) => d.event_type)).toEqual(['order.completed']);
      const log = createLogger('silent');
      for (let i = 0; i < 50 && receipts.length === 0; i++) await app.ctx.services.webhooks.drainer.drain(app.ctx, log);
      expect(receipts).toHaveLength(1);
      expect(receipts[0]).toContain(orderNumber);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('extpay connections: the next order and the next webhook use what was just changed', () => {
  const company = `biz_cache${process.pid}`;
  let connection: string;
  let s: { campaign: string; offer: string };
  beforeAll(async () => {
    await fetch(`${sandbox.url}/extpay/sandbox/sandbox/companies`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ company_id: company, api_keys: [{ key: 'key_cache_full' }] }),
    });
    connection = await created('/v1/extpay-connections', {
      name: 'cache',
      api_key: 'key_cache_full',
      company_id: company,
      environment: 'Sandbox',
      webhook_secret: 'ws_cache_old',
      base_url: sandboxApiBaseUrl(sandbox.url, 'sandbox'),
    });
    s = await shop((await gateway()).id);
  });

  const extpayOrder = () =>
    team.api.post('/checkout/orders', {
      campaign_id: s.campaign,
      currency: 'USD',
      customer: { email: email('cache-extpay') },
      products: [{ offer_id: s.offer, quantity: 1 }],
      payment: { method: 'extpay', return_url: 'https://shop.example/thanks', external_payment_id: connection },
    });

  it('a deactivated connection is refused on the next order, and takes the next one once activated', async () => {
    expect((await extpayOrder()).status).toBe(200);
    expect((await team.api.post(`/v1/extpay-connections/${connection}/deactivate`, {})).status).toBe(200);
    const refused = await extpayOrder();
    expect(refused.status, refused.text).toBe(422);
    expect(refused.body.error.code).toBe('provider_not_configured');
    expect((await team.api.post(`/v1/extpay-connections/${connection}/activate`, {})).status).toBe(200);
    expect((await extpayOrder()).status).toBe(200);
  });

  it('a warm order reads no connection row', async () => {
    expect((await extpayOrder()).status).toBe(200);
    const statements = await statementsSent(async () => expect((await extpayOrder()).status).toBe(200));
    expect(statements.length).toBeGreaterThan(3);
    expect(statements.filter((q) => /\bfrom "?extpay_connections"?/i.test(q))).toEqual([]);
  });

  it("a rotated webhook secret verifies the company's next delivery, and the old one no longer does", async () => {
    let n = 0;
    const deliver = (secret: string) => {
      const id = `msg_cache_${process.pid}_${++n}`;
      const body = JSON.stringify({ id, api_version: 'v1', timestamp: new Date().toISOString(), type: 'cache.probe', company_id: company, data: {} });
      const wh = new Webhook(new Uint8Array(Buffer.from(secret, 'utf8')), { format: 'raw' });
      const ts = Math.floor(Date.now() / 1000);
      const headers = { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': wh.sign(id, new Date(ts * 1000), body) };
      return app.anonymous.request('POST', '/webhooks/extpay', body, headers);
    };
    const before = await deliver('ws_cache_old');
    expect(before.status, before.text).toBe(200);
    expect((await team.api.patch(`/v1/extpay-connections/${connection}`, { webhook_secret: 'ws_cache_new' })).status).toBe(200);
    const rotated = await deliver('ws_cache_new');
    expect(rotated.status, rotated.text).toBe(200);
    expect((await deliver('ws_cache_old')).status).not.toBe(200);
  });
});
