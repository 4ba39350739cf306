import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_CARDS } from '../src/sandbox/cards.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { email } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

let app: TestApp;
let sandbox: { url: string; close(): Promise<void> };
let keySeq = 0;
let panSeq = 0;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, slowMs: 1000 });
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});

/** A fresh Luhn-valid number under `prefix` (padded to 16 digits) that no sandbox list names: the sandbox approves it. */
function freshPan(prefix = '411111'): string {
  const body = (prefix + String(++panSeq).padStart(15 - prefix.length, '0')).slice(0, 15);
  for (let check = 0; check <= 9; check++) {
    const pan = body + check;
    let sum = 0;
    for (let i = 0; i < 16; i++) {
      let d = Number(pan[15 - i]);
      if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
      sum += d;
    }
    if (sum % 10 === 0) return pan;
  }
  throw new Error('unreachable');
}

const card = (number: string) => ({ card_number: number, card_exp: '12/39', card_cvv: '123' });

interface Shop {
  team: TestTeam;
  key: string;
  gatewayId: string;
  campaignId: string;
  offerId: string;
}

/** A team of its own (rules are per team), with one sandbox gateway account and a campaign charging through it. */
async function shop(opts: { force?: string } = {}): Promise<Shop> {
  const team = await app.newTeam(`fraud ${++keySeq}`);
  const key = `fraud_${process.pid}_${keySeq}`;
  if (opts.force) await sandboxAccount(key, opts.force);
  const g = await team.api.post('/v1/gateways', { name: 'gw', kind: 'nmi', base_url: sandbox.url, credentials: { security_key: key }, test_mode: true });
  expect(g.status, g.text).toBe(201);
  const catalog = app.ctx.services.catalog;
  const c = await catalog.createCampaign(team.teamId, { name: 'c', currency: 'USD', gateway_id: g.body.data.id });
  const p = await catalog.createProduct(team.teamId, { name: 'p' });
  const offer = await catalog.createOffer(team.teamId, { campaign_id: c.id, product_id: p.id, name: 'o', price: 1500, shipping: 0, billing: 'one_time', fulfillment_type: 'digital' });
  return { team, key, gatewayId: g.body.data.id, campaignId: c.id, offerId: offer.id };
}

