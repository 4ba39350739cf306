import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CANARY_PAN, email, type Funnel, seedFunnel } from './support/fixtures.ts';
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

async function ordersOf(addr: string) {
  return (await team.api.get(`/v1/orders?customer_email=${encodeURIComponent(addr)}`)).body.data as unknown[];
}

function orderBody(addr: string, pan = '4111111111111111') {
  return {
    campaign_id: funnel.campaignId,
    currency: 'USD',
    customer: { email: addr },
    products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
    payment: { card_number: pan, card_exp: '12/39', card_cvv: '123' },
  };
}

describe('Idempotency-Key', () => {
  it('replays the first response exactly, with a replay header, and runs the work once', async () => {
    const addr = email('idem');
    const key = `k-${addr}`;
    const first = await team.api.post('/checkout/orders', orderBody(addr), { 'idempotency-key': key });
    expect(first.status).toBe(402);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const replay = await team.api.post('/checkout/orders', orderBody(addr), { 'idempotency-key': key });
    expect(replay.status).toBe(first.status);
    expect(replay.text).toBe(first.text);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await ordersOf(addr)).toHaveLength(1);
    // Key order in the JSON does not matter: the fingerprint is over canonical JSON.
    const reordered = JSON.parse(JSON.stringify(orderBody(addr)), (_k, v) =>
      v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).reverse()) : v,
    );
    const r3 = await team.api.post('/checkout/orders', reordered, { 'idempotency-key': key });
    expect(r3.headers.get('idempotent-replayed')).toBe('true');
  });

  it('answers 422 when the same key comes with a different body', async () => {
    const addr = email('idem');
    const key = `k-${addr}`;
    const first = await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: addr } }, { 'idempotency-key': key });
    expect(first.status).toBe(201);
    const other = await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email() } }, { 'idempotency-key': key });
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({ success: false, error: { type: 'idempotency_error', code: 'idempotency_key_reused' } });
    // The same key on another endpoint is another request too.
    const elsewhere = await team.api.post('/checkout/orders', orderBody(addr), { 'idempotency-key': key });
    expect(elsewhere.status).toBe(422);
  });

  it('answers 409 while the first request with the key is still running', async () => {
    const addr = email('idem');
    const key = `k-${addr}`;
    const body = { campaign_id: funnel.campaignId, customer: { email: addr } };
    // Claim the key as an in-flight request would, then retry over HTTP.
    const begun = await app.ctx.services.idempotency.begin(team.teamId, key, 'POST', '/checkout/leads', body);
    expect(begun.kind).toBe('proceed');
    const r = await team.api.post('/checkout/leads', body, { 'idempotency-key': key });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ success: false, error: { code: 'idempotency_in_flight' } });
    expect(await ordersOf(addr)).toHaveLength(0);
  });

  it('under concurrent retries with one key, exactly one request runs', async () => {
    const addr = email('idem');
    const key = `k-${addr}`;
    const rs = await Promise.all(Array.from({ length: 10 }, () => team.api.post('/checkout/orders', orderBody(addr), { 'idempotency-key': key })));
    const ran = rs.filter((r) => r.status === 402 && r.headers.get('idempotent-replayed') === null);
    expect(ran).toHaveLength(1);
    for (const r of rs) expect([402, 409]).toContain(r.status);
    expect(await ordersOf(addr)).toHaveLength(1);
  });

  it('scopes keys to the team', async () => {
    const other = await app.newTeam('Other');
    const otherFunnel = await seedFunnel(app, other.teamId);
    const key = `shared-${email()}`;
    const mine = await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email() } }, { 'idempotency-key': key });
    const theirs = await other.api.post('/checkout/leads', { campaign_id: otherFunnel.campaignId, customer: { email: email() } }, { 'idempotency-key': key });
    expect(mine.status).toBe(201);
    expect(theirs.status).toBe(201);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
  });

  it('stores a keyed fingerprint that holds no card data', async () => {
    const addr = email('idem');
    const key = `k-${addr}`;
    await team.api.post('/checkout/orders', orderBody(addr, CANARY_PAN), { 'idempotency-key': key });
    const row = await app.store.run((db) => db.selectFrom('idempotency_keys').selectAll().where('key', '=', key).executeTakeFirstOrThrow());
    expect(JSON.stringify(row)).not.toContain(CANARY_PAN);
    expect(JSON.stringify(row)).not.toContain(CANARY_PAN.slice(0, 6) + CANARY_PAN.slice(6));
    expect(row.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(row.state).toBe('done');
    // The stored response is sealed: nothing of it (not even the order number) is readable at rest.
    expect(row.response_body).toMatch(/^v1:/);
    expect(row.response_body).not.toContain('order_number');
  });

  it('refuses an over-long key', async () => {
    const r = await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email() } }, { 'idempotency-key': 'x'.repeat(256) });
    expect(r.status).toBe(422);
    expect(r.body.error.fields[0].path).toBe('headers.idempotency-key');
  });
});
