/**
 * A payment router's members carry their gateway's month-to-date volume (the dashboard's Routers
 * page shows it against the member's cap): approved sales this UTC month, declines not counted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_CARDS } from '../src/sandbox/cards.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { email } from './support/fixtures.ts';
import { type ApiResponse, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

let app: TestApp;
let team: TestTeam;
let other: TestTeam;
let sandbox: { url: string; close(): Promise<void> };
let keySeq = 0;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  app = await startTestApp();
  team = await app.newTeam('Volume team');
  other = await app.newTeam('Other team');
});
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});

function created(r: ApiResponse) {
  expect(r.status, r.text).toBe(201);
  return r.body.data;
}

async function gateway(t: TestTeam, opts: { force?: string; monthly_cap?: number } = {}): Promise<string> {
  const key = `vol_${process.pid}_${++keySeq}_0123456789`;
  if (opts.force) {
    await fetch(`${sandbox.url}/sandbox/nmi/accounts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ security_key: key, force_response_code: opts.force }) });
  }
  const body = { name: `gw ${keySeq}`, kind: 'nmi', base_url: sandbox.url, credentials: { security_key: key }, test_mode: true, ...(opts.monthly_cap ? { monthly_cap: opts.monthly_cap } : {}) };
  return created(await t.api.post('/v1/gateways', body)).id;
}

async function funnel(t: TestTeam, routerId: string) {
  const campaign = created(await t.api.post('/v1/campaigns', { name: 'Volume funnel', currency: 'USD', payment_orchestrator_id: routerId }));
  const product = created(await t.api.post('/v1/products', { name: 'Serum' }));
  const offer = created(await t.api.post('/v1/offers', { campaign_id: campaign.id, product_id: product.id, name: 'Serum', price: 2500, shipping: 500, billing: 'one_time', fulfillment_type: 'physical' }));
  return { campaign: campaign.id as string, offer: offer.id as string };
}

function order(t: TestTeam, f: { campaign: string; offer: string }, pan: string, quantity: number) {
  return t.api.post('/checkout/orders', {
    campaign_id: f.campaign,
    currency: 'USD',
    customer: { email: email('vol'), first_name: 'Ada', last_name: 'Lovelace' },
    products: [{ offer_id: f.offer, quantity }],
    payment: { card_number: pan, card_exp: '12/39', card_cvv: '123' },
  });
}

describe('router members: month_to_date_volume', () => {
  it("after two approved charges through a router, the member's month_to_date_volume equals their sum; declines count nowhere", async () => {
    const soft = await gateway(team, { force: '202' }); // declines every charge, retryably: the router moves on
    const ok = await gateway(team, { monthly_cap: 1_000_000 });
    const router = created(
      await team.api.post('/v1/payment-orchestrators', {
        name: 'Volume router',
        strategy: 'priority',
        max_attempts: 2,
        members: [
          { gateway_id: soft, priority: 1 },
          { gateway_id: ok, priority: 2, monthly_cap: 500_000 },
        ],
      }),
    );
    expect(router.members.map((m: { month_to_date_volume: number }) => m.month_to_date_volume)).toEqual([0, 0]);
    const f = await funnel(team, router.id);

    const first = await order(team, f, SANDBOX_CARDS.approve, 1);
    expect(first.status, first.text).toBe(200);
    const second = await order(team, f, SANDBOX_CARDS.approve, 3);
    expect(second.status, second.text).toBe(200);
    // Declined on both members (soft, then a hard decline on the second): adds to no one's volume.
    const declined = await order(team, f, SANDBOX_CARDS.doNotHonor, 2);
    expect(declined.status, declined.text).toBe(402);

    const sum = first.body.data.total + second.body.data.total;
    expect(second.body.data.total).toBeGreaterThan(first.body.data.total);

    const one = await team.api.get(`/v1/payment-orchestrators/${router.id}`);
    expect(one.status, one.text).toBe(200);
    const byGateway = Object.fromEntries(one.body.data.members.map((m: { gateway_id: string; month_to_date_volume: number }) => [m.gateway_id, m.month_to_date_volume]));
    expect(byGateway).toEqual({ [soft]: 0, [ok]: sum });
    expect(one.body.data.members.find((m: { gateway_id: string }) => m.gateway_id === ok)).toMatchObject({ monthly_cap: 500_000, month_to_date_volume: sum });

    // The list and a PATCH answer the same numbers.
    const list = await team.api.get('/v1/payment-orchestrators');
    expect(list.body.data.find((r: { id: string }) => r.id === router.id).members).toEqual(one.body.data.members);
    const patched = await team.api.patch(`/v1/payment-orchestrators/${router.id}`, { name: 'Renamed' });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.data.members).toEqual(one.body.data.members);
  });

  it("another team's router over its own gateway sees none of this team's volume", async () => {
    const gw = await gateway(other);
    const router = created(await other.api.post('/v1/payment-orchestrators', { name: 'Theirs', members: [{ gateway_id: gw }] }));
    expect(router.members[0].month_to_date_volume).toBe(0);
    const f = await funnel(other, router.id);
    const r = await order(other, f, SANDBOX_CARDS.approve, 1);
    expect(r.status, r.text).toBe(200);
    const after = await other.api.get(`/v1/payment-orchestrators/${router.id}`);
    expect(after.body.data.members[0].month_to_date_volume).toBe(r.body.data.total);
  });
});