async function sandboxAccount(key: string, force: string): Promise<void> {
  await fetch(`${sandbox.url}/sandbox/nmi/accounts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ security_key: key, force_response_code: force }) });
}

async function gatewaySales(key: string): Promise<Array<{ status: string }>> {
  const r = await fetch(`${sandbox.url}/sandbox/nmi/ledger?security_key=${encodeURIComponent(key)}`);
  return ((await r.json()) as { transactions: Array<{ type: string; status: string }> }).transactions.filter((e) => e.type === 'sale');
}

async function rule(s: Shop, body: Record<string, unknown>): Promise<{ id: string; name: string }> {
  const r = await s.team.api.post('/v1/fraud-rules', { window_seconds: 3600, ...body });
  expect(r.status, r.text).toBe(201);
  return r.body.data;
}

function order(s: Shop, pan: string, customer: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return s.team.api.post('/checkout/orders', {
    campaign_id: s.campaignId,
    currency: 'USD',
    customer: { email: email('fraud'), ...customer },
    products: [{ offer_id: s.offerId, quantity: 1 }],
    payment: card(pan),
    ...extra,
  });
}

/** The 402 of a payment a rule refused, its one declined transaction, and no gateway call for it. */
async function expectVelocityBlocked(s: Shop, r: { status: number; body: any; text: string }, ruleName: string, salesBefore: number) {
  expect(r.status, r.text).toBe(402);
  expect(r.body).toMatchObject({
    success: false,
    message: `Payment declined: Blocked by fraud rule '${ruleName}'`,
    data: { status: 'declined', payment_status: 'declined', attempts: 1 },
    error: { type: 'card_error', code: 'payment_declined', decline_code: 'velocity_blocked' },
  });
  const txns = (await s.team.api.get(`/v1/transactions?order_number=${r.body.data.order_number}`)).body.data;
  expect(txns).toHaveLength(1);
  expect(txns[0]).toMatchObject({ id: r.body.data.transaction_id, status: 'declined', response_code: 'velocity_blocked', gateway_id: null });
  expect(await gatewaySales(s.key)).toHaveLength(salesBefore);
}

describe('fraud rules: the /v1/fraud-rules resource', () => {
  it('creates, lists with cursor pagination, retrieves, updates and deletes a rule', async () => {
    const s = await shop();
    const created = await s.team.api.post('/v1/fraud-rules', { name: 'Card testing', metric: 'declines', dimension: 'card_fingerprint', threshold: 5, window_seconds: 3600 });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({
      success: true,
      data: { object: 'fraud_rule', name: 'Card testing', metric: 'declines', dimension: 'card_fingerprint', bin_length: null, threshold: 5, window_seconds: 3600, is_enabled: true },
    });
    const id = created.body.data.id as string;
    expect(id).toMatch(/^fr_/);
    const bin = await rule(s, { name: 'BIN', metric: 'attempts', dimension: 'bin', threshold: 50 });
    expect((await s.team.api.get(`/v1/fraud-rules/${bin.id}`)).body.data.bin_length).toBe(6);
    const bin8 = await rule(s, { name: 'BIN8', metric: 'attempts', dimension: 'bin', bin_length: 8, threshold: 50, is_enabled: false });

    const page1 = await s.team.api.get('/v1/fraud-rules?limit=2');
    expect(page1.status).toBe(200);
    expect(page1.body.data.map((r: { id: string }) => r.id)).toEqual([bin8.id, bin.id]);
    expect(page1.body.has_more).toBe(true);
    const page2 = await s.team.api.get(`/v1/fraud-rules?limit=2&starting_after=${bin.id}`);
    expect(page2.body.data.map((r: { id: string }) => r.id)).toEqual([id]);
    expect(page2.body.has_more).toBe(false);

    const got = await s.team.api.get(`/v1/fraud-rules/${id}`);
    expect(got.body.data).toEqual(created.body.data);

    const patched = await s.team.api.patch(`/v1/fraud-rules/${id}`, { name: 'Card testing (strict)', threshold: 3, window_seconds: 600, is_enabled: false });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.data).toMatchObject({ name: 'Card testing (strict)', threshold: 3, window_seconds: 600, is_enabled: false, metric: 'declines' });
    expect((await s.team.api.get(`/v1/fraud-rules/${id}`)).body.data.threshold).toBe(3);

    const deleted = await s.team.api.delete(`/v1/fraud-rules/${id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.data).toMatchObject({ id, deleted: true });
    expect((await s.team.api.get(`/v1/fraud-rules/${id}`)).status).toBe(404);
    expect((await s.team.api.delete(`/v1/fraud-rules/${id}`)).status).toBe(404);
  });

  it.each([
    ['no name', { name: undefined }, 'name'],
    ['an empty name', { name: ' ' }, 'name'],
    ['an unknown metric', { metric: 'refunds' }, 'metric'],
    ['an unknown dimension', { dimension: 'device' }, 'dimension'],
    ['threshold 0', { threshold: 0 }, 'threshold'],
    ['a fractional threshold', { threshold: 2.5 }, 'threshold'],
    ['window 0', { window_seconds: 0 }, 'window_seconds'],
    ['a window over 30 days', { window_seconds: 30 * 86400 + 1 }, 'window_seconds'],
    ['bin_length on another dimension', { bin_length: 6 }, 'bin_length'],
    ['bin_length 9', { dimension: 'bin', bin_length: 9 }, 'bin_length'],
    ['an unknown field', { action: 'block' }, 'action'],
  ])('refuses %s with 422 naming the field', async (_what, change, field) => {
    const s = await shop();
    const body = { name: 'r', metric: 'attempts', dimension: 'email', threshold: 3, window_seconds: 60, ...change };
    const r = await s.team.api.post('/v1/fraud-rules', body);
    expect(r.status, r.text).toBe(422);
    expect(r.body.error.code).toBe('validation_failed');
    expect(r.body.error.fields.map((f: { path: string }) => f.path)).toContain(field);
    expect((await s.team.api.get('/v1/fraud-rules')).body.data).toHaveLength(0);
  });

  it('refuses to change what a rule counts, and bad values, with 422', async () => {
    const s = await shop();
    const r = await rule(s, { name: 'r', metric: 'attempts', dimension: 'email', threshold: 3 });
    for (const [body, field] of [
      [{ metric: 'declines' }, 'metric'],
      [{ dimension: 'bin' }, 'dimension'],
      [{ threshold: -1 }, 'threshold'],
      [{ is_enabled: 'yes' }, 'is_enabled'],
    ] as const) {
      const p = await s.team.api.patch(`/v1/fraud-rules/${r.id}`, body);
      expect(p.status, p.text).toBe(422);
      expect(p.body.error.fields.map((f: { path: string }) => f.path)).toContain(field);
    }
    expect((await s.team.api.get(`/v1/fraud-rules/${r.id}`)).body.data).toMatchObject({ metric: 'attempts', dimension: 'email', threshold: 3 });
  });

  it("another team's rule is 404 everywhere and not listed", async () => {
    const a = await shop();
    const b = await shop();
    const r = await rule(a, { name: 'mine', metric: 'attempts', dimension: 'email', threshold: 3 });
    expect((await b.team.api.get(`/v1/fraud-rules/${r.id}`)).status).toBe(404);
    expect((await b.team.api.patch(`/v1/fraud-rules/${r.id}`, { threshold: 1 })).status).toBe(404);
    expect((await b.team.api.delete(`/v1/fraud-rules/${r.id}`)).status).toBe(404);
    expect((await b.team.api.get('/v1/fraud-rules')).body.data).toHaveLength(0);
    expect((await b.team.api.get(`/v1/fraud-rules?starting_after=${r.id}`)).status).toBe(422);
    expect((await a.team.api.get(`/v1/fraud-rules/${r.id}`)).body.data.threshold).toBe(3);
  });

  it('is documented in the OpenAPI document', async () => {
    const doc = (await app.anonymous.get('/openapi.json')).body;
    expect(Object.keys(doc.paths['/v1/fraud-rules'])).toEqual(expect.arrayContaining(['get', 'post']));
    expect(Object.keys(doc.paths['/v1/fraud-rules/{id}'])).toEqual(expect.arrayContaining(['get', 'patch', 'delete']));
    expect(doc.components.schemas.FraudRule.properties.dimension.enum).toEqual(['card_fingerprint', 'bin', 'email', 'ip_address', 'order']);
    expect(doc.components.schemas.CustomerInput.properties).toHaveProperty('ip_address');
  });
});

