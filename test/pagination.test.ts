import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

let app: TestApp;
let team: TestTeam;
let funnel: Funnel;
const created: string[] = [];
const TOTAL = 130;

beforeAll(async () => {
  app = await startTestApp();
  team = await app.newTeam();
  funnel = await seedFunnel(app, team.teamId);
  for (let i = 0; i < TOTAL; i += 10) {
    const batch = await Promise.all(
      Array.from({ length: 10 }, (_, j) =>
        team.api.post('/checkout/leads', {
          campaign_id: i + j < 100 ? funnel.campaignId : funnel.otherCampaignId,
          customer: { email: email(`p${i + j}`) },
        }),
      ),
    );
    for (const r of batch) {
      expect(r.status).toBe(201);
      created.push(r.body.data.order_number);
    }
  }
}, 120_000);
afterAll(async () => app?.close());

async function walk(query: string, limit: number): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let after: string | undefined;
  let pages = 0;
  for (;;) {
    const r = await team.api.get(`/v1/orders?limit=${limit}${query}${after ? `&starting_after=${after}` : ''}`);
    expect(r.status).toBe(200);
    pages++;
    ids.push(...r.body.data.map((o: { order_number: string }) => o.order_number));
    if (!r.body.has_more) break;
    expect(r.body.data).toHaveLength(limit);
    after = ids[ids.length - 1];
  }
  return { ids, pages };
}

describe('cursor pagination over more than 100 orders', () => {
  it('defaults to 20 and walks every order once, newest first, at limit 20 and 100', async () => {
    const first = await team.api.get('/v1/orders');
    expect(first.body.data).toHaveLength(20);
    expect(first.body.has_more).toBe(true);

    const by20 = await walk('', 20);
    expect(by20.pages).toBe(Math.ceil(TOTAL / 20));
    // Newest first: the last batch of ten (created concurrently) leads the list.
    expect(new Set(by20.ids.slice(0, 10))).toEqual(new Set(created.slice(-10)));
    expect(new Set(by20.ids).size).toBe(TOTAL);
    expect(new Set(by20.ids)).toEqual(new Set(created));

    const by100 = await walk('', 100);
    expect(by100.pages).toBe(2);
    expect(by100.ids).toEqual(by20.ids); // stable order
  });

  it('stays stable when rows are added while paging', async () => {
    const page1 = await team.api.get('/v1/orders?limit=50');
    await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email('late') } });
    const last = page1.body.data.at(-1).order_number;
    const page2 = await team.api.get(`/v1/orders?limit=50&starting_after=${last}`);
    const seen = new Set(page1.body.data.map((o: { order_number: string }) => o.order_number));
    for (const o of page2.body.data) expect(seen.has(o.order_number)).toBe(false);
  });

  it('filters by campaign, status, email and creation time', async () => {
    const other = await walk(`&campaign_id=${funnel.otherCampaignId}`, 100);
    expect(other.ids).toHaveLength(TOTAL - 100);
    const leads = await team.api.get('/v1/orders?status=lead&limit=5');
    expect(leads.body.data.every((o: { status: string }) => o.status === 'lead')).toBe(true);
    const one = await team.api.get(`/v1/orders?customer_email=${encodeURIComponent(email('nobody'))}`);
    expect(one.body.data).toEqual([]);
    const future = await team.api.get(`/v1/orders?created_gte=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`);
    expect(future.body.data).toEqual([]);
    expect((await team.api.get('/v1/orders?is_test=false&limit=1')).body.data).toHaveLength(1);
  });

  it('refuses bad list parameters with 422 and field paths', async () => {
    for (const [q, path] of [
      ['limit=0', 'query.limit'],
      ['limit=101', 'query.limit'],
      ['limit=abc', 'query.limit'],
      ['starting_after=ord_nope', 'starting_after'],
      ['status=shipped', 'query.status'],
      ['created_gte=yesterday', 'query.created_gte'],
      ['unknown=1', 'query.unknown'],
    ]) {
      const r = await team.api.get(`/v1/orders?${q}`);
      expect(r.status, q).toBe(422);
      expect(r.body.error.fields.map((f: { path: string }) => f.path), q).toContain(path);
    }
  });
});
