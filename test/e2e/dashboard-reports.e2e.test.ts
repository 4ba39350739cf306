/**
 * The dashboard's Reports and Catalog areas in headless Chromium against the real server with the
 * demo seed: the demo Team Owner opens the revenue report over a range holding orders this test paid
 * and refunded through the API, exports it as CSV through the "Export CSV" button (the download
 * captured), and the CSV's totals equal the API's JSON totals for the same range; then creates an
 * offer through the Catalog's form and the API lists it.
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

/** A calendar day in a time zone, `days` before today there. */
function dayIn(timeZone: string, daysBefore = 0): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(Date.now() - daysBefore * 86_400_000));
}

/** RFC 4180 lines without quoted commas (the revenue CSV's cells are dates, currency codes and integers). */
function parseCsv(text: string): Record<string, string>[] {
  const [header, ...lines] = text.trim().split(/\r\n/).map((l) => l.split(','));
  return lines.map((cells) => Object.fromEntries(header!.map((h, i) => [h, cells[i] ?? ''])));
}

describe('dashboard: reports', () => {
  it('exports the revenue report as CSV through the UI; its totals equal the API’s JSON totals for the range', async () => {
    await paidOrder(env, { first_name: 'Gross', last_name: 'One' });
    await paidOrder(env, { first_name: 'Gross', last_name: 'Two' });
    const refunded = await paidOrder(env, { first_name: 'Refund', last_name: 'Me' });
    expect((await env.merchant.post(`/v1/orders/${refunded}/refunds`, { amount: 700 })).status).toBe(201);

    const timeZone = (await env.merchant.get('/v1/team')).body.data.time_zone as string;
    const from = dayIn(timeZone, 1);
    const to = dayIn(timeZone);
    const json = await env.merchant.get(`/v1/reports/revenue?from=${from}&to=${to}&interval=day`);
    expect(json.status).toBe(200);
    const totals = json.body.data.totals as Record<string, number | string>[];
    expect(totals).toHaveLength(1);
    expect(totals[0]!.gross).toBeGreaterThan(0);
    expect(totals[0]!.refunds).toBe(700);

    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, '/reports');
    // The overview (last 30 days) shows the key numbers.
    await page.getByRole('group', { name: 'Gross' }).getByText(/\$/).waitFor();
    await page.getByRole('img', { name: /Gross and net revenue per day/ }).waitFor();
    await page.mouse.move(0, 0);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-reports-overview.png'), fullPage: true });

    await page.getByRole('tab', { name: 'Revenue' }).click();
    await page.getByLabel('From').fill(from);
    await page.getByLabel('To', { exact: true }).fill(to);
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    await page.getByTestId('report-period').getByText(`${from} to ${to}`).waitFor();
    const table = page.getByRole('table', { name: 'Revenue report' });
    await table.locator(`tfoot tr[data-total="${String(totals[0]!.currency)}"]`).waitFor();
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-reports-revenue.png'), fullPage: true });

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export CSV' }).click()]);
    expect(download.suggestedFilename()).toBe(`revenue-${from}-to-${to}.csv`);
    const csv = fs.readFileSync((await download.path())!, 'utf8');
    const lines = parseCsv(csv);
    const csvTotals = lines.filter((l) => l.period === 'total');
    expect(csvTotals).toHaveLength(totals.length);
    for (const [i, t] of totals.entries()) {
      const line = csvTotals[i]!;
      for (const [k, v] of Object.entries(t)) expect(line[k], k).toBe(String(v));
    }
    // The rows add up to the totals too (the CSV is the report, not just its last line).
    const rows = lines.filter((l) => l.period !== 'total');
    expect(rows.reduce((s, r) => s + Number(r.gross), 0)).toBe(totals[0]!.gross);
    expect(rows.reduce((s, r) => s + Number(r.refunds), 0)).toBe(700);
    expect(problems).toEqual([]);
  });

  it('shows the other reports with an Export CSV link each', async () => {
    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, '/reports/approvals');
    for (const [tab, table, report] of [
      ['Approvals', 'Approvals report', 'approvals'],
      ['Declines', 'Declines report', 'declines'],
      ['Upsell take rate', 'Upsells report', 'upsells'],
      ['Rebill recovery', 'Rebills report', 'rebills'],
    ] as const) {
      await page.getByRole('tab', { name: tab }).click();
      await page.getByRole('table', { name: table }).waitFor();
      const href = await page.getByRole('link', { name: 'Export CSV' }).getAttribute('href');
      expect(href).toMatch(new RegExp(`^/v1/reports/${report}\\?.*format=csv`));
      const res = await page.request.get(`${env.url}${href}`);
      expect(res.status()).toBe(200);
      expect(res.headers()['content-type']).toContain('text/csv');
    }
    expect(problems).toEqual([]);
  });
});