describe('fraud rules: screening card first payments', () => {
  it('attempts per card fingerprint: the payment at the threshold reaches the gateway, the next is refused and not counted', async () => {
    const s = await shop();
    const r = await rule(s, { name: 'Card testing: 3 attempts per card per hour', metric: 'attempts', dimension: 'card_fingerprint', threshold: 3 });
    const pan = freshPan();
    for (let i = 1; i <= 3; i++) expect((await order(s, pan)).status).toBe(200);
    expect(await gatewaySales(s.key)).toHaveLength(3);
    await expectVelocityBlocked(s, await order(s, pan), r.name, 3);
    await expectVelocityBlocked(s, await order(s, pan), r.name, 3);
    // Another card is another key; the card is never stored, only its keyed hash.
    expect((await order(s, freshPan())).status).toBe(200);
    const events = await app.store.run((db) => db.selectFrom('fraud_events').selectAll().where('rule_id', '=', r.id).execute());
    expect(events.map((e) => e.kind)).toEqual(['attempt', 'attempt', 'attempt', 'attempt']);
    const keys = await app.store.run((db) => db.selectFrom('fraud_rule_keys').select('key_hash').where('rule_id', '=', r.id).execute());
    expect(keys).toHaveLength(2);
    for (const k of keys) expect(k.key_hash).not.toContain(pan.slice(-4));
  });

  it('declines per BIN: approvals are not counted; the payment after the threshold-th decline is refused', async () => {
    const s = await shop();
    const r = await rule(s, { name: 'BIN declines', metric: 'declines', dimension: 'bin', threshold: 2 });
    // Every sandbox decline card starts 400000; fresh 400000 numbers are approved.
    expect((await order(s, freshPan('400000'))).status).toBe(200);
    expect((await order(s, SANDBOX_CARDS.doNotHonor)).body.error.decline_code).toBe('201');
    expect((await order(s, freshPan('400000'))).status).toBe(200);
    expect((await order(s, SANDBOX_CARDS.insufficientFunds)).body.error.decline_code).toBe('202');
    expect(await gatewaySales(s.key)).toHaveLength(4);
    await expectVelocityBlocked(s, await order(s, freshPan('400000')), r.name, 4);
    // Another BIN is another key.
    expect((await order(s, freshPan('411111'))).status).toBe(200);
  });

  it('declines per e-mail, whatever its case', async () => {
    const s = await shop();
    const r = await rule(s, { name: 'Email declines', metric: 'declines', dimension: 'email', threshold: 2 });
    const who = email('Shopper');
    expect((await order(s, SANDBOX_CARDS.stolen, { email: who })).body.error.decline_code).toBe('252');
    expect((await order(s, freshPan(), { email: who.toUpperCase() })).status).toBe(200);
    expect((await order(s, SANDBOX_CARDS.lost, { email: who.toLowerCase() })).body.error.decline_code).toBe('251');
    await expectVelocityBlocked(s, await order(s, freshPan(), { email: who }), r.name, 3);
    expect((await order(s, freshPan(), { email: email('other') })).status).toBe(200);
  });

  it('declines per IP address, stored on the order; payments without one are not counted', async () => {
    const s = await shop();
    const r = await rule(s, { name: 'IP declines', metric: 'declines', dimension: 'ip_address', threshold: 2 });
    expect((await order(s, freshPan(), { ip_address: 'not-an-ip' })).status).toBe(422);
    const first = await order(s, SANDBOX_CARDS.fraud, { ip_address: '203.0.113.7' });
    expect(first.body.error.decline_code).toBe('253');
    const stored = await app.store.run((db) => db.selectFrom('orders').select('ip_address').where('id', '=', first.body.data.order_number).executeTakeFirst());
    expect(stored?.ip_address).toBe('203.0.113.7');
    expect((await order(s, SANDBOX_CARDS.pickUp)).body.error.decline_code).toBe('250');
    // An IPv4-mapped IPv6 address is the same shopper.
    expect((await order(s, SANDBOX_CARDS.overLimit, { ip_address: '::ffff:203.0.113.7' })).body.error.decline_code).toBe('203');
    await expectVelocityBlocked(s, await order(s, freshPan(), { ip_address: '203.0.113.7' }), r.name, 3);
    expect((await order(s, freshPan(), { ip_address: '2001:db8::1' })).status).toBe(200);
    expect((await order(s, freshPan())).status).toBe(200);
  });

  it('attempts per order: Process Payment on one order is refused after the threshold, other orders pay', async () => {
    const s = await shop();
    const r = await rule(s, { name: 'Order attempts', metric: 'attempts', dimension: 'order', threshold: 2 });
    const lead = await s.team.api.post('/checkout/leads', { campaign_id: s.campaignId, customer: { email: email(), ip_address: '198.51.100.4' }, products: [{ offer_id: s.offerId, quantity: 1 }] });
    expect(lead.status, lead.text).toBe(201);
    const on = lead.body.data.order_number;
    const pay = (pan: string) => s.team.api.post('/checkout/orders/payment', { order_number: on, payment: card(pan) });
    expect((await pay(SANDBOX_CARDS.doNotHonor)).body.error.decline_code).toBe('201');
    expect((await pay(SANDBOX_CARDS.insufficientFunds)).body.error.decline_code).toBe('202');
    const blocked = await pay(freshPan());
    expect(blocked.status).toBe(402);
    expect(blocked.body.error.decline_code).toBe('velocity_blocked');
    expect(blocked.body.message).toBe(`Payment declined: Blocked by fraud rule '${r.name}'`);
    expect(await gatewaySales(s.key)).toHaveLength(2);
    const txns = (await s.team.api.get(`/v1/transactions?order_number=${on}`)).body.data;
    expect(txns.map((t: { response_code: string }) => t.response_code)).toEqual(['velocity_blocked', '202', '201']);
    expect((await order(s, freshPan())).status).toBe(200);
  });

  it('counts from the window: events older than window_seconds no longer count', async () => {
    const s = await shop();
    const r = await rule(s, { name: 'Per card', metric: 'attempts', dimension: 'card_fingerprint', threshold: 1, window_seconds: 600 });
    const pan = freshPan();
    expect((await order(s, pan)).status).toBe(200);
    await expectVelocityBlocked(s, await order(s, pan), r.name, 1);
    // Ten minutes pass for this rule's events.
    await app.store.run((db) => db.updateTable('fraud_events').set({ created_at: sql`created_at - interval '601 seconds'` }).where('rule_id', '=', r.id).execute());
    expect((await order(s, pan)).status).toBe(200);
    await expectVelocityBlocked(s, await order(s, pan), r.name, 2);

    // And on the real clock, with a two-second window.
    const t = await shop();
    const short = await rule(t, { name: 'Short', metric: 'attempts', dimension: 'card_fingerprint', threshold: 1, window_seconds: 2 });
    const started = Date.now();
    expect((await order(t, pan)).status).toBe(200);
    await expectVelocityBlocked(t, await order(t, pan), short.name, 1);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + 2100 - Date.now())));
    expect((await order(t, pan)).status).toBe(200);
  });

  it('declines: a payment waiting for its gateway counts as a possible decline; a hold no attempt is left behind does not', async () => {
    const s = await shop();
    const r = await rule(s, { name: 'One decline per card', metric: 'declines', dimension: 'card_fingerprint', threshold: 1 });
    let answered = false;
    const first = order(s, SANDBOX_CARDS.slow).finally(() => (answered = true));
    const inFlight = () => app.store.run((db) => db.selectFrom('transactions').select('order_id').where('team_id', '=', s.team.teamId).where('in_flight', '=', true).executeTakeFirst());
    // Polled on a timer: awaiting the embedded database alone never yields to the server's I/O.
    let waiting = await inFlight();
    while (!waiting && !answered) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      waiting = await inFlight();
    }
    expect(waiting, 'the first payment was never seen waiting for its gateway').toBeTruthy();
    await expectVelocityBlocked(s, await order(s, SANDBOX_CARDS.slow), r.name, 0);
    expect((await first).status).toBe(200);
    // Approved: its hold is gone, nothing counts against the card.
    expect((await order(s, SANDBOX_CARDS.slow)).status).toBe(200);
    // A hold whose payment has no attempt in flight (its settlement never ran) is not counted.
    const [rule_key] = await app.store.run((db) => db.selectFrom('fraud_rule_keys').select('key_hash').where('rule_id', '=', r.id).execute());
    await app.store.run((db) => db.insertInto('fraud_events').values({ team_id: s.team.teamId, rule_id: r.id, key_hash: rule_key!.key_hash, order_id: waiting!.order_id, kind: 'hold' }).execute());
    expect((await order(s, SANDBOX_CARDS.slow)).status).toBe(200);
  });

  it('a disabled rule is not applied and counts nothing; enabled again, it counts from then', async () => {
    const s = await shop();
    const r = await rule(s, { name: 'Off', metric: 'attempts', dimension: 'card_fingerprint', threshold: 1, is_enabled: false });
    const pan = freshPan();
    for (let i = 0; i < 3; i++) expect((await order(s, pan)).status).toBe(200);
    expect((await s.team.api.patch(`/v1/fraud-rules/${r.id}`, { is_enabled: true })).status).toBe(200);
    expect((await order(s, pan)).status).toBe(200);
    await expectVelocityBlocked(s, await order(s, pan), r.name, 4);
    expect((await s.team.api.patch(`/v1/fraud-rules/${r.id}`, { threshold: 2 })).status).toBe(200);
    expect((await order(s, pan)).status).toBe(200);
  });

  it("another team's payments are not screened by this team's rules", async () => {
    const a = await shop();
    const b = await shop();
    const r = await rule(a, { name: 'A only', metric: 'attempts', dimension: 'card_fingerprint', threshold: 1 });
    const pan = freshPan();
    expect((await order(a, pan)).status).toBe(200);
    await expectVelocityBlocked(a, await order(a, pan), r.name, 1);
    for (let i = 0; i < 3; i++) expect((await order(b, pan)).status).toBe(200);
    expect(await gatewaySales(b.key)).toHaveLength(3);
  });

  it('decline salvage: one payment is one attempt, and a salvaged payment is not a decline', async () => {
    const s = await shop({ force: '202' });
    const okKey = `fraud_${process.pid}_${++keySeq}_ok`;
    const ok = await s.team.api.post('/v1/gateways', { name: 'ok', kind: 'nmi', base_url: sandbox.url, credentials: { security_key: okKey }, test_mode: true });
    const router = await s.team.api.post('/v1/payment-orchestrators', { name: 'r', members: [{ gateway_id: s.gatewayId, priority: 1 }, { gateway_id: ok.body.data.id, priority: 2 }] });
    expect(router.status, router.text).toBe(201);
    const routed = { payment_orchestrator_id: router.body.data.id };
    await rule(s, { name: 'Declines', metric: 'declines', dimension: 'card_fingerprint', threshold: 1 });
    const attempts = await rule(s, { name: 'Attempts', metric: 'attempts', dimension: 'card_fingerprint', threshold: 2 });
    const pan = freshPan();
    for (let i = 0; i < 2; i++) {
      const r = await order(s, pan, {}, routed);
      expect(r.status, r.text).toBe(200);
      expect(r.body.data.attempts).toBe(2);
    }
    expect(await gatewaySales(s.key)).toHaveLength(2);
    expect((await gatewaySales(okKey)).map((e) => e.status)).toEqual(['approved', 'approved']);
    const blocked = await order(s, pan, {}, routed);
    expect(blocked.body.message).toBe(`Payment declined: Blocked by fraud rule '${attempts.name}'`);
    expect(await gatewaySales(okKey)).toHaveLength(2);
  });

  it.each([
    ['attempts', SANDBOX_CARDS.slow, 200],
    ['declines', SANDBOX_CARDS.doNotHonor, 402],
  ] as const)('30 concurrent payments on one card with a %s threshold of 4: exactly 4 reach the gateway', async (metric, pan, status) => {
    const s = await shop();
    const r = await rule(s, { name: `Concurrent ${metric}`, metric, dimension: 'card_fingerprint', threshold: 4 });
    const rs = await Promise.all(Array.from({ length: 30 }, () => order(s, pan)));
    expect(rs.filter((x) => x.status >= 500)).toHaveLength(0);
    expect(rs.filter((x) => x.status === status && x.body.error?.decline_code !== 'velocity_blocked')).toHaveLength(4);
    const blocked = rs.filter((x) => x.body.error?.decline_code === 'velocity_blocked');
    expect(blocked).toHaveLength(26);
    for (const b of blocked) expect(b.body.message).toBe(`Payment declined: Blocked by fraud rule '${r.name}'`);
    expect(await gatewaySales(s.key)).toHaveLength(4);
  });
});
