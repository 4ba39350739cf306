/**
 * Shared helpers for the dashboard's browser tests (test/e2e/dashboard-*.e2e.test.ts): boot the
 * real server with the demo seed (the sandbox as its gateway, the demo Team Owner), make sure the
 * dashboard is built, launch Chromium, log in through the login page, pay orders through the API,
 * and invite a member (the invitation link read from the mail the server wrote).
 *
 *   const env = await bootDashboard();          // beforeAll
 *   const browser = await launchChromium();
 *   const { page, problems } = await newPage(browser);
 *   await loginAs(page, env.url, env.seed.owner_email, env.seed.owner_password);
 *   …
 *   await env.close();                          // afterAll
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { DASHBOARD_DIST } from '../../src/app/dashboard.ts';
import { type DemoSeed, seedDemo } from '../../src/app/seed.ts';
import { startSandbox } from '../../src/sandbox/server.ts';
import { CARD, email } from '../support/fixtures.ts';
import { ApiClient, login, SessionClient, startTestApp, type TestApp } from '../support/harness.ts';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
export const PASSWORD = 'correct horse battery';

// As in demo-funnel.e2e.test.ts: keep Chromium off the network (closed here).
export const CHROMIUM_ARGS = ['--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export interface DashboardEnv {
  app: TestApp;
  /** The server's base URL; the dashboard is `${url}/dashboard`. */
  url: string;
  seed: DemoSeed;
  /** The demo team's API token, straight to the API. */
  merchant: ApiClient;
  dataDir: string;
  close(): Promise<void>;
}

/** `npm run build:dashboard` when web/dashboard/dist is missing (npm install normally built it). */
export function ensureDashboardBuilt(): void {
  if (fs.existsSync(path.join(DASHBOARD_DIST, 'index.html'))) return;
  execFileSync('npm', ['run', 'build:dashboard'], { cwd: path.resolve(DASHBOARD_DIST, '../../..'), stdio: 'inherit' });
}

/** The sandbox, the app on a fresh database with its own data dir (for the mail), the demo seed. */
export async function bootDashboard(): Promise<DashboardEnv> {
  if (!fs.existsSync(CHROMIUM_PATH)) {
    throw new Error(`no Chromium at ${CHROMIUM_PATH}: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`);
  }
  ensureDashboardBuilt();
  const dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'checkstand-dashboard-'));
  const sandbox = await startSandbox({ port: 0 });
  const app = await startTestApp({ CHECKSTAND_DATA_DIR: dataDir });
  const seed = await seedDemo(app.ctx, { sandboxUrl: sandbox.url });
  return {
    app,
    url: app.url,
    seed,
    merchant: new ApiClient(app.url, seed.token),
    dataDir,
    async close() {
      await app.close();
      await sandbox.close();
      await fsp.rm(dataDir, { recursive: true, force: true });
    },
  };
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS, timeout: 60_000 });
}

/**
 * A fresh context and page; `problems` collects script errors, console errors and HTTP errors. The
 * dashboard's first request asks GET /v1/session, which answers 401 before the login: that one is
 * expected and left out.
 */
export async function newPage(browser: Browser, viewport = { width: 1280, height: 900 }): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport });
  context.setDefaultTimeout(20_000);
  const page = await context.newPage();
  const problems: string[] = [];
  const expected = (url: string, status: number) => status === 401 && new URL(url).pathname === '/v1/session';
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    if (/status of 401/.test(msg.text()) && msg.location().url.endsWith('/v1/session')) return;
    problems.push(`console error: ${msg.text()} (${msg.location().url})`);
  });
  page.on('response', (res) => {
    if (res.status() >= 400 && !expected(res.url(), res.status())) problems.push(`HTTP ${res.status()}: ${res.request().method()} ${res.url()}`);
  });
  return { context, page, problems };
}

/** Opens `path` under /dashboard (the login page shows first), signs in, waits for the navigation. */
export async function loginAs(page: Page, baseUrl: string, emailAddress: string, password: string, pathUnderDashboard = '/'): Promise<void> {
  await page.goto(`${baseUrl}/dashboard${pathUnderDashboard === '/' ? '' : pathUnderDashboard}`);
  await page.getByLabel('E-mail').fill(emailAddress);
  await page.getByRole('textbox', { name: 'Password' }).fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Main navigation' }).waitFor();
}

/** A paid order of the demo campaign (the sandbox approves 4111…): its order number. */
export async function paidOrder(env: DashboardEnv, customer: { email?: string; first_name?: string; last_name?: string } = {}): Promise<string> {
  const r = await env.merchant.post('/checkout/orders', {
    campaign_id: env.seed.campaign_id,
    currency: env.seed.currency,
    customer: { email: customer.email ?? email('dash'), first_name: customer.first_name ?? 'Ada', last_name: customer.last_name ?? 'Lovelace' },
    products: [{ offer_id: env.seed.offers.serum, quantity: 1 }],
    payment: CARD,
  });
  if (r.status !== 200) throw new Error(`the order was not paid: ${r.status} ${r.text}`);
  return r.body.data.order_number as string;
}

function decodeQuotedPrintable(s: string): string {
  return s.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
}

/** The invitation token (`csi_…`) in the newest mail to `to` under the data dir's mail folder. */
async function invitationToken(dataDir: string, to: string): Promise<string> {
  const dir = path.join(dataDir, 'mail');
  for (let i = 0; i < 200; i++) {
    const files = (await fsp.readdir(dir).catch(() => [] as string[])).filter((f) => f.endsWith('.eml'));
    for (const f of files) {
      const raw = await fsp.readFile(path.join(dir, f), 'utf8');
      if (!raw.includes(to)) continue;
      const m = decodeQuotedPrintable(raw).match(/token=(csi_[0-9A-Za-z]+)/);
      if (m) return m[1]!;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no invitation mail to ${to}`);
}

/**
 * The demo owner invites `role` (POST /v1/invitations), the invitee accepts with PASSWORD
 * (POST /v1/invitations/accept): the member's e-mail, to log in with in the browser.
 */
export async function invitedMember(env: DashboardEnv, role: string, name = `A ${role}`): Promise<{ email: string; password: string }> {
  const owner: SessionClient = await login(env.url, { email: env.seed.owner_email, password: env.seed.owner_password });
  const address = email(role.replace(/_/g, ''));
  const invited = await owner.post('/v1/invitations', { email: address, role });
  if (invited.status !== 201) throw new Error(`invitation refused: ${invited.status} ${invited.text}`);
  const token = await invitationToken(env.dataDir, address);
  const accepted = await new SessionClient(env.url).post('/v1/invitations/accept', { token, name, password: PASSWORD });
  if (accepted.status !== 201) throw new Error(`invitation not accepted: ${accepted.status} ${accepted.text}`);
  return { email: address, password: PASSWORD };
}
