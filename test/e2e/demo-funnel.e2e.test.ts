/**
 * The demo funnel in a real browser: headless Chromium, driven by playwright-core, clicks through
 * /demo → /demo/upsell → /demo/thank-you against the real server (booted as in
 * test/demo-funnel.test.ts), and what the pages show is checked against the API. With 3-D Secure:
 * /demo → the sandbox's hosted page → /demo/return (Capture) → /demo/upsell → /demo/thank-you. With
 * extpay: /demo (Create Order, the provider's embedded checkout in an iframe from the sandbox, Capture
 * with the receipt id) → /demo/upsell → /demo/thank-you, or through the provider's hosted page.
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
import { EXTPAY_CARDS } from '../../src/sandbox/extpay-provider.ts';
import { startSandbox } from '../../src/sandbox/server.ts';
import { THREEDS_CARDS } from '../../src/sandbox/threeds-gateway.ts';
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
  // The app's gateway view shows port 0 here (the test app picks its port after the context is
  // made): tell the sandbox where the app really is, so the 3-D Secure webhooks arrive as on `npm start`.
  const gw = await app.ctx.store.run((db) => app.ctx.services.gateways.findGateway(db, seed.team_id, seed.threeds_gateway_id!));
  const account = await fetch(`${sandbox.url}/3ds/sandbox/accounts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ api_key: app.ctx.services.gateways.account(gw!).credentials.api_key, webhook_url: `${app.url}/webhooks/gateways/${gw!.id}` }),
  });
  if (account.status !== 200) throw new Error(`the sandbox refused the account settings: ${account.status} ${await account.text()}`);
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

/** The order number the funnel keeps in sessionStorage between its pages. */
function storedOrderNumber(): Promise<string | undefined> {
  return page.evaluate(() => (JSON.parse(window.sessionStorage.getItem('checkstand-demo-order') ?? 'null') as { order_number?: string } | null)?.order_number);
}

/** HTTP errors that are the test's own subject (a decline), in both forms Chromium reports them. */
function problemsExcept(status: number, text: string, url: string): string[] {
  return problems.filter((p) => p !== `HTTP ${status}: POST ${url}` && !p.endsWith(`status of ${status} (${text}) (${url})`));
}

