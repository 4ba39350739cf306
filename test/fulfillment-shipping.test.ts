import http from 'node:http';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/app/logger.ts';
import { email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { ApiClient, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

let app: TestApp;
let team: TestTeam;
let other: TestTeam;
let funnel: Funnel;
const TEST_PAN = '4242424242424242';
const card = { card_number: TEST_PAN, card_exp: '12/39', card_cvv: '123' };
const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];
let receiver: http.Server;
let endpointSecret: string;

beforeAll(async () => {
  app = await startTestApp({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_RETRY_SCHEDULE_MS: '20,20,20', WEBHOOK_TIMEOUT_MS: '3000' });
  team = await app.newTeam('Shipping');
  other = await app.newTeam('Other shipping');
  funnel = await seedFunnel(app, team.teamId);
  // A listed test card approves without a gateway.
  expect((await team.api.post('/v1/test-cards', { card_number: TEST_PAN })).status).toBe(201);
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const port = (receiver.address() as { port: number }).port;
  const ep = await team.api.post('/v1/webhook-endpoints', { url: `http://127.0.0.1:${port}/hooks`, event_types: ['fulfillment.shipped'] });
  expect(ep.status, ep.text).toBe(201);
  endpointSecret = ep.body.data.secret;
});
afterAll(async () => {
  await app?.close();
  receiver?.closeAllConnections();
  await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
});

/** A completed order with a physical line: its pending fulfillment's id. */
async function pendingFulfillment(over: { email?: string; shipping_address?: Record<string, string>; first_name?: string } = {}) {
  const r = await team.api.post('/checkout/orders', {
    campaign_id: funnel.campaignId,
    currency: 'USD',
    customer: { email: over.email ?? email('ship'), first_name: over.first_name ?? 'Amy', last_name: 'Pond' },
    phone: '+1 555 010 2030',
    shipping_address: over.shipping_address ?? { line1: '1 Leadworth Lane', city: 'Leadworth', state: 'NY', postal_code: '10001', country: 'US' },
    products: [{ offer_id: funnel.offers.serum, quantity: 2 }, { offer_id: funnel.offers.guide, quantity: 1 }],
    payment: card,
  });
  expect(r.status, r.text).toBe(200);
  const on = r.body.data.order_number as string;
  expect((await team.api.post('/checkout/orders/complete', { order_number: on })).status).toBe(200);
  const list = await team.api.get(`/v1/fulfillments?order_number=${on}`);
  return { order: on, id: list.body.data[0].id as string };
}

const SHIP = { carrier: 'USPS', tracking_number: '9400 1000 0000 0000 0000 00', tracking_url: 'https://tools.usps.com/go/TrackConfirmAction?tLabels=94001' };

async function drainWebhooks() {
  await app.ctx.services.webhooks.drainer.drain(app.ctx, createLogger('silent'));
}

describe('POST /v1/fulfillments/{id}/ship', () => {
  it('ships once: status, tracking, a timeline row and one fulfillment.shipped event delivered by webhook', async () => {
    const f = await pendingFulfillment();
    const r = await team.api.post(`/v1/fulfillments/${f.id}/ship`, SHIP);
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ success: true, message: 'Fulfillment shipped.', data: { object: 'fulfillment', id: f.id, order_number: f.order, status: 'shipped', ...SHIP } });
    expect(Date.parse(r.body.data.shipped_at)).toBeGreaterThan(Date.now() - 60_000);

    const order = await team.api.get(`/v1/orders/${f.order}`);
    const timeline = JSON.stringify(order.body.data);
    expect(timeline).toContain('fulfillment.shipped');
    expect(timeline).toContain(SHIP.tracking_number);

    const events = await team.api.get(`/v1/events?type=fulfillment.shipped&order_number=${f.order}`);
    expect(events.body.data).toHaveLength(1);
    expect(events.body.data[0].data.object).toMatchObject({ id: f.id, status: 'shipped', tracking_number: SHIP.tracking_number });

    await drainWebhooks();
    const delivery = received.find((d) => d.body.includes(f.id));
    expect(delivery, 'the webhook reached the endpoint').toBeDefined();
    const payload = new Webhook(endpointSecret).verify(delivery!.body, delivery!.headers as Record<string, string>) as { type: string; data: { object: { id: string } } };
    expect(payload).toMatchObject({ type: 'fulfillment.shipped', data: { object: { id: f.id, carrier: 'USPS' } } });

    // The same tracking again: 200, nothing new (no second event, no second timeline row).
    const again = await team.api.post(`/v1/fulfillments/${f.id}/ship`, { carrier: 'USPS', tracking_number: SHIP.tracking_number });
    expect(again.status).toBe(200);
    expect(again.body.message).toBe('Fulfillment already shipped with this tracking.');
    expect(again.body.data.tracking_url).toBe(SHIP.tracking_url);
    expect((await team.api.get(`/v1/events?type=fulfillment.shipped&order_number=${f.order}`)).body.data).toHaveLength(1);
    const rows = await app.store.run((db) => db.selectFrom('order_events').select('id').where('order_id', '=', f.order).where('type', '=', 'fulfillment.shipped').execute());
    expect(rows).toHaveLength(1);

    // Other tracking on a shipped parcel: 409, unchanged.
    const changed = await team.api.post(`/v1/fulfillments/${f.id}/ship`, { carrier: 'UPS', tracking_number: '1Z999' });
    expect(changed.status).toBe(409);
    expect(changed.body).toMatchObject({ success: false, error: { code: 'conflict' } });
    expect((await team.api.get(`/v1/fulfillments/${f.id}`)).body.data).toMatchObject({ carrier: 'USPS', status: 'shipped' });
    expect((await team.api.get('/v1/fulfillments?status=shipped')).body.data.map((x: { id: string }) => x.id)).toContain(f.id);
  });

  it('keeps a given shipped_at; refuses bad input, another team, a cancelled fulfillment', async () => {
    const f = await pendingFulfillment();
    for (const body of [{}, { carrier: 'USPS' }, { carrier: '', tracking_number: '1' }, { carrier: 'USPS', tracking_number: '1', tracking_url: 'javascript:alert(1)' }, { carrier: 'USPS', tracking_number: '1', shipped_at: '2999-01-01T00:00:00Z' }, { carrier: 'USPS', tracking_number: '1', colour: 'red' }]) {
      const r = await team.api.post(`/v1/fulfillments/${f.id}/ship`, body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.body.error.code).toBe('validation_failed');
    }
    expect((await other.api.post(`/v1/fulfillments/${f.id}/ship`, SHIP)).status).toBe(404);
    expect((await team.api.post('/v1/fulfillments/ful_nothere/ship', SHIP)).status).toBe(404);
    const at = '2026-01-02T03:04:05.000Z';
    const r = await team.api.post(`/v1/fulfillments/${f.id}/ship`, { carrier: 'DHL', tracking_number: 'JD0001', shipped_at: at });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ shipped_at: at, tracking_url: null });

    const c = await pendingFulfillment();
    await app.store.run((db) => db.updateTable('fulfillments').set({ status: 'cancelled' }).where('id', '=', c.id).execute());
    const refused = await team.api.post(`/v1/fulfillments/${c.id}/ship`, SHIP);
    expect(refused.status).toBe(409);
    expect(refused.body.message).toBe('A fulfillment in status cancelled cannot move to shipped.');
  });

  it('needs orders:fulfill: Level 2 support ships, Level 1 cannot', async () => {
    const f = await pendingFulfillment();
    const mint = async (role: string) => new ApiClient(app.url, (await team.api.post('/v1/api-tokens', { name: role, role })).body.data.secret);
    const l1 = await mint('support_l1');
    const denied = await l1.post(`/v1/fulfillments/${f.id}/ship`, SHIP);
    expect(denied.status).toBe(403);
    expect(denied.body.data).toEqual({ permission: 'orders:fulfill' });
    expect((await l1.get('/v1/fulfillments/export')).status).toBe(403);
    expect((await l1.get(`/v1/fulfillments/${f.id}`)).body.data.status).toBe('pending');
    const l2 = await mint('support_l2');
    expect((await l2.post(`/v1/fulfillments/${f.id}/ship`, SHIP)).status).toBe(200);
  });
});

