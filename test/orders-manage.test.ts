/**
 * The order page's API (issue 17): one search box over orders (`GET /v1/orders?q=`), order notes,
 * the QA flag, cancelling an order no money moved for, and the webhook deliveries of an order's
 * events; each scoped by team. The dispute note of an extpay order names that order.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxApiBaseUrl } from '../src/providers/extpay/types.ts';
import { EXTPAY_CARDS } from '../src/sandbox/extpay-provider.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { payOnHostedPage } from './support/extpay.ts';
import { CARD, email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { ApiClient, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';
import { nmiSandboxGateway } from './support/nmi.ts';

let app: TestApp;
let team: TestTeam;
let other: TestTeam;
let funnel: Funnel;
let otherFunnel: Funnel;
let sandbox: { url: string; close(): Promise<void> };
let gatewayId: string;

/** Luhn-valid, ends in 4444; no gateway is asked (the order names none that approves it). */
const MASTERCARD = { card_number: '5555555555554444', card_exp: '12/39', card_cvv: '123' };
const tag = randomUUID().slice(0, 8);

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  // Webhook endpoints on loopback are allowed here, explicitly (the deliveries are listed, not sent).
  app = await startTestApp({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
  team = await app.newTeam('Order desk A');
  other = await app.newTeam('Order desk B');
  funnel = await seedFunnel(app, team.teamId);
  otherFunnel = await seedFunnel(app, other.teamId);
  gatewayId = (await nmiSandboxGateway(team, sandbox.url)).id;
}, 60_000);
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});

type Customer = { email: string; first_name?: string; last_name?: string };

async function lead(t: TestTeam, f: Funnel, customer: Customer): Promise<string> {
  const r = await t.api.post('/checkout/leads', { campaign_id: f.campaignId, customer, products: [{ offer_id: f.offers.serum, quantity: 1 }] });
  expect(r.status, r.text).toBe(201);
  return r.body.data.order_number;
}

/** A card order: paid through the sandbox gateway, or (no gateway) declined with the card's last 4 recorded. */
async function cardOrder(customer: Customer, opts: { card?: typeof CARD; paid?: boolean; t?: TestTeam; f?: Funnel } = {}): Promise<string> {
  const t = opts.t ?? team;
  const f = opts.f ?? funnel;
  const r = await t.api.post('/checkout/orders', {
    campaign_id: f.campaignId,
    currency: 'USD',
    customer,
    products: [{ offer_id: f.offers.serum, quantity: 1 }],
    payment: opts.card ?? CARD,
    ...(opts.paid ? { gateway_id: gatewayId } : {}),
  });
  expect(r.status, r.text).toBe(opts.paid ? 200 : 402);
  return r.body.data.order_number;
}

const numbers = (r: { body: { data: Array<{ order_number: string }> } }) => r.body.data.map((o) => o.order_number);
const search = (q: string, extra = '', t: TestTeam = team) => t.api.get(`/v1/orders?q=${encodeURIComponent(q)}${extra}`);
const order = async (n: string) => (await team.api.get(`/v1/orders/${n}`)).body.data;
const timeline = async (n: string, type: string) => (await order(n)).events.filter((e: { type: string }) => e.type === type);