/** Chooses extpay and presses "Continue to payment": Create Order, then the provider's embed in its iframe. */
async function startExtpayCheckout(email: string): Promise<{ checkout: any; orderNumber: string }> {
  await openCheckout();
  await page.getByLabel('Pay with extpay (embedded checkout)').check();
  // The card is the provider's business: no card fields here, the provider's test cards instead.
  expect(await page.locator('#card-fields').isVisible()).toBe(false);
  expect(await page.locator('#sandbox-cards').isVisible()).toBe(false);
  expect(await page.locator('#extpay-cards').isVisible()).toBe(true);
  expect(await page.locator('#extpay-cards code').allTextContents()).toEqual(Object.values(EXTPAY_CARDS).map(spaced));
  expect(await page.locator('#pay').textContent()).toBe('Continue to payment');
  await page.locator('input[name=email]').fill(email);
  await page.locator('input[name=first_name]').fill('Ada');
  await page.locator('input[name=last_name]').fill('Embedded');
  const [created] = await Promise.all([page.waitForResponse(`${demoUrl}/demo/api/extpay-order`), page.locator('#pay').click()]);
  expect(created.status()).toBe(200);
  const data = (await created.json()).data;
  await page.locator('#extpay-embed iframe').waitFor();
  return { checkout: data.checkout, orderNumber: data.order_number };
}

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
    const picks = page.locator('#sandbox-cards button.card-pick');
    expect(await picks.allTextContents()).toEqual(Object.values(SANDBOX_CARDS).map(spaced));
    const cardsTable = await page.locator('section#sandbox-cards').innerText();
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

  it('Card with 3-D Secure (challenge card) → the hosted page → Authenticate → back to the upsell → thank-you, completed', async () => {
    await openCheckout();
    const form = page.locator('form#checkout');
    const sandboxCards = page.locator('#sandbox-cards');
    const threedsCards = page.locator('#threeds-cards');
    expect(await sandboxCards.isVisible()).toBe(true);
    expect(await threedsCards.isVisible()).toBe(false);

    // Choosing 3-D Secure shows its test cards (and swaps the prefilled card for its challenge card).
    await page.getByLabel('Card with 3-D Secure (sandbox 3DS gateway)').check();
    expect(await threedsCards.isVisible()).toBe(true);
    expect(await sandboxCards.isVisible()).toBe(false);
    expect(await threedsCards.locator('button.card-pick').allTextContents()).toEqual(Object.values(THREEDS_CARDS).map(spaced));
    expect(await form.locator('input[name=card_number]').inputValue()).toBe(spaced(THREEDS_CARDS.challenge));
    await threedsCards.locator(`button.card-pick[data-card="${THREEDS_CARDS.frictionless}"]`).click();
    expect(await form.locator('input[name=card_number]').inputValue()).toBe(spaced(THREEDS_CARDS.frictionless));
    await threedsCards.locator(`button.card-pick[data-card="${THREEDS_CARDS.challenge}"]`).click();
    expect(await form.locator('input[name=card_number]').inputValue()).toBe(spaced(THREEDS_CARDS.challenge));
    const email = 'ada.3ds.e2e@example.com';
    await form.locator('input[name=email]').fill(email);
    await form.locator('input[name=first_name]').fill('Ada');
    await form.locator('input[name=last_name]').fill('Secure');
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'threeds-checkout.png'), fullPage: true });

    // Pay: the API asks for the redirect; the browser lands on the sandbox's hosted 3DS page.
    await Promise.all([page.waitForURL(new RegExp(`^${sandbox.url}/3ds/authenticate/pay_`)), page.locator('#pay').click()]);
    expect(await page.locator('h1').textContent()).toBe('3-D Secure check');
    const total = 3900 + 495;
    const hosted = await page.locator('body').innerText();
    expect(hosted).toContain(`•••• ${THREEDS_CARDS.challenge.slice(-4)}`);
    expect(hosted).toContain('43.95');
    const hostedShot = path.join(SCREENSHOT_DIR, 'threeds-hosted-page.png');
    await page.screenshot({ path: hostedShot, fullPage: true });
    console.log(`screenshot: ${hostedShot}`);

    // Authenticate → /demo/return (Capture) → the upsell page.
    await Promise.all([page.waitForURL(`${demoUrl}/demo/upsell`), page.locator('#authenticate').click()]);
    const config = (await new ApiClient(demoUrl, undefined).get('/demo/api/config')).body.data;
    await expect.poll(() => page.locator('#upsell h1').textContent()).toBe(config.upsell.name);
    const upsellShot = path.join(SCREENSHOT_DIR, 'threeds-upsell-after-return.png');
    await page.screenshot({ path: upsellShot, fullPage: true });
    console.log(`screenshot: ${upsellShot}`);
    const orderNumber = await page.evaluate(() => (JSON.parse(window.sessionStorage.getItem('checkstand-demo-order') ?? 'null') as { order_number?: string } | null)?.order_number);
    expect(orderNumber).toBeTruthy();
    // Capture already completed the order (fulfillment, subscriptions, webhooks) before any upsell.
    const captured = (await merchant.get(`/v1/orders/${orderNumber}`)).body.data;
    expect(captured).toMatchObject({ status: 'completed', payment_status: 'completed', total });
    expect(captured.events.map((e: { type: string }) => e.type)).toContain('payment.captured');

    // Accept: the one-click upsell on the saved card, then Complete Order (idempotent: 200).
    await Promise.all([page.waitForURL(`${demoUrl}/demo/thank-you`), page.locator('#accept').click()]);
    const orderBox = page.locator('#order');
    await orderBox.locator('table').waitFor();
    expect(await orderBox.locator('p').first().textContent()).toBe(`Order ${orderNumber} · completed · test`);
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'threeds-thank-you.png'), fullPage: true });
    const message = page.locator('#message');
    expect(await message.getAttribute('class')).not.toContain('error');
    expect(await message.innerText()).toContain('Upsell added.');

    const order = (await merchant.get(`/v1/orders/${orderNumber}`)).body.data;
    expect(order).toMatchObject({ status: 'completed', payment_status: 'completed', total: total + config.upsell.offer.price });
    expect(order.customer.email).toBe(email);
    expect(order.lines.map((l: { offer_id: string }) => l.offer_id)).toEqual([config.offers[0].id, config.upsell.offer.id]);
    expect(order.transactions.every((t: { gateway_id: string }) => t.gateway_id === seed.threeds_gateway_id)).toBe(true);
    expect(order.events.filter((e: { type: string }) => e.type === 'order.completed')).toHaveLength(1);
    expect(await page.content()).not.toContain(options.token);
    expect(problems).toEqual([]);
  });

  it('3-D Secure abandoned on the hosted page: back on the checkout, "cancelled — try again"', async () => {
    await openCheckout();
    await page.getByLabel('Card with 3-D Secure (sandbox 3DS gateway)').check();
    const email = 'grace.3ds.e2e@example.com';
    await page.locator('input[name=email]').fill(email);
    await Promise.all([page.waitForURL(new RegExp(`^${sandbox.url}/3ds/authenticate/pay_`)), page.locator('#pay').click()]);
    await Promise.all([page.waitForURL(/\/demo\?cancelled=1&/), page.locator('#abandon').click()]);

    const message = page.locator('#message.error');
    await message.waitFor();
    expect(await message.innerText()).toBe('3-D Secure was cancelled — try again.');
    // The page cleans its address (a reload asks nothing again) and keeps 3-D Secure chosen.
    await expect.poll(() => page.url()).toBe(`${demoUrl}/demo`);
    expect(await page.locator('input[name=method][value=threeds]').isChecked()).toBe(true);
    expect(await page.locator('#pay').isEnabled()).toBe(true);
    // Who is paying was kept across the round trip (the card number never is).
    expect(await page.locator('input[name=email]').inputValue()).toBe(email);
    expect(await page.evaluate(() => window.sessionStorage.getItem('checkstand-demo-form'))).toBeNull();
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'threeds-cancelled.png'), fullPage: true });

    // Nothing was paid: the order still waits for its payment, no upsell was possible.
    const list = await merchant.get(`/v1/orders?customer_email=${encodeURIComponent(email)}`);
    expect(list.body.data).toEqual([expect.objectContaining({ status: 'pending', payment_status: 'pending_redirect' })]);
    // The 422 of /demo/api/capture (Capture: "not completed") is the cancellation itself.
    const capture = `${demoUrl}/demo/api/capture`;
    expect(problems.filter((p) => p !== `HTTP 422: POST ${capture}` && !p.endsWith(`status of 422 (Unprocessable Entity) (${capture})`))).toEqual([]);
  });

  it('3-D Secure under review: /demo/return says so and moves on to the upsell only once the bank approves', async () => {
    const gw = await app.ctx.store.run((db) => app.ctx.services.gateways.findGateway(db, seed.team_id, seed.threeds_gateway_id!));
    const apiKey = app.ctx.services.gateways.account(gw!).credentials.api_key;
    const reviewMs = (ms: number | null) =>
      fetch(`${sandbox.url}/3ds/sandbox/accounts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: apiKey, review_ms: ms }) });
    // The review waits for the control endpoint, not the sandbox's timer.
    expect((await reviewMs(null)).status).toBe(200);
    try {
      await openCheckout();
      await page.getByLabel('Card with 3-D Secure (sandbox 3DS gateway)').check();
      await page.locator(`#threeds-cards button.card-pick[data-card="${THREEDS_CARDS.challengeThenReview}"]`).click();
      await page.locator('input[name=email]').fill('alan.3ds.e2e@example.com');
      await Promise.all([page.waitForURL(new RegExp(`^${sandbox.url}/3ds/authenticate/pay_`)), page.locator('#pay').click()]);
      const paymentId = new URL(page.url()).pathname.split('/').pop()!;
      await Promise.all([page.waitForURL(new RegExp(`^${demoUrl}/demo/return\\?`)), page.locator('#authenticate').click()]);

      // Capture answered 202: a message and "Check again", no upsell.
      const message = page.locator('#message');
      await expect.poll(() => message.innerText()).toContain('under review');
      expect(await message.getAttribute('class')).not.toContain('error');
      expect(await page.locator('#check').isVisible()).toBe(true);
      await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'threeds-under-review.png'), fullPage: true });
      await page.locator('#check').click();
      await expect.poll(() => page.locator('#check').isEnabled()).toBe(true);
      expect(page.url()).toMatch(new RegExp(`^${demoUrl}/demo/return\\?`));

      // The bank approves (its webhook completes the order); the next check moves on.
      const resolved = await fetch(`${sandbox.url}/3ds/sandbox/payments/${paymentId}/resolve`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ result: 'succeeded' }),
      });
      expect(resolved.status).toBe(200);
      await Promise.all([page.waitForURL(`${demoUrl}/demo/upsell`), page.locator('#check').click()]);
      await Promise.all([page.waitForURL(`${demoUrl}/demo/thank-you`), page.locator('#decline').click()]);
      const orderBox = page.locator('#order');
      await orderBox.locator('table').waitFor();
      expect(await orderBox.locator('p').first().textContent()).toMatch(/^Order \S+ · completed · test$/);
      expect(problems).toEqual([]);
    } finally {
      await reviewMs(10_000);
    }
  });

  it('Pay with extpay: the embedded checkout (iframe from the sandbox), paid card → Capture with the receipt → upsell → thank-you', async () => {
    const email = 'ada.extpay.e2e@example.com';
    const { checkout, orderNumber } = await startExtpayCheckout(email);
    expect(checkout).toMatchObject({ provider: 'extpay', environment: 'sandbox', setup_future_usage: 'off_session' });

    // Mounted with Whop's attributes, from the checkout object Create Order answered (spec 4.4).
    const mount = page.locator('#extpay-embed');
    const attrs = await mount.evaluate((el) => Object.fromEntries([...el.attributes].map((a) => [a.name, a.value])));
    expect(attrs).toMatchObject({
      'data-whop-checkout-plan-id': checkout.plan_id,
      'data-whop-checkout-session': checkout.session_id,
      'data-whop-checkout-environment': 'sandbox',
      'data-whop-checkout-setup-future-usage': 'off_session',
      'data-whop-checkout-return-url': `${demoUrl}/demo/return?method=extpay&order_number=${orderNumber}`,
      'data-whop-checkout-prefill-email': email,
      'data-whop-checkout-prefill-name': 'Ada Embedded',
      'data-whop-checkout-on-complete': expect.any(String),
      'data-extpay-mounted': '1',
    });
    const src = new URL((await mount.locator('iframe').getAttribute('src'))!);
    expect(`${src.origin}${src.pathname}`).toBe(`${sandbox.url}/extpay/sandbox/checkout/${checkout.plan_id}`);
    expect(Object.fromEntries(src.searchParams)).toMatchObject({ embed: '1', session: checkout.session_id, setup_future_usage: 'off_session', email });
    // The order exists, waiting for its payment; Pay is gone and who pays is fixed.
    expect(await page.locator('#pay').isVisible()).toBe(false);
    expect(await page.locator('input[name=email]').isDisabled()).toBe(true);
    expect((await merchant.get(`/v1/orders/${orderNumber}`)).body.data).toMatchObject({ status: 'pending', payment_status: 'pending_redirect' });

    // The customer pays inside the provider's iframe (prefilled with who they are).
    const frame = page.frameLocator('#extpay-embed iframe');
    expect(await frame.locator('input[name=email]').inputValue()).toBe(email);
    expect(await frame.locator('input[name=name]').inputValue()).toBe('Ada Embedded');
    await frame.locator('input[name=card_number]').fill(EXTPAY_CARDS.paid);
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'extpay-embedded-checkout.png'), fullPage: true });
    const [captured] = await Promise.all([
      page.waitForResponse(`${demoUrl}/demo/api/capture`),
      page.waitForURL(`${demoUrl}/demo/upsell`),
      frame.locator('#pay').click(),
    ]);
    // The on-complete callback gave the receipt id; the funnel's server captured exactly it.
    const captureBody = JSON.parse(captured.request().postData()!);
    expect(captureBody).toEqual({ order_number: orderNumber, payment_id: expect.stringMatching(/^pay_/) });
    expect(captured.status()).toBe(200);
    const receipt = (await (await fetch(`${sandbox.url}/extpay/sandbox/sandbox/ledger?company_id=${encodeURIComponent((await merchant.get(`/v1/extpay-connections/${seed.extpay_connection_id}`)).body.data.company_id)}`)).json()).payments.find(
      (p: { id: string }) => p.id === captureBody.payment_id,
    );
    expect(receipt).toMatchObject({ status: 'paid', card_last4: '4242' });

    const config = (await new ApiClient(demoUrl, undefined).get('/demo/api/config')).body.data;
    await expect.poll(() => page.locator('#upsell h1').textContent()).toBe(config.upsell.name);
    expect(await storedOrderNumber()).toBe(orderNumber);
    const paid = (await merchant.get(`/v1/orders/${orderNumber}`)).body.data;
    expect(paid).toMatchObject({ status: 'completed', payment_status: 'completed', total: 4395 });
    expect(await page.locator('#message').isVisible()).toBe(false);
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'extpay-upsell.png'), fullPage: true });

    // The upsell on an extpay order: 202 (accepted, confirmed later) or 402 (declined): each says so.
    const [upsell] = await Promise.all([page.waitForResponse(`${demoUrl}/demo/api/upsell`), page.locator('#accept').click()]);
    const message = page.locator('#message');
    if (upsell.status() === 202) {
      await page.waitForURL(`${demoUrl}/demo/thank-you`);
      await expect.poll(() => message.innerText()).toContain('Upsell accepted: the payment provider is confirming the charge');
      // The order itself is paid and completed: only the upsell waits for the provider.
      expect(await message.innerText()).not.toContain('Your payment is being confirmed');
    } else {
      expect(upsell.status()).toBe(402);
      await expect.poll(() => message.innerText()).toContain('You were not charged for it.');
      expect(await message.getAttribute('class')).toContain('error');
      expect(await page.locator('#decline').textContent()).toBe('Continue');
      await Promise.all([page.waitForURL(`${demoUrl}/demo/thank-you`), page.locator('#decline').click()]);
    }
    const orderBox = page.locator('#order');
    await orderBox.locator('table').waitFor();
    const order = (await merchant.get(`/v1/orders/${orderNumber}`)).body.data;
    expect(await orderBox.locator('p').first().textContent()).toBe(`Order ${orderNumber} · completed${order.is_test ? ' · test' : ''}`);
    expect(await orderBox.innerText()).toContain(`A confirmation goes to ${email}.`);
    const upsellPending = order.transactions.some((t: { upsell_id: string | null; status: string }) => t.upsell_id && t.status === 'pending');
    expect(upsellPending).toBe(upsell.status() === 202);
    await expect
      .poll(() => orderBox.locator('p.pending-note').allInnerTexts())
      .toEqual(upsellPending ? ['Your upsell is being confirmed by the payment provider: it joins this order once the charge is confirmed.'] : []);
    expect(order.events.filter((e: { type: string }) => e.type === 'order.completed')).toHaveLength(1);
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'extpay-thank-you.png'), fullPage: true });
    expect(await page.content()).not.toContain(options.token);
    expect(problemsExcept(402, 'Payment Required', `${demoUrl}/demo/api/upsell`)).toEqual([]);
  });

  it('Pay with extpay, money held (pending card): Capture answers 202, on to the upsell saying the payment is being confirmed', async () => {
    const { orderNumber } = await startExtpayCheckout('ada.extpay.held.e2e@example.com');
    const frame = page.frameLocator('#extpay-embed iframe');
    await frame.locator('input[name=card_number]').fill(EXTPAY_CARDS.pending);
    const [captured] = await Promise.all([page.waitForResponse(`${demoUrl}/demo/api/capture`), page.waitForURL(`${demoUrl}/demo/upsell`), frame.locator('#pay').click()]);
    expect(captured.status()).toBe(202);
    const message = page.locator('#message');
    await expect.poll(() => message.innerText()).toContain('Your payment is being confirmed by the payment provider. It is not a decline');
    expect(await message.getAttribute('class')).not.toContain('error');
    expect((await merchant.get(`/v1/orders/${orderNumber}`)).body.data).toMatchObject({ status: 'pending_external_confirmation', payment_status: 'pending_external_confirmation' });
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'extpay-upsell-confirming.png'), fullPage: true });

    // No thanks: the thank-you page reads the order, still being confirmed (no Complete Order yet).
    await Promise.all([page.waitForURL(`${demoUrl}/demo/thank-you`), page.locator('#decline').click()]);
    const orderBox = page.locator('#order');
    await orderBox.locator('table').waitFor();
    expect(await orderBox.locator('p').first().textContent()).toMatch(new RegExp(`^Order ${orderNumber} · pending_external_confirmation`));
    expect(await orderBox.locator('p.pending-note').innerText()).toContain('being confirmed by the payment provider');
    expect(problems).toEqual([]);
  });

  it('Pay with extpay, then the upsell declined by the provider (402): says so, and Continue goes to the thank-you page', async () => {
    const { orderNumber } = await startExtpayCheckout('ada.extpay.offsession.e2e@example.com');
    const frame = page.frameLocator('#extpay-embed iframe');
    await frame.locator('input[name=card_number]').fill(EXTPAY_CARDS.offSessionDecline);
    await Promise.all([page.waitForURL(`${demoUrl}/demo/upsell`), frame.locator('#pay').click()]);
    const [upsell] = await Promise.all([page.waitForResponse(`${demoUrl}/demo/api/upsell`), page.locator('#accept').click()]);
    expect(upsell.status()).toBe(402);
    const message = page.locator('#message.error');
    await message.waitFor();
    expect(await message.innerText()).toMatch(/^Upsell declined: .+ You were not charged for it\.$/);
    expect(page.url()).toBe(`${demoUrl}/demo/upsell`);
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'extpay-upsell-declined.png'), fullPage: true });
    await Promise.all([page.waitForURL(`${demoUrl}/demo/thank-you`), page.locator('#decline', { hasText: 'Continue' }).click()]);
    const orderBox = page.locator('#order');
    await orderBox.locator('table').waitFor();
    expect(await orderBox.locator('p').first().textContent()).toMatch(new RegExp(`^Order ${orderNumber} · completed`));
    expect(await orderBox.locator('p.pending-note').count()).toBe(0);
    const order = (await merchant.get(`/v1/orders/${orderNumber}`)).body.data;
    expect(order).toMatchObject({ status: 'completed', total: 4395 });
    expect(order.lines).toHaveLength(1);
    expect(problemsExcept(402, 'Payment Required', `${demoUrl}/demo/api/upsell`)).toEqual([]);
  });

  it('Pay with extpay on the provider\'s own page: back on /demo/return, Capture with payment_id, on to the upsell', async () => {
    const { orderNumber } = await startExtpayCheckout('ada.extpay.hosted.e2e@example.com');
    await Promise.all([page.waitForURL(new RegExp(`^${sandbox.url}/extpay/sandbox/checkout/`)), page.locator('#extpay-hosted').click()]);
    await page.locator('input[name=card_number]').fill(EXTPAY_CARDS.paid);
    await Promise.all([page.waitForURL(`${demoUrl}/demo/upsell`), page.locator('#pay').click()]);
    expect(await storedOrderNumber()).toBe(orderNumber);
    expect((await merchant.get(`/v1/orders/${orderNumber}`)).body.data).toMatchObject({ status: 'completed', payment_status: 'completed' });
    expect(problems).toEqual([]);
  });

  it('Pay with extpay, declined in the embed: back to the checkout form with the provider\'s message', async () => {
    await startExtpayCheckout('ada.extpay.declined.e2e@example.com');
    const frame = page.frameLocator('#extpay-embed iframe');
    await frame.locator('input[name=card_number]').fill(EXTPAY_CARDS.failed);
    await frame.locator('#pay').click();
    const message = page.locator('#message.error');
    await message.waitFor();
    expect(await message.innerText()).toBe('Your card was declined. Try again, or use another card.');
    expect(await page.locator('#extpay-checkout').isVisible()).toBe(false);
    expect(await page.locator('#pay').isEnabled()).toBe(true);
    expect(await page.locator('input[name=method][value=extpay]').isChecked()).toBe(true);
    expect(page.url()).toBe(`${demoUrl}/demo`);
    // The provider's 402 page inside the iframe is the decline itself. The page removes the iframe
    // as soon as the embed reports the decline, so Chromium may report that same request as aborted
    // if its 402 page had not finished loading by then.
    const checkoutUrl = `${sandbox.url}/extpay/sandbox/checkout/`;
    const expected = (p: string): boolean =>
      p.startsWith(`HTTP 402: POST ${checkoutUrl}`) ||
      p.includes('status of 402 (Payment Required)') ||
      (p.startsWith(`request failed: POST ${checkoutUrl}`) && p.endsWith(' net::ERR_ABORTED'));
    expect(problems.filter((p) => !expected(p))).toEqual([]);
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
