import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedFunnel, type Funnel } from './support/fixtures.ts';
import { ApiClient, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

let app: TestApp;
let team: TestTeam;
let other: TestTeam;
let funnel: Funnel;
const customers: Record<string, string> = {};

async function lead(api: ApiClient, f: Funnel, email: string, first: string, last: string, phone: string) {
  const r = await api.post('/checkout/leads', { campaign_id: f.campaignId, customer: { email, first_name: first, last_name: last }, phone, products: [{ offer_id: f.offers.serum, quantity: 1 }] });
  expect(r.status, r.text).toBe(201);
  return { order: r.body.data.order_number as string, customer: r.body.data.customer.customer_number as string };
}

beforeAll(async () => {
  app = await startTestApp();
  team = await app.newTeam('Customers');
  other = await app.newTeam('Other customers');
  funnel = await seedFunnel(app, team.teamId);
  customers.amy = (await lead(team.api, funnel, 'Amy.Pond@Example.com', 'Amy', 'Pond', '+1 (555) 010-2030')).customer;
  customers.rory = (await lead(team.api, funnel, 'rory@williams.example', 'Rory', 'Williams', '555-0199')).customer;
  customers.clara = (await lead(team.api, funnel, 'clara_o@example.com', 'Clara', 'Oswald', '+44 20 7946 0000')).customer;
  const otherFunnel = await seedFunnel(app, other.teamId);
  await lead(other.api, otherFunnel, 'amy.elsewhere@example.com', 'Amy', 'Elsewhere', '555-0100');
});
afterAll(async () => app?.close());

const ids = (r: { body: { data: { customer_number: string }[] } }) => r.body.data.map((c) => c.customer_number);

describe('GET /v1/customers', () => {
  it("lists the team's customers newest first, paged by cursor, never another team's", async () => {
    const all = await team.api.get('/v1/customers');
    expect(all.status, all.text).toBe(200);
    expect(ids(all)).toEqual([customers.clara, customers.rory, customers.amy]);
    expect(all.body.data[0]).toMatchObject({ object: 'customer', email: 'clara_o@example.com', first_name: 'Clara', last_name: 'Oswald' });
    const first = await team.api.get('/v1/customers?limit=2');
    expect(ids(first)).toEqual([customers.clara, customers.rory]);
    expect(first.body.has_more).toBe(true);
    const rest = await team.api.get(`/v1/customers?limit=2&starting_after=${customers.rory}`);
    expect(ids(rest)).toEqual([customers.amy]);
    expect(rest.body.has_more).toBe(false);
    // Another team's customer as the cursor is unknown here.
    const foreign = ids(await other.api.get('/v1/customers'))[0]!;
    const r = await team.api.get(`/v1/customers?starting_after=${foreign}`);
    expect(r.status).toBe(422);
    expect(r.body.error.fields[0].path).toBe('starting_after');
  });

  it('searches e-mail (prefix or anywhere, any case), name, phone digits and created dates', async () => {
    expect(ids(await team.api.get('/v1/customers?email=AMY.'))).toEqual([customers.amy]);
    expect(ids(await team.api.get('/v1/customers?email=williams'))).toEqual([customers.rory]);
    expect(ids(await team.api.get('/v1/customers?email=example.com'))).toEqual([customers.clara, customers.amy]);
    // `_` is a character here, not a wildcard (`y_p` would match amy.pond).
    expect(ids(await team.api.get('/v1/customers?email=y_p'))).toEqual([]);
    expect(ids(await team.api.get('/v1/customers?email=clara_'))).toEqual([customers.clara]);
    expect(ids(await team.api.get('/v1/customers?name=pond'))).toEqual([customers.amy]);
    expect(ids(await team.api.get(`/v1/customers?name=${encodeURIComponent('clara  oswald')}`))).toEqual([customers.clara]);
    expect(ids(await team.api.get('/v1/customers?phone=5550102030'))).toEqual([customers.amy]);
    expect(ids(await team.api.get(`/v1/customers?phone=${encodeURIComponent('555-01')}`))).toEqual([customers.rory, customers.amy]);
    expect(ids(await team.api.get('/v1/customers?name=amy&email=williams'))).toEqual([]);
    const future = new Date(Date.now() + 3600_000).toISOString();
    expect(ids(await team.api.get(`/v1/customers?created_gte=${future}`))).toEqual([]);
    expect(ids(await team.api.get(`/v1/customers?created_lte=${future}`))).toHaveLength(3);
  });

  it('refuses bad filters in the envelope', async () => {
    for (const q of ['colour=red', 'limit=0', 'created_gte=yesterday', 'phone=abc', 'email=']) {
      const r = await team.api.get(`/v1/customers?${q}`);
      expect(r.status, q).toBe(422);
      expect(r.body).toMatchObject({ success: false, error: { code: 'validation_failed' } });
    }
  });

  it("the customer page: the customer's orders and subscriptions by customer_number", async () => {
    const orders = await team.api.get(`/v1/orders?customer_number=${customers.amy}`);
    expect(orders.status).toBe(200);
    expect(orders.body.data).toHaveLength(1);
    expect(orders.body.data[0].customer.customer_number).toBe(customers.amy);
    const subs = await team.api.get(`/v1/subscriptions?customer_number=${customers.amy}`);
    expect(subs.status).toBe(200);
    expect(subs.body.data).toEqual([]);
  });

  it('needs orders:view: a support token can search, an affiliate token cannot', async () => {
    const mint = async (body: Record<string, unknown>) => new ApiClient(app.url, (await team.api.post('/v1/api-tokens', { name: 'x', ...body })).body.data.secret);
    const support = await mint({ role: 'support_l1' });
    expect(ids(await support.get('/v1/customers?name=rory'))).toEqual([customers.rory]);
    const affiliate = await mint({ role: 'affiliate', affiliate_ids: ['aff1'] });
    expect((await affiliate.get('/v1/customers')).status).toBe(403);
    expect((await app.anonymous.get('/v1/customers')).status).toBe(401);
  });
});