describe('dashboard: home', () => {
  const usd = (minor: number) => new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' }).format(minor / 100);

  it('opens on today’s and the last 30 days’ numbers, equal to /v1/reports in the team’s time zone, with a revenue chart and the area links', async () => {
    await paidOrder(env, { first_name: 'Home', last_name: 'Today' });
    const revenue = (await env.merchant.get('/v1/reports/revenue?interval=day')).body.data;
    const today = revenue.to as string;
    expect(today).toBe(dayIn(revenue.time_zone as string));
    const main = revenue.totals[0] as { currency: string; gross: number; orders: number; refunds: number; chargebacks: number };
    expect(main.currency).toBe('USD');
    const todayRows = (revenue.rows as { period: string; currency: string; gross: number; orders: number }[]).filter((r) => r.period === today && r.currency === 'USD');
    const todayGross = todayRows.reduce((s, r) => s + r.gross, 0);
    const todayOrders = todayRows.reduce((s, r) => s + r.orders, 0);
    expect(todayGross).toBeGreaterThan(0);
    const approvals30 = (await env.merchant.get('/v1/reports/approvals')).body.data.totals[0];
    const approvalsToday = (await env.merchant.get(`/v1/reports/approvals?from=${today}&to=${today}`)).body.data.totals[0];

    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, '/');
    const todayRegion = page.getByRole('region', { name: 'Today', exact: true });
    const last30 = page.getByRole('region', { name: 'Last 30 days' });
    const stat = (region: typeof todayRegion, label: string) => region.getByRole('group', { name: new RegExp(`: ${label}$`) });
    await expect.poll(() => stat(todayRegion, 'Revenue').textContent()).toContain(usd(todayGross));
    expect(await stat(todayRegion, 'Orders').textContent()).toContain(String(todayOrders));
    await expect.poll(() => stat(todayRegion, 'Approval rate').textContent()).toContain(`${approvalsToday.approval_rate.toFixed(2)} %`);
    await expect.poll(() => stat(last30, 'Revenue').textContent()).toContain(usd(main.gross));
    expect(await stat(last30, 'Orders').textContent()).toContain(main.orders.toLocaleString('en-US'));
    expect(await stat(last30, 'Refunds').textContent()).toContain(usd(main.refunds));
    expect(await stat(last30, 'Chargebacks').textContent()).toContain(String(main.chargebacks));
    await expect.poll(() => stat(last30, 'Approval rate').textContent()).toContain(`${approvals30.approval_rate.toFixed(2)} %`);
    await page.getByRole('img', { name: /^Gross revenue per day/ }).waitFor();
    const areas = page.getByRole('navigation', { name: 'Areas' });
    for (const label of ['Orders', 'Reports', 'Payments setup', 'Customers']) await areas.getByRole('link', { name: label, exact: true }).waitFor();
    await page.mouse.move(0, 0);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-home.png'), fullPage: true });
    expect(problems).toEqual([]);
  });

  it('shows a Support Level 1 member (no revenue:view) the area links only, and asks no report', async () => {
    const member = await invitedMember(env, 'support_l1');
    const { page, problems } = await open();
    const reportCalls: string[] = [];
    page.on('request', (r) => {
      if (new URL(r.url()).pathname.startsWith('/v1/reports')) reportCalls.push(r.url());
    });
    await loginAs(page, env.url, member.email, member.password, '/');
    const areas = page.getByRole('navigation', { name: 'Areas' });
    await areas.getByRole('link', { name: 'Orders', exact: true }).waitFor();
    expect(await areas.getByRole('link', { name: 'Reports', exact: true }).count()).toBe(0);
    expect(await page.getByRole('region', { name: 'Today', exact: true }).count()).toBe(0);
    expect(await page.getByRole('group', { name: /Revenue/ }).count()).toBe(0);
    expect(reportCalls).toEqual([]);
    expect(problems).toEqual([]);
  });
});

describe('dashboard: catalog', () => {
  it('creates a recurring offer through the catalog form; the API lists it with the prices in minor units', async () => {
    const name = `Refill club ${Date.now()}`;
    const { page, problems } = await open();
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, '/catalog/offers');
    await page.getByRole('table', { name: 'Offers' }).locator('tbody tr').first().waitFor();
    await page.getByRole('button', { name: 'New offer' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Campaign').selectOption(env.seed.campaign_id);
    await dialog.getByLabel('Offer name').fill(name);
    await dialog.getByLabel('Price (USD)').fill('12.34');
    await dialog.getByLabel('Shipping (USD)').fill('1.5');
    await dialog.getByLabel('Billing').selectOption('recurring');
    await dialog.getByLabel('Unit').selectOption('month');
    await dialog.getByLabel('Recurring price (USD)').fill('9.99');
    const [answer] = await Promise.all([page.waitForResponse((r) => new URL(r.url()).pathname === '/v1/offers' && r.request().method() === 'POST'), dialog.getByRole('button', { name: 'Create offer' }).click()]);
    expect(answer.status()).toBe(201);
    await dialog.waitFor({ state: 'hidden' });

    const listed = await env.merchant.get(`/v1/offers?campaign_id=${env.seed.campaign_id}&limit=100`);
    const offer = (listed.body.data as { name: string }[]).find((o) => o.name === name);
    expect(offer).toMatchObject({ campaign_id: env.seed.campaign_id, price: 1234, shipping: 150, billing: 'recurring', interval_unit: 'month', interval_count: 1, recurring_price: 999, is_active: true });
    await page.getByRole('table', { name: 'Offers' }).getByText(name).waitFor();
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-catalog-offers.png'), fullPage: true });

    // The campaign's page: its offers, funnel steps and the purchase e-mail with a preview.
    await page.goto(`${env.url}/dashboard/catalog/campaigns/${env.seed.campaign_id}`);
    await page.getByRole('table', { name: 'Upsells' }).waitFor();
    await page.getByLabel('Subject').fill('Thanks {{customer.first_name}}, order {{order_number}}');
    await page.getByRole('button', { name: 'Preview' }).click();
    await page.getByTestId('preview-subject').waitFor();
    expect(await page.getByTestId('preview-subject').textContent()).toMatch(/^Thanks Ada, order ord_/);
    await page.getByRole('heading', { name: 'Purchase e-mail' }).scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(SCREENSHOTS, 'dashboard-catalog-campaign.png') });
    expect(problems).toEqual([]);
  });
});
