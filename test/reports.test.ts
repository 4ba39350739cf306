/**
 * /v1/reports/*: revenue, approvals, declines, upsells and rebills over HTTP, on orders made through
 * the real checkout against the sandbox providers. The database keeps real time, so each action's
 * rows (orders, transactions, disputes) are moved to a known instant right after it (`at`): the
 * reports then read known days. Team A is in Africa/Lagos (UTC+1, no DST).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { sandboxApiBaseUrl } from '../src/providers/extpay/types.ts';
import { EXTPAY_CARDS } from '../src/sandbox/extpay-provider.ts';
import { SANDBOX_CARDS } from '../src/sandbox/cards.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { payOnHostedPage } from './support/extpay.ts';
import { ApiClient, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';
import { nmiSandboxGateway } from './support/nmi.ts';

let app: TestApp;
let sandbox: { url: string; close(): Promise<void> };
let a: TestTeam;
let b: TestTeam;
let funnelA: Funnel;
let funnelB: Funnel;
let gatewayA: { id: string; key: string };
let gatewayB: { id: string; key: string };
let monthly: string;
const COMPANY = 'biz_reports';
const KEY = 'key_reports';
const SECRET = 'ws_reports_secret';
const card = (n: string = SANDBOX_CARDS.approve) => ({ card_number: n, card_exp: '12/39', card_cvv: '123' });

async function post(url: string, body: unknown) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
}

async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  let v = await read();
  while (!ok(v)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 100));
    v = await read();
  }
  return v;
}

/** Runs `act`, then moves every order, transaction and dispute it created (any team) to `when`. */
async function at<T>(when: string, act: () => Promise<T>): Promise<T> {
  const since = await app.store.run(async (db) => (await sql<{ t: Date }>`select clock_timestamp() as t`.execute(db)).rows[0]!.t);
  const out = await act();
  await app.store.run(async (db) => {
    for (const table of ['orders', 'transactions', 'disputes'] as const) {
      await db.updateTable(table).set({ created_at: new Date(when) }).where('created_at', '>=', since).execute();
    }
  });
  return out;
}

async function order(t: TestTeam, f: Funnel, gatewayId: string, pan?: string, offer?: string) {
  return t.api.post('/checkout/orders', {
    campaign_id: f.campaignId,
    currency: 'USD',
    customer: { email: email('rep'), first_name: 'Ada', last_name: 'L' },
    products: [{ offer_id: offer ?? f.offers.serum, quantity: 1 }],
    gateway_id: gatewayId,
    payment: card(pan),
  });
}

async function paid(t: TestTeam, f: Funnel, gatewayId: string, offer?: string): Promise<string> {
  const r = await order(t, f, gatewayId, undefined, offer);
  expect(r.status, r.text).toBe(200);
  return r.body.data.order_number;
}