describe('GET /v1/fulfillments/export', () => {
  it('the pending fulfillments as CSV, one row per physical line, oldest first, only this team', async () => {
    const before = await team.api.get('/v1/fulfillments/export');
    const existing = before.text.split('\r\n').length;
    const a = await pendingFulfillment({ email: 'first@example.com', first_name: '=cmd|calc' });
    const b = await pendingFulfillment({ email: 'second@example.com', shipping_address: { first_name: 'Rory', last_name: 'Williams', line1: '2 Main St, Apt "B"', line2: 'Floor 3', city: 'Cardiff', postal_code: 'CF10', country: 'GB' } });
    const shipped = await pendingFulfillment({ email: 'gone@example.com' });
    expect((await team.api.post(`/v1/fulfillments/${shipped.id}/ship`, SHIP)).status).toBe(200);

    const r = await team.api.get('/v1/fulfillments/export?status=pending');
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(r.headers.get('content-disposition')).toMatch(/^attachment; filename="fulfillments-pending-\d{8}\.csv"$/);
    const lines = r.text.split('\r\n');
    expect(lines[0]).toBe(
      '"fulfillment_id","order_number","created_at","customer_name","email","phone","ship_to_name","address_line1","address_line2","city","state","postal_code","country","product_id","offer_id","item_name","quantity"',
    );
    expect(lines).toHaveLength(existing + 2);
    const rowsOf = (id: string) => lines.filter((l) => l.startsWith(`"${id}"`));
    expect(rowsOf(a.id)).toHaveLength(1); // the digital guide is not shipped
    expect(rowsOf(a.id)[0]).toContain(`"${a.order}"`);
    expect(rowsOf(a.id)[0]).toContain(`"'=cmd|calc Pond","first@example.com","'+1 555 010 2030","'=cmd|calc Pond","1 Leadworth Lane","","Leadworth","NY","10001","US"`);
    expect(rowsOf(a.id)[0]).toMatch(/"Serum x1","2"$/);
    expect(rowsOf(b.id)[0]).toContain('"Rory Williams","2 Main St, Apt ""B""","Floor 3","Cardiff","","CF10","GB"');
    expect(rowsOf(shipped.id)).toEqual([]);
    expect(lines.findIndex((l) => l.startsWith(`"${a.id}"`))).toBeLessThan(lines.findIndex((l) => l.startsWith(`"${b.id}"`)));

    const shippedCsv = await team.api.get('/v1/fulfillments/export?status=shipped');
    expect(shippedCsv.text).toContain(`"${shipped.id}"`);
    const foreign = await other.api.get('/v1/fulfillments/export');
    expect(foreign.status).toBe(200);
    expect(foreign.text.split('\r\n').filter(Boolean)).toHaveLength(1);
    expect((await team.api.get('/v1/fulfillments/export?status=lost')).status).toBe(422);
    expect((await team.api.get('/v1/fulfillments/export?format=xlsx')).status).toBe(422);
  });
});