describe('GET /v1/orders?q= (one search box)', () => {
  let grace: string;
  let graceLead: string;
  let alan: string;
  let mastercard: string;
  let otherGrace: string;

  beforeAll(async () => {
    grace = await cardOrder({ email: `grace.${tag}@navy.example`, first_name: 'Grace', last_name: 'Hopper' }, { paid: true });
    graceLead = await lead(team, funnel, { email: `grace.${tag}@navy.example` });
    alan = await cardOrder({ email: `alan.${tag}@bletchley.example`, first_name: 'Alan', last_name: 'Turing' }, { paid: true });
    mastercard = await cardOrder({ email: `kj.${tag}@nasa.example`, first_name: 'Katherine', last_name: 'Johnson' }, { card: MASTERCARD });
    otherGrace = await cardOrder({ email: `grace.${tag}@navy.example`, first_name: 'Grace', last_name: 'Hopper' }, { t: other, f: otherFunnel });
  }, 60_000);

  it('finds by customer e-mail (a prefix, any case), by first or last name prefix (any case) and by "first last"', async () => {
    expect(numbers(await search(`GRACE.${tag}@navy.example`))).toEqual([graceLead, grace]);
    expect(numbers(await search(`grace.${tag}`))).toEqual([graceLead, grace]);
    expect(numbers(await search('hopp'))).toEqual(expect.arrayContaining([grace, graceLead]));
    expect(numbers(await search('hopp'))).not.toContain(alan);
    expect(numbers(await search('ALAN'))).toContain(alan);
    expect(numbers(await search('alan'))).not.toContain(grace);
    expect(numbers(await search('Alan Tur'))).toContain(alan);
    expect(numbers(await search('alan hop'))).toEqual([]);
    // A name matches from its start, not inside it.
    expect(numbers(await search('opper'))).not.toContain(grace);
  });

  it('finds by order number, exactly or by its beginning', async () => {
    expect(numbers(await search(alan))).toEqual([alan]);
    const prefix = await search(alan.slice(0, alan.length - 3));
    expect(numbers(prefix)).toContain(alan);
    expect(numbers(prefix).every((n) => n.startsWith(alan.slice(0, alan.length - 3)))).toBe(true);
  });

  it("finds by a card's last 4 (approved or declined): only the orders paid or tried with it", async () => {
    const r = await search('4444');
    expect(numbers(r)).toEqual([mastercard]);
    const visa = numbers(await search('1111'));
    expect(visa).toEqual(expect.arrayContaining([grace, alan]));
    expect(visa).not.toContain(mastercard);
    expect(visa).not.toContain(graceLead);
  });

  it('combines with the other filters and pages with the cursor', async () => {
    expect(numbers(await search(`grace.${tag}`, '&status=lead'))).toEqual([graceLead]);
    expect(numbers(await search(`grace.${tag}`, '&status=completed'))).toEqual([]);
    const first = await search(`grace.${tag}`, '&limit=1');
    expect(numbers(first)).toEqual([graceLead]);
    expect(first.body.has_more).toBe(true);
    const second = await search(`grace.${tag}`, `&limit=1&starting_after=${graceLead}`);
    expect(numbers(second)).toEqual([grace]);
    expect(second.body.has_more).toBe(false);
  });

  it("is scoped by team: the same e-mail on another team finds only that team's order", async () => {
    expect(numbers(await search(`grace.${tag}`, '', other))).toEqual([otherGrace]);
    expect(numbers(await search(grace, '', other))).toEqual([]);
    expect(numbers(await search('1111', '', other))).toEqual([otherGrace]);
  });

  it('takes pattern characters literally and refuses an empty or overlong term (422)', async () => {
    expect(numbers(await search('%'))).toEqual([]);
    expect(numbers(await search('_'))).toEqual([]);
    expect(numbers(await search('ord_%'))).toEqual([]);
    expect((await search('\\')).status).toBe(200);
    const empty = await team.api.get('/v1/orders?q=');
    expect(empty.status).toBe(422);
    const long = await search('x'.repeat(201));
    expect(long.status).toBe(422);
    expect(long.body.success).toBe(false);
  });
});