async function force(key: string, code: string | null) {
  const r = await fetch(`${sandbox.url}/sandbox/nmi/accounts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ security_key: key, force_response_code: code }) });
  expect(r.status).toBe(200);
}

const q = (from: string, to: string, extra = '') => `from=${from}&to=${to}${extra}`;

/** RFC 4180 enough for our cells (no quoted newlines in these reports). */
function parseCsv(text: string): Record<string, string>[] {
  const lines = text.trimEnd().split('\r\n').map((l) => l.match(/("([^"]|"")*"|[^,]*)(,|$)/g)!.slice(0, -1).map((c) => c.replace(/,$/, '').replace(/^"|"$/g, '').replace(/""/g, '"')));
  const [head, ...rest] = lines;
  return rest.map((cells) => Object.fromEntries(head!.map((h, i) => [h, cells[i] ?? ''])));
}

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  app = await startTestApp();
  a = await app.newTeam('Reports A');
  b = await app.newTeam('Reports B');
  expect((await a.api.patch('/v1/team', { time_zone: 'Africa/Lagos' })).status).toBe(200);
  funnelA = await seedFunnel(app, a.teamId);
  funnelB = await seedFunnel(app, b.teamId);
  gatewayA = await nmiSandboxGateway(a, sandbox.url, { prefix: 'repa' });
  gatewayB = await nmiSandboxGateway(b, sandbox.url, { prefix: 'repb' });
  const product = (await a.api.get('/v1/products?limit=1')).body.data[0].id;
  const m = await a.api.post('/v1/offers', { campaign_id: funnelA.campaignId, product_id: product, billing: 'recurring', interval_unit: 'month', interval_count: 1, name: 'Club monthly', price: 2900, recurring_price: 2900, fulfillment_type: 'digital' });
  expect(m.status, m.text).toBe(201);
  monthly = m.body.data.id;

  // January 2025, team A: o1 paid on the 10th with its upsell; o2 paid at 23:30 UTC on the 10th (the
  // 11th in Lagos) and refunded 15.00 on the 11th; two declines on the 11th; o5 paid and voided on the 12th.
  const o1 = await at('2025-01-10T10:00:00Z', () => paid(a, funnelA, gatewayA.id));
  await at('2025-01-10T10:05:00Z', async () => {
    const up = await a.api.post('/checkout/orders/upsell', { order_number: o1, upsell_id: funnelA.upsellId, quantity: 1 });
    expect(up.status, up.text).toBe(200);
  });
  const o2 = await at('2025-01-10T23:30:00Z', () => paid(a, funnelA, gatewayA.id));
  await at('2025-01-11T12:00:00Z', async () => expect((await a.api.post(`/v1/orders/${o2}/refunds`, { amount: 1500 })).status).toBe(201));
  await at('2025-01-11T09:00:00Z', async () => expect((await order(a, funnelA, gatewayA.id, SANDBOX_CARDS.doNotHonor)).status).toBe(402));
  await at('2025-01-11T09:10:00Z', async () => expect((await order(a, funnelA, gatewayA.id, SANDBOX_CARDS.insufficientFunds)).status).toBe(402));
  const o5 = await at('2025-01-12T08:00:00Z', () => paid(a, funnelA, gatewayA.id));
  await at('2025-01-12T09:00:00Z', async () => expect((await a.api.post(`/v1/orders/${o5}/void`, {})).status).toBe(201));
  // Team B on the same days: never in A's reports.
  await at('2025-01-10T12:00:00Z', () => paid(b, funnelB, gatewayB.id));
  await at('2025-01-11T12:00:00Z', async () => expect((await order(b, funnelB, gatewayB.id, SANDBOX_CARDS.stolen)).status).toBe(402));

  // February 2025, team A: two monthly subscriptions; on the 3rd one's first rebill is declined
  // (Insufficient funds) and recovered by Rebill Now on the 4th, the other's is paid at once.
  const subOf = async (on: string) => {
    expect((await a.api.post('/checkout/orders/complete', { order_number: on })).status).toBe(200);
    return (await a.api.get(`/v1/subscriptions?order_number=${on}`)).body.data[0].id as string;
  };
  const s1 = await subOf(await at('2025-02-01T10:00:00Z', () => paid(a, funnelA, gatewayA.id, monthly)));
  const s2 = await subOf(await at('2025-02-01T11:00:00Z', () => paid(a, funnelA, gatewayA.id, monthly)));
  await force(gatewayA.key, '202');
  await at('2025-02-03T08:00:00Z', async () => expect((await a.api.post(`/v1/subscriptions/${s1}/rebill`, {})).status).toBe(402));
  await force(gatewayA.key, null);
  await at('2025-02-04T08:00:00Z', async () => expect((await a.api.post(`/v1/subscriptions/${s1}/rebill`, {})).status).toBe(200));
  await at('2025-02-03T09:00:00Z', async () => expect((await a.api.post(`/v1/subscriptions/${s2}/rebill`, {})).status).toBe(200));
}, 180_000);

afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});

describe('GET /v1/reports/revenue', () => {
  it("per day in the team's time zone: orders, gross, refunds and voids, net; totals per currency", async () => {
    const r = await a.api.get(`/v1/reports/revenue?${q('2025-01-09', '2025-01-12')}`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ object: 'report', report: 'revenue', time_zone: 'Africa/Lagos', from: '2025-01-09', to: '2025-01-12', interval: 'day' });
    const zero = { chargebacks: 0, chargeback_amount: 0 };
    expect(r.body.data.rows).toEqual([
      { period: '2025-01-09', currency: 'USD', orders: 0, gross: 0, refunds: 0, ...zero, net: 0 },
      { period: '2025-01-10', currency: 'USD', orders: 1, gross: 4395 + 900, refunds: 0, ...zero, net: 5295 },
      // o2 was paid at 23:30 UTC on the 10th: 00:30 on the 11th in Lagos.
      { period: '2025-01-11', currency: 'USD', orders: 1, gross: 4395, refunds: 1500, ...zero, net: 2895 },
      { period: '2025-01-12', currency: 'USD', orders: 1, gross: 4395, refunds: 4395, ...zero, net: 0 },
    ]);
    expect(r.body.data.totals).toEqual([{ currency: 'USD', orders: 3, gross: 14085, refunds: 5895, ...zero, net: 8190 }]);

    // The 10th alone ends at 23:00 UTC there: o2 is not in it.
    const tenth = await a.api.get(`/v1/reports/revenue?${q('2025-01-10', '2025-01-10')}`);
    expect(tenth.body.data.totals).toEqual([{ currency: 'USD', orders: 1, gross: 5295, refunds: 0, ...zero, net: 5295 }]);

    const month = await a.api.get(`/v1/reports/revenue?${q('2025-01-01', '2025-01-31', '&interval=month')}`);
    expect(month.body.data.rows).toEqual([{ period: '2025-01-01', currency: 'USD', orders: 3, gross: 14085, refunds: 5895, ...zero, net: 8190 }]);
  });

  it("never shows another team's orders; that team's days are its own (UTC)", async () => {
    const r = await b.api.get(`/v1/reports/revenue?${q('2025-01-10', '2025-01-12')}`);
    expect(r.body.data.time_zone).toBe('UTC');
    expect(r.body.data.totals).toEqual([{ currency: 'USD', orders: 1, gross: 4395, refunds: 0, chargebacks: 0, chargeback_amount: 0, net: 4395 }]);
    const declines = await b.api.get(`/v1/reports/declines?${q('2025-01-10', '2025-01-12')}`);
    expect(declines.body.data.rows.map((x: any) => x.code)).toEqual(['252']);
  });
});

describe('GET /v1/reports/approvals and /declines', () => {
  it('attempts, approved, declined and the rate by gateway, BIN and brand', async () => {
    const r = await a.api.get(`/v1/reports/approvals?${q('2025-01-10', '2025-01-12')}`);
    expect(r.status, r.text).toBe(200);
    // o1, its upsell, o2, o5 approved; two declines.
    expect(r.body.data.rows).toEqual([{ key: gatewayA.id, label: `nmi ${gatewayA.key}`, attempts: 6, approved: 4, declined: 2, approval_rate: 66.67 }]);
    expect(r.body.data.totals).toEqual([{ attempts: 6, approved: 4, declined: 2, approval_rate: 66.67 }]);
    const bins = await a.api.get(`/v1/reports/approvals?${q('2025-01-10', '2025-01-12', '&by=bin')}`);
    expect(bins.body.data.rows).toEqual([
      { key: '411111', label: null, attempts: 4, approved: 4, declined: 0, approval_rate: 100 },
      { key: '400000', label: null, attempts: 2, approved: 0, declined: 2, approval_rate: 0 },
    ]);
    const brands = await a.api.get(`/v1/reports/approvals?${q('2025-01-10', '2025-01-12', '&by=card_brand')}`);
    expect(brands.body.data.rows).toEqual([{ key: 'visa', label: null, attempts: 6, approved: 4, declined: 2, approval_rate: 66.67 }]);
  });

  it('decline reasons with counts and shares', async () => {
    const r = await a.api.get(`/v1/reports/declines?${q('2025-01-10', '2025-02-28')}`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.rows.map((x: any) => [x.code, x.count, x.share])).toEqual([
      ['202', 2, 66.67],
      ['201', 1, 33.33],
    ]);
    expect(r.body.data.rows.every((x: any) => typeof x.reason === 'string' && x.reason.length > 0)).toBe(true);
    expect(r.body.data.totals).toEqual([{ count: 3, share: 100 }]);
  });
});

describe('GET /v1/reports/upsells', () => {
  it('per step: orders that reached it (first payment approved), taken, take rate, revenue', async () => {
    const r = await a.api.get(`/v1/reports/upsells?${q('2025-01-10', '2025-01-12')}`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.rows).toEqual([{ upsell_id: funnelA.upsellId, name: 'Guide upsell', campaign_id: funnelA.campaignId, step: 1, currency: 'USD', offered: 3, taken: 1, take_rate: 33.33, revenue: 900 }]);
    expect(r.body.data.totals).toEqual([{ currency: 'USD', offered: 3, taken: 1, take_rate: 33.33, revenue: 900 }]);
  });
});

describe('GET /v1/reports/rebills', () => {
  it('attempts, cycles recovered after a decline, recovery rate', async () => {
    const r = await a.api.get(`/v1/reports/rebills?${q('2025-02-01', '2025-02-28')}`);
    expect(r.status, r.text).toBe(200);
    const measures = { currency: 'USD', cycles: 2, attempts: 3, approved: 2, declined: 1, approved_first_attempt: 1, dunning: 1, recovered: 1, recovery_rate: 100, revenue: 5800 };
    expect(r.body.data.rows).toEqual([{ period: '2025-02-03', ...measures }]);
    expect(r.body.data.totals).toEqual([measures]);
    // The rebills are orders and gross of their days in the revenue report.
    const rev = await a.api.get(`/v1/reports/revenue?${q('2025-02-03', '2025-02-04')}`);
    expect(rev.body.data.rows.map((x: any) => [x.period, x.orders, x.gross])).toEqual([
      ['2025-02-03', 1, 2900],
      ['2025-02-04', 1, 2900],
    ]);
  });
});

describe('CSV', () => {
  it('?format=csv and Accept: text/csv answer an attachment whose totals are the JSON totals', async () => {
    for (const [path, first] of [
      ['revenue', 'period'],
      ['approvals', 'key'],
      ['declines', 'code'],
      ['upsells', 'upsell_id'],
      ['rebills', 'period'],
    ] as const) {
      const json = await a.api.get(`/v1/reports/${path}?${q('2025-01-01', '2025-02-28')}`);
      expect(json.status, json.text).toBe(200);
      const csv = await a.api.get(`/v1/reports/${path}?${q('2025-01-01', '2025-02-28', '&format=csv')}`);
      expect(csv.status, csv.text).toBe(200);
      expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
      expect(csv.headers.get('content-disposition')).toBe(`attachment; filename="${path}-2025-01-01-to-2025-02-28.csv"`);
      const lines = parseCsv(csv.text);
      const totals = lines.filter((l) => l[first] === 'total');
      expect(totals.length, path).toBe(json.body.data.totals.length);
      expect(lines.length - totals.length, path).toBe(json.body.data.rows.length);
      json.body.data.totals.forEach((t: Record<string, unknown>, i: number) => {
        for (const [k, v] of Object.entries(t)) expect(totals[i]![k], `${path} ${k}`).toBe(String(v));
      });
      const accepted = await a.api.get(`/v1/reports/${path}?${q('2025-01-01', '2025-02-28')}`, { accept: 'text/csv' });
      expect(accepted.headers.get('content-type')).toMatch(/^text\/csv/);
      expect(accepted.text).toBe(csv.text);
    }
    // format wins over Accept.
    const json = await a.api.get(`/v1/reports/revenue?${q('2025-01-01', '2025-01-31', '&format=json')}`, { accept: 'text/csv' });
    expect(json.body.success).toBe(true);
  });
});

describe('chargebacks (extpay disputes)', () => {
  it('a dispute past its early warning is a chargeback of its day, taken from net', { timeout: 120_000 }, async () => {
    const control = `${sandbox.url}/extpay/sandbox/sandbox`;
    expect(
      (
        await post(`${control}/companies`, {
          company_id: COMPANY,
          api_keys: [{ key: KEY }],
          webhook_url: `${app.url}/webhooks/extpay`,
          webhook_secret: SECRET,
          webhook_retry_delays_ms: [0, 300, 1000, 2000],
          charge_settle_ms: 50,
        })
      ).status,
    ).toBe(200);
    const c = await a.api.post('/v1/extpay-connections', { name: 'Whop sandbox', api_key: KEY, company_id: COMPANY, environment: 'Sandbox', webhook_secret: SECRET, base_url: sandboxApiBaseUrl(sandbox.url, 'sandbox') });
    expect(c.status, c.text).toBe(201);
    const orderOf = (n: string) => a.api.get(`/v1/orders/${n}`).then((r) => r.body.data);
    const { n, receipt } = await at('2025-03-05T10:00:00Z', async () => {
      const r = await a.api.post('/checkout/orders', {
        campaign_id: funnelA.campaignId,
        currency: 'USD',
        customer: { email: email('xp'), first_name: 'Ada', last_name: 'L' },
        products: [{ offer_id: funnelA.offers.serum, quantity: 1 }],
        payment: { method: 'extpay', return_url: 'https://shop.example/thanks' },
      });
      expect(r.status, r.text).toBe(200);
      const n = r.body.data.order_number as string;
      const receipt = (await payOnHostedPage(r.body.data.checkout.purchase_url, EXTPAY_CARDS.paid)) ?? '';
      await until(`order ${n} paid`, () => orderOf(n), (o) => o.payment_status === 'completed');
      return { n, receipt };
    });
    await at('2025-03-07T10:00:00Z', async () => {
      expect((await post(`${control}/payments/${receipt}/disputes`, { status: 'needs_response', reason: 'fraudulent' })).status).toBe(200);
      await until('chargeback', () => orderOf(n), (o) => o.transactions.some((t: any) => t.type === 'chargeback'));
    });
    const r = await a.api.get(`/v1/reports/revenue?${q('2025-03-05', '2025-03-07')}`);
    expect(r.body.data.rows.map((x: any) => [x.period, x.orders, x.gross, x.chargebacks, x.chargeback_amount, x.net])).toEqual([
      ['2025-03-05', 1, 4395, 0, 0, 4395],
      ['2025-03-06', 0, 0, 0, 0, 0],
      ['2025-03-07', 0, 0, 1, 4395, -4395],
    ]);
    expect(r.body.data.totals).toEqual([{ currency: 'USD', orders: 1, gross: 4395, refunds: 0, chargebacks: 1, chargeback_amount: 4395, net: 0 }]);
    const byGateway = await a.api.get(`/v1/reports/approvals?${q('2025-03-05', '2025-03-07')}`);
    expect(byGateway.body.data.rows).toEqual([{ key: c.body.data.id, label: 'Whop sandbox', attempts: 1, approved: 1, declined: 0, approval_rate: 100 }]);
    // A won dispute gives the money back: no longer a chargeback.
    await app.store.run((db) => db.updateTable('disputes').set({ status: 'won' }).where('team_id', '=', a.teamId).execute());
    const won = await a.api.get(`/v1/reports/revenue?${q('2025-03-05', '2025-03-07')}`);
    expect(won.body.data.totals).toEqual([{ currency: 'USD', orders: 1, gross: 4395, refunds: 0, chargebacks: 0, chargeback_amount: 0, net: 4395 }]);
  });
});

describe('access and validation', () => {
  it('needs revenue:view; a caller scoped to affiliate ids is refused', async () => {
    const mint = async (body: Record<string, unknown>) => {
      const r = await a.api.post('/v1/api-tokens', body);
      expect(r.status, r.text).toBe(201);
      return new ApiClient(app.url, r.body.data.secret);
    };
    const support = await mint({ name: 'support', role: 'support_l1' });
    const scoped = await mint({ name: 'scoped', permissions: ['revenue:view'], affiliate_ids: ['AFF1'] });
    const reader = await mint({ name: 'reader', permissions: ['revenue:view'] });
    for (const path of ['revenue', 'approvals', 'declines', 'upsells', 'rebills']) {
      const denied = await support.get(`/v1/reports/${path}?format=csv`);
      expect(denied.status, path).toBe(403);
      expect(denied.body.error.code).toBe('permission_denied');
      expect((await scoped.get(`/v1/reports/${path}`)).status, path).toBe(403);
      expect((await reader.get(`/v1/reports/${path}`)).status, path).toBe(200);
    }
    expect((await app.anonymous.get('/v1/reports/revenue')).status).toBe(401);
  });

  it('bad days, from after to, more than 366 days, unknown parameters: 422 in the envelope', async () => {
    const cases: [string, string][] = [
      ['revenue?from=2025-13-01&to=2025-12-31', 'query.from'],
      ['revenue?from=2025-02-30&to=2025-03-01', 'query.from'],
      ['revenue?from=yesterday', 'query.from'],
      ['approvals?from=2025-02-01&to=2025-01-31', 'query.from'],
      ['declines?from=2024-01-01&to=2025-01-01', 'query.to'],
      ['rebills?from=2999-01-01', 'query.from'],
      ['revenue?interval=hour', 'query.interval'],
      ['approvals?by=country', 'query.by'],
      ['upsells?format=xml', 'query.format'],
      ['upsells?campaign=x', 'query.campaign'],
    ];
    for (const [path, field] of cases) {
      const r = await a.api.get(`/v1/reports/${path}`);
      expect(r.status, `${path}: ${r.text}`).toBe(422);
      expect(r.body).toMatchObject({ success: false, error: { code: 'validation_failed' } });
      expect(r.body.error.fields.map((f: any) => f.path), path).toContain(field);
    }
    // 366 days (a leap year) is allowed; the default period is the last 30 days.
    expect((await a.api.get('/v1/reports/revenue?from=2024-01-01&to=2024-12-31')).status).toBe(200);
    const dflt = await a.api.get('/v1/reports/revenue');
    expect(dflt.status).toBe(200);
    expect((Date.parse(dflt.body.data.to) - Date.parse(dflt.body.data.from)) / 86_400_000).toBe(29);
  });
});
