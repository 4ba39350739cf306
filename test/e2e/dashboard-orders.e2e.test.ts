/**
 * The dashboard's Orders area in headless Chromium against the real server with the demo seed:
 * the demo Team Owner finds an order by its number and refunds part of it (the API then shows the
 * refund), voids another, and a Customer Support Level 1 member (invited and accepted through the
 * API) gets no Refund or Void button and a 403 from the API when trying anyway. The order page's
 * own actions: search by a card's last 4, add a note, flag for QA and clear it, cancel a lead,
 * resend a webhook (the API shows a second attempt), and the disputes and QA queue.
 *
 * Needs Chromium (CHROMIUM_PATH, default /usr/bin/chromium). `npm run test:e2e`.
 * DASHBOARD_SCREENSHOTS=1 writes the screenshots linked from the README to docs/screenshots/
 * (otherwise to $TMPDIR/checkstand-e2e/).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { login } from '../support/harness.ts';
import { bootDashboardWith, completedOrder, drainWebhooksUntil, type Receiver, webhookReceiver } from './dashboard-developers-support.ts';
import { type DashboardEnv, invitedMember, launchChromium, loginAs, newPage, paidOrder } from './dashboard-support.ts';

const SCREENSHOTS = process.env.DASHBOARD_SCREENSHOTS === '1' ? path.resolve('docs/screenshots') : path.join(os.tmpdir(), 'checkstand-e2e');

let env: DashboardEnv;
let browser: Browser;
let context: BrowserContext | undefined;
let receiver: Receiver;

beforeAll(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  // Webhook deliveries go to a receiver on a loopback port: allowed here, explicitly.
  env = await bootDashboardWith({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_TIMEOUT_MS: '5000' });
  receiver = await webhookReceiver();
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await receiver?.close();
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

const people = [
  ['Grace', 'Hopper'],
  ['Alan', 'Turing'],
  ['Katherine', 'Johnson'],
  ['Edsger', 'Dijkstra'],
  ['Barbara', 'Liskov'],
];

describe('dashboard: orders', () => {
  it('finds an order by its number and refunds part of it; the API shows the refund', async () => {
    for (const [first, last] of people) await paidOrder(env, { first_name: first, last_name: last, email: `${first!.toLowerCase()}@example.com` });
    const orderNumber = await paidOrder(env, { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com' });
    const before = (await env.merchant.get(`/v1/orders/${orderNumber}`)).body.data;
    expect(before.refunded_total).toBe(0);

    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, '/orders');
    const table = page.getByRole('table', { name: 'Orders' });
    await table.locator(`tr[data-order="${orderNumber}"]`).waitFor();
    expect(await table.locator('tbody tr').count()).toBe(6);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-orders.png') });

    // Search by the order number: one row, the order.
    await page.getByLabel('Search', { exact: true }).fill(orderNumber);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await expect.poll(() => table.locator('tbody tr').count()).toBe(1);
    await table.getByRole('link', { name: orderNumber }).click();
    await page.getByRole('heading', { name: orderNumber, level: 1 }).waitFor();
    expect(page.url()).toBe(`${env.url}/dashboard/orders/${orderNumber}`);
    await page.getByRole('table', { name: 'Order lines' }).waitFor();

    // Refund 5.00 of the charge: the form, then the confirmation.
    await page.getByRole('button', { name: 'Refund', exact: true }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('Partial', { exact: true }).click();
    await dialog.getByLabel(`Amount (${before.currency})`).fill('5');
    await dialog.getByRole('button', { name: 'Review refund' }).click();
    await dialog.getByText('this cannot be undone').waitFor();
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith(`/v1/orders/${orderNumber}/refunds`) && r.request().method() === 'POST'),
      dialog.getByRole('button', { name: /^Refund / }).click(),
    ]);
    expect(answer.status()).toBe(201);
    expect(answer.request().headers()['x-csrf-token']).toBeTruthy();
    expect(answer.request().headers()['idempotency-key']).toBeTruthy();
    await dialog.waitFor({ state: 'hidden' });

    // The API has it, and the page shows it.
    const after = (await env.merchant.get(`/v1/orders/${orderNumber}`)).body.data;
    expect(after.refunded_total).toBe(500);
    const refunds = after.transactions.filter((t: { type: string }) => t.type === 'refund');
    expect(refunds).toHaveLength(1);
    expect(refunds[0]).toMatchObject({ amount: 500, status: 'approved' });
    await page.locator(`tr[data-transaction="${refunds[0].id}"]`).waitFor();
    await page.getByRole('button', { name: 'Refund', exact: true }).waitFor();
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-order.png'), fullPage: true });
    expect(problems).toEqual([]);
  });

  it('voids another order after the confirmation; the API shows the void', async () => {
    const orderNumber = await paidOrder(env, { first_name: 'Void', last_name: 'Me' });
    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, `/orders/${orderNumber}`);
    await page.getByRole('heading', { name: orderNumber, level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Void', exact: true }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('the customer is never billed').waitFor();
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith(`/v1/orders/${orderNumber}/void`) && r.request().method() === 'POST'),
      dialog.getByRole('button', { name: /^Void / }).click(),
    ]);
    expect(answer.status()).toBe(201);
    await dialog.waitFor({ state: 'hidden' });

    const after = (await env.merchant.get(`/v1/orders/${orderNumber}`)).body.data;
    const voids = after.transactions.filter((t: { type: string }) => t.type === 'void');
    expect(voids).toHaveLength(1);
    expect(voids[0].status).toBe('approved');
    // Nothing is left to void or refund: both buttons are disabled.
    await expect.poll(() => page.getByRole('button', { name: 'Void', exact: true }).isDisabled()).toBe(true);
    expect(await page.getByRole('button', { name: 'Refund', exact: true }).isDisabled()).toBe(true);
    expect(problems).toEqual([]);
  });

  it('a Customer Support Level 1 member sees the order but no Refund or Void, and the API refuses the refund (403)', async () => {
    const orderNumber = await paidOrder(env, { first_name: 'Level', last_name: 'One' });
    const member = await invitedMember(env, 'support_l1', 'Lee One');
    const { page, problems } = await open();
    await loginAs(page, env.url, member.email, member.password, `/orders/${orderNumber}`);
    await page.getByRole('heading', { name: orderNumber, level: 1 }).waitFor();
    await page.getByRole('table', { name: 'Transactions' }).waitFor();
    expect(await page.getByRole('button', { name: 'Refund', exact: true }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Void', exact: true }).count()).toBe(0);
    // The role may annotate: the note form is there.
    await page.getByLabel('Add a note').waitFor();
    // Its navigation lists Orders (orders:view).
    await page.getByRole('navigation', { name: 'Main navigation' }).getByRole('link', { name: 'Orders' }).waitFor();

    const session = await login(env.url, member);
    const refused = await session.post(`/v1/orders/${orderNumber}/refunds`, { amount: 100 });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('permission_denied');
    expect((await env.merchant.get(`/v1/orders/${orderNumber}`)).body.data.refunded_total).toBe(0);
    expect(problems).toEqual([]);
  });
});

/** A card the sandbox approves (any Luhn-valid number but its decline cards) whose last 4 no other order of this file has. */
const MASTERCARD = { card_number: '5555555555554444', card_exp: '12/39', card_cvv: '123' };

