import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_CARDS } from '../src/sandbox/cards.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

let app: TestApp;
let team: TestTeam;
let funnel: Funnel;
let sandbox: { url: string; close(): Promise<void> };
let keySeq = 0;

interface LedgerEntry {
  transactionid: string;
  type: string;
  status: string;
  response_code: string;
  amount_minor?: number;
  customer_vault_id?: string | null;
  last4?: string | null;
}

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, slowMs: 200 });
  app = await startTestApp();
  team = await app.newTeam();
  funnel = await seedFunnel(app, team.teamId);
});
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});

const card = (number: string) => ({ card_number: number, card_exp: '12/39', card_cvv: '123' });

async function gateway(opts: { force?: string; test_mode?: boolean; is_active?: boolean; monthly_cap?: number } = {}) {
  const key = `key_${process.pid}_${++keySeq}`;
  if (opts.force) await fetch(`${sandbox.url}/sandbox/nmi/accounts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ security_key: key, force_response_code: opts.force }) });
  const r = await team.api.post('/v1/gateways', {
    name: `gw ${keySeq}`,
    kind: 'nmi',
    base_url: sandbox.url,
    credentials: { security_key: key },
    test_mode: opts.test_mode ?? true,
    is_active: opts.is_active ?? true,
    ...(opts.monthly_cap ? { monthly_cap: opts.monthly_cap } : {}),
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return { id: r.body.data.id as string, key };
}

async function router(members: string[], opts: { max_attempts?: number } = {}) {
  const r = await team.api.post('/v1/payment-orchestrators', {
    name: `router ${++keySeq}`,
    strategy: 'priority',
    max_attempts: opts.max_attempts ?? 3,
    members: members.map((gateway_id, i) => ({ gateway_id, priority: i + 1 })),
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data.id as string;
}

async function ledger(key: string): Promise<LedgerEntry[]> {
  const r = await fetch(`${sandbox.url}/sandbox/nmi/ledger?security_key=${encodeURIComponent(key)}`);
  return ((await r.json()) as { transactions: LedgerEntry[] }).transactions;
}
const sales = async (key: string) => (await ledger(key)).filter((e) => e.type === 'sale');
const approvedSales = async (key: string) => (await sales(key)).filter((e) => e.status === 'approved');

async function campaign(opts: { gateway_id?: string; payment_orchestrator_id?: string } = {}) {
  const c = await app.ctx.services.catalog.createCampaign(team.teamId, { name: 'c', currency: 'USD', ...opts });
  const p = await app.ctx.services.catalog.createProduct(team.teamId, { name: 'p' });
  const offer = await app.ctx.services.catalog.createOffer(team.teamId, { campaign_id: c.id, product_id: p.id, name: 'o', price: 2500, shipping: 500, billing: 'one_time', fulfillment_type: 'physical' });
  const upOffer = await app.ctx.services.catalog.createOffer(team.teamId, { campaign_id: c.id, product_id: p.id, name: 'up', price: 1000, shipping: 0, billing: 'one_time', fulfillment_type: 'digital' });
  const upsell = await app.ctx.services.catalog.createUpsell(team.teamId, { campaign_id: c.id, offer_id: upOffer.id, step: 1, name: 'up' });
  return { id: c.id, offer: offer.id, upsell: upsell.id };
}

function createOrder(c: { id: string; offer: string }, pan: string, extra: Record<string, unknown> = {}) {
  return team.api.post('/checkout/orders', {
    campaign_id: c.id,
    currency: 'USD',
    customer: { email: email('card'), first_name: 'Ada', last_name: 'Lovelace' },
    products: [{ offer_id: c.offer, quantity: 1 }],
    payment: card(pan),
    ...extra,
  });
}

describe('card payments through the NMI-compatible sandbox', () => {
  it('approves, saves the card in the gateway vault and records the charge', async () => {
    const g = await gateway();
    const c = await campaign({ gateway_id: g.id });
    const r = await createOrder(c, SANDBOX_CARDS.approve);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ success: true, message: 'Payment approved.', data: { status: 'processing', payment_status: 'completed', total: 3000 } });
    const [sale] = await sales(g.key);
    expect(sale).toMatchObject({ status: 'approved', response_code: '100' });
    expect(sale!.customer_vault_id).toBeTruthy();
    const txn = await team.api.get(`/v1/transactions/${r.body.data.transaction_id}`);
    expect(txn.body.data).toMatchObject({ status: 'approved', amount: 3000, gateway_id: g.id, provider_ref: sale!.transactionid, card: { last4: '1111' } });
    const pm = await app.store.run((db) => db.selectFrom('payment_methods').selectAll().where('team_id', '=', team.teamId).where('vault_ref', '=', sale!.customer_vault_id!).executeTakeFirst());
    expect(pm).toMatchObject({ gateway_id: g.id, last4: '1111', bin: '411111' });
  });

  it.each([
    ['doNotHonor', '201'],
    ['insufficientFunds', '202'],
    ['overLimit', '203'],
    ['pickUp', '250'],
    ['lost', '251'],
    ['stolen', '252'],
    ['fraud', '253'],
    ['processingError', '400'],
  ] as const)('declines %s with code %s and leaves the order payable', async (name, code) => {
    const g = await gateway();
    const c = await campaign({ gateway_id: g.id });
    const r = await createOrder(c, SANDBOX_CARDS[name]);
    expect(r.status).toBe(402);
    expect(r.body).toMatchObject({ success: false, data: { status: 'declined', payment_status: 'declined' }, error: { code: 'payment_declined', decline_code: code } });
    expect(await approvedSales(g.key)).toHaveLength(0);
    const again = await team.api.post('/checkout/orders/payment', { order_number: r.body.data.order_number, payment: card(SANDBOX_CARDS.approve) });
    expect(again.status).toBe(200);
  });

  it('salvage cascades only on retryable declines and stops at max_attempts', async () => {
    const soft1 = await gateway({ force: '202' });
    const soft2 = await gateway({ force: '201' });
    const ok = await gateway();
    const salvaged = await createOrder(await campaign({ payment_orchestrator_id: await router([soft1.id, soft2.id, ok.id]) }), SANDBOX_CARDS.approve);
    expect(salvaged.status).toBe(200);
    expect(salvaged.body.data.attempts).toBe(3);
    expect((await sales(soft1.key)).map((e) => e.status)).toEqual(['declined']);
    expect((await sales(soft2.key)).map((e) => e.status)).toEqual(['declined']);
    expect(await approvedSales(ok.key)).toHaveLength(1);
    const txns = (await team.api.get(`/v1/transactions?order_number=${salvaged.body.data.order_number}&limit=10`)).body.data;
    expect(txns.map((t: { attempt: number; status: string }) => `${t.attempt}:${t.status}`).reverse()).toEqual(['1:declined', '2:declined', '3:approved']);

    // A hard decline is never salvaged.
    const ok2 = await gateway();
    const hard = await createOrder(await campaign({ payment_orchestrator_id: await router([ok2.id, ok.id]) }), SANDBOX_CARDS.stolen);
    expect(hard.status).toBe(402);
    expect(hard.body.data.attempts).toBe(1);
    expect(await approvedSales(ok.key)).toHaveLength(1);

    // The limit: two attempts, the third member is never called.
    const s1 = await gateway({ force: '202' });
    const s2 = await gateway({ force: '202' });
    const untouched = await gateway();
    const limited = await createOrder(await campaign({ payment_orchestrator_id: await router([s1.id, s2.id, untouched.id], { max_attempts: 2 }) }), SANDBOX_CARDS.approve);
    expect(limited.status).toBe(402);
    expect(limited.body.data.attempts).toBe(2);
    expect(await ledger(untouched.key)).toHaveLength(0);
  });

  it('routes by precedence: explicit gateway, explicit router, campaign router, campaign gateway', async () => {
    const campaignGw = await gateway();
    const routerGw = await gateway();
    const explicitGw = await gateway();
    const explicitRouterGw = await gateway();
    const c = await campaign({ gateway_id: campaignGw.id, payment_orchestrator_id: await router([routerGw.id]) });
    const explicitRouter = await router([explicitRouterGw.id]);

    expect((await createOrder(c, SANDBOX_CARDS.approve, { gateway_id: explicitGw.id })).status).toBe(200);
    expect(await approvedSales(explicitGw.key)).toHaveLength(1);
    expect((await createOrder(c, SANDBOX_CARDS.approve, { payment_orchestrator_id: explicitRouter })).status).toBe(200);
    expect(await approvedSales(explicitRouterGw.key)).toHaveLength(1);
    expect((await createOrder(c, SANDBOX_CARDS.approve)).status).toBe(200);
    expect(await approvedSales(routerGw.key)).toHaveLength(1);
    const gatewayOnly = await campaign({ gateway_id: campaignGw.id });
    expect((await createOrder(gatewayOnly, SANDBOX_CARDS.approve)).status).toBe(200);
    expect(await approvedSales(campaignGw.key)).toHaveLength(1);
    // An explicit id of nothing the team owns is refused before any charge.
    expect((await createOrder(c, SANDBOX_CARDS.approve, { gateway_id: 'gw_nope' })).status).toBe(422);
  });

  it('skips inactive and capped gateways; nothing routable is a clear decline, not a 500', async () => {
    const inactive = await gateway({ is_active: false });
    const capped = await gateway({ monthly_cap: 1000 });
    const c = await campaign({ payment_orchestrator_id: await router([inactive.id, capped.id]) });
    const r = await createOrder(c, SANDBOX_CARDS.approve);
    expect(r.status).toBe(402);
    expect(r.body.error.decline_code).toBe('no_route');
    expect(r.body.message).toMatch(/inactive/);
    expect(r.body.message).toMatch(/monthly cap reached/);
    expect(await ledger(inactive.key)).toHaveLength(0);
    expect(await ledger(capped.key)).toHaveLength(0);
  });

  it('a BIN block declines before any gateway call and records the attempt', async () => {
    const g = await gateway();
    const c = await campaign({ gateway_id: g.id });
    const block = await team.api.post('/v1/bin-blacklist', { prefix: SANDBOX_CARDS.doNotHonor.slice(0, 6), reason: 'fraud ring' });
    expect(block.status).toBe(201);
    const r = await createOrder(c, SANDBOX_CARDS.doNotHonor);
    expect(r.status).toBe(402);
    expect(r.body.error.decline_code).toBe('bin_blocked');
    expect(r.body.message).toMatch(/BIN .* is blocked/);
    expect(await ledger(g.key)).toHaveLength(0);
    const txns = (await team.api.get(`/v1/transactions?order_number=${r.body.data.order_number}`)).body.data;
    expect(txns).toHaveLength(1);
    expect(txns[0]).toMatchObject({ status: 'declined', response_code: 'bin_blocked', gateway_id: null });
    await team.api.delete(`/v1/bin-blacklist/${block.body.data.id}`);
  });

  it('a listed test card is approved on a production gateway without reaching it, and marks the order test', async () => {
    const production = await gateway({ test_mode: false });
    const c = await campaign({ gateway_id: production.id });
    const testPan = '4242424242424242';
    expect((await team.api.post('/v1/test-cards', { card_number: testPan, label: 'QA' })).status).toBe(201);
    const r = await createOrder(c, testPan);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ is_test: true, payment_status: 'completed' });
    const txn = (await team.api.get(`/v1/transactions/${r.body.data.transaction_id}`)).body.data;
    expect(txn).toMatchObject({ is_test: true, status: 'approved', response_code: 'test_card' });
    // The upsell on a test card does not reach the gateway either.
    const up = await team.api.post('/checkout/orders/upsell', { order_number: r.body.data.order_number, upsell_id: c.upsell, quantity: 1 });
    expect(up.status).toBe(200);
    expect(await ledger(production.key)).toHaveLength(0);
  });

  it('charges an upsell on the saved card without card fields, once per upsell', async () => {
    const g = await gateway();
    const c = await campaign({ gateway_id: g.id });
    const first = await createOrder(c, SANDBOX_CARDS.approve);
    const on = first.body.data.order_number;
    const up = await team.api.post('/checkout/orders/upsell', { order_number: on, upsell_id: c.upsell, quantity: 2 });
    expect(up.status, up.text).toBe(200);
    expect(up.body).toMatchObject({ success: true, message: 'Upsell added.', data: { total: 5000, subtotal: 4500 } });
    expect(up.body.data.lines).toHaveLength(2);
    const entries = await sales(g.key);
    expect(entries).toHaveLength(2);
    expect(entries[1]).toMatchObject({ status: 'approved', customer_vault_id: entries[0]!.customer_vault_id });
    expect(entries[1]!.amount_minor).toBe(2000);

    const repeat = await team.api.post('/checkout/orders/upsell', { order_number: on, upsell_id: c.upsell, quantity: 2 });
    expect(repeat.status).toBe(200);
    expect(repeat.text).toBe(up.text);
    expect(await sales(g.key)).toHaveLength(2);

    const withCard = await team.api.post('/checkout/orders/upsell', { order_number: on, upsell_id: c.upsell, quantity: 1, payment: card(SANDBOX_CARDS.approve) });
    expect(withCard.status).toBe(422);
  });

  it('race: two upsells and a repeat of one at once on each of many orders: each charged once, every line added, totals from all of them', async () => {
    const g = await gateway();
    const c = await campaign({ gateway_id: g.id });
    const second = await app.ctx.services.catalog.createOffer(team.teamId, { campaign_id: c.id, product_id: (await app.ctx.services.catalog.createProduct(team.teamId, { name: 'p2' })).id, name: 'up2', price: 700, shipping: 100, billing: 'one_time', fulfillment_type: 'physical' });
    const upsell2 = (await app.ctx.services.catalog.createUpsell(team.teamId, { campaign_id: c.id, offer_id: second.id, step: 2, name: 'up2' })).id;
    const orders: string[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await createOrder(c, SANDBOX_CARDS.approve);
      expect(r.status, r.text).toBe(200);
      orders.push(r.body.data.order_number);
    }
    // On each order at once: the first upsell twice and the second once. Each answer phase races the
    // others for the order's lock; one that finds the order changed since its phase 1 answers the ordinary way.
    const up = (on: string, id: string) => team.api.post('/checkout/orders/upsell', { order_number: on, upsell_id: id, quantity: 1 });
    const answers = await Promise.all(orders.flatMap((on) => [up(on, c.upsell), up(on, c.upsell), up(on, upsell2)]));
    expect(answers.filter((r) => r.status >= 500)).toEqual([]);
    for (const [i, on] of orders.entries()) {
      const [a, b, z] = answers.slice(3 * i, 3 * i + 3);
      // The repeat of the first upsell: its answer, or 409 while that one was still being charged.
      expect([a!.status, b!.status].sort()).toEqual(a!.status === b!.status ? [200, 200] : [200, 409]);
      expect(z!.status, z!.text).toBe(200);
      const o = (await team.api.get(`/v1/orders/${on}`)).body.data;
      expect(o.lines).toHaveLength(3);
      expect(o).toMatchObject({ subtotal: 2500 + 1000 + 700, shipping_total: 500 + 100, total: 4800 });
    }
    // One first payment and two upsells per order reached the gateway, and nothing more.
    expect(await approvedSales(g.key)).toHaveLength(orders.length * 3);
  });

  it('a declined upsell adds nothing, answers 402, and repeating it does not charge again', async () => {
    const key = `key_${process.pid}_${++keySeq}_up`;
    const r = await team.api.post('/v1/gateways', { name: 'g', kind: 'nmi', base_url: sandbox.url, credentials: { security_key: key }, test_mode: true });
    const c = await campaign({ gateway_id: r.body.data.id });
    const first = await createOrder(c, SANDBOX_CARDS.approve);
    await fetch(`${sandbox.url}/sandbox/nmi/accounts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ security_key: key, force_response_code: '202' }) });
    const up = await team.api.post('/checkout/orders/upsell', { order_number: first.body.data.order_number, upsell_id: c.upsell, quantity: 1 });
    expect(up.status).toBe(402);
    expect(up.body).toMatchObject({ success: false, data: { total: 3000 } });
    expect(up.body.data.lines).toHaveLength(1);
    const again = await team.api.post('/checkout/orders/upsell', { order_number: first.body.data.order_number, upsell_id: c.upsell, quantity: 1 });
    expect(again.text).toBe(up.text);
    expect(await sales(key)).toHaveLength(2);
  });

  it('refuses an upsell before payment and without a saved card', async () => {
    const g = await gateway();
    const c = await campaign({ gateway_id: g.id });
    const lead = await team.api.post('/checkout/leads', { campaign_id: c.id, customer: { email: email() }, products: [{ offer_id: c.offer, quantity: 1 }] });
    const r = await team.api.post('/checkout/orders/upsell', { order_number: lead.body.data.order_number, upsell_id: c.upsell, quantity: 1 });
    expect(r.status).toBe(409);
    const foreign = await team.api.post('/checkout/orders/upsell', { order_number: lead.body.data.order_number, upsell_id: funnel.upsellId, quantity: 1 });
    expect([409, 422]).toContain(foreign.status);
  });

  it('Reprocess Payment pays a declined order again and refuses any other', async () => {
    const g = await gateway();
    const c = await campaign({ gateway_id: g.id });
    const declined = await createOrder(c, SANDBOX_CARDS.insufficientFunds);
    const on = declined.body.data.order_number;
    const r = await team.api.post('/checkout/orders/reprocess', { order_number: on, payment: card(SANDBOX_CARDS.approve), is_throttle: true });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ payment_status: 'completed', is_throttled: true });
    const again = await team.api.post('/checkout/orders/reprocess', { order_number: on, payment: card(SANDBOX_CARDS.approve) });
    expect(again.status).toBe(409);
    expect(await approvedSales(g.key)).toHaveLength(1);
  });

  it('refunds in part and in full, never above what was captured; voids an unrefunded charge', async () => {
    const g = await gateway();
    const c = await campaign({ gateway_id: g.id });
    const paid = await createOrder(c, SANDBOX_CARDS.approve);
    const on = paid.body.data.order_number;
    const over = await team.api.post(`/v1/orders/${on}/refunds`, { amount: 3001 });
    expect(over.status).toBe(422);
    expect(over.body.error.fields[0].path).toBe('amount');
    const part = await team.api.post(`/v1/orders/${on}/refunds`, { amount: 1000, reason: 'damaged' });
    expect(part.status, part.text).toBe(201);
    expect(part.body.data.refund).toMatchObject({ type: 'refund', status: 'approved', amount: 1000 });
    expect(part.body.data.order).toMatchObject({ refunded_total: 1000, status: 'processing' });
    expect((await team.api.post(`/v1/orders/${on}/refunds`, { amount: 2001 })).status).toBe(422);
    const rest = await team.api.post(`/v1/orders/${on}/refunds`, {});
    expect(rest.status).toBe(201);
    expect(rest.body.data.refund.amount).toBe(2000);
    expect(rest.body.data.order).toMatchObject({ refunded_total: 3000, status: 'refunded' });
    expect((await team.api.post(`/v1/orders/${on}/refunds`, { amount: 1 })).status).toBe(409);
    expect((await ledger(g.key)).filter((e) => e.type === 'refund' && e.status === 'approved')).toHaveLength(2);

    const other = await createOrder(c, SANDBOX_CARDS.approve);
    const v = await team.api.post(`/v1/orders/${other.body.data.order_number}/void`, {});
    expect(v.status, v.text).toBe(201);
    expect(v.body.data.order.status).toBe('cancelled');
    expect((await ledger(g.key)).filter((e) => e.type === 'void')).toHaveLength(1);
    expect((await team.api.post(`/v1/orders/${other.body.data.order_number}/refunds`, {})).status).toBe(409);
  });

  it('20 concurrent Process Payments on one order charge at most once', async () => {
    const g = await gateway();
    const c = await campaign({ gateway_id: g.id });
    const lead = await team.api.post('/checkout/leads', { campaign_id: c.id, customer: { email: email() }, products: [{ offer_id: c.offer, quantity: 1 }] });
    const rs = await Promise.all(
      Array.from({ length: 20 }, () => team.api.post('/checkout/orders/payment', { order_number: lead.body.data.order_number, payment: card(SANDBOX_CARDS.slow) })),
    );
    expect(rs.filter((r) => r.status >= 500)).toHaveLength(0);
    expect(rs.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of rs.filter((x) => x.status !== 200)) expect(r.body.error.code).toMatch(/payment_in_progress|order_not_payable/);
    expect(await approvedSales(g.key)).toHaveLength(1);
  });
});