describe('order notes', () => {
  it("adds a note to the order: the order lists it, the customer's notes include it, another order of the customer has none", async () => {
    const customer = { email: email('notes'), first_name: 'Nora', last_name: 'Notes' };
    const n = await cardOrder(customer, { paid: true });
    const sibling = await lead(team, funnel, customer);
    const added = await team.api.post(`/v1/orders/${n}/notes`, { body: '  Called about the delivery date.  ' });
    expect(added.status, added.text).toBe(201);
    expect(added.body.data).toMatchObject({ object: 'note', order_number: n, body: 'Called about the delivery date.', author: expect.stringMatching(/^token:/) });
    const listed = await team.api.get(`/v1/orders/${n}/notes`);
    expect(listed.body.data.map((x: { id: string }) => x.id)).toEqual([added.body.data.id]);
    const customerNumber = (await order(n)).customer.customer_number;
    const ofCustomer = await team.api.get(`/v1/customers/${customerNumber}/notes`);
    expect(ofCustomer.body.data).toEqual([expect.objectContaining({ id: added.body.data.id, order_number: n, customer_number: customerNumber })]);
    expect((await team.api.get(`/v1/orders/${sibling}/notes`)).body.data).toEqual([]);

    // A customer note (not about an order) is not an order's note.
    await team.api.post(`/v1/customers/${customerNumber}/notes`, { body: 'VIP' });
    expect((await team.api.get(`/v1/orders/${n}/notes`)).body.data).toHaveLength(1);

    const audit = await team.api.get('/v1/audit-log?limit=100');
    expect(audit.body.data.map((a: { action: string }) => a.action)).toContain('order.note_added');
  });

  it('refuses an empty note (422) and another team (404), writing nothing', async () => {
    const n = await lead(team, funnel, { email: email('notes') });
    expect((await team.api.post(`/v1/orders/${n}/notes`, { body: '   ' })).status).toBe(422);
    expect((await team.api.post(`/v1/orders/${n}/notes`, { body: 'x', order_id: n })).status).toBe(422);
    expect((await other.api.post(`/v1/orders/${n}/notes`, { body: 'not yours' })).status).toBe(404);
    expect((await other.api.get(`/v1/orders/${n}/notes`)).status).toBe(404);
    expect((await team.api.get(`/v1/orders/${n}/notes`)).body.data).toEqual([]);
  });

  it('a read-only token lists notes but cannot add one (403)', async () => {
    const n = await lead(team, funnel, { email: email('notes') });
    const minted = await team.api.post('/v1/api-tokens', { name: 'viewer', permissions: ['orders:view'] });
    expect(minted.status, minted.text).toBe(201);
    const viewer = new ApiClient(app.url, minted.body.data.secret);
    expect((await viewer.get(`/v1/orders/${n}/notes`)).status).toBe(200);
    const refused = await viewer.post(`/v1/orders/${n}/notes`, { body: 'no' });
    expect(refused.status).toBe(403);
    expect((await viewer.patch(`/v1/orders/${n}`, { needs_qa: true })).status).toBe(403);
    expect((await viewer.post(`/v1/orders/${n}/cancel`, {})).status).toBe(403);
  });
});

describe('PATCH /v1/orders/{order_number}: the QA flag', () => {
  it('flags with a reason, lists it in the QA queue, records who did it on the timeline; the same flag again changes nothing; clearing drops the reason', async () => {
    const n = await cardOrder({ email: email('qa') }, { paid: true });
    const flagged = await team.api.patch(`/v1/orders/${n}`, { needs_qa: true, qa_reason: 'Address looks wrong' });
    expect(flagged.status, flagged.text).toBe(200);
    expect(flagged.body.data).toMatchObject({ order_number: n, needs_qa: true, qa_reason: 'Address looks wrong' });
    expect(numbers(await team.api.get('/v1/orders?needs_qa=true&limit=100'))).toContain(n);
    const events = await timeline(n, 'qa.flagged');
    expect(events).toHaveLength(1);
    expect(events[0].data).toMatchObject({ reason: 'Address looks wrong', by: expect.stringMatching(/^token:/) });

    expect((await team.api.patch(`/v1/orders/${n}`, { needs_qa: true })).body.data.qa_reason).toBe('Address looks wrong');
    expect(await timeline(n, 'qa.flagged')).toHaveLength(1);

    const cleared = await team.api.patch(`/v1/orders/${n}`, { needs_qa: false });
    expect(cleared.body.data).toMatchObject({ needs_qa: false, qa_reason: null });
    expect(numbers(await team.api.get('/v1/orders?needs_qa=true&limit=100'))).not.toContain(n);
    expect(await timeline(n, 'qa.cleared')).toHaveLength(1);
    const audit = await team.api.get('/v1/audit-log?limit=100');
    expect(audit.body.data.filter((a: { action: string }) => a.action === 'order.qa_updated').length).toBeGreaterThanOrEqual(3);
  });

  it('refuses a reason without the flag, a missing flag, other fields (422) and another team (404)', async () => {
    const n = await lead(team, funnel, { email: email('qa') });
    for (const body of [{ needs_qa: false, qa_reason: 'x' }, {}, { needs_qa: 'yes' }, { needs_qa: true, status: 'completed' }, { needs_qa: true, qa_reason: '' }]) {
      const r = await team.api.patch(`/v1/orders/${n}`, body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.body.success).toBe(false);
    }
    expect((await other.api.patch(`/v1/orders/${n}`, { needs_qa: true })).status).toBe(404);
    const o = await order(n);
    expect(o).toMatchObject({ needs_qa: false, qa_reason: null, status: 'lead' });
  });
});

