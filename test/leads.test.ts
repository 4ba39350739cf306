import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { email, type Funnel, seedFunnel } from './support/fixtures.ts';
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

async function countOrders(): Promise<number> {
  const r = await app.store.run((db) => db.selectFrom('orders').select((eb) => eb.fn.countAll<number>().as('n')).where('team_id', '=', team.teamId).executeTakeFirstOrThrow());
  return Number(r.n);
}

describe('Create Lead', () => {
  it('creates a lead (201) and updates it by order_number (200)', async () => {
    const created = await team.api.post('/checkout/leads', {
      campaign_id: funnel.campaignId,
      customer: { email: email(), first_name: 'Ada' },
      products: [{ offer_id: funnel.offers.serum, quantity: 2 }],
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ success: true, message: 'Lead created.' });
    const lead = created.body.data;
    expect(lead.order_number).toMatch(/^ord_/);
    expect(lead).toMatchObject({ status: 'lead', payment_status: null, is_throttled: false, currency: 'USD' });
    // Totals come from the offers: 2 × 3900 + one shipping of 495.
    expect(lead).toMatchObject({ subtotal: 7800, shipping_total: 495, total: 8295 });

    const updated = await team.api.post('/checkout/leads', {
      order_number: lead.order_number,
      customer: { first_name: 'Ada', last_name: 'Lovelace' },
      phone: '+1 555 0100',
      shipping_address: { line1: '1 Analytical Way', city: 'London', postal_code: 'N1', country: 'GB' },
    });
    expect(updated.status).toBe(200);
    expect(updated.body.message).toBe('Lead updated.');
    expect(updated.body.data).toMatchObject({
      order_number: lead.order_number,
      phone: '+1 555 0100',
      shipping_address: { line1: '1 Analytical Way', country: 'GB' },
      customer: { first_name: 'Ada', last_name: 'Lovelace' },
      total: 8295,
    });
  });

  it('matches the same email (any case) and campaign: 200, same order, name and phone updated', async () => {
    const addr = email('match');
    const first = await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: addr, first_name: 'Grace' } });
    expect(first.status).toBe(201);
    const before = await countOrders();
    const again = await team.api.post('/checkout/leads', {
      campaign_id: funnel.campaignId,
      customer: { email: addr.toUpperCase(), first_name: 'Grace', last_name: 'Hopper' },
      phone: '+1 555 0199',
    });
    expect(again.status).toBe(200);
    expect(again.body.data.order_number).toBe(first.body.data.order_number);
    expect(again.body.data).toMatchObject({ phone: '+1 555 0199', customer: { last_name: 'Hopper', email: addr } });
    expect(await countOrders()).toBe(before);

    // Same email in another campaign is a new lead.
    const elsewhere = await team.api.post('/checkout/leads', { campaign_id: funnel.otherCampaignId, customer: { email: addr } });
    expect(elsewhere.status).toBe(201);
    expect(elsewhere.body.data.order_number).not.toBe(first.body.data.order_number);
    expect(elsewhere.body.data.customer.customer_number).toBe(first.body.data.customer.customer_number);
  });

  it('concurrent first posts of one email + campaign make one lead', async () => {
    const addr = email('race');
    const rs = await Promise.all(Array.from({ length: 8 }, () => team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: addr } })));
    expect(rs.every((r) => r.status === 201 || r.status === 200)).toBe(true);
    expect(rs.filter((r) => r.status === 201)).toHaveLength(1);
    expect(new Set(rs.map((r) => r.body.data.order_number)).size).toBe(1);
  });

  it('refuses billing on Create Lead and writes nothing', async () => {
    const before = await countOrders();
    const r = await team.api.post('/checkout/leads', {
      campaign_id: funnel.campaignId,
      customer: { email: email() },
      billing: { line1: '1 Main St' },
    });
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ success: false, data: null, error: { code: 'validation_failed' } });
    expect(r.body.error.fields.map((f: { path: string }) => f.path)).toContain('billing');
    expect(await countOrders()).toBe(before);
  });

  it('requires campaign and email for a new lead; 404 for an unknown order_number or campaign', async () => {
    const missing = await team.api.post('/checkout/leads', { customer: { first_name: 'x' } });
    expect(missing.status).toBe(422);
    expect(missing.body.error.fields.map((f: { path: string }) => f.path).sort()).toEqual(['campaign_id', 'customer.email']);
    expect((await team.api.post('/checkout/leads', { order_number: 'ord_doesnotexist' })).status).toBe(404);
    expect((await team.api.post('/checkout/leads', { campaign_id: 'cmp_doesnotexist', customer: { email: email() } })).status).toBe(404);
  });

  it('refuses an offer of another campaign with the field path', async () => {
    const r = await team.api.post('/checkout/leads', {
      campaign_id: funnel.campaignId,
      customer: { email: email() },
      products: [{ offer_id: funnel.offers.serum, quantity: 1 }, { offer_id: funnel.offers.otherCampaign, quantity: 1 }],
    });
    expect(r.status).toBe(422);
    expect(r.body.error.fields).toEqual([{ path: 'products.1.offer_id', message: 'no such offer in this campaign' }]);
  });

  it('is_throttle true throttles; false later never un-throttles', async () => {
    const r = await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email() }, is_throttle: true });
    expect(r.body.data.is_throttled).toBe(true);
    const again = await team.api.post('/checkout/leads', { order_number: r.body.data.order_number, is_throttle: false });
    expect(again.status).toBe(200);
    expect(again.body.data.is_throttled).toBe(true);
  });

  it('writes a timeline row for every change', async () => {
    const r = await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email() } });
    await team.api.post('/checkout/leads', { order_number: r.body.data.order_number, phone: '+44 20 7946 0000' });
    const detail = await team.api.get(`/v1/orders/${r.body.data.order_number}`);
    expect(detail.body.data.events.map((e: { type: string }) => e.type)).toEqual(['lead.created', 'lead.updated']);
    expect(detail.body.data.events[1].data.changed).toEqual(['phone']);
  });

  it('answers a new lead as it reads back, writes its lines in order and names the customer on its timeline, once', async () => {
    const addr = email('readback');
    const earlier = await team.api.post('/checkout/leads', { campaign_id: funnel.otherCampaignId, customer: { email: addr, first_name: 'Katherine', last_name: 'Johnson' } });
    expect(earlier.status).toBe(201);
    const customerNumber = earlier.body.data.customer.customer_number;

    // A new lead of a known customer: no name given, the customer keeps hers.
    const created = await team.api.post('/checkout/leads', {
      campaign_id: funnel.campaignId,
      customer: { email: addr, ip_address: '203.0.113.9' },
      products: [
        { offer_id: funnel.offers.guide, quantity: 1 },
        { offer_id: funnel.offers.serum, quantity: 3 },
        { offer_id: funnel.offers.trial, quantity: 1 },
      ],
    });
    expect(created.status).toBe(201);
    const lead = created.body.data;
    expect(lead.customer).toMatchObject({ customer_number: customerNumber, first_name: 'Katherine', last_name: 'Johnson', email: addr });
    expect(lead.lines.map((l: { offer_id: string; quantity: number }) => [l.offer_id, l.quantity])).toEqual([
      [funnel.offers.guide, 1],
      [funnel.offers.serum, 3],
      [funnel.offers.trial, 1],
    ]);
    const detail = await team.api.get(`/v1/orders/${lead.order_number}`);
    expect(detail.status).toBe(200);
    const { events, transactions: _t, disputes: _d, ...stored } = detail.body.data;
    for (const [key, value] of Object.entries(lead)) expect(stored[key], key).toEqual(value);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'lead.created', data: { customer_number: customerNumber, campaign_id: funnel.campaignId, is_throttled: false } });

    // Posted again with other products: the same lead, its lines replaced, one lead.updated row.
    const again = await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: addr }, products: [{ offer_id: funnel.offers.trial, quantity: 2 }] });
    expect(again.status).toBe(200);
    expect(again.body.data.order_number).toBe(lead.order_number);
    const after = await team.api.get(`/v1/orders/${lead.order_number}`);
    expect(after.body.data.lines.map((l: { offer_id: string; quantity: number }) => [l.offer_id, l.quantity])).toEqual([[funnel.offers.trial, 2]]);
    expect(after.body.data.events.map((e: { type: string }) => e.type)).toEqual(['lead.created', 'lead.updated']);
    const rows = await app.store.run((db) => db.selectFrom('order_lines').select('order_id').where('team_id', '=', team.teamId).where('order_id', '=', lead.order_number).execute());
    expect(rows).toHaveLength(1);
  });
});
