import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_CARDS } from '../src/sandbox/cards.ts';
import { THREEDS_CARDS } from '../src/sandbox/threeds-gateway.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { email, seedFunnel } from './support/fixtures.ts';
import { ApiClient, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';
import { seedDemo } from '../src/app/seed.ts';
import { nmiLedger, nmiSandboxGateway } from './support/nmi.ts';

// $0 first payments (issue 14): a free trial or a fully discounted cart verifies and vaults the
// card (NMI validate + add_customer, the 3DS gateway's zero-amount setup) instead of sending a $0 sale.
let app: TestApp;
let team: TestTeam;
let sandbox: { url: string; close(): Promise<void> };
let seq = 0;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, slowMs: 50 });
  app = await startTestApp();
  team = await app.newTeam();
});
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});

const nmiGateway = () => nmiSandboxGateway(team, sandbox.url, { prefix: 'ft' });

const ledgerOf = (key: string) => nmiLedger(sandbox.url, key);

async function trialCampaign(gatewayId: string) {
  const f = await seedFunnel(app, team.teamId);
  await app.ctx.services.catalog.updateCampaign(team.teamId, f.campaignId, { gateway_id: gatewayId });
  return f;
}

const card = (number: string) => ({ card_number: number, card_exp: '12/39', card_cvv: '123' });

function createOrder(campaignId: string, products: Array<{ offer_id: string; quantity: number }>, payment: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return team.api.post('/checkout/orders', { campaign_id: campaignId, currency: 'USD', customer: { email: email('trial'), first_name: 'Ada', last_name: 'Lovelace' }, products, payment, ...extra });
}

function rows(orderId: string) {
  return app.store.run(async (db) => ({
    order: await db.selectFrom('orders').selectAll().where('id', '=', orderId).executeTakeFirstOrThrow(),
    transactions: await db.selectFrom('transactions').selectAll().where('order_id', '=', orderId).orderBy('seq').execute(),
    subscriptions: await db.selectFrom('subscriptions').selectAll().where('order_id', '=', orderId).execute(),
    methods: await db.selectFrom('payment_methods').selectAll().where('team_id', '=', team.teamId).execute(),
  }));
}

