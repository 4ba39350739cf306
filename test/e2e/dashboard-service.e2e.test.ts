/**
 * The dashboard's customer-service areas in headless Chromium against the real server with the demo
 * seed: Customers (search, the customer page with orders, subscriptions and tickets, opening a
 * ticket), Subscriptions (cancel with the confirmation: the API then shows it cancelled), Fulfillment
 * (Mark shipped with carrier and tracking: the API shows them; the CSV export downloads the pending
 * ones) and Support tickets (status and assignee, a file attached to a message: the API lists it; a
 * file of 10 MB + 1 byte refused by the API with its error shown and nothing stored).
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
import { login } from '../support/harness.ts';
import { bootDashboard, type DashboardEnv, invitedMember, launchChromium, loginAs, newPage } from './dashboard-support.ts';

const SCREENSHOTS = process.env.DASHBOARD_SCREENSHOTS === '1' ? path.resolve('docs/screenshots') : path.join(os.tmpdir(), 'checkstand-e2e');
const MAX_ATTACHMENT = 10 * 1024 * 1024;

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

/**
 * A completed order of the serum (physical: a pending fulfillment) and the Refill Club trial
 * (recurring: a subscription), paid on the sandbox card: its order, customer, subscription and
 * fulfillment.
 */
async function completedOrder(customer: { email: string; first_name: string; last_name: string }) {
  const r = await env.merchant.post('/checkout/orders', {
    campaign_id: env.seed.campaign_id,
    currency: env.seed.currency,
    customer,
    phone: '+1 555 010 2030',
    shipping_address: { line1: '1 Leadworth Lane', city: 'Leadworth', state: 'NY', postal_code: '10001', country: 'US' },
    products: [
      { offer_id: env.seed.offers.serum, quantity: 1 },
      { offer_id: env.seed.offers.club_trial, quantity: 1 },
    ],
    payment: CARD,
  });
  if (r.status !== 200) throw new Error(`the order was not paid: ${r.status} ${r.text}`);
  const order = r.body.data.order_number as string;
  const done = await env.merchant.post('/checkout/orders/complete', { order_number: order });
  if (done.status !== 200) throw new Error(`the order was not completed: ${done.status} ${done.text}`);
  const detail = (await env.merchant.get(`/v1/orders/${order}`)).body.data;
  const subs = (await env.merchant.get(`/v1/subscriptions?order_number=${order}`)).body.data;
  const fuls = (await env.merchant.get(`/v1/fulfillments?order_number=${order}`)).body.data;
  expect(subs).toHaveLength(1);
  expect(fuls).toHaveLength(1);
  return { order, customer: detail.customer.customer_number as string, subscription: subs[0].id as string, fulfillment: fuls[0].id as string };
}

/** A screenshot without the toasts of the actions just done (they would cover the page). */
async function shot(page: Page, name: string, fullPage = false): Promise<void> {
  await page.addStyleTag({ content: '.mantine-Notifications-root { display: none !important; }' });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage });
}

async function attachmentRows(): Promise<number> {
  const rows = await env.app.store.run((db) => db.selectFrom('ticket_attachments').select('id').execute());
  return rows.length;
}

