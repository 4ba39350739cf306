/**
 * The dashboard's Payments setup and Affiliates areas in headless Chromium against the real server
 * with the demo seed (two sandbox gateways, an extpay connection to the sandbox's Whop stand-in):
 * the demo Team Owner creates a weighted router with two members (the API then holds both members
 * and their weights), creates an extpay connection and presses Test on three connections whose
 * outcomes differ (each shown its own way, each the one the API answers), and opens the affiliate
 * report (its table and chart show what GET /v1/reports/affiliates answers).
 *
 * Needs Chromium (CHROMIUM_PATH, default /usr/bin/chromium).
 * DASHBOARD_SCREENSHOTS=1 writes the screenshots linked from the README to docs/screenshots/.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CARD, email } from '../support/fixtures.ts';
import { bootDashboard, type DashboardEnv, launchChromium, loginAs, newPage } from './dashboard-support.ts';

const SCREENSHOTS = process.env.DASHBOARD_SCREENSHOTS === '1' ? path.resolve('docs/screenshots') : path.join(os.tmpdir(), 'checkstand-e2e');

let env: DashboardEnv;
let browser: Browser;
let context: BrowserContext | undefined;

beforeAll(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  env = await bootDashboard();
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await env?.close();
});
afterEach(async () => {
  await context?.close();
  context = undefined;
});

async function open(): Promise<{ page: Page; problems: string[] }> {
  const p = await newPage(browser);
  context = p.context;
  return p;
}

/** The sandbox's base URL, read from the seeded extpay connection (`<sandbox>/extpay/sandbox/api/v1`). */
async function sandboxUrl(): Promise<string> {
  const c = (await env.merchant.get(`/v1/extpay-connections/${env.seed.extpay_connection_id}`)).body.data;
  const m = /^(.*)\/extpay\/sandbox\/api\/v1\/?$/.exec(c.base_url as string);
  if (!m) throw new Error(`unexpected extpay base_url ${c.base_url}`);
  return m[1]!;
}

/** Tells the sandbox's Whop stand-in about a company and its keys (as test/connections.test.ts does). */
async function sandboxCompany(companyId: string, keys: Array<{ key: string; permissions?: string[] }>): Promise<void> {
  const r = await fetch(`${await sandboxUrl()}/extpay/sandbox/sandbox/companies`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ company_id: companyId, api_keys: keys }),
  });
  if (r.status >= 300) throw new Error(`the sandbox refused the company: ${r.status} ${await r.text()}`);
}

