/**
 * Rebills of subscriptions whose first payment went through the 3-D Secure card gateway (spec §4.1
 * rule 7): merchant-initiated on the saved card, chained to the original authenticated payment,
 * never redirected; its soft and hard declines drive dunning like the NMI gateway's.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/app/clock.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { THREEDS_CARDS } from '../src/sandbox/threeds-gateway.ts';
import { email, seedFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

let app: TestApp;
let team: TestTeam;
let sandbox: { url: string; close(): Promise<void> };
let seq = 0;
const clock = new ManualClock();
const URLS = { return_url: 'https://shop.example/3ds/return', cancel_url: 'https://shop.example/3ds/cancel' };

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  clock.set(new Date('2027-05-03T09:00:00Z'));
  app = await startTestApp({}, { clock });
  team = await app.newTeam();
});
afterEach(async () => {
  await app.store.run((db) => db.updateTable('subscriptions').set({ status: 'cancelled', next_billing_at: null, retry_at: null }).where('team_id', '=', team.teamId).execute());
});
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});

/** A 3DS gateway on the sandbox as a new funnel's campaign gateway. */
async function funnelOn3ds() {
  const apiKey = `sk_test_rebill_${process.pid}_${++seq}`;
  const g = await team.api.post('/v1/gateways', { name: `3ds ${seq}`, kind: 'threeds', base_url: `${sandbox.url}/3ds`, credentials: { api_key: apiKey, risk_sdk_key: 'pk_test_risk' } });
  expect(g.status, g.text).toBe(201);
  await fetch(`${sandbox.url}/3ds/sandbox/accounts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: apiKey }) });
  const f = await seedFunnel(app, team.teamId);
  await app.ctx.services.catalog.updateCampaign(team.teamId, f.campaignId, { gateway_id: g.body.data.id });
  return { f, apiKey };
}

async function payments(apiKey: string) {
  const r = await fetch(`${sandbox.url}/3ds/sandbox/ledger?api_key=${apiKey}`);
  return ((await r.json()) as { payments: Array<{ id: string; status: string }> }).payments;
}

async function wire(apiKey: string, id: string) {
  const r = await fetch(`${sandbox.url}/3ds/v1/payments/${id}`, { headers: { authorization: `Bearer ${apiKey}` } });
  return (await r.json()) as { status: string; merchant_initiated?: boolean; original_payment_id?: string | null };
}

/** The serum and the 14-day trial, paid with `number` (a challenge is passed on the hosted page), captured and completed. */
async function subscribe(f: Awaited<ReturnType<typeof funnelOn3ds>>['f'], number: string) {
  const r = await team.api.post('/checkout/orders', {
    campaign_id: f.campaignId,
    currency: 'USD',
    customer: { email: email('3dsrebill'), first_name: 'Ada', last_name: 'Lovelace' },
    products: [
      { offer_id: f.offers.serum, quantity: 1 },
      { offer_id: f.offers.trial, quantity: 1 },
    ],
    payment: { card_number: number, card_exp: '12/39', card_cvv: '123', risk_session_id: `rs_${++seq}`, ...URLS },
  });
  expect(r.status, r.text).toBe(200);
  const on = r.body.data.order_number as string;
  if (r.body.data.redirect_required) {
    const u = new URL(r.body.data.redirect_url);
    u.pathname += '/complete';
    u.searchParams.set('result', 'success');
    await fetch(u, { redirect: 'manual' });
    const cap = await team.api.post('/checkout/orders/capture', { order_number: on });
    expect(cap.status, cap.text).toBe(200);
  } else {
    expect((await team.api.post('/checkout/orders/complete', { order_number: on })).status).toBe(200);
  }
  const subs = (await team.api.get(`/v1/subscriptions?order_number=${on}`)).body.data;
  expect(subs).toHaveLength(1);
  return subs[0] as { id: string; next_billing_at: string };
}

const run = () => app.ctx.services.checkout.rebill.runDue();
const row = (id: string) => app.store.run((db) => db.selectFrom('subscriptions').selectAll().where('id', '=', id).executeTakeFirstOrThrow());

describe('rebills on the 3-D Secure gateway', () => {
  it('are merchant-initiated, chained to the original authenticated payment, never redirected — every cycle', async () => {
    clock.set(new Date('2027-05-03T09:00:00Z'));
    const { f, apiKey } = await funnelOn3ds();
    const s = await subscribe(f, THREEDS_CARDS.challenge);
    const [first] = await payments(apiKey);
    expect(first).toMatchObject({ status: 'succeeded' });

    for (const cycle of [1, 2]) {
      clock.set(new Date(new Date((await row(s.id)).next_billing_at!).getTime() + 60_000));
      expect((await run()).charged, `cycle ${cycle}`).toBe(1);
      expect(await row(s.id)).toMatchObject({ status: 'active', cycle });
    }
    const all = await payments(apiKey);
    expect(all).toHaveLength(3);
    for (const p of all.slice(1)) {
      expect(await wire(apiKey, p.id)).toMatchObject({ status: 'succeeded', merchant_initiated: true, original_payment_id: first!.id });
    }
    // Nothing waits for a customer: no rebill order is pending a redirect.
    const orders = await app.store.run((db) => db.selectFrom('orders').select(['status', 'payment_status']).where('subscription_id', '=', s.id).execute());
    expect(orders).toEqual([
      { status: 'completed', payment_status: 'completed' },
      { status: 'completed', payment_status: 'completed' },
    ]);
  });

  it('a soft decline of a rebill is retried; a hard one (recurring payments stopped) cancels at once', async () => {
    clock.set(new Date('2027-07-03T09:00:00Z'));
    const { f } = await funnelOn3ds();
    const soft = await subscribe(f, THREEDS_CARDS.rebillSoftDecline);
    const hard = await subscribe(f, THREEDS_CARDS.rebillHardDecline);
    clock.set(new Date(new Date(soft.next_billing_at).getTime() + 60_000));
    const t = await run();
    expect(t).toMatchObject({ due: 2, declined: 2 });
    expect(await row(soft.id)).toMatchObject({ status: 'past_due', retry_count: 1 });
    expect((await row(soft.id)).retry_at).not.toBeNull();
    expect(await row(hard.id)).toMatchObject({ status: 'cancelled', end_reason: 'hard_decline', retry_at: null });
  });
});