describe('dashboard: customers, subscriptions, fulfillment, tickets', () => {
  it('finds a customer, sees their orders and subscription, cancels the subscription; the API shows it cancelled', async () => {
    const who = { email: email('rory'), first_name: 'Rory', last_name: 'Williams' };
    const o = await completedOrder(who);
    await completedOrder({ email: email('clara'), first_name: 'Clara', last_name: 'Oswald' });
    expect((await env.merchant.get(`/v1/subscriptions/${o.subscription}`)).body.data.status).not.toBe('cancelled');

    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, '/customers');
    const customers = page.getByRole('table', { name: 'Customers' });
    await customers.locator(`tr[data-customer="${o.customer}"]`).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('rory');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await expect.poll(() => customers.locator('tbody tr').count()).toBe(1);
    await shot(page, 'dashboard-customers');
    await customers.getByRole('link', { name: o.customer }).click();
    await page.getByRole('heading', { name: 'Rory Williams', level: 1 }).waitFor();
    await page.getByRole('table', { name: 'Customer orders' }).locator(`tr[data-order="${o.order}"]`).waitFor();
    await page.getByRole('table', { name: 'Customer subscriptions' }).locator(`tr[data-subscription="${o.subscription}"]`).waitFor();
    await shot(page, 'dashboard-customer', true);

    // To the subscription, then Cancel now through the confirmation.
    await page.getByRole('link', { name: o.subscription }).click();
    await page.getByRole('heading', { name: o.subscription, level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Rebill now' }).waitFor();
    await shot(page, 'dashboard-subscription', true);
    await page.getByRole('group', { name: 'Subscription actions' }).getByRole('button', { name: 'Cancel now' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('never charged again').waitFor();
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith(`/v1/subscriptions/${o.subscription}/cancel`) && r.request().method() === 'POST'),
      dialog.getByRole('button', { name: 'Cancel now' }).click(),
    ]);
    expect(answer.status()).toBe(200);
    expect(answer.request().headers()['x-csrf-token']).toBeTruthy();

    const after = (await env.merchant.get(`/v1/subscriptions/${o.subscription}`)).body.data;
    expect(after).toMatchObject({ status: 'cancelled', end_reason: 'cancelled_by_merchant' });
    // The page follows: cancelled, and now Reactivate instead of Cancel / Rebill.
    await page.getByRole('button', { name: 'Reactivate' }).waitFor();
    expect(await page.getByRole('button', { name: 'Rebill now' }).count()).toBe(0);
    await page.getByLabel('Status: cancelled').first().waitFor();

    await page.goto(`${env.url}/dashboard/subscriptions`);
    await page.getByRole('table', { name: 'Subscriptions' }).locator(`tr[data-subscription="${o.subscription}"]`).waitFor();
    await shot(page, 'dashboard-subscriptions');
    expect(problems).toEqual([]);
  });

  it('marks a fulfillment shipped with carrier and tracking (the API shows them) and exports the pending ones as CSV', async () => {
    const shipped = await completedOrder({ email: email('amy'), first_name: 'Amy', last_name: 'Pond' });
    const waiting = await completedOrder({ email: email('river'), first_name: 'River', last_name: 'Song' });

    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, '/fulfillments');
    const table = page.getByRole('table', { name: 'Fulfillments' });
    const row = table.locator(`tr[data-fulfillment="${shipped.fulfillment}"]`);
    await row.waitFor();
    await shot(page, 'dashboard-fulfillments');

    await row.getByRole('button', { name: `Mark shipped: ${shipped.fulfillment}` }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Carrier').fill('USPS');
    await dialog.getByLabel('Tracking number').fill('9400 1000 0000 0000 0000 00');
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith(`/v1/fulfillments/${shipped.fulfillment}/ship`) && r.request().method() === 'POST'),
      dialog.getByRole('button', { name: 'Mark shipped' }).click(),
    ]);
    expect(answer.status()).toBe(200);
    await dialog.waitFor({ state: 'hidden' });
    const after = (await env.merchant.get(`/v1/fulfillments/${shipped.fulfillment}`)).body.data;
    expect(after).toMatchObject({ status: 'shipped', carrier: 'USPS', tracking_number: '9400 1000 0000 0000 0000 00' });
    expect(after.shipped_at).toBeTruthy();
    // The pending list no longer has it.
    await expect.poll(() => row.count()).toBe(0);

    // The CSV export: a download of every pending fulfillment — the waiting one, not the shipped one.
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export pending as CSV' }).click()]);
    expect(download.suggestedFilename()).toMatch(/^fulfillments-pending-\d{8}\.csv$/);
    const csv = fs.readFileSync((await download.path())!, 'utf8');
    expect(csv.split('\r\n')[0]).toContain('fulfillment_id');
    expect(csv).toContain(waiting.fulfillment);
    expect(csv).not.toContain(shipped.fulfillment);
    expect(problems).toEqual([]);
  });

  it('opens a ticket from the customer page, assigns it, attaches a file (the API lists it) and shows the 413 of a 10 MB + 1 byte file, storing nothing', async () => {
    const o = await completedOrder({ email: email('martha'), first_name: 'Martha', last_name: 'Jones' });
    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, `/customers/${o.customer}`);
    await page.getByRole('heading', { name: 'Martha Jones', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Open a ticket' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Subject').fill('Where is my parcel?');
    await dialog.getByLabel('First message').fill('Ordered last week, nothing yet.');
    await dialog.getByRole('button', { name: 'Open ticket' }).click();
    await page.getByRole('heading', { name: 'Where is my parcel?', level: 1 }).waitFor();
    const tickets = (await env.merchant.get(`/v1/tickets?customer_number=${o.customer}`)).body.data;
    expect(tickets).toHaveLength(1);
    const ticket = tickets[0].id as string;
    expect(page.url()).toBe(`${env.url}/dashboard/tickets/${ticket}`);

    // Status and assignee (the members list): the API has them.
    const members = (await env.merchant.get('/v1/members')).body.data as { id: string; name: string; email: string }[];
    const owner = members.find((m) => m.email === env.seed.owner_email)!;
    await page.getByRole('heading', { name: 'Ticket', level: 2 }).waitFor();
    await page.getByRole('combobox', { name: 'Assignee' }).click();
    await page.getByRole('option', { name: new RegExp(`^${owner.name}`) }).click();
    await expect.poll(async () => (await env.merchant.get(`/v1/tickets/${ticket}`)).body.data.assignee).toBe(owner.id);
    await page.getByRole('combobox', { name: 'Status' }).click();
    await page.getByRole('option', { name: 'pending', exact: true }).click();
    await expect.poll(async () => (await env.merchant.get(`/v1/tickets/${ticket}`)).body.data.status).toBe('pending');

    // A text file, uploaded then sent with a message.
    const stored = await attachmentRows();
    await page.getByLabel('Attach a file').setInputFiles({ name: 'tracking.txt', mimeType: 'text/plain', buffer: Buffer.from('USPS 9400 1000 0000 0000 0000 00\n') });
    await page.getByRole('button', { name: 'Do not attach tracking.txt' }).waitFor();
    await page.getByLabel('Message', { exact: true }).fill('Here is the tracking number.');
    await page.getByRole('button', { name: 'Send message' }).click();
    await page.locator('[data-attachment]').getByRole('link', { name: 'tracking.txt' }).waitFor();
    const messages = (await env.merchant.get(`/v1/tickets/${ticket}/messages`)).body.data;
    expect(messages[0].body).toBe('Here is the tracking number.');
    expect(messages[0].attachments).toHaveLength(1);
    expect(messages[0].attachments[0]).toMatchObject({ filename: 'tracking.txt', content_type: 'text/plain', size: 33 });
    expect(await attachmentRows()).toBe(stored + 1);
    // The download link answers the file.
    const href = await page.locator('[data-attachment]').getByRole('link', { name: 'tracking.txt' }).getAttribute('href');
    const file = await page.request.get(`${env.url}${href}`);
    expect(await file.text()).toBe('USPS 9400 1000 0000 0000 0000 00\n');
    await shot(page, 'dashboard-ticket', true);

    // 10 MB + 1 byte: the API refuses it (413), the page says so, nothing is stored.
    // From a file on disk: Chromium reads it itself (a 10 MB buffer through the protocol is slow).
    const huge = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'checkstand-upload-')), 'huge.txt');
    fs.writeFileSync(huge, Buffer.alloc(MAX_ATTACHMENT + 1, 'a'));
    const [refused] = await Promise.all([
      page.waitForResponse((r) => r.url().includes(`/v1/tickets/${ticket}/attachments`) && r.request().method() === 'POST', { timeout: 60_000 }),
      page.getByLabel('Attach a file').setInputFiles(huge),
    ]);
    fs.rmSync(path.dirname(huge), { recursive: true, force: true });
    expect(refused.status()).toBe(413);
    const alert = page.getByRole('alert').filter({ hasText: 'The file was not attached' });
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/413/);
    expect(await attachmentRows()).toBe(stored + 1);
    expect((await env.merchant.get(`/v1/tickets/${ticket}/messages`)).body.data.flatMap((m: { attachments: unknown[] }) => m.attachments)).toHaveLength(1);

    await page.goto(`${env.url}/dashboard/tickets`);
    await page.getByRole('table', { name: 'Tickets' }).locator(`tr[data-ticket="${ticket}"]`).waitFor();
    await shot(page, 'dashboard-tickets');
    // The refused upload is the one expected HTTP error.
    expect(problems.filter((p) => !/HTTP 413: POST .*\/attachments|status of 413/.test(p))).toEqual([]);
  });

  it('a Customer Support Level 1 member sees the subscription but no actions, and the API refuses a cancel (403)', async () => {
    const o = await completedOrder({ email: email('donna'), first_name: 'Donna', last_name: 'Noble' });
    const member = await invitedMember(env, 'support_l1', 'Lee Service');
    const { page, problems } = await open();
    await loginAs(page, env.url, member.email, member.password, `/subscriptions/${o.subscription}`);
    await page.getByRole('heading', { name: o.subscription, level: 1 }).waitFor();
    await page.getByText('Changing subscriptions needs the permission subscriptions:manage.').waitFor();
    for (const name of ['Cancel now', 'Pause', 'Rebill now']) expect(await page.getByRole('button', { name }).count()).toBe(0);
    // No Mark shipped or export either (orders:fulfill), but the list is there.
    await page.goto(`${env.url}/dashboard/fulfillments`);
    await page.getByRole('table', { name: 'Fulfillments' }).locator(`tr[data-fulfillment="${o.fulfillment}"]`).waitFor();
    expect(await page.getByRole('button', { name: /^Mark shipped/ }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /Export/ }).count()).toBe(0);

    const session = await login(env.url, member);
    const refused = await session.post(`/v1/subscriptions/${o.subscription}/cancel`, {});
    expect(refused.status).toBe(403);
    expect((await env.merchant.get(`/v1/subscriptions/${o.subscription}`)).body.data.status).not.toBe('cancelled');
    expect(problems).toEqual([]);
  });
});
