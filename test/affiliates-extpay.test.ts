import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxApiBaseUrl } from '../src/providers/extpay/types.ts';
import { EXTPAY_CARDS } from '../src/sandbox/extpay-provider.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { createAffiliate, listAll } from './support/affiliates.ts';
import { email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { payOnHostedPage } from './support/extpay.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

// The conversion where an extpay first payment is finalized (the provider's payment.succeeded), and
// a chargeback recorded from the provider's dispute reversing the commission. A Production
// connection (on the sandbox's production environment) takes live orders; a Sandbox connection's
// orders are test orders, and a test order is no conversion.

let app: TestApp;
let team: TestTeam;
let funnel: Funnel;
let sandbox: { url: string; close(): Promise<void> };
let control: string;
let live: string;
let testMode: string;
const COMPANY = 'biz_affiliates';
const KEY = 'key_affiliates';
const SECRET = 'ws_affiliates_secret';

async function post(url: string, body: unknown) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
}

async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  let v = await read();
  while (!ok(v)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 100));
    v = await read();
  }
  return v;
}

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  app = await startTestApp();
  team = await app.newTeam();
  funnel = await seedFunnel(app, team.teamId);
  for (const env of ['production', 'sandbox'] as const) {
    const company = await post(`${sandbox.url}/extpay/${env}/sandbox/companies`, {
      company_id: `${COMPANY}${env}`,
      api_keys: [{ key: `${KEY}_${env}` }],
      webhook_url: `${app.url}/webhooks/extpay`,
      webhook_secret: `${SECRET}_${env}`,
      webhook_retry_delays_ms: [0, 300, 1000, 2000],
      charge_settle_ms: 50,
    });
    expect(company.status, JSON.stringify(company.body)).toBe(200);
    const c = await team.api.post('/v1/extpay-connections', { name: `Whop ${env}`, api_key: `${KEY}_${env}`, company_id: `${COMPANY}${env}`, environment: env, webhook_secret: `${SECRET}_${env}`, base_url: sandboxApiBaseUrl(sandbox.url, env) });
    expect(c.status, c.text).toBe(201);
    if (env === 'production') live = c.body.data.id;
    else testMode = c.body.data.id;
  }
  control = `${sandbox.url}/extpay/production/sandbox`;
}, 60_000);
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});

const order = (n: string) => team.api.get(`/v1/orders/${n}`).then((r) => r.body.data);

describe('extpay conversions', () => {
  it("the provider's payment.succeeded is the conversion; a chargeback reverses its commission", { timeout: 120_000 }, async () => {
    const a = await createAffiliate(team.api, { commission: { type: 'percent', percent: 10, hold_days: 0 } });
    const r = await team.api.post('/checkout/orders', {
      campaign_id: funnel.campaignId,
      currency: 'USD',
      customer: { email: email('xp'), first_name: 'Ada', last_name: 'Lovelace' },
      products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
      payment: { method: 'extpay', return_url: 'https://shop.example/thanks', external_payment_id: live },
      affiliate: { affiliate_id: a.id, click_id: 'xp-1' },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.is_test).toBe(false);
    const n = r.body.data.order_number as string;
    // Not a conversion while the customer is on the provider's page.
    expect(await listAll(team.api, `/v1/affiliates/${a.id}/throttle/ledger`)).toHaveLength(0);
    const receipt = (await payOnHostedPage(r.body.data.checkout.purchase_url, EXTPAY_CARDS.paid, { saveForLater: true })) ?? '';
    await until(`order ${n} paid by the webhook`, () => order(n), (o) => o.payment_status === 'completed');
    const ledger = await listAll(team.api, `/v1/affiliates/${a.id}/throttle/ledger`);
    expect(ledger).toHaveLength(1);
    expect(ledger[0]).toMatchObject({ order_number: n, reason: 'none', throttled: false });
    const [c] = await listAll(team.api, `/v1/affiliate-commissions?affiliate_id=${a.id}`);
    expect(c).toMatchObject({ kind: 'conversion', amount: 439, status: 'payable' });

    const opened = await post(`${control}/payments/${receipt}/disputes`, { status: 'needs_response', reason: 'fraudulent' });
    expect(opened.status).toBe(200);
    await until('chargeback', () => order(n), (o) => o.transactions.some((t: any) => t.type === 'chargeback'));
    const [after] = await listAll(team.api, `/v1/affiliate-commissions?affiliate_id=${a.id}`);
    expect(after).toMatchObject({ id: c.id, status: 'reversed', reversal_reason: 'chargeback' });
    const report = await team.api.get(`/v1/reports/affiliates?affiliate_id=${a.id}`);
    expect(report.body.data[0]).toMatchObject({ conversions: 1, chargebacks: 1, chargeback_amount: 4395, commission: 0 });
  });

  it("a Sandbox connection's order is a test order: paid, yet no conversion, no commission, not in the report", { timeout: 120_000 }, async () => {
    const a = await createAffiliate(team.api, { commission: { type: 'percent', percent: 10, hold_days: 0 } });
    const r = await team.api.post('/checkout/orders', {
      campaign_id: funnel.campaignId,
      currency: 'USD',
      customer: { email: email('xpt'), first_name: 'Ada', last_name: 'Lovelace' },
      products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
      payment: { method: 'extpay', return_url: 'https://shop.example/thanks', external_payment_id: testMode },
      affiliate: { affiliate_id: a.id, click_id: 'xpt-1' },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.is_test).toBe(true);
    const n = r.body.data.order_number as string;
    await payOnHostedPage(r.body.data.checkout.purchase_url, EXTPAY_CARDS.paid, { saveForLater: true });
    const paid = await until(`order ${n} paid by the webhook`, () => order(n), (o) => o.payment_status === 'completed');
    expect(paid).toMatchObject({ is_test: true, is_throttled: false, affiliate: { affiliate_id: a.id } });
    expect(paid.events.map((e: any) => e.type)).not.toContain('affiliate.converted');
    expect(await listAll(team.api, `/v1/affiliates/${a.id}/throttle/ledger`)).toHaveLength(0);
    expect(await listAll(team.api, `/v1/affiliate-commissions?affiliate_id=${a.id}`)).toHaveLength(0);
    expect(await listAll(team.api, `/v1/affiliate-postbacks?affiliate_id=${a.id}`)).toHaveLength(0);
    expect((await team.api.get(`/v1/reports/affiliates?affiliate_id=${a.id}`)).body.data).toEqual([]);
  });
});
