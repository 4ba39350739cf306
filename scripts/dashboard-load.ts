/**
 * First load of the dashboard's order list on the embedded demo (issue 17: "under 1 s"), measured
 * as a newcomer gets it: `npm start` (its memory-lean Node flags) on a fresh data dir, so a fresh
 * embedded database with the demo seed; the script waits for the demo history (≈200 orders over 60
 * days), logs in through the login page in headless Chromium (playwright-core, as the browser tests)
 * and opens /dashboard/orders:
 *
 *   cold: the browser's HTTP cache emptied first (the session kept): every script and style fetched;
 *   warm: the same page opened again (hashed assets come from the cache, the API is asked again).
 *
 * Each: from the navigation's start (performance.timeOrigin) to the first order row in the table,
 * median of RUNS (5) after one unmeasured load, plus the JavaScript transferred (resource timing's
 * transferSize, compressed as sent) and its decoded size. A measurement, not a test: it prints and
 * exits 0.
 *
 *   npm run bench:dashboard                 # START=start:fast for Node's default flags
 *   RUNS=9 PORT=3960 SANDBOX_PORT=3961 CHROMIUM_PATH=/usr/bin/chromium npm run bench:dashboard
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Page } from 'playwright-core';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const RUNS = Number(process.env.RUNS ?? 5);
const PORT = Number(process.env.PORT ?? 3960);
const SANDBOX_PORT = Number(process.env.SANDBOX_PORT ?? 3961);
const START = process.env.START ?? 'start';
const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const HISTORY_TIMEOUT_MS = Number(process.env.HISTORY_TIMEOUT_MS ?? 15 * 60_000);

interface Load {
  ms: number;
  jsTransferred: number;
  jsDecoded: number;
  jsFiles: number;
  apiCalls: number;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** `npm run start` on a fresh data dir; resolves with the base URL and the demo owner once the demo history is done. */
async function startServer(dataDir: string): Promise<{ child: ChildProcess; url: string; email: string; password: string }> {
  const child = spawn('npm', ['run', '-s', START], {
    cwd: ROOT,
    env: { ...process.env, CHECKSTAND_DATA_DIR: dataDir, PORT: String(PORT), SANDBOX_PORT: String(SANDBOX_PORT), LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => {
    out += b.toString();
  });
  child.stderr!.on('data', (b: Buffer) => {
    out += b.toString();
  });
  const deadline = Date.now() + HISTORY_TIMEOUT_MS;
  let said = '';
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode}):\n${out}`);
    const login = /Log in\s+(\S+@\S+) \/ (\S+)/.exec(out);
    const dashboard = /Dashboard\s+(http:\/\/\S+)\/dashboard/.exec(out);
    const progress = out.match(/Demo history [^\n]*/g)?.at(-1) ?? '';
    if (progress !== said) {
      said = progress;
      process.stderr.write(`  ${progress.trim()}\n`);
    }
    if (login && dashboard && /Demo history \d+ orders of the last 60 days: done/.test(out)) return { child, url: dashboard[1]!, email: login[1]!, password: login[2]! };
    if (Date.now() > deadline) throw new Error(`no login line or demo history not done after ${HISTORY_TIMEOUT_MS} ms:\n${out}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Opens the order list and waits for its first row: the time since the navigation started, and the scripts it fetched. */
async function loadOrders(page: Page, url: string): Promise<Load> {
  let apiCalls = 0;
  const count = (r: { url(): string }) => {
    if (new URL(r.url()).pathname.startsWith('/v1/')) apiCalls++;
  };
  page.on('request', count);
  await page.goto(`${url}/dashboard/orders`, { waitUntil: 'commit' });
  const handle = await page
    .waitForFunction(() => (document.querySelector('table[aria-label="Orders"] tbody tr td a') ? performance.now() : null), undefined, { polling: 'raf', timeout: 60_000 })
    .catch(async (err: unknown) => {
      const text = await page.evaluate(() => document.body.innerText.slice(0, 600)).catch(() => '');
      throw new Error(`no order row at ${page.url()} (${err instanceof Error ? err.message : String(err)}); the page says:\n${text}`);
    });
  const ms = (await handle.jsonValue()) as number;
  const js = await page.evaluate(() =>
    (performance.getEntriesByType('resource') as PerformanceResourceTiming[])
      .filter((e) => new URL(e.name).pathname.endsWith('.js'))
      .map((e) => ({ transfer: e.transferSize, decoded: e.decodedBodySize })),
  );
  page.off('request', count);
  return { ms, jsTransferred: js.reduce((s, e) => s + e.transfer, 0), jsDecoded: js.reduce((s, e) => s + e.decoded, 0), jsFiles: js.length, apiCalls };
}

const kb = (n: number) => `${(n / 1024).toFixed(0)} KB`;
function summary(name: string, loads: Load[]): string {
  const ms = loads.map((l) => l.ms);
  return `${name.padEnd(5)} median ${median(ms).toFixed(0)} ms (min ${Math.min(...ms).toFixed(0)}, max ${Math.max(...ms).toFixed(0)}; ${loads.map((l) => l.ms.toFixed(0)).join(', ')})  JS transferred ${kb(median(loads.map((l) => l.jsTransferred)))} (${kb(median(loads.map((l) => l.jsDecoded)))} decoded, ${median(loads.map((l) => l.jsFiles))} files), ${median(loads.map((l) => l.apiCalls))} API calls`;
}

async function main(): Promise<void> {
  if (!fs.existsSync(path.join(ROOT, 'web/dashboard/dist/index.html'))) throw new Error('the dashboard is not built: npm run build:dashboard');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkstand-dashboard-load-'));
  process.stderr.write(`dashboard-load: npm run ${START} on ${dataDir} (port ${PORT}), waiting for the demo history…\n`);
  const server = await startServer(dataDir);
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.on('pageerror', (err) => process.stderr.write(`  page error: ${err.message}\n`));
    page.on('response', (r) => {
      if (r.status() >= 400 && !r.url().endsWith('/v1/session')) process.stderr.write(`  HTTP ${r.status()} ${r.request().method()} ${r.url()}\n`);
    });
    await page.goto(`${server.url}/dashboard`);
    await page.getByLabel('E-mail').fill(server.email);
    await page.getByRole('textbox', { name: 'Password' }).fill(server.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Main navigation' }).waitFor({ timeout: 60_000 });
    const cdp = await context.newCDPSession(page);
    await loadOrders(page, server.url); // unmeasured: the server's first answers (its caches, the JIT)

    const cold: Load[] = [];
    const warm: Load[] = [];
    for (let i = 0; i < RUNS; i++) {
      await page.goto('about:blank');
      await cdp.send('Network.clearBrowserCache');
      cold.push(await loadOrders(page, server.url));
      await page.goto('about:blank');
      warm.push(await loadOrders(page, server.url));
    }
    const orders = await page.locator('table[aria-label="Orders"] tbody tr').count();
    console.log(`Order list first load (navigation to the first order row), npm run ${START}, embedded database, demo history; ${RUNS} runs, ${orders} rows on the page, Chromium ${browser.version()}`);
    console.log(summary('cold', cold));
    console.log(summary('warm', warm));
  } finally {
    await browser.close();
    try {
      process.kill(-server.child.pid!, 'SIGTERM');
    } catch {
      /* already gone */
    }
    await new Promise((r) => setTimeout(r, 1000));
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
