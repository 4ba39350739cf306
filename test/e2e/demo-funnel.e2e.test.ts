/**
 * The demo funnel in a real browser: headless Chromium, driven by playwright-core, clicks through
 * /demo → /demo/upsell → /demo/thank-you against the real server (booted as in
 * test/demo-funnel.test.ts), and what the pages show is checked against the API.
 *
 * Needs a Chromium binary: CHROMIUM_PATH, default /usr/bin/chromium (Debian's `chromium`).
 * Run with `npm run test:e2e`; `npm test` leaves this folder out. Screenshots go to
 * $TMPDIR/checkstand-e2e/.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/app/logger.ts';
import { type DemoSeed, seedDemo } from '../../src/app/seed.ts';
import { buildServer } from '../../src/app/server.ts';
import type { Http } from '../../src/app/http.ts';
import { SANDBOX_CARDS } from '../../src/sandbox/cards.ts';
import { startSandbox } from '../../src/sandbox/server.ts';
import { type DemoFunnelOptions, demoFunnelOptions, enableDemoFunnel } from '../../web/demo/funnel.ts';
import { ApiClient, startTestApp, type TestApp } from '../support/harness.ts';

const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const SCREENSHOT_DIR = path.join(os.tmpdir(), 'checkstand-e2e');

// Playwright adds --headless, --no-sandbox (chromiumSandbox is left off) and a fresh temporary
// --user-data-dir itself (it refuses --user-data-dir in args). The rest keep Chromium off the
// network, which is closed here: without them it keeps trying Google's hosts.
const CHROMIUM_ARGS = [
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

let app: TestApp;
let sandbox: { url: string; close(): Promise<void> };
let seed: DemoSeed;
let options: DemoFunnelOptions;
let demoServer: Http;
let demoUrl: string;
/** The merchant: the demo team's own token, straight to the API. */
let merchant: ApiClient;
let browser: Browser;

beforeAll(async () => {
  if (!fs.existsSync(CHROMIUM_PATH)) {
    throw new Error(`no Chromium at ${CHROMIUM_PATH}: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`);
  }
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  sandbox = await startSandbox({ port: 0, slowMs: 50 });
  app = await startTestApp();
  seed = await seedDemo(app.ctx, { sandboxUrl: sandbox.url });
  options = (await demoFunnelOptions(app.ctx, seed))!;
  // Routes are added before listen, as `npm start` does; this server shares the test app's services.
  demoServer = await buildServer(app.ctx, createLogger('warn'));
  enableDemoFunnel(demoServer, options);
  await demoServer.listen({ host: '127.0.0.1', port: 0 });
  const addr = demoServer.server.address();
  demoUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  merchant = new ApiClient(app.url, seed.token);
  browser = await chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS, timeout: 60_000 });
});
afterAll(async () => {
  await browser?.close();
  await demoServer?.close();
  await app?.close();
  await sandbox?.close();
});

/** A fresh browser context per test: its own sessionStorage, as a new visitor. */
let context: BrowserContext;
let page: Page;
/** Script errors, console errors, failed requests and HTTP errors of the page: a test expects none. */
let problems: string[];

beforeEach(async () => {
  context = await browser.newContext({ viewport: { width: 1024, height: 768 } });
  context.setDefaultTimeout(15_000);
  page = await context.newPage();
  problems = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    // The pages declare no icon, so Chromium's own request for /favicon.ico is a 404: not the funnel's.
    if (msg.type() === 'error' && !msg.location().url.endsWith('/favicon.ico')) problems.push(`console error: ${msg.text()} (${msg.location().url})`);
  });
  page.on('requestfailed', (req) => problems.push(`request failed: ${req.method()} ${req.url()} ${req.failure()?.errorText ?? ''}`));
  page.on('response', (res) => {
    if (res.status() >= 400) problems.push(`HTTP ${res.status()}: ${res.request().method()} ${res.url()}`);
  });
});
afterEach(async () => {
  await context?.close();
});

/** What demo.js prints for an amount in minor units. */
function money(minor: number, currency: string): string {
  const format = new Intl.NumberFormat('en-US', { style: 'currency', currency });
  return format.format(minor / 10 ** (format.resolvedOptions().maximumFractionDigits ?? 2));
}

const spaced = (number: string) => number.replace(/(\d{4})(?=\d)/g, '$1 ');

async function openCheckout(): Promise<void> {
  await page.goto(`${demoUrl}/demo`);
  // demo.js replaces "Loading…" with the offer once /demo/api/config has answered.
  await expect.poll(() => page.locator('#product h1').textContent()).not.toBe('Loading…');
}

