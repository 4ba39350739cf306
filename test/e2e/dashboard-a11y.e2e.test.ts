/**
 * Accessibility of the dashboard's main pages in headless Chromium: axe-core (the engine behind
 * Lighthouse's and most CI accessibility checks) runs on the login page, Home, the order list, an
 * order page, Customers, Subscriptions, Payments setup and Developers, each with its data loaded,
 * and a page fails on any violation of impact serious or critical (names, labels, contrast, ARIA).
 * Minor and moderate findings are not gated here.
 *
 * Needs Chromium (CHROMIUM_PATH, default /usr/bin/chromium). `npm run test:e2e`.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CARD, email } from '../support/fixtures.ts';
import { bootDashboard, type DashboardEnv, launchChromium, loginAs, newPage, paidOrder } from './dashboard-support.ts';

const AXE_SOURCE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[]; html: string; failureSummary?: string }[];
}

/**
 * Violations found in files of the dashboard this test's author does not own, reported to their
 * owners (each entry names the file) and left out of the gate until fixed there: delete an entry
 * when its fix lands, and this test then keeps it fixed. Every one that still occurs is printed.
 */
const KNOWN_ELSEWHERE: Array<{ rule: string; page?: string; where: RegExp; file: string }> = [
];

let env: DashboardEnv;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let problems: string[];
let orderNumber: string;

beforeAll(async () => {
  env = await bootDashboard();
  browser = await launchChromium();
  orderNumber = await paidOrder(env, { first_name: 'Axe', last_name: 'Checked' });
  // A subscription for the Subscriptions list (the trial offer recurs once the order completes).
  const r = await env.merchant.post('/checkout/orders', {
    campaign_id: env.seed.campaign_id,
    currency: env.seed.currency,
    customer: { email: email('a11y'), first_name: 'Sub', last_name: 'Scriber' },
    products: [{ offer_id: env.seed.offers.club_trial, quantity: 1 }],
    payment: CARD,
  });
  if (r.status !== 200) throw new Error(`the trial order was not paid: ${r.status} ${r.text}`);
  await env.merchant.post('/checkout/orders/complete', { order_number: r.body.data.order_number });
  ({ context, page, problems } = await newPage(browser));
});
afterAll(async () => {
  await context?.close();
  await browser?.close();
  await env?.close();
});

/** axe's violations of impact serious or critical on the page as it is now, less the known ones elsewhere (printed). */
async function seriousViolations(p: Page, pageName = ''): Promise<Violation[]> {
  await p.evaluate(AXE_SOURCE);
  const violations = (await p.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (ctx: Document, opts: object) => Promise<{ violations: unknown[] }> } }).axe;
    return (await axe.run(document, { resultTypes: ['violations'] })).violations;
  })) as Violation[];
  const serious = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  return serious.flatMap((v) => {
    const known = (n: Violation['nodes'][number]) => KNOWN_ELSEWHERE.find((k) => k.rule === v.id && (!k.page || k.page === pageName) && (k.where.test(n.html) || k.where.test(n.target.join(' '))));
    for (const n of v.nodes) {
      const k = known(n);
      if (k) console.warn(`[a11y, known, not gated] ${pageName}: ${v.impact} ${v.id} at ${n.target.join(' ')} — ${k.file}`);
    }
    const nodes = v.nodes.filter((n) => !known(n));
    return nodes.length ? [{ ...v, nodes }] : [];
  });
}

function describeViolations(vs: Violation[]): string {
  return vs.map((v) => `${v.impact} ${v.id}: ${v.help}\n${v.nodes.slice(0, 5).map((n) => `    ${n.target.join(' ')}${n.failureSummary ? ` — ${n.failureSummary.split('\n').slice(1).join(' ').trim()}` : ''}`).join('\n')}`).join('\n');
}

/** Opens a page under /dashboard, waits for what shows its data, lets transitions end. */
async function visit(path: string, ready: (p: Page) => Promise<unknown>): Promise<void> {
  await page.goto(`${env.url}/dashboard${path}`);
  await ready(page);
  await page.mouse.move(0, 0);
  // Mantine's transitions (150–200 ms) and the notifications' slide-in: axe reads computed colours.
  await page.waitForTimeout(400);
}

describe('dashboard accessibility (axe-core: no serious or critical violation)', () => {
  it('the login page', async () => {
    const fresh = await newPage(browser);
    try {
      await fresh.page.goto(`${env.url}/dashboard`);
      await fresh.page.getByRole('button', { name: 'Sign in' }).waitFor();
      await fresh.page.waitForTimeout(300);
      const vs = await seriousViolations(fresh.page, 'the login page');
      expect(vs, describeViolations(vs)).toEqual([]);
    } finally {
      await fresh.context.close();
    }
  });

  it('Home', async () => {
    await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password, '/');
    await visit('/', (p) => p.getByRole('img', { name: /^Gross revenue per day/ }).waitFor());
    const vs = await seriousViolations(page, 'Home');
    expect(vs, describeViolations(vs)).toEqual([]);
  });

  const pages: Array<[string, () => string, (p: Page) => Promise<unknown>]> = [
    ['the order list', () => '/orders', (p) => p.locator('table[aria-label="Orders"] tbody tr a').first().waitFor()],
    ['an order page', () => `/orders/${orderNumber}`, (p) => p.getByRole('heading', { level: 1 }).getByText(orderNumber).waitFor()],
    ['Customers', () => '/customers', (p) => p.getByRole('table', { name: 'Customers' }).locator('tbody tr').first().waitFor()],
    ['Subscriptions', () => '/subscriptions', (p) => p.getByRole('table', { name: 'Subscriptions' }).locator('tbody tr').first().waitFor()],
    ['Payments setup', () => '/payments', (p) => p.getByRole('table', { name: 'Gateways' }).locator('tbody tr').first().waitFor()],
    ['Developers', () => '/developers', (p) => p.getByRole('heading', { level: 1 }).first().waitFor()],
  ];
  it.each(pages)('%s', async (name, path, ready) => {
    await visit(path(), ready);
    const vs = await seriousViolations(page, name);
    expect(vs, describeViolations(vs)).toEqual([]);
  });

  it('loaded every page without a script or HTTP error', () => {
    expect(problems).toEqual([]);
  });
});
