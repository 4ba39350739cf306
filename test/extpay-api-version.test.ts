import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExtpayAdapter } from '../src/providers/extpay/adapter.ts';
import { EXTPAY_API_VERSION_DATE, EXTPAY_CHECKOUT_PERMISSIONS, type ExtpayConnection, sandboxApiBaseUrl } from '../src/providers/extpay/types.ts';
import { EXTPAY_EVENT_TYPES, verifyExtpayWebhook } from '../src/providers/extpay/webhook.ts';
import { EXTPAY_CARDS, EXTPAY_PERMISSIONS } from '../src/sandbox/extpay-provider.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { payOnHostedPage } from './support/extpay.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

/**
 * Whop's current API as a real account meets it (issue 18), over HTTP against the sandbox: the five
 * checkout permissions, the other environment's key, the pinned Api-Version-Date and the dated wire
 * shapes, webhook bodies with api_version_date and previous_attributes, and payment.authorized.
 */
let app: TestApp;
let team: TestTeam;
let sandbox: { url: string; close(): Promise<void> };
let api: string;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  app = await startTestApp();
  team = await app.newTeam();
  api = sandboxApiBaseUrl(sandbox.url, 'sandbox');
}, 60_000);
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});

async function company(env: 'sandbox' | 'production', settings: Record<string, unknown>) {
  const r = await fetch(`${sandbox.url}/extpay/${env}/sandbox/companies`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(settings) });
  expect(r.status, await r.clone().text()).toBe(200);
}
const control = (path: string, body: unknown = {}) =>
  fetch(`${sandbox.url}/extpay/sandbox/sandbox/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

async function connectionTest(over: Record<string, unknown>) {
  const c = await team.api.post('/v1/extpay-connections', { name: 'v', environment: 'Sandbox', base_url: api, webhook_secret: 'ws_x', ...over });
  expect(c.status, c.text).toBe(201);
  const r = await team.api.post(`/v1/extpay-connections/${c.body.data.id}/test`, {});
  expect(r.status, r.text).toBe(200);
  return r.body.data;
}

describe('the connection test against Whop’s documented permissions', () => {
  it('a key missing any one of the five checkout permissions: cannot_create_checkouts, naming it', async () => {
    expect(EXTPAY_CHECKOUT_PERMISSIONS).toEqual(['checkout_configuration:create', 'plan:create', 'access_pass:create', 'access_pass:update', 'checkout_configuration:basic:read']);
    for (const [i, missing] of EXTPAY_CHECKOUT_PERMISSIONS.entries()) {
      const key = `key_lacks_${i}_${Date.now()}`;
      await company('sandbox', { company_id: `biz_perm${i}`, api_keys: [{ key, permissions: EXTPAY_PERMISSIONS.filter((p) => p !== missing) }] });
      const r = await connectionTest({ api_key: key, company_id: `biz_perm${i}` });
      expect(r, missing).toMatchObject({ status: 'cannot_create_checkouts', result: 'cannot_create_checkouts', missing_permissions: [missing] });
      expect(r.message).toContain(missing);
    }
    const full = `key_all_five_${Date.now()}`;
    await company('sandbox', { company_id: 'biz_permall', api_keys: [{ key: full }] });
    expect(await connectionTest({ api_key: full, company_id: 'biz_permall' })).toMatchObject({ status: 'connected', missing_permissions: [] });
  });

  it('a working key without payment:basic:read: cannot_create_checkouts naming it, not failed_to_authenticate', async () => {
    const key = `key_noread_${Date.now()}`;
    await company('sandbox', { company_id: 'biz_noread', api_keys: [{ key, permissions: EXTPAY_PERMISSIONS.filter((p) => p !== 'payment:basic:read') }] });
    const r = await connectionTest({ api_key: key, company_id: 'biz_noread' });
    expect(r).toMatchObject({ status: 'cannot_create_checkouts', missing_permissions: ['payment:basic:read'] });
    expect(r.message).toContain('payment:basic:read');
    // Another company's id with a working key is still the spec's "wrong company ID".
    expect(await connectionTest({ api_key: key, company_id: 'biz_notthisone' })).toMatchObject({ status: 'failed_to_authenticate' });
  });

  it('an Api-Version-Date the provider does not know: failed_to_authenticate that says so', async () => {
    const key = `key_badpin_${Date.now()}`;
    await company('sandbox', { company_id: 'biz_badpin', api_keys: [{ key }] });
    const r = await connectionTest({ api_key: key, company_id: 'biz_badpin', api_version_date: '2031-01-01' });
    expect(r).toMatchObject({ status: 'failed_to_authenticate', missing_permissions: [] });
    expect(r.message).toMatch(/Api-Version-Date \(2031-01-01\)/);
    expect(r.message).toMatch(/api_version_date/);
  });

  it('a production key on a sandbox connection: failed_to_authenticate', async () => {
    const prod = `key_production_${Date.now()}`;
    await company('production', { company_id: 'biz_prodonly', api_keys: [{ key: prod }] });
    await company('sandbox', { company_id: 'biz_prodonly', api_keys: [{ key: `key_sandbox_${Date.now()}` }] });
    expect(await connectionTest({ api_key: prod, company_id: 'biz_prodonly' })).toMatchObject({ status: 'failed_to_authenticate', missing_permissions: [] });
  });
});

describe('Api-Version-Date and the dated shapes', () => {
  it('every request carries the pinned version (the default, or the connection’s own)', async () => {
    const seen: Array<string | undefined> = [];
    const server = http.createServer((req, res) => {
      seen.push(req.headers['api-version-date'] as string | undefined);
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"no"}}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;
    const conn: ExtpayConnection = { baseUrl: base, apiKey: 'k', companyId: 'biz_1', environment: 'sandbox' };
    const adapter = new ExtpayAdapter();
    await adapter.retrievePayment(conn, 'pay_1');
    await adapter.retrieveMembership({ ...conn, apiVersionDate: '2026-06-20' }, 'mem_1');
    await adapter.listPayments(conn);
    server.close();
    expect(seen).toEqual([EXTPAY_API_VERSION_DATE, '2026-06-20', EXTPAY_API_VERSION_DATE]);
  });

  it('the sandbox holds the adapter to the version it sends: account_id on lists, company_id at the top of a checkout', async () => {
    const key = `key_versions_${Date.now()}`;
    await company('sandbox', { company_id: 'biz_versions', api_keys: [{ key }] });
    const get = (path: string, version?: string) => fetch(`${api}${path}`, { headers: { authorization: `Bearer ${key}`, ...(version ? { 'api-version-date': version } : {}) } });
    expect((await get('/payments?company_id=biz_versions')).status).toBe(200);
    expect((await get('/payments?company_id=biz_versions', EXTPAY_API_VERSION_DATE)).status).toBe(400);
    expect((await get('/payments?account_id=biz_versions', EXTPAY_API_VERSION_DATE)).status).toBe(200);
    const unknown = await get('/payments?account_id=biz_versions', '2031-01-01');
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as any).error).toMatchObject({ code: 'api_version_invalid', message: expect.stringContaining('2026-07-01') });
    const post = (body: unknown) => fetch(`${api}/checkout_configurations`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'api-version-date': EXTPAY_API_VERSION_DATE }, body: JSON.stringify(body) });
    expect((await post({ plan: { company_id: 'biz_versions', currency: 'usd', initial_price: 1 } })).status).toBe(400);
    expect((await post({ company_id: 'biz_versions', plan: { currency: 'usd', initial_price: 1 } })).status).toBe(200);

    // The adapter speaks the dated shape end to end, and an older pin the original one.
    const conn: ExtpayConnection = { baseUrl: api, apiKey: key, companyId: 'biz_versions', environment: 'sandbox' };
    const adapter = new ExtpayAdapter();
    const made = await adapter.createCheckout(conn, { currency: 'USD', plan: { planType: 'one_time', initialPrice: 500 } });
    expect(made.kind).toBe('created');
    expect(await adapter.listPayments(conn)).toMatchObject({ kind: 'list' });
    expect(await adapter.createCheckout({ ...conn, apiVersionDate: '2025-01-01' }, { currency: 'USD', plan: { planType: 'one_time', initialPrice: 500 } })).toMatchObject({ kind: 'created' });
    expect(await adapter.testConnection(conn)).toEqual({ kind: 'connected' });
  });

  it('a connection shows and pins its version; a malformed one is a 422', async () => {
    const c = await team.api.post('/v1/extpay-connections', { name: 'pin', api_key: 'k_pin_123456789', company_id: 'biz_pin', environment: 'Sandbox', base_url: api, api_version_date: '2026-06-20' });
    expect(c.body.data.api_version_date).toBe('2026-06-20');
    expect((await team.api.patch(`/v1/extpay-connections/${c.body.data.id}`, { api_version_date: 'June' })).status).toBe(422);
    const row = await app.store.run((db) => db.selectFrom('extpay_connections').select('api_version_date').where('id', '=', c.body.data.id).executeTakeFirstOrThrow());
    expect(row.api_version_date).toBe('2026-06-20');
  });
});

describe('webhook bodies as Whop sends them now', () => {
  it('carry api_version_date, and previous_attributes on updates; the verifier reads both', async () => {
    const received: Array<{ headers: http.IncomingHttpHeaders; body: Buffer }> = [];
    const receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks) });
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const secret = 'ws_bodies_secret';
    const key = `key_bodies_${Date.now()}`;
    await company('sandbox', {
      company_id: 'biz_bodies',
      api_keys: [{ key }],
      webhook_url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
      webhook_secret: secret,
      webhook_api_version_date: '2026-06-20',
      webhook_retry_delays_ms: [0],
    });
    const conn: ExtpayConnection = { baseUrl: api, apiKey: key, companyId: 'biz_bodies', environment: 'sandbox' };
    const made = await new ExtpayAdapter().createCheckout(conn, { currency: 'USD', plan: { planType: 'one_time', initialPrice: 1500 } });
    if (made.kind !== 'created') throw new Error(JSON.stringify(made));
    const receipt = await payOnHostedPage(made.checkout.purchaseUrl, EXTPAY_CARDS.paid);
    const opened = await control(`payments/${receipt}/disputes`, { status: 'needs_response' });
    expect(opened.status).toBe(200);
    expect((await control(`disputes/${opened.body.id}`, { status: 'under_review' })).status).toBe(200);
    const deadline = Date.now() + 10_000;
    const events = () => received.map((d) => verifyExtpayWebhook(d.body, d.headers, secret)).map((v) => (v.ok ? v.event : null));
    while (!events().some((e) => e?.rawType === 'dispute.updated') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    receiver.close();
    const all = events();
    expect(all.every((e) => e !== null)).toBe(true);
    for (const e of all) expect(e).toMatchObject({ apiVersion: 'v1', apiVersionDate: '2026-06-20' });
    const updated = all.find((e) => e?.rawType === 'dispute.updated')!;
    expect(updated.previousAttributes).toEqual({ status: 'needs_response' });
    expect(all.find((e) => e?.rawType === 'payment.succeeded')!.previousAttributes).toBeNull();
  });
});

describe('payment.authorized (money held)', () => {
  let funnel: Funnel;
  let connectionId: string;
  // A team of its own: Create Order takes the team's oldest Active connection.
  let shop: TestTeam;
  const COMPANY = 'biz_authorized';
  const SECRET = 'ws_authorized_secret';

  beforeAll(async () => {
    shop = await app.newTeam('authorized');
    funnel = await seedFunnel(app, shop.teamId);
    const key = `key_authorized_${Date.now()}`;
    await company('sandbox', {
      company_id: COMPANY,
      api_keys: [{ key }],
      webhook_url: `${app.url}/webhooks/extpay`,
      webhook_secret: SECRET,
      webhook_events: [...EXTPAY_EVENT_TYPES, 'payment.authorized'],
      webhook_retry_delays_ms: [0, 300, 1000],
    });
    const c = await shop.api.post('/v1/extpay-connections', { name: 'authorized', api_key: key, company_id: COMPANY, environment: 'Sandbox', webhook_secret: SECRET, base_url: api });
    connectionId = c.body.data.id;
  });

  const inbound = (type: string) =>
    app.store.run((db) => db.selectFrom('inbound_webhooks').select(['id', 'type']).where('source', '=', `extpay:${connectionId}`).where('type', '=', type).execute());
  const order = (n: string) => shop.api.get(`/v1/orders/${n}`).then((r) => r.body.data);

  it('is accepted and recorded, leaves the order awaiting confirmation (Capture 202), and payment.succeeded completes it once', async () => {
    const r = await shop.api.post('/checkout/orders', {
      campaign_id: funnel.campaignId,
      currency: 'USD',
      customer: { email: email('auth'), first_name: 'Ada', last_name: 'Lovelace' },
      shipping_address: { line1: '1 Main St', city: 'Springfield', postal_code: '12345', country: 'US' },
      products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
      payment: { method: 'extpay', return_url: 'https://shop.example/thanks' },
    });
    expect(r.status, r.text).toBe(200);
    const n = r.body.data.order_number as string;
    const before = await order(n);
    const receipt = (await payOnHostedPage(r.body.data.checkout.purchase_url, EXTPAY_CARDS.pending))!;
    const deadline = Date.now() + 10_000;
    while ((await inbound('payment.authorized')).length === 0 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 100));
    expect(await inbound('payment.authorized')).toHaveLength(1);
    // Money held is not money taken: the order is where it was, neither completed nor declined.
    expect(await order(n)).toMatchObject({ status: before.status, payment_status: before.payment_status });
    const cap = await shop.api.post('/checkout/orders/capture', { order_number: n, payment_id: receipt });
    expect(cap.status, cap.text).toBe(202);
    expect((await order(n)).status).toBe('pending_external_confirmation');
    expect((await control(`payments/${receipt}/settle`)).status).toBe(200);
    const until = Date.now() + 10_000;
    while ((await order(n)).status !== 'completed' && Date.now() < until) await new Promise((res) => setTimeout(res, 100));
    const done = await order(n);
    expect(done.status).toBe('completed');
    const completed = await app.store.run((db) => db.selectFrom('events').select('id').where('order_id', '=', n).where('type', '=', 'order.completed').execute());
    expect(completed).toHaveLength(1);
  });

  it('for a payment the provider already reports failed, it declines the order like payment.created', async () => {
    const { signExtpayWebhook } = await import('../src/providers/extpay/webhook.ts');
    const r = await shop.api.post('/checkout/orders', {
      campaign_id: funnel.campaignId,
      currency: 'USD',
      customer: { email: email('authf'), first_name: 'Ada', last_name: 'Lovelace' },
      shipping_address: { line1: '1 Main St', city: 'Springfield', postal_code: '12345', country: 'US' },
      products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
      payment: { method: 'extpay', return_url: 'https://shop.example/thanks' },
    });
    const n = r.body.data.order_number as string;
    const planId = r.body.data.checkout.plan_id as string;
    const id = `msg_authfail_${Date.now()}`;
    const body = JSON.stringify({
      id,
      api_version: 'v1',
      api_version_date: '2026-07-01',
      timestamp: new Date().toISOString(),
      type: 'payment.authorized',
      company_id: COMPANY,
      data: { id: `pay_authfail_${Date.now()}`, status: 'open', substatus: 'failed', failure_message: 'Blocked.', total: 1, currency: 'usd', plan: { id: planId }, metadata: { order_number: n } },
    });
    const ts = Math.floor(Date.now() / 1000);
    const res = await fetch(`${app.url}/webhooks/extpay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': signExtpayWebhook(SECRET, id, ts, body) },
      body,
    });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(((await res.json()) as any).data.result).toBe('processed');
    expect((await order(n)).status).toBe('declined');
  });
});
