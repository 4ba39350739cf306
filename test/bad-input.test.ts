import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { type ApiResponse, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

// Issue 11: bad input never gives a 5xx. Each case here answered 500 before the input guards.

let app: TestApp;
let team: TestTeam;
let funnel: Funnel;

beforeAll(async () => {
  app = await startTestApp();
  team = await app.newTeam();
  funnel = await seedFunnel(app, team.teamId);
});
afterAll(async () => app?.close());

function expect422(res: ApiResponse, path: string) {
  expect(res.status, res.text).toBe(422);
  expect(res.body).toMatchObject({ success: false, data: null, error: { code: 'validation_failed', type: 'invalid_request_error' } });
  expect(res.body.error.fields.map((f: { path: string }) => f.path)).toContain(path);
}

/** JSON text nested `depth` levels deep, written by hand: JSON.stringify would recurse too. */
function nested(depth: number): string {
  return '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

async function productCount(): Promise<number> {
  const r = await app.store.run((db) => db.selectFrom('products').select((eb) => eb.fn.countAll<number>().as('n')).where('team_id', '=', team.teamId).executeTakeFirstOrThrow());
  return Number(r.n);
}

describe('text PostgreSQL cannot store', () => {
  it('refuses a NUL in a product name with 422 naming the field, and writes nothing', async () => {
    const before = await productCount();
    expect422(await team.api.post('/v1/products', { name: 'a\u0000b' }), 'name');
    expect(await productCount()).toBe(before);
  });

  it('refuses a NUL in a customer note and in a lead name, nested paths included', async () => {
    const lead = await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email('nul'), first_name: 'Ada' } });
    expect(lead.status, lead.text).toBe(201);
    const customer = lead.body.data.customer.customer_number ?? lead.body.data.customer.id;
    expect422(await team.api.post(`/v1/customers/${customer}/notes`, { body: 'call back\u0000' }), 'body');
    expect422(await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email('nul'), first_name: 'A\u0000da' } }), 'customer.first_name');
    expect422(await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email('nul') }, products: [{ offer_id: 'off_\u0000' }] }), 'products.0.offer_id');
  });

  it('refuses unpaired UTF-16 surrogates, and accepts a paired one', async () => {
    expect422(await team.api.post('/v1/products', '{"name":"a\\ud800b"}'), 'name');
    expect422(await team.api.post('/v1/products', '{"name":"a\\udc00"}'), 'name');
    const emoji = await team.api.post('/v1/products', { name: 'Serum \u{1F9F4}' });
    expect(emoji.status, emoji.text).toBe(201);
    expect(emoji.body.data.name).toBe('Serum \u{1F9F4}');
  });

  it('refuses a NUL in an object key, a query string and a path parameter', async () => {
    expect422(await team.api.post('/v1/products', '{"name":"x","a\\u0000":1}'), 'a\\u0000');
    expect422(await team.api.get('/v1/products?starting_after=prod_%00'), 'query.starting_after');
    expect422(await team.api.get('/v1/products/prod_%00'), 'params.id');
  });

  it('answers a path the router cannot decode, or a parameter past its length, in the envelope', async () => {
    expect422(await team.api.post('/v1/customers/%ED%A0%80/notes', { body: 'x' }), 'params');
    expect422(await team.api.request('DELETE', '/v1/webhook-endpoints/%FF'), 'params');
    expect422(await team.api.post(`/v1/subscriptions/sub_${'a'.repeat(200)}/cancel`, {}), 'params');
  });
});

describe('nesting and bodies', () => {
  it('refuses a body nested deeper than 32 levels with 400 malformed_json, with or without an Idempotency-Key', async () => {
    const variants: Record<string, string>[] = [{}, { 'idempotency-key': `deep-${Date.now()}` }];
    for (const headers of variants) {
      const r = await team.api.post('/v1/extpay-connections/xc_missing/test', nested(20_000), headers);
      expect(r.status, r.text).toBe(400);
      expect(r.body.error.code).toBe('malformed_json');
    }
    expect((await team.api.post('/v1/products', nested(33))).status).toBe(400);
    const ok = await team.api.post('/v1/products', `{"name":"x","metadata":${nested(30)}}`);
    expect(ok.status, ok.text).toBe(422); // parsed, then refused by the schema: no metadata field
  });

  it('refuses any body but none or {} on a route that takes no body', async () => {
    const created = await team.api.post('/v1/extpay-connections', { name: 'x', api_key: 'k', company_id: 'biz_1', environment: 'Sandbox', base_url: 'http://127.0.0.1:9' });
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.id;
    expect422(await team.api.post(`/v1/extpay-connections/${id}/deactivate`, { anything: { deep: [1] } }), '(root)');
    expect422(await team.api.post(`/v1/extpay-connections/${id}/activate`, [1, 2]), '(root)');
    expect((await team.api.post(`/v1/extpay-connections/${id}/deactivate`, {})).status).toBe(200);
    expect((await team.api.request('POST', `/v1/extpay-connections/${id}/activate`)).status).toBe(200);
  });

  it('answers an empty PATCH with the object unchanged (found by the fuzz suite: an UPDATE with nothing to SET)', async () => {
    const before = await team.api.get('/v1/team');
    const r = await team.api.patch('/v1/team', {});
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toEqual(before.body.data);
  });

  it('keeps refusing __proto__ and constructor.prototype keys (secure-json-parse)', async () => {
    for (const text of ['{"name":"x","__proto__":{"admin":true}}', '{"name":"x","constructor":{"prototype":{"admin":true}}}']) {
      const r = await team.api.post('/v1/products', text);
      expect(r.status, r.text).toBe(400);
      expect(r.body.error.code).toBe('malformed_json');
    }
  });
});

describe('HTTP that never reaches a route', () => {
  async function raw(request: string): Promise<string> {
    const { port } = new URL(app.url);
    const net = await import('node:net');
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1', () => socket.end(request));
      let text = '';
      socket.on('data', (d) => (text += String(d)));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
  }

  it('answers headers over the 16 KB limit with 431 in the envelope, not a bare Node answer', async () => {
    const r = await fetch(`${app.url}/v1/orders`, { headers: { authorization: `Bearer ${team.token}`, 'x-padding': 'a'.repeat(20_000) } });
    expect(r.status).toBe(431);
    expect(await r.json()).toMatchObject({ success: false, data: null, error: { type: 'invalid_request_error', code: 'headers_too_large' } });
  });

  it('answers a request that is not HTTP with 400 malformed_request in the envelope', async () => {
    const text = await raw('GARBAGE / NOT-HTTP\r\n\r\n');
    expect(text).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toMatchObject({ success: false, error: { code: 'malformed_request' } });
  });
});
