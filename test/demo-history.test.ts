/**
 * The demo history (issue 17): on a fresh database, orders on most of the last 60 days with every
 * kind of outcome the reports count — declines, refunds, a void, disputes, subscriptions in each
 * state, affiliate orders — made through the use cases against the sandbox, so its ledger agrees with
 * the transactions; a second run adds nothing.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoHistoryWanted, type DemoHistoryResult, seedDemoHistory } from '../src/app/demo-history.ts';
import { type DemoSeed, seedDemo } from '../src/app/seed.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { startTestApp, type TestApp } from './support/harness.ts';

let app: TestApp;
let sandbox: { url: string; close(): Promise<void> };
let seed: DemoSeed;
let first: DemoHistoryResult;
const progress: number[] = [];

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  app = await startTestApp();
  // The sandbox's extpay webhooks (the disputes) go to this server: the address seedDemo tells it.
  const url = new URL(app.url);
  Object.assign(app.ctx.config, { host: url.hostname, port: Number(url.port) });
  seed = await seedDemo(app.ctx, { sandboxUrl: sandbox.url, log: { warn: () => {} } });
  // No pauses between steps: nothing else is served here (npm start leaves the API half the event loop).
  first = await seedDemoHistory(app.ctx, seed, { sandboxUrl: sandbox.url, pace: false, progress: (done) => progress.push(done) });
}, 600_000);
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});

const rows = <T>(q: ReturnType<typeof sql<T>>) => app.store.run(async (db) => (await q.execute(db)).rows);

async function counts() {
  const [c] = await rows(sql<Record<string, number>>`select
      (select count(*)::int from orders where team_id = ${seed.team_id}) as orders,
      (select count(*)::int from transactions where team_id = ${seed.team_id}) as transactions,
      (select count(*)::int from customers where team_id = ${seed.team_id}) as customers,
      (select count(*)::int from subscriptions where team_id = ${seed.team_id}) as subscriptions,
      (select count(*)::int from disputes where team_id = ${seed.team_id}) as disputes,
      (select count(*)::int from customer_notes where team_id = ${seed.team_id}) as notes`);
  return c!;
}

async function nmiLedger(securityKey: string) {
  const res = await fetch(`${sandbox.url}/sandbox/nmi/ledger?security_key=${encodeURIComponent(securityKey)}`);
  return (await res.json()) as { summary: { approved_sales: number; charged_minor: number; refunded_minor: number; voided: number } };
}

describe('demo history', () => {
  it('is on unless --no-demo-history or CHECKSTAND_DEMO_HISTORY=0', () => {
    expect(demoHistoryWanted(undefined, {})).toBe(true);
    expect(demoHistoryWanted(true, { CHECKSTAND_DEMO_HISTORY: '1' })).toBe(true);
    expect(demoHistoryWanted(false, {})).toBe(false);
    for (const v of ['0', 'false', 'off', 'no']) expect(demoHistoryWanted(undefined, { CHECKSTAND_DEMO_HISTORY: v })).toBe(false);
  });

  it('orders on at least 30 of the last 60 days (team time zone), in the past only', async () => {
    expect(first).toMatchObject({ created: first.total, existing: 0, stopped: false });
    expect(first.total).toBeGreaterThanOrEqual(150);
    expect(progress.at(-1)).toBe(first.total);
    const [d] = await rows(sql<{ days: number; oldest: Date; newest: Date; n: number }>`
      select count(distinct (o.created_at at time zone t.time_zone)::date)::int as days, min(o.created_at) as oldest, max(o.created_at) as newest, count(*)::int as n
      from orders o join teams t on t.id = o.team_id where o.team_id = ${seed.team_id}`);
    expect(d!.n).toBeGreaterThanOrEqual(150);
    expect(d!.days).toBeGreaterThanOrEqual(30);
    expect(Date.now() - new Date(d!.oldest).getTime()).toBeGreaterThan(50 * 86_400_000);
    expect(Date.now() - new Date(d!.oldest).getTime()).toBeLessThan(61 * 86_400_000);
    expect(new Date(d!.newest).getTime()).toBeLessThanOrEqual(Date.now());
    // The rows of an order moved with it: no transaction older than its order, none left at "now" for old orders.
    const [skew] = await rows(sql<{ n: number }>`select count(*)::int as n from transactions x join orders o on o.id = x.order_id
      where x.team_id = ${seed.team_id} and (x.created_at < o.created_at - interval '1 second' or (o.created_at < now() - interval '3 days' and x.created_at > now() - interval '1 hour' and o.rebill_of is null and o.needs_qa = false))`);
    expect(skew!.n).toBe(0);
  });

  it('declines with several reasons, full and partial refunds, a void, disputes with a chargeback, test orders, shipments, notes', async () => {
    const byType = await rows(sql<{ type: string; status: string; code: string | null; n: number }>`
      select type, status, response_code as code, count(*)::int as n from transactions where team_id = ${seed.team_id} group by 1, 2, 3`);
    const declineCodes = new Set(byType.filter((t) => t.type === 'sale' && t.status === 'declined').map((t) => t.code));
    expect(declineCodes.size).toBeGreaterThanOrEqual(4);
    expect(byType.some((t) => t.type === 'refund' && t.status === 'approved')).toBe(true);
    expect(byType.some((t) => t.type === 'void' && t.status === 'approved')).toBe(true);
    expect(byType.some((t) => t.type === 'chargeback')).toBe(true);
    const statuses = await rows(sql<{ status: string; n: number }>`select status, count(*)::int as n from orders where team_id = ${seed.team_id} group by 1`);
    const of = (s: string) => statuses.find((x) => x.status === s)?.n ?? 0;
    for (const s of ['completed', 'declined', 'refunded', 'cancelled', 'lead']) expect(of(s), s).toBeGreaterThan(0);
    const [o] = await rows(sql<{ partial: number; disputed: number; tests: number; live: number; upsells: number; rebills: number }>`select
        count(*) filter (where refunded_total > 0 and refunded_total < total)::int as partial,
        count(*) filter (where needs_qa)::int as disputed,
        count(*) filter (where is_test)::int as tests,
        count(*) filter (where not is_test and status = 'completed')::int as live,
        (select count(distinct order_id)::int from order_lines where team_id = ${seed.team_id} and upsell_id is not null) as upsells,
        count(*) filter (where rebill_of is not null)::int as rebills
      from orders where team_id = ${seed.team_id}`);
    expect(o!.partial).toBeGreaterThan(0);
    expect(o!.disputed).toBeGreaterThanOrEqual(2);
    expect(o!.tests).toBeGreaterThan(0);
    expect(o!.live).toBeGreaterThan(100);
    expect(o!.upsells).toBeGreaterThan(10);
    expect(o!.rebills).toBeGreaterThan(2);
    expect((await counts()).notes).toBeGreaterThan(5);
    const ful = await rows(sql<{ status: string; n: number }>`select status, count(*)::int as n from fulfillments where team_id = ${seed.team_id} group by 1`);
    expect(ful.find((f) => f.status === 'shipped')?.n ?? 0).toBeGreaterThan(100);
    expect(ful.find((f) => f.status === 'pending')?.n ?? 0).toBeGreaterThan(0);
  });

  it('subscriptions active, past due, cancelled and in trial; orders of three affiliates', async () => {
    const subs = await rows(sql<{ status: string; n: number }>`select status, count(*)::int as n from subscriptions where team_id = ${seed.team_id} group by 1`);
    const of = (s: string) => subs.find((x) => x.status === s)?.n ?? 0;
    expect(of('active')).toBeGreaterThan(0);
    expect(of('past_due')).toBeGreaterThan(0);
    expect(of('cancelled')).toBeGreaterThanOrEqual(2);
    expect(of('trialing')).toBeGreaterThan(0);
    const aff = await rows(sql<{ affiliate_id: string; n: number }>`select affiliate_id, count(*)::int as n from orders where team_id = ${seed.team_id} and affiliate_id is not null group by 1`);
    expect(aff).toHaveLength(3);
    const report = await app.ctx.store.run((db) => db.selectFrom('affiliate_conversions').select('id').where('team_id', '=', seed.team_id).execute());
    expect(report.length).toBeGreaterThan(10);
  });

  it("the sandbox's ledgers agree with the transactions, gateway by gateway", async () => {
    const gateways = await app.ctx.store.run((db) => db.selectFrom('gateways').selectAll().where('team_id', '=', seed.team_id).where('kind', '=', 'nmi').execute());
    expect(gateways).toHaveLength(3);
    let checked = 0;
    for (const g of gateways) {
      const key = app.ctx.services.gateways.account(g).credentials.security_key!;
      const ledger = await nmiLedger(key);
      const [db] = await rows(sql<{ sales: number; charged: number; refunded: number; voided: number }>`select
          count(*) filter (where type = 'sale' and status = 'approved')::int as sales,
          coalesce(sum(amount) filter (where type = 'sale' and status = 'approved'), 0)::int as charged,
          coalesce(sum(amount) filter (where type = 'refund' and status = 'approved'), 0)::int as refunded,
          count(*) filter (where type = 'void' and status = 'approved')::int as voided
        from transactions where team_id = ${seed.team_id} and gateway_id = ${g.id}`);
      expect(ledger.summary, g.name).toEqual({ approved_sales: db!.sales, charged_minor: db!.charged, refunded_minor: db!.refunded, voided: db!.voided });
      checked += db!.sales;
    }
    expect(checked).toBeGreaterThan(150);
    const conn = await app.ctx.store.run((db) => db.selectFrom('extpay_connections').selectAll().where('team_id', '=', seed.team_id).where('environment', '=', 'production').executeTakeFirstOrThrow());
    const c = app.ctx.services.connections.connection(conn);
    const l = (await (await fetch(`${sandbox.url}/extpay/production/sandbox/ledger?company_id=${encodeURIComponent(c.companyId)}`)).json()) as any;
    const [x] = await rows(sql<{ paid: number; charged: number }>`select count(*)::int as paid, coalesce(sum(amount), 0)::int as charged
      from transactions where team_id = ${seed.team_id} and connection_id = ${conn.id} and type = 'sale' and status = 'approved'`);
    expect(x!.paid).toBe(5);
    expect(l.summary.paid).toBe(x!.paid);
    expect(Math.round(Number(l.summary.charged) * 100)).toBe(x!.charged);
  });

  it('a second run adds nothing', async () => {
    const before = await counts();
    const again = await seedDemoHistory(app.ctx, seed, { sandboxUrl: sandbox.url });
    expect(again).toMatchObject({ created: 0, existing: first.total });
    expect(await counts()).toEqual(before);
  });
});