describe('POST /v1/orders/{order_number}/cancel', () => {
  it('cancels a lead once: cancelled, one timeline row, audited; again answers the cancelled order; it can no longer be paid', async () => {
    const n = await lead(team, funnel, { email: email('cancel') });
    const r = await team.api.post(`/v1/orders/${n}/cancel`, { reason: 'Customer asked by phone' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ order_number: n, status: 'cancelled' });
    const again = await team.api.post(`/v1/orders/${n}/cancel`, {});
    expect(again.status).toBe(200);
    expect(again.body.data.status).toBe('cancelled');
    const rows = await timeline(n, 'order.cancelled');
    expect(rows).toHaveLength(1);
    expect(rows[0].data).toMatchObject({ from: 'lead', reason: 'Customer asked by phone' });
    const pay = await team.api.post('/checkout/orders/payment', { order_number: n, payment: CARD, gateway_id: gatewayId });
    expect(pay.status).toBe(409);
    expect((await order(n)).transactions).toEqual([]);
    const audit = await team.api.get('/v1/audit-log?limit=100');
    expect(audit.body.data.some((a: { action: string; target: { id: string } | null }) => a.action === 'order.cancelled')).toBe(true);
  });

  it('cancels a declined order (nothing was charged)', async () => {
    const n = await cardOrder({ email: email('cancel') }, { card: MASTERCARD });
    const r = await team.api.post(`/v1/orders/${n}/cancel`, {});
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.status).toBe('cancelled');
  });

  it('refuses a paid order (409, pointing at refund and void) and changes nothing', async () => {
    const n = await cardOrder({ email: email('cancel') }, { paid: true });
    const before = await order(n);
    const r = await team.api.post(`/v1/orders/${n}/cancel`, {});
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ success: false, error: { code: 'conflict' } });
    expect(r.body.message).toMatch(/refund/i);
    expect(r.body.message).toMatch(/void/i);
    const after = await order(n);
    expect(after.status).toBe(before.status);
    expect(after.events).toHaveLength(before.events.length);
  });

  it("another team's order is not found (404) and stays as it was", async () => {
    const n = await lead(team, funnel, { email: email('cancel') });
    expect((await other.api.post(`/v1/orders/${n}/cancel`, {})).status).toBe(404);
    expect((await team.api.post(`/v1/orders/${n}/cancel`, { reason: 'x'.repeat(501) })).status).toBe(422);
    expect((await order(n)).status).toBe('lead');
  });
});