describe('$0 first payments by card', () => {
  it('orders the 14-day trial alone: the card is validated and vaulted at NMI, no sale, and the completed order subscribes with that card', async () => {
    const g = await nmiGateway();
    const f = await trialCampaign(g.id);
    const r = await createOrder(f.campaignId, [{ offer_id: f.offers.trial, quantity: 1 }], card(SANDBOX_CARDS.approve));
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ success: true, data: { status: 'processing', payment_status: 'completed', total: 0 } });
    expect(r.body.message).toMatch(/verified/);

    const gw = await ledgerOf(g.key);
    expect(gw.map((e) => [e.type, e.status])).toEqual([['validate', 'approved']]);
    expect(gw[0]).toMatchObject({ amount_minor: 0, last4: '1111', orderid: r.body.data.transaction_id });
    const vaultId = gw[0]!.customer_vault_id;
    expect(vaultId).toMatch(/^\d+$/);

    const txn = await team.api.get(`/v1/transactions/${r.body.data.transaction_id}`);
    expect(txn.body.data).toMatchObject({ type: 'verification', status: 'approved', amount: 0, gateway_id: g.id, provider_ref: gw[0]!.transactionid, card: { last4: '1111' } });
    const listed = await team.api.get(`/v1/transactions?type=verification&order_number=${r.body.data.order_number}`);
    expect(listed.body.data.map((t: { id: string }) => t.id)).toEqual([r.body.data.transaction_id]);

    const done = await team.api.post('/checkout/orders/complete', { order_number: r.body.data.order_number });
    expect(done.status, done.text).toBe(200);
    const { order, subscriptions, methods } = await rows(r.body.data.order_number);
    const method = methods.find((m) => m.id === order.payment_method_id);
    expect(method).toMatchObject({ gateway_id: g.id, vault_ref: vaultId, original_ref: gw[0]!.transactionid, last4: '1111', bin: '411111' });
    expect(subscriptions).toHaveLength(1);
    expect(subscriptions[0]).toMatchObject({ status: 'trialing', payment_method_id: method!.id });
    // The vault id is what rebills charge: the sandbox takes it.
    const charged = await fetch(`${sandbox.url}/api/transact.php`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ security_key: g.key, type: 'sale', amount: '29.00', customer_vault_id: vaultId! }).toString(),
    });
    expect(new URLSearchParams(await charged.text()).get('response')).toBe('1');
  });

  it("orders the demo's 14-day trial offer alone by card", async () => {
    const demo = await seedDemo(app.ctx, { sandboxUrl: sandbox.url, log: { warn: () => {} } });
    const api = new ApiClient(app.url, demo.token);
    const r = await api.post('/checkout/orders', {
      campaign_id: demo.campaign_id,
      currency: demo.currency,
      customer: { email: email('demo'), first_name: 'Ada', last_name: 'Lovelace' },
      products: [{ offer_id: demo.offers.club_trial, quantity: 1 }],
      payment: card(SANDBOX_CARDS.approve),
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ payment_status: 'completed', total: 0 });
  });

  it('verifies a fully discounted cart instead of charging $0', async () => {
    const g = await nmiGateway();
    const f = await trialCampaign(g.id);
    const coupon = await team.api.post('/v1/coupons', { code: `FREE-${process.pid}-${++seq}`, campaign_id: f.campaignId, percent_off: 100 });
    expect(coupon.status, coupon.text).toBe(201);
    const r = await createOrder(f.campaignId, [{ offer_id: f.offers.guide, quantity: 1 }], card(SANDBOX_CARDS.approve), { coupon_code: coupon.body.data.code });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ payment_status: 'completed', total: 0, discount_total: 900 });
    expect((await ledgerOf(g.key)).map((e) => [e.type, e.status, e.amount_minor])).toEqual([['validate', 'approved', 0]]);
    const { order, transactions } = await rows(r.body.data.order_number);
    expect(order.payment_method_id).toBeTruthy();
    expect(transactions.map((t) => [t.type, t.status, t.amount])).toEqual([['verification', 'approved', 0]]);
  });

  it('answers 402 for a card declined at verification and saves nothing; the order can be paid again', async () => {
    const g = await nmiGateway();
    const f = await trialCampaign(g.id);
    const r = await createOrder(f.campaignId, [{ offer_id: f.offers.trial, quantity: 1 }], card(SANDBOX_CARDS.insufficientFunds));
    expect(r.status, r.text).toBe(402);
    expect(r.body).toMatchObject({ success: false, data: { status: 'declined', payment_status: 'declined' }, error: { code: 'payment_declined', decline_code: '202' } });
    expect((await ledgerOf(g.key)).map((e) => [e.type, e.status, e.customer_vault_id])).toEqual([['validate', 'declined', null]]);
    const before = await rows(r.body.data.order_number);
    expect(before.order.payment_method_id).toBeNull();
    expect(before.methods.filter((m) => m.gateway_id === g.id)).toHaveLength(0);
    expect(before.transactions.map((t) => [t.type, t.status])).toEqual([['verification', 'declined']]);

    const again = await team.api.post('/checkout/orders/reprocess', { order_number: r.body.data.order_number, payment: card(SANDBOX_CARDS.approve) });
    expect(again.status, again.text).toBe(200);
    expect((await ledgerOf(g.key)).map((e) => [e.type, e.status])).toEqual([
      ['validate', 'declined'],
      ['validate', 'approved'],
    ]);
  });

  it('recovers a verification whose answer was lost: found by the Query API and settled like a sale', async () => {
    const g = await nmiGateway();
    const f = await trialCampaign(g.id);
    const r = await createOrder(f.campaignId, [{ offer_id: f.offers.trial, quantity: 1 }], card(SANDBOX_CARDS.approve));
    expect(r.status).toBe(200);
    const { transactions } = await rows(r.body.data.order_number);
    // Put the attempt back in flight, as if the process died after the gateway answered.
    await app.store.run((db) => db.updateTable('transactions').set({ in_flight: true, status: 'pending', response_code: 'in_flight' }).where('id', '=', transactions[0]!.id).execute());
    await app.store.run((db) => db.updateTable('orders').set({ status: 'pending', payment_status: null, payment_method_id: null }).where('id', '=', r.body.data.order_number).execute());
    const tally = await app.ctx.services.checkout.reconcile.recoverUnknownAttempts(0);
    expect(tally).toMatchObject({ approved: 1 });
    const after = await rows(r.body.data.order_number);
    expect(after.transactions[0]).toMatchObject({ type: 'verification', status: 'approved', in_flight: false });
    expect(after.order).toMatchObject({ status: 'processing', payment_status: 'completed' });
    expect(after.order.payment_method_id).toBeTruthy();
  });
});