async function lead(): Promise<string> {
  const r = await env.merchant.post('/checkout/leads', {
    campaign_id: env.seed.campaign_id,
    customer: { email: `lead.${Date.now()}@example.com`, first_name: 'Lee', last_name: 'Lead' },
    products: [{ offer_id: env.seed.offers.serum, quantity: 1 }],
  });
  if (r.status !== 201) throw new Error(`no lead: ${r.status} ${r.text}`);
  return r.body.data.order_number as string;
}

describe('dashboard: the order page’s actions', () => {
  it("finds an order by the card's last 4", async () => {
    const r = await env.merchant.post('/checkout/orders', {
      campaign_id: env.seed.campaign_id,
      currency: env.seed.currency,
      customer: { email: `mary.${Date.now()}@example.com`, first_name: 'Mary', last_name: 'Jackson' },
      products: [{ offer_id: env.seed.offers.serum, quantity: 1 }],
      payment: MASTERCARD,
    });
    expect(r.status, r.text).toBe(200);
    const orderNumber = r.body.data.order_number as string;
    await paidOrder(env, { first_name: 'Visa', last_name: 'Card' });

    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, '/orders');
    const table = page.getByRole('table', { name: 'Orders' });
    await table.locator('tbody tr').first().waitFor();
    await page.getByLabel('Search', { exact: true }).fill('4444');
    const [answer] = await Promise.all([
      page.waitForResponse((res) => res.url().includes('/v1/orders?') && new URL(res.url()).searchParams.get('q') === '4444'),
      page.getByRole('button', { name: 'Search', exact: true }).click(),
    ]);
    expect(answer.status()).toBe(200);
    await expect.poll(() => table.locator('tbody tr').count()).toBe(1);
    await table.locator(`tr[data-order="${orderNumber}"]`).waitFor();
    expect(problems).toEqual([]);
  });

  it('adds a note to the order: the API lists it', async () => {
    const orderNumber = await paidOrder(env, { first_name: 'Note', last_name: 'Taker' });
    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, `/orders/${orderNumber}`);
    await page.getByRole('heading', { name: orderNumber, level: 1 }).waitFor();
    await page.getByLabel('Add a note').fill('Asked to leave the parcel with a neighbour.');
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith(`/v1/orders/${orderNumber}/notes`) && r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Add note' }).click(),
    ]);
    expect(answer.status()).toBe(201);
    await page.getByRole('list', { name: 'Order notes' }).getByText('Asked to leave the parcel with a neighbour.').waitFor();
    const notes = (await env.merchant.get(`/v1/orders/${orderNumber}/notes`)).body.data;
    expect(notes).toEqual([expect.objectContaining({ order_number: orderNumber, body: 'Asked to leave the parcel with a neighbour.', author: expect.stringMatching(/^user:/) })]);
    expect(problems).toEqual([]);
  });

  it('flags the order for QA with a reason and clears it: the API shows needs_qa each time', async () => {
    const orderNumber = await paidOrder(env, { first_name: 'Quality', last_name: 'Check' });
    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, `/orders/${orderNumber}`);
    await page.getByRole('heading', { name: orderNumber, level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Flag for QA' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('QA reason').fill('Shipping address does not match the card');
    const [flagged] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith(`/v1/orders/${orderNumber}`) && r.request().method() === 'PATCH'),
      dialog.getByRole('button', { name: 'Flag', exact: true }).click(),
    ]);
    expect(flagged.status()).toBe(200);
    expect((await env.merchant.get(`/v1/orders/${orderNumber}`)).body.data).toMatchObject({ needs_qa: true, qa_reason: 'Shipping address does not match the card' });

    const [cleared] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith(`/v1/orders/${orderNumber}`) && r.request().method() === 'PATCH'),
      page.getByRole('button', { name: 'Clear QA flag' }).click(),
    ]);
    expect(cleared.status()).toBe(200);
    await page.getByRole('button', { name: 'Flag for QA' }).waitFor();
    expect((await env.merchant.get(`/v1/orders/${orderNumber}`)).body.data).toMatchObject({ needs_qa: false, qa_reason: null });
    expect(problems).toEqual([]);
  });

  it("cancels a lead after the confirmation: the API shows it cancelled; a paid order's Cancel is disabled", async () => {
    const orderNumber = await lead();
    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, `/orders/${orderNumber}`);
    await page.getByRole('heading', { name: orderNumber, level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Cancel order' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('can no longer be paid').waitFor();
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith(`/v1/orders/${orderNumber}/cancel`) && r.request().method() === 'POST'),
      dialog.getByRole('button', { name: 'Cancel order' }).click(),
    ]);
    expect(answer.status()).toBe(200);
    expect((await env.merchant.get(`/v1/orders/${orderNumber}`)).body.data.status).toBe('cancelled');
    await page.getByLabel('Status: cancelled').waitFor();
    await expect.poll(() => page.getByRole('button', { name: 'Cancel order' }).count()).toBe(0);

    const paid = await paidOrder(env, { first_name: 'Paid', last_name: 'Already' });
    await page.goto(`${env.url}/dashboard/orders/${paid}`);
    await page.getByRole('heading', { name: paid, level: 1 }).waitFor();
    expect(await page.getByRole('button', { name: 'Cancel order' }).isDisabled()).toBe(true);
    expect(problems).toEqual([]);
  });

  it("resends one of the order's webhooks: the API shows a second attempt", async () => {
    const endpoint = await env.merchant.post('/v1/webhook-endpoints', { url: receiver.url, event_types: ['order.completed'] });
    expect(endpoint.status, endpoint.text).toBe(201);
    const orderNumber = await completedOrder(env);
    const deliveries = async () => (await env.merchant.get(`/v1/webhook-deliveries?order_number=${orderNumber}`)).body.data as { id: string; status: string; event_id: string }[];
    await drainWebhooksUntil(env, async () => (await deliveries()).some((d) => d.status === 'succeeded'));
    const [delivery] = await deliveries();

    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, `/orders/${orderNumber}`);
    const row = page.getByRole('table', { name: 'Webhook deliveries' }).locator(`tr[data-delivery="${delivery!.id}"]`);
    await row.waitFor();
    const [replayed] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith(`/v1/webhook-deliveries/${delivery!.id}/replay`) && r.request().method() === 'POST'),
      row.getByRole('button', { name: /^Resend/ }).click(),
    ]);
    expect(replayed.status()).toBe(202);
    await drainWebhooksUntil(env, async () => (await env.merchant.get(`/v1/webhook-deliveries/${delivery!.id}`)).body.data.attempts.length === 2);
    const after = (await env.merchant.get(`/v1/webhook-deliveries/${delivery!.id}`)).body.data;
    expect(after.attempts).toHaveLength(2);
    expect(receiver.received.filter((id) => id === delivery!.event_id)).toHaveLength(2);
    // The page after the resend (its toast hidden: it would cover the page).
    await page.reload();
    await row.getByRole('cell', { name: '2', exact: true }).waitFor();
    await page.addStyleTag({ content: '.mantine-Notifications-root { display: none !important; }' });
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-order-actions.png'), fullPage: true });
    expect(problems).toEqual([]);
  });

  it('the disputes page lists a flagged order with its reason', async () => {
    const orderNumber = await paidOrder(env, { first_name: 'Dis', last_name: 'Puted' });
    const flagged = await env.merchant.patch(`/v1/orders/${orderNumber}`, { needs_qa: true, qa_reason: 'Customer says the parcel never came' });
    expect(flagged.status, flagged.text).toBe(200);
    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, '/orders');
    await page.getByRole('navigation', { name: 'Order lists' }).getByRole('link', { name: 'Disputes and QA' }).click();
    const table = page.getByRole('table', { name: 'Disputes and QA queue' });
    const row = table.locator(`tr[data-order="${orderNumber}"]`);
    await row.waitFor();
    await row.getByText('Customer says the parcel never came').waitFor();
    const listed = (await env.merchant.get('/v1/orders?needs_qa=true&limit=100')).body.data.map((o: { order_number: string }) => o.order_number);
    expect(await table.locator('tbody tr').count()).toBe(listed.length);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-disputes.png') });
    expect(problems).toEqual([]);
  });
});
