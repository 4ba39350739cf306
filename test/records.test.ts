import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/app/ids.ts';
import { CARD, email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

let app: TestApp;
let team: TestTeam;
let funnel: Funnel;

beforeAll(async () => {
  app = await startTestApp();
  team = await app.newTeam();
  funnel = await seedFunnel(app, team.teamId);
});
afterAll(async () => app?.close());

describe('customer notes', () => {
  it('adds notes and lists them newest first with pagination', async () => {
    const lead = await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email() } });
    const cus = lead.body.data.customer.customer_number;
    expect((await team.api.get(`/v1/customers/${cus}`)).body.data).toMatchObject({ customer_number: cus, object: 'customer' });
    for (let i = 0; i < 5; i++) {
      const r = await team.api.post(`/v1/customers/${cus}/notes`, { body: `note ${i}` });
      expect(r.status).toBe(201);
      expect(r.body.data).toMatchObject({ object: 'note', body: `note ${i}`, customer_number: cus });
    }
    const page = await team.api.get(`/v1/customers/${cus}/notes?limit=3`);
    expect(page.body.data.map((n: { body: string }) => n.body)).toEqual(['note 4', 'note 3', 'note 2']);
    expect(page.body.has_more).toBe(true);
    const rest = await team.api.get(`/v1/customers/${cus}/notes?limit=3&starting_after=${page.body.data[2].id}`);
    expect(rest.body.data.map((n: { body: string }) => n.body)).toEqual(['note 1', 'note 0']);
    expect(rest.body.has_more).toBe(false);
    expect((await team.api.post(`/v1/customers/${cus}/notes`, { body: '  ' })).status).toBe(422);
    expect((await team.api.post(`/v1/customers/${cus}/notes`, { body: 'x', author: 'system' })).status).toBe(422);
  });
});

describe('transactions, fulfillments and subscriptions lists', () => {
  it('list and retrieve with filters', async () => {
    const paid = await team.api.post('/checkout/orders', {
      campaign_id: funnel.campaignId,
      currency: 'USD',
      customer: { email: email() },
      products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
      payment: CARD,
    });
    const on = paid.body.data.order_number;
    const txns = await team.api.get(`/v1/transactions?order_number=${on}&status=declined`);
    expect(txns.body.data).toHaveLength(1);
    const txn = await team.api.get(`/v1/transactions/${txns.body.data[0].id}`);
    expect(txn.body.data).toMatchObject({ object: 'transaction', order_number: on, status: 'declined', card: { last4: '1111' } });
    expect((await team.api.get(`/v1/transactions?order_number=${on}&status=approved`)).body.data).toEqual([]);

    const ful = newId('fulfillment');
    const sub = newId('subscription');
    const customer = paid.body.data.customer.customer_number;
    await app.store.run(async (db) => {
      await db.insertInto('fulfillments').values({ id: ful, team_id: team.teamId, order_id: on, status: 'pending', lines: '[]' }).execute();
      await db
        .insertInto('subscriptions')
        .values({
          id: sub,
          team_id: team.teamId,
          order_id: on,
          customer_id: customer,
          offer_id: funnel.offers.trial,
          status: 'active',
          interval_unit: 'month',
          interval_count: 1,
          recurring_price: 2900,
          currency: 'USD',
        })
        .execute();
    });
    expect((await team.api.get(`/v1/fulfillments?order_number=${on}`)).body.data.map((f: { id: string }) => f.id)).toEqual([ful]);
    expect((await team.api.get(`/v1/fulfillments/${ful}`)).body.data).toMatchObject({ object: 'fulfillment', status: 'pending' });
    expect((await team.api.get('/v1/fulfillments?status=shipped')).body.data).toEqual([]);
    expect((await team.api.get(`/v1/subscriptions?customer_number=${customer}`)).body.data).toHaveLength(1);
    expect((await team.api.get(`/v1/subscriptions/${sub}`)).body.data).toMatchObject({ object: 'subscription', recurring_price: 2900, externally_managed: false });
    expect((await team.api.get('/v1/subscriptions?status=paused')).body.data).toEqual([]);
    expect((await team.api.get('/v1/subscriptions/sub_missing')).status).toBe(404);
  });
});