describe('$0 first payments on the 3-D Secure gateway', () => {
  const URLS = { return_url: 'https://shop.example/3ds/return', cancel_url: 'https://shop.example/3ds/cancel' };

  async function threeDsGateway() {
    const apiKey = `sk_test_ft_${process.pid}_${++seq}`;
    const r = await team.api.post('/v1/gateways', { name: `3ds ${seq}`, kind: 'threeds', base_url: `${sandbox.url}/3ds`, credentials: { api_key: apiKey, risk_sdk_key: 'pk_test_risk' } });
    expect(r.status, r.text).toBe(201);
    return { id: r.body.data.id as string, apiKey };
  }

  async function payments(apiKey: string) {
    return ((await (await fetch(`${sandbox.url}/3ds/sandbox/ledger?api_key=${apiKey}`)).json()) as { payments: Array<Record<string, unknown>> }).payments;
  }

  it('authenticates a zero-amount setup through the redirect and Capture; the saved card carries that payment as its original reference', async () => {
    const g = await threeDsGateway();
    const f = await trialCampaign(g.id);
    const r = await createOrder(f.campaignId, [{ offer_id: f.offers.trial, quantity: 1 }], { ...card(THREEDS_CARDS.challenge), risk_session_id: 'rs_1', ...URLS });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ payment_status: 'pending_redirect', redirect_required: true });
    const [setup] = await payments(g.apiKey);
    expect(setup).toMatchObject({ amount: 0, status: 'requires_action' });

    const page = new URL(r.body.data.redirect_url);
    page.pathname += '/complete';
    page.searchParams.set('result', 'success');
    expect((await fetch(page, { redirect: 'manual' })).status).toBe(302);
    const captured = await team.api.post('/checkout/orders/capture', { order_number: r.body.data.order_number });
    expect(captured.status, captured.text).toBe(200);
    expect(captured.body.data).toMatchObject({ payment_status: 'completed' });

    const { order, transactions, methods } = await rows(r.body.data.order_number);
    expect(transactions.map((t) => [t.type, t.status, t.amount])).toEqual([['verification', 'approved', 0]]);
    const method = methods.find((m) => m.id === order.payment_method_id)!;
    expect(method).toMatchObject({ gateway_id: g.id, original_ref: setup!.id, last4: '3220' });
    expect(method.vault_ref).toMatch(/^pm_/);
    const after = await payments(g.apiKey);
    expect(after.map((p) => [p.status, p.amount, p.payment_method])).toEqual([['succeeded', 0, method.vault_ref]]);

    // A rebill on the saved card is merchant-initiated, chained to the setup: the gateway accepts it.
    const rebill = await fetch(`${sandbox.url}/3ds/v1/payments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${g.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ amount: 2900, currency: 'USD', reference: 'rb_1', payment_method: method.vault_ref, merchant_initiated: true, original_payment_id: method.original_ref }),
    });
    expect(((await rebill.json()) as { status: string }).status).toBe('succeeded');
  });

  it('saves a frictionless setup at once', async () => {
    const g = await threeDsGateway();
    const f = await trialCampaign(g.id);
    const r = await createOrder(f.campaignId, [{ offer_id: f.offers.trial, quantity: 1 }], { ...card(THREEDS_CARDS.frictionless), risk_session_id: 'rs_2', ...URLS });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ payment_status: 'completed', total: 0 });
    const { order, methods } = await rows(r.body.data.order_number);
    const [setup] = await payments(g.apiKey);
    expect(methods.find((m) => m.id === order.payment_method_id)).toMatchObject({ original_ref: setup!.id, vault_ref: setup!.payment_method });
  });
});