describe('dashboard: payments setup', () => {
  it('creates a weighted router with two members; the API shows both members and their weights', async () => {
    const cardGateway = env.seed.gateway_id!;
    const threedsGateway = env.seed.threeds_gateway_id!;
    expect(cardGateway && threedsGateway).toBeTruthy();
    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, '/payments');
    // The gateways list shows the credentials' hints, never the credentials.
    const gateways = page.getByRole('table', { name: 'Gateways' });
    await gateways.locator(`tr[data-gateway="${cardGateway}"]`).waitFor();
    const hint = (await env.merchant.get(`/v1/gateways/${cardGateway}`)).body.data.credentials_hint.security_key as string;
    expect(await gateways.locator(`tr[data-gateway="${cardGateway}"]`).textContent()).toContain(hint);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-payments-gateways.png') });

    await page.getByRole('tab', { name: 'Routers' }).click();
    await page.getByRole('table', { name: 'Routers' }).waitFor();
    await page.getByRole('button', { name: 'New router' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Router name').fill('Split 3:1');
    await dialog.getByLabel('Strategy').selectOption('weighted');
    await dialog.getByLabel('Member 1 gateway').selectOption(cardGateway);
    await dialog.getByLabel('Member 1 weight').fill('3');
    await dialog.getByRole('button', { name: 'Add member' }).click();
    await dialog.getByLabel('Member 2 gateway').selectOption(threedsGateway);
    await dialog.getByLabel('Member 2 weight').fill('1');
    const [answer] = await Promise.all([
      page.waitForResponse((r) => new URL(r.url()).pathname === '/v1/payment-orchestrators' && r.request().method() === 'POST'),
      dialog.getByRole('button', { name: 'Create router' }).click(),
    ]);
    expect(answer.status()).toBe(201);
    const id = (await answer.json()).data.id as string;
    await page.getByRole('heading', { name: 'Router Split 3:1', level: 1 }).waitFor();
    expect(page.url()).toBe(`${env.url}/dashboard/payments/routers/${id}`);

    // The API holds the router with both members and their weights.
    const router = (await env.merchant.get(`/v1/payment-orchestrators/${id}`)).body.data;
    expect(router).toMatchObject({ name: 'Split 3:1', strategy: 'weighted', is_active: true });
    const weights = Object.fromEntries(router.members.map((m: { gateway_id: string; weight: number }) => [m.gateway_id, m.weight]));
    expect(weights).toEqual({ [cardGateway]: 3, [threedsGateway]: 1 });

    // The router page lists the members with their weights and shares.
    const members = page.getByRole('table', { name: 'Router members' });
    await expect.poll(() => members.locator('tbody tr').count()).toBe(2);
    expect(await members.locator(`tr[data-member="${cardGateway}"]`).textContent()).toContain('75.0 %');
    expect(await members.locator(`tr[data-member="${threedsGateway}"]`).textContent()).toContain('25.0 %');
    // Each member's month-to-date volume as the API answers it (the Routers page's volume column).
    for (const m of router.members as Array<{ gateway_id: string; month_to_date_volume: number }>) {
      expect(m.month_to_date_volume).toBeGreaterThanOrEqual(0);
      expect(await members.locator(`tr[data-member="${m.gateway_id}"] td`).last().textContent()).toContain(m.month_to_date_volume.toLocaleString('en-US'));
    }
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-payments-router.png'), fullPage: true });
    expect(problems).toEqual([]);
  });

  it('tests extpay connections: connected, cannot create checkouts and failed to authenticate, each as the API answers', async () => {
    await sandboxCompany('biz_dashco', [{ key: 'key_dash_read_only', permissions: ['payment:basic:read'] }]);
    const base = `${await sandboxUrl()}/extpay/sandbox/api/v1`;
    const wrong = (await env.merchant.post('/v1/extpay-connections', { name: 'Wrong key', api_key: 'key_nobody_knows', company_id: 'biz_dashco', environment: 'sandbox', webhook_secret: 'ws_x', base_url: base })).body.data;

    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, '/payments/connections');
    const table = page.getByRole('table', { name: 'Extpay connections' });
    await table.locator(`tr[data-connection="${env.seed.extpay_connection_id}"]`).waitFor();

    // A new connection through the form: a key that may only read.
    await page.getByRole('button', { name: 'New connection' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Connection name').fill('Read-only key');
    await dialog.getByLabel('Environment').selectOption('sandbox');
    await dialog.getByLabel('Company id').fill('biz_dashco');
    await dialog.getByLabel('API key').fill('key_dash_read_only');
    await dialog.getByLabel('Webhook secret').fill('ws_dash_secret');
    await dialog.getByLabel('API base URL').fill(base);
    const [created] = await Promise.all([
      page.waitForResponse((r) => new URL(r.url()).pathname === '/v1/extpay-connections' && r.request().method() === 'POST'),
      dialog.getByRole('button', { name: 'Create connection' }).click(),
    ]);
    expect(created.status()).toBe(201);
    const readOnly = (await created.json()).data as { id: string; api_key_hint: string };
    await dialog.waitFor({ state: 'hidden' });
    const stored = (await env.merchant.get(`/v1/extpay-connections/${readOnly.id}`)).body.data;
    expect(stored).toMatchObject({ name: 'Read-only key', company_id: 'biz_dashco', environment: 'sandbox', status: 'active', webhook_secret_configured: true });
    await table.locator(`tr[data-connection="${readOnly.id}"]`).waitFor();
    // Write-only: the page shows the hint, never the key.
    expect(await page.content()).not.toContain('key_dash_read_only');

    const cases: Array<[string, string, string, RegExp]> = [
      [env.seed.extpay_connection_id!, 'Sandbox extpay (Whop stand-in)', 'connected', /Connected/],
      [readOnly.id, 'Read-only key', 'cannot_create_checkouts', /Cannot create checkouts/],
      [wrong.id, 'Wrong key', 'failed_to_authenticate', /Failed to authenticate/],
    ];
    for (const [id, name, outcome, title] of cases) {
      const [answer] = await Promise.all([
        page.waitForResponse((r) => new URL(r.url()).pathname === `/v1/extpay-connections/${id}/test` && r.request().method() === 'POST'),
        page.getByRole('button', { name: `Test ${name}`, exact: true }).click(),
      ]);
      expect(answer.status()).toBe(200);
      const shown = page.getByRole('status', { name: `Test result for ${name}` });
      await shown.waitFor();
      expect(await shown.getAttribute('data-outcome')).toBe(outcome);
      expect(await shown.textContent()).toMatch(title);
      // The API (and the sandbox behind it) answers the same outcome for that connection.
      const api = (await env.merchant.post(`/v1/extpay-connections/${id}/test`, {})).body.data;
      expect(api.status).toBe(outcome);
      for (const p of api.missing_permissions as string[]) expect(await shown.textContent()).toContain(p);
      if (outcome === 'cannot_create_checkouts') expect(api.missing_permissions.length).toBeGreaterThan(0);
    }
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-payments-connections.png'), fullPage: true });
    expect(problems).toEqual([]);
  });
});

describe('dashboard: affiliates', () => {
  it('the affiliate report shows the API report as a table and a chart; the throttle dry run answers as the API', async () => {
    const created = await env.merchant.post('/v1/affiliates', { id: 'net42', name: 'Network 42', commission: { type: 'fixed', amount: 500 } });
    expect(created.status, created.text).toBe(201);
    // Test orders are no conversion (issue 15): these go through a live-mode gateway on the sandbox.
    const sandboxGateway = (await env.merchant.get(`/v1/gateways/${env.seed.gateway_id}`)).body.data;
    const live = await env.merchant.post('/v1/gateways', { name: 'Live on the sandbox', kind: 'nmi', base_url: sandboxGateway.base_url, credentials: { security_key: 'live-affiliate-key-0123456789' }, test_mode: false });
    expect(live.status, live.text).toBe(201);
    const campaign = await env.merchant.post('/v1/campaigns', { name: 'Live affiliate funnel', currency: env.seed.currency, gateway_id: live.body.data.id });
    const product = await env.merchant.post('/v1/products', { name: 'Live serum' });
    const offer = await env.merchant.post('/v1/offers', { campaign_id: campaign.body.data.id, product_id: product.body.data.id, name: 'Live serum', price: 3900, shipping: 495, billing: 'one_time', fulfillment_type: 'physical' });
    expect(offer.status, offer.text).toBe(201);
    for (let i = 0; i < 2; i++) {
      const r = await env.merchant.post('/checkout/orders', {
        campaign_id: campaign.body.data.id,
        currency: env.seed.currency,
        customer: { email: email('aff'), first_name: 'Aff', last_name: `Buyer${i}` },
        products: [{ offer_id: offer.body.data.id, quantity: 1 }],
        affiliate: { affiliate_id: 'net42', sub1: 'spring' },
        payment: CARD,
      });
      expect(r.status, r.text).toBe(200);
    }
    const report = (await env.merchant.get('/v1/reports/affiliates')).body.data as Array<{ affiliate_id: string; conversions: number; revenue: number; commission: number; currency: string }>;
    const row = report.find((r) => r.affiliate_id === 'net42')!;
    expect(row).toMatchObject({ conversions: 2, commission: 1000 });

    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, '/affiliates');
    await page.getByRole('table', { name: 'Affiliates' }).locator('tr[data-affiliate="net42"]').waitFor();
    await page.getByRole('tab', { name: 'Report' }).click();
    const table = page.getByRole('table', { name: 'Affiliate report' });
    const tr = table.locator('tr[data-affiliate="net42"]');
    await tr.waitFor();
    const cells = await tr.locator('td').allTextContents();
    expect(cells[3]).toBe(String(row.conversions));
    const money = (minor: number) => new Intl.NumberFormat('en-US', { style: 'currency', currency: row.currency }).format(minor / 100);
    expect(cells[5]).toBe(money(row.revenue));
    expect(cells[10]).toBe(money(row.commission));
    // The chart: one bar group per affiliate row, drawn as SVG.
    const chart = page.getByRole('figure', { name: `Affiliate revenue chart (${row.currency})` });
    await chart.locator('svg .recharts-bar-rectangle').first().waitFor();
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-affiliates-report.png'), fullPage: true });

    // The affiliate's page: the dry run of another throttle rate answers what the API's simulation does.
    await page.getByRole('tab', { name: 'Affiliates' }).click();
    await page.getByRole('link', { name: 'Network 42' }).click();
    await page.getByRole('heading', { name: 'Affiliate Network 42', level: 1 }).waitFor();
    await page.getByRole('table', { name: 'Throttle ledger' }).locator('tbody tr').first().waitFor();
    await page.getByLabel('Simulated rate (%)').fill('50');
    const [sim] = await Promise.all([
      page.waitForResponse((r) => new URL(r.url()).pathname === '/v1/affiliates/net42/throttle/simulate'),
      page.getByRole('button', { name: 'Simulate' }).click(),
    ]);
    expect(sim.status()).toBe(200);
    const expected = (await env.merchant.post('/v1/affiliates/net42/throttle/simulate', { throttle_rate: 50, automatic_throttling: true })).body.data;
    expect(expected).toMatchObject({ conversions: 2, throttled: 1 });
    const result = page.getByRole('status', { name: 'Simulation result' });
    await result.waitFor();
    expect(await result.textContent()).toContain(`${expected.throttled} of ${expected.conversions} conversions throttled`);
    // Nothing was written: the affiliate keeps no rate.
    expect((await env.merchant.get('/v1/affiliates/net42')).body.data.throttle_rate).toBeNull();
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-affiliate.png'), fullPage: true });
    expect(problems).toEqual([]);
  });
});

describe('dashboard: settings forms', () => {
  it("replaces a subscription's card: a declined card shows the API's 422 in the dialog, an approved one becomes the payment method", async () => {
    const r = await env.merchant.post('/checkout/orders', {
      campaign_id: env.seed.campaign_id,
      currency: env.seed.currency,
      customer: { email: email('card'), first_name: 'Card', last_name: 'Swap' },
      shipping_address: { line1: '1 Leadworth Lane', city: 'Leadworth', state: 'NY', postal_code: '10001', country: 'US' },
      products: [{ offer_id: env.seed.offers.club_trial, quantity: 1 }],
      payment: CARD,
    });
    expect(r.status, r.text).toBe(200);
    const order = r.body.data.order_number as string;
    expect((await env.merchant.post('/checkout/orders/complete', { order_number: order })).status).toBe(200);
    const sub = (await env.merchant.get(`/v1/subscriptions?order_number=${order}`)).body.data[0];
    expect(sub.payment_method.last4).toBe('1111');

    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, `/subscriptions/${sub.id}`);
    await page.getByRole('heading', { name: sub.id, level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Replace card' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Card number').fill('4000000000002016'); // the sandbox's do-not-honor card
    await dialog.getByLabel('Expiry (MM/YY)').fill('12/39');
    await dialog.getByLabel('CVV').fill('123');
    const [declined] = await Promise.all([page.waitForResponse((x) => new URL(x.url()).pathname === `/v1/subscriptions/${sub.id}/payment-method`), dialog.getByRole('button', { name: 'Replace card' }).click()]);
    expect(declined.status()).toBe(422);
    await dialog.getByRole('alert').getByText('card_verification_declined').waitFor();
    expect((await env.merchant.get(`/v1/subscriptions/${sub.id}`)).body.data.payment_method.last4).toBe('1111');

    await dialog.getByLabel('Card number').fill('5555 5555 5555 4444');
    const [approved] = await Promise.all([page.waitForResponse((x) => new URL(x.url()).pathname === `/v1/subscriptions/${sub.id}/payment-method`), dialog.getByRole('button', { name: 'Replace card' }).click()]);
    expect(approved.status()).toBe(200);
    await dialog.waitFor({ state: 'hidden' });
    const after = (await env.merchant.get(`/v1/subscriptions/${sub.id}`)).body.data;
    expect(after.payment_method).toMatchObject({ last4: '4444', exp: '12/39' });
    await page.getByText(`•••• 4444`).waitFor();
    // The declined attempt is the one expected error (its 422 and the browser's console line).
    expect(problems.filter((p) => !p.includes('422'))).toEqual([]);
  });

  it("creates a campaign whose payment route is a router chosen from the team's gateways and routers (not a typed id)", async () => {
    const router = (await env.merchant.post('/v1/payment-orchestrators', { name: 'Campaign router', members: [{ gateway_id: env.seed.gateway_id }] })).body.data;
    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, '/catalog');
    await page.getByRole('table', { name: 'Campaigns' }).locator('tbody tr').first().waitFor();
    await page.getByRole('button', { name: 'New campaign' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Name').fill('Routed funnel');
    const select = dialog.getByLabel('Payment route');
    await select.locator(`option[value="router:${router.id}"]`).waitFor({ state: 'attached' });
    expect(await select.locator(`option[value="gateway:${env.seed.gateway_id}"]`).count()).toBe(1);
    await select.selectOption(`router:${router.id}`);
    const [answer] = await Promise.all([page.waitForResponse((x) => new URL(x.url()).pathname === '/v1/campaigns' && x.request().method() === 'POST'), dialog.getByRole('button', { name: 'Create campaign' }).click()]);
    expect(answer.status()).toBe(201);
    const id = (await answer.json()).data.id as string;
    expect((await env.merchant.get(`/v1/campaigns/${id}`)).body.data).toMatchObject({ name: 'Routed funnel', payment_orchestrator_id: router.id, gateway_id: null });

    // Editing it shows the router chosen; moving it to the gateway sends one and clears the other.
    await dialog.waitFor({ state: 'hidden' });
    await page.getByRole('button', { name: 'Edit campaign Routed funnel' }).click();
    await expect.poll(() => dialog.getByLabel('Payment route').inputValue()).toBe(`router:${router.id}`);
    await dialog.getByLabel('Payment route').selectOption(`gateway:${env.seed.gateway_id}`);
    await Promise.all([page.waitForResponse((x) => new URL(x.url()).pathname === `/v1/campaigns/${id}` && x.request().method() === 'PATCH'), dialog.getByRole('button', { name: 'Save' }).click()]);
    expect((await env.merchant.get(`/v1/campaigns/${id}`)).body.data).toMatchObject({ payment_orchestrator_id: null, gateway_id: env.seed.gateway_id });
    expect(problems).toEqual([]);
  });

  it("edits the team's affiliate settings (attribution, commission hold); the API holds them", async () => {
    const before = (await env.merchant.get('/v1/affiliate-settings')).body.data;
    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, '/affiliates');
    const section = page.getByRole('region', { name: 'Team affiliate settings' });
    await expect.poll(() => section.getByLabel('Attribution').inputValue()).toBe(before.attribution);
    const next = before.attribution === 'last_touch' ? 'first_touch' : 'last_touch';
    await section.getByLabel('Attribution').selectOption(next);
    await section.getByLabel('Commission hold (days)').fill('14');
    const [answer] = await Promise.all([page.waitForResponse((x) => new URL(x.url()).pathname === '/v1/affiliate-settings' && x.request().method() === 'PUT'), section.getByRole('button', { name: 'Save settings' }).click()]);
    expect(answer.status()).toBe(200);
    expect((await env.merchant.get('/v1/affiliate-settings')).body.data).toMatchObject({ attribution: next, commission_hold_days: 14 });
    expect((await env.merchant.request('PUT', '/v1/affiliate-settings', { attribution: before.attribution, commission_hold_days: before.commission_hold_days })).status).toBe(200);
    expect(problems).toEqual([]);
  });
});