describe("GET /v1/webhook-deliveries?order_number= (an order's deliveries)", () => {
  it("lists every endpoint's deliveries of the order's events, and only them; another team sees none; a delivery replays", async () => {
    const a = await team.api.post('/v1/webhook-endpoints', { url: 'http://127.0.0.1:9/a', event_types: ['order.declined'] });
    const b = await team.api.post('/v1/webhook-endpoints', { url: 'http://127.0.0.1:9/b', event_types: ['*'] });
    expect(a.status, a.text).toBe(201);
    expect(b.status, b.text).toBe(201);
    const declined = await cardOrder({ email: email('hooks') }, { card: MASTERCARD });
    const elsewhere = await cardOrder({ email: email('hooks') }, { card: MASTERCARD });

    const r = await team.api.get(`/v1/webhook-deliveries?order_number=${declined}`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toHaveLength(2);
    expect(new Set(r.body.data.map((d: { endpoint_id: string }) => d.endpoint_id))).toEqual(new Set([a.body.data.id, b.body.data.id]));
    expect(r.body.data.every((d: { event_type: string }) => d.event_type === 'order.declined')).toBe(true);
    // One event (the order's order.declined), delivered to both endpoints.
    expect(new Set(r.body.data.map((d: { event_id: string }) => d.event_id)).size).toBe(1);
    const others = await team.api.get(`/v1/webhook-deliveries?order_number=${elsewhere}`);
    expect(others.body.data.map((d: { id: string }) => d.id)).not.toContain(r.body.data[0].id);

    const page = await team.api.get(`/v1/webhook-deliveries?order_number=${declined}&limit=1`);
    expect(page.body.has_more).toBe(true);
    const rest = await team.api.get(`/v1/webhook-deliveries?order_number=${declined}&limit=1&starting_after=${page.body.data[0].id}`);
    expect(rest.body.data.map((d: { id: string }) => d.id)).toEqual([r.body.data[1].id]);

    expect((await other.api.get(`/v1/webhook-deliveries?order_number=${declined}`)).body.data).toEqual([]);
    expect((await team.api.get('/v1/webhook-deliveries')).status).toBe(422);
    expect((await team.api.get('/v1/webhook-deliveries?order_number=cus_x')).status).toBe(422);

    const replay = await team.api.post(`/v1/webhook-deliveries/${r.body.data[0].id}/replay`);
    expect(replay.status, replay.text).toBe(202);
  });
});

describe('a dispute of an extpay order', () => {
  const COMPANY = `biz_desk${tag}`;
  const KEY = `key_desk_${tag}`;
  const SECRET = `ws_desk_${tag}`;

  it('flags the order and writes a system note that names the order (listed among its notes)', async () => {
    const control = `${sandbox.url}/extpay/sandbox/sandbox`;
    const post = async (url: string, body: unknown) => {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: res.status, body: (await res.json().catch(() => null)) as any };
    };
    const company = await post(`${control}/companies`, {
      company_id: COMPANY,
      api_keys: [{ key: KEY }],
      webhook_url: `${app.url}/webhooks/extpay`,
      webhook_secret: SECRET,
      webhook_retry_delays_ms: [0, 300, 1000, 2000],
      charge_settle_ms: 50,
    });
    expect(company.status).toBe(200);
    const c = await team.api.post('/v1/extpay-connections', { name: 'Desk sandbox', api_key: KEY, company_id: COMPANY, environment: 'Sandbox', webhook_secret: SECRET, base_url: sandboxApiBaseUrl(sandbox.url, 'sandbox') });
    expect(c.status, c.text).toBe(201);
    const created = await team.api.post('/checkout/orders', {
      campaign_id: funnel.campaignId,
      currency: 'USD',
      customer: { email: email('dispute'), first_name: 'Dee', last_name: 'Spute' },
      products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
      payment: { method: 'extpay', return_url: 'https://shop.example/thanks' },
    });
    expect(created.status, created.text).toBe(200);
    const n = created.body.data.order_number as string;
    const receipt = await payOnHostedPage(created.body.data.checkout.purchase_url, EXTPAY_CARDS.paid);
    expect(receipt).toBeTruthy();
    const until = async (what: string, ok: (o: any) => boolean) => {
      const deadline = Date.now() + 20_000;
      for (;;) {
        const o = await order(n);
        if (ok(o)) return o;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    await until('completed', (o) => o.status === 'completed');
    expect((await post(`${control}/payments/${receipt}/disputes`, { status: 'warning_needs_response', reason: 'fraudulent' })).status).toBe(200);
    const flagged = await until('QA flag', (o) => o.needs_qa === true);
    expect(numbers(await team.api.get('/v1/orders?needs_qa=true&limit=100'))).toContain(n);
    const notes = (await team.api.get(`/v1/orders/${n}/notes`)).body.data;
    expect(notes).toEqual([expect.objectContaining({ author: 'system', order_number: n, customer_number: flagged.customer.customer_number, body: expect.stringMatching(/Dispute opened/) })]);
  }, 60_000);
});