describe('demo funnel in Chromium', () => {
  it('checkout (approve card) → one-click upsell → thank-you page showing the completed order', async () => {
    await openCheckout();
    const config = (await new ApiClient(demoUrl, undefined).get('/demo/api/config')).body.data;
    const currency: string = config.currency;
    const offer = config.offers[0];
    await expect.poll(() => page.locator('#product').innerText()).toContain(offer.name);
    expect(await page.locator('#product .price').textContent()).toBe(money(offer.price, currency));

    // Every sandbox test card is listed, clickable, with what it does.
    const picks = page.locator('button.card-pick');
    expect(await picks.allTextContents()).toEqual(Object.values(SANDBOX_CARDS).map(spaced));
    const cardsTable = await page.locator('section.cards').innerText();
    expect(cardsTable).toContain('Declined: insufficient funds');
    expect(cardsTable).toContain('Approved');
    expect(await page.content()).not.toContain(options.token);

    // The card is prefilled with the approving one; the visitor types who they are.
    const form = page.locator('form#checkout');
    expect(await form.locator('input[name=card_number]').inputValue()).toBe(spaced(SANDBOX_CARDS.approve));
    const email = 'ada.e2e@example.com';
    await form.locator('input[name=email]').fill(email);
    await form.locator('input[name=first_name]').fill('Ada');
    await form.locator('input[name=last_name]').fill('Browser');
    await Promise.all([page.waitForURL(`${demoUrl}/demo/upsell`), page.locator('#pay').click()]);

    // Step 2: the upsell the funnel offers (the first that charges something).
    const upsell = config.upsell;
    expect(upsell.id).toBe(options.upsells[0]);
    await expect.poll(() => page.locator('#upsell h1').textContent()).toBe(upsell.name);
    expect(await page.locator('#upsell .price').textContent()).toBe(money(upsell.offer.price, currency));
    await Promise.all([page.waitForURL(`${demoUrl}/demo/thank-you`), page.locator('#accept').click()]);

    // Step 3: the order as the thank-you page shows it …
    const orderBox = page.locator('#order');
    await orderBox.locator('table').waitFor();
    const heading = await orderBox.locator('p').first().textContent();
    const orderNumber = /^Order (\S+) · /.exec(heading ?? '')?.[1];
    expect(orderNumber, `thank-you page heading: ${heading}`).toBeTruthy();
    const shot = path.join(SCREENSHOT_DIR, 'thank-you.png');
    await page.screenshot({ path: shot, fullPage: true });
    console.log(`screenshot: ${shot}`);

    // … is the order the API has, completed, with the product and the upsell.
    const r = await merchant.get(`/v1/orders/${orderNumber}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const order = r.body.data;
    expect(order).toMatchObject({ order_number: orderNumber, status: 'completed', payment_status: 'completed', is_test: true, currency });
    expect(order.customer.email).toBe(email);
    expect(order.lines).toHaveLength(2);
    expect(order.lines.map((l: { offer_id: string }) => l.offer_id)).toEqual([offer.id, upsell.offer.id]);
    expect(order.lines[1].upsell_id).toBe(upsell.id);
    expect(order.total).toBe(offer.price + offer.shipping + upsell.offer.price + upsell.offer.shipping);

    expect(heading).toBe(`Order ${orderNumber} · completed · test`);
    expect(await orderBox.innerText()).toContain(`A confirmation goes to ${email}.`);
    const rows = await orderBox.locator('table tr').evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => (c.textContent ?? '').trim())));
    expect(rows).toEqual([
      ['Item', 'Qty', 'Amount'],
      ...order.lines.map((l: { name: string; quantity: number; line_total: number }) => [l.name, String(l.quantity), money(l.line_total, currency)]),
      ['Subtotal', '', money(order.subtotal, currency)],
      ['Shipping', '', money(order.shipping_total, currency)],
      ...(order.discount_total ? [['Discount', '', money(-order.discount_total, currency)]] : []),
      ['Total', '', money(order.total, currency)],
    ]);
    // The funnel's notes from Pay, Upsell and Complete Order, none of them an error.
    const message = page.locator('#message');
    expect(await message.isVisible()).toBe(true);
    expect(await message.getAttribute('class')).not.toContain('error');
    expect(await page.content()).not.toContain(options.token);
    expect(problems).toEqual([]);
  });

  it('a decline card (insufficient funds) shows the decline on the checkout page, which stays put', async () => {
    await openCheckout();
    // Picking a card from the list puts it in the card field.
    await page.locator(`button.card-pick[data-card="${SANDBOX_CARDS.insufficientFunds}"]`).click();
    const form = page.locator('form#checkout');
    expect(await form.locator('input[name=card_number]').inputValue()).toBe(spaced(SANDBOX_CARDS.insufficientFunds));
    const email = 'grace.e2e@example.com';
    await form.locator('input[name=email]').fill(email);
    await form.locator('input[name=first_name]').fill('Grace');
    await page.locator('#pay').click();

    const message = page.locator('#message.error');
    await message.waitFor();
    const text = await message.innerText();
    expect(text).toMatch(/declined/i);
    expect(text).toContain('Try another card from the list below.');
    expect(await page.locator('#pay').isEnabled()).toBe(true);
    await page.waitForTimeout(500);
    expect(page.url()).toBe(`${demoUrl}/demo`);
    expect(await page.evaluate(() => window.sessionStorage.getItem('checkstand-demo-order'))).toBeNull();
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'checkout-declined.png'), fullPage: true });

    // The API has the order, declined, for that customer.
    const list = await merchant.get(`/v1/orders?customer_email=${encodeURIComponent(email)}`);
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    expect(list.body.data).toEqual([expect.objectContaining({ status: 'declined', payment_status: 'declined' })]);
    // The 402 of /demo/api/pay (which Chromium also logs as a console error) is the decline itself.
    const pay = `${demoUrl}/demo/api/pay`;
    expect(problems.filter((p) => p !== `HTTP 402: POST ${pay}` && !p.endsWith(`status of 402 (Payment Required) (${pay})`))).toEqual([]);
  });
});
