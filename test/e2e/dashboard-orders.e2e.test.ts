/**
 * The dashboard's Orders area in headless Chromium against the real server with the demo seed:
 * the demo Team Owner finds an order by its number and refunds part of it (the API then shows the
 * refund), voids another, and a Customer Support Level 1 member (invited and accepted through the
 * API) gets no Refund or Void button and a 403 from the API when trying anyway.
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
import { bootDashboard, type DashboardEnv, invitedMember, launchChromium, loginAs, newPage, paidOrder } from './dashboard-support.ts';

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
