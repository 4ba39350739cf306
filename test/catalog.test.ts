import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiClient, type ApiResponse, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

let app: TestApp;
let teamA: TestTeam;
let teamB: TestTeam;

beforeAll(async () => {
  app = await startTestApp();
  teamA = await app.newTeam('Team A');
  teamB = await app.newTeam('Team B');
});
afterAll(async () => {
  await app?.close();
});

function fieldPaths(res: ApiResponse): string[] {
  return (res.body?.error?.fields ?? []).map((f: { path: string }) => f.path);
}

function expect422(res: ApiResponse, ...paths: string[]) {
  expect(res.status, res.text).toBe(422);
  expect(res.body).toMatchObject({ success: false, data: null, error: { code: 'validation_failed', type: 'invalid_request_error' } });
  expect(fieldPaths(res)).toEqual(expect.arrayContaining(paths));
}

async function created(res: Promise<ApiResponse>) {
  const r = await res;
  expect(r.status, r.text).toBe(201);
  expect(r.body.success).toBe(true);
  return r.body.data;
}

interface Funnel {
  gateway: any;
  router: any;
  campaign: any;
  otherCampaign: any;
  productA: any;
  productB: any;
  oneTime: any;
  recurring: any;
  trial: any;
  upsell: any;
  coupon: any;
}

/** The whole catalog a funnel needs, built through the API. */
async function buildFunnel(api: ApiClient, tag: string): Promise<Funnel> {
  // A campaign may name only the team's own gateway and payment orchestrator (test/references.test.ts).
  const gateway = await created(api.post('/v1/gateways', { name: `NMI ${tag}`, kind: 'nmi', credentials: { security_key: `key-${tag}-0123456789` } }));
  const router = await created(api.post('/v1/payment-orchestrators', { name: `Router ${tag}`, members: [{ gateway_id: gateway.id }] }));
  const campaign = await created(api.post('/v1/campaigns', { name: `Main funnel ${tag}`, currency: 'USD', gateway_id: gateway.id }));
  const otherCampaign = await created(api.post('/v1/campaigns', { name: `Second funnel ${tag}`, currency: 'EUR' }));
  const productA = await created(api.post('/v1/products', { name: 'Serum', sku: `SERUM-${tag}`, description: '30 ml' }));
  const productB = await created(api.post('/v1/products', { name: 'Cream' }));
  const base = { campaign_id: campaign.id, product_id: productA.id, fulfillment_type: 'physical' };
  const oneTime = await created(api.post('/v1/offers', { ...base, name: 'One bottle', price: 4900, shipping: 495, billing: 'one_time' }));
  const recurring = await created(
    api.post('/v1/offers', {
      ...base,
      name: 'Monthly bottle',
      price: 3900,
      billing: 'recurring',
      interval_unit: 'month',
      interval_count: 1,
      recurring_price: 3900,
      recurring_shipping: 495,
    }),
  );
  const trial = await created(
    api.post('/v1/offers', {
      ...base,
      product_id: productB.id,
      name: 'Cream trial',
      price: 0,
      shipping: 695,
      billing: 'trial',
      trial_days: 14,
      interval_unit: 'month',
      interval_count: 1,
      recurring_price: 5900,
      fulfillment_type: 'digital',
    }),
  );
  const upsell = await created(api.post('/v1/upsells', { campaign_id: campaign.id, offer_id: recurring.id, step: 1, name: 'Subscribe and save' }));
  const coupon = await created(api.post('/v1/coupons', { code: `SAVE10-${tag}`, campaign_id: campaign.id, percent_off: 10, max_redemptions: 100 }));
  return { gateway, router, campaign, otherCampaign, productA, productB, oneTime, recurring, trial, upsell, coupon };
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('catalog: a whole funnel through the API', () => {
  let f: Funnel;
  beforeAll(async () => {
    f = await buildFunnel(teamA.api, 'A');
  });

  it('returns each object with its type, a prefixed id and snake_case fields, never team_id or seq', async () => {
    expect(f.campaign).toMatchObject({
      object: 'campaign',
      name: 'Main funnel A',
      currency: 'USD',
      gateway_id: f.gateway.id,
      payment_orchestrator_id: null,
      is_active: true,
    });
    expect(f.campaign.id).toMatch(/^cmp_/);
    expect(f.productA).toMatchObject({ object: 'product', name: 'Serum', sku: 'SERUM-A', description: '30 ml' });
    expect(f.productA.id).toMatch(/^prod_/);
    expect(f.productB).toMatchObject({ sku: null, description: null });
    expect(f.oneTime).toMatchObject({
      object: 'offer',
      campaign_id: f.campaign.id,
      product_id: f.productA.id,
      price: 4900,
      shipping: 495,
      billing: 'one_time',
      interval_unit: null,
      interval_count: null,
      trial_days: null,
      recurring_price: null,
      recurring_shipping: null,
      fulfillment_type: 'physical',
      is_active: true,
    });
    expect(f.oneTime.id).toMatch(/^offer_/);
    expect(f.recurring).toMatchObject({ billing: 'recurring', interval_unit: 'month', interval_count: 1, recurring_price: 3900, recurring_shipping: 495, shipping: 0 });
    expect(f.trial).toMatchObject({ billing: 'trial', trial_days: 14, recurring_price: 5900, recurring_shipping: 0, fulfillment_type: 'digital', price: 0 });
    expect(f.upsell).toMatchObject({ object: 'upsell', campaign_id: f.campaign.id, offer_id: f.recurring.id, step: 1, is_active: true });
    expect(f.upsell.id).toMatch(/^ups_/);
    expect(f.coupon).toMatchObject({
      object: 'coupon',
      code: 'SAVE10-A',
      campaign_id: f.campaign.id,
      percent_off: 10,
      amount_off: null,
      currency: null,
      max_redemptions: 100,
      times_redeemed: 0,
      expires_at: null,
      is_active: true,
    });
    expect(f.coupon.id).toMatch(/^cpn_/);
    for (const o of Object.values(f)) {
      expect(o).not.toHaveProperty('team_id');
      expect(o).not.toHaveProperty('seq');
      expect(o.created_at).toMatch(ISO);
      expect(o.updated_at).toMatch(ISO);
    }
  });

  it('reads every object back by id, in the envelope', async () => {
    const paths: [string, any][] = [
      ['campaigns', f.campaign],
      ['products', f.productA],
      ['offers', f.trial],
      ['upsells', f.upsell],
      ['coupons', f.coupon],
    ];
    for (const [path, obj] of paths) {
      const r = await teamA.api.get(`/v1/${path}/${obj.id}`);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ success: true, message: 'OK', data: obj });
    }
  });

  it('lists newest first in the list envelope', async () => {
    const r = await teamA.api.get('/v1/campaigns');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: true, message: 'OK', has_more: false });
    expect(r.body.data.map((c: any) => c.id)).toEqual([f.otherCampaign.id, f.campaign.id]);
    for (const path of ['products', 'offers', 'upsells', 'coupons']) {
      const list = await teamA.api.get(`/v1/${path}`);
      expect(list.status, path).toBe(200);
      expect(list.body.data.length, path).toBeGreaterThan(0);
    }
  });

  it('PATCH changes only the fields sent and moves updated_at', async () => {
    const campaign = await teamA.api.patch(`/v1/campaigns/${f.otherCampaign.id}`, { name: 'Renamed', payment_orchestrator_id: f.router.id, is_active: false });
    expect(campaign.status).toBe(200);
    expect(campaign.body.data).toMatchObject({ name: 'Renamed', payment_orchestrator_id: f.router.id, is_active: false, currency: 'EUR', gateway_id: null });
    expect(Date.parse(campaign.body.data.updated_at)).toBeGreaterThanOrEqual(Date.parse(f.otherCampaign.updated_at));
    const cleared = await teamA.api.patch(`/v1/campaigns/${f.otherCampaign.id}`, { payment_orchestrator_id: null });
    expect(cleared.body.data).toMatchObject({ name: 'Renamed', payment_orchestrator_id: null });

    const product = await teamA.api.patch(`/v1/products/${f.productB.id}`, { sku: 'CREAM-A', description: 'Night cream' });
    expect(product.body.data).toMatchObject({ name: 'Cream', sku: 'CREAM-A', description: 'Night cream' });

    const offer = await teamA.api.patch(`/v1/offers/${f.oneTime.id}`, { price: 4500, is_active: false });
    expect(offer.body.data).toMatchObject({ price: 4500, shipping: 495, is_active: false, name: 'One bottle', billing: 'one_time' });

    const upsell = await teamA.api.patch(`/v1/upsells/${f.upsell.id}`, { step: 2, name: 'Second upsell' });
    expect(upsell.body.data).toMatchObject({ step: 2, name: 'Second upsell', offer_id: f.recurring.id });

    const coupon = await teamA.api.patch(`/v1/coupons/${f.coupon.id}`, { max_redemptions: 5, expires_at: '2031-01-31T23:59:59Z' });
    expect(coupon.body.data).toMatchObject({ max_redemptions: 5, expires_at: '2031-01-31T23:59:59.000Z', percent_off: 10 });

    const unchanged = await teamA.api.patch(`/v1/products/${f.productA.id}`, {});
    expect(unchanged.status).toBe(200);
    expect(unchanged.body.data).toEqual(f.productA);
  });

  it('takes an Idempotency-Key on create and replays instead of creating twice', async () => {
    const headers = { 'idempotency-key': 'create-product-once' };
    const first = await teamA.api.post('/v1/products', { name: 'Idempotent' }, headers);
    const again = await teamA.api.post('/v1/products', { name: 'Idempotent' }, headers);
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data.id).toBe(first.body.data.id);
  });

  it('documents every catalog route in OpenAPI', async () => {
    const spec = (await app.anonymous.get('/openapi.json')).body;
    for (const path of ['campaigns', 'products', 'offers', 'upsells', 'coupons']) {
      expect(spec.paths[`/v1/${path}`].post.tags).toEqual(['catalog']);
      expect(spec.paths[`/v1/${path}`].get.summary).toBeTruthy();
      expect(spec.paths[`/v1/${path}/{id}`].get.tags).toEqual(['catalog']);
      expect(spec.paths[`/v1/${path}/{id}`].patch.requestBody).toBeTruthy();
    }
  });
});

describe('catalog: validation', () => {
  let campaignId: string;
  let productId: string;
  const offer = () => ({ campaign_id: campaignId, product_id: productId, name: 'Offer', price: 1000, fulfillment_type: 'physical' });

  beforeAll(async () => {
    campaignId = (await created(teamA.api.post('/v1/campaigns', { name: 'Validation', currency: 'USD' }))).id;
    productId = (await created(teamA.api.post('/v1/products', { name: 'Validation product' }))).id;
  });

  it('a recurring offer needs its interval and recurring price', async () => {
    const r = await teamA.api.post('/v1/offers', { ...offer(), billing: 'recurring', recurring_price: 1000 });
    expect422(r, 'interval_unit', 'interval_count');
    expect(fieldPaths(r)).not.toContain('recurring_price');
    expect422(await teamA.api.post('/v1/offers', { ...offer(), billing: 'recurring', interval_unit: 'month', interval_count: 1 }), 'recurring_price');
    expect422(
      await teamA.api.post('/v1/offers', { ...offer(), billing: 'recurring', interval_unit: 'fortnight', interval_count: 0, recurring_price: 1000 }),
      'interval_unit',
      'interval_count',
    );
  });

  it('a trial offer needs trial_days', async () => {
    const r = await teamA.api.post('/v1/offers', { ...offer(), billing: 'trial', interval_unit: 'month', interval_count: 1, recurring_price: 1000 });
    expect422(r, 'trial_days');
  });

  it('a one-time offer refuses renewal fields, and billing must be known', async () => {
    expect422(await teamA.api.post('/v1/offers', { ...offer(), billing: 'one_time', interval_unit: 'month' }), 'interval_unit');
    expect422(await teamA.api.post('/v1/offers', { ...offer(), billing: 'weekly' }), 'billing');
    expect422(await teamA.api.post('/v1/offers', offer()), 'billing');
  });

  it('money is integer minor units', async () => {
    expect422(await teamA.api.post('/v1/offers', { ...offer(), billing: 'one_time', price: 19.99 }), 'price');
    expect422(await teamA.api.post('/v1/offers', { ...offer(), billing: 'one_time', price: -1 }), 'price');
    expect422(await teamA.api.post('/v1/offers', { ...offer(), billing: 'one_time', price: '1000' }), 'price');
  });

  it('the offer campaign and product must exist in the team', async () => {
    const foreign = await created(teamB.api.post('/v1/campaigns', { name: 'B campaign', currency: 'USD' }));
    expect422(await teamA.api.post('/v1/offers', { ...offer(), billing: 'one_time', campaign_id: foreign.id }), 'campaign_id');
    expect422(await teamA.api.post('/v1/offers', { ...offer(), billing: 'one_time', product_id: 'prod_doesnotexist' }), 'product_id');
    expect422(await teamA.api.post('/v1/offers', { ...offer(), billing: 'one_time', product_id: 'not-an-id' }), 'product_id');
  });

  it('a coupon takes percent_off or amount_off, not both and not neither', async () => {
    expect422(await teamA.api.post('/v1/coupons', { code: 'BOTH', percent_off: 10, amount_off: 500, currency: 'USD' }), 'amount_off');
    expect422(await teamA.api.post('/v1/coupons', { code: 'NEITHER' }), 'percent_off');
    expect422(await teamA.api.post('/v1/coupons', { code: 'TOOMUCH', percent_off: 101 }), 'percent_off');
    expect422(await teamA.api.post('/v1/coupons', { code: 'NOCUR', amount_off: 500 }), 'currency');
    expect422(await teamA.api.post('/v1/coupons', { code: 'CURPCT', percent_off: 5, currency: 'USD' }), 'currency');
    expect422(await teamA.api.post('/v1/coupons', { code: 'has space', percent_off: 5 }), 'code');
    expect422(await teamA.api.post('/v1/coupons', { code: 'LATE', percent_off: 5, expires_at: 'tomorrow' }), 'expires_at');
    expect422(await teamA.api.post('/v1/coupons', { code: 'EURO', amount_off: 500, currency: 'EUR', campaign_id: campaignId }), 'currency');
    const amount = await created(teamA.api.post('/v1/coupons', { code: 'FIVE-OFF', amount_off: 500, currency: 'USD', campaign_id: campaignId }));
    expect(amount).toMatchObject({ amount_off: 500, currency: 'USD', percent_off: null });
  });

  it('a campaign needs a valid ISO currency', async () => {
    expect422(await teamA.api.post('/v1/campaigns', { name: 'Bad', currency: 'usd' }), 'currency');
    expect422(await teamA.api.post('/v1/campaigns', { name: 'Bad', currency: 'DOLLARS' }), 'currency');
    expect422(await teamA.api.post('/v1/campaigns', { currency: 'USD' }), 'name');
    expect422(await teamA.api.post('/v1/campaigns', { name: '   ', currency: 'USD' }), 'name');
  });

  it('refuses unknown and server-owned fields', async () => {
    const coupon = await teamA.api.post('/v1/coupons', { code: 'FREEBIE', percent_off: 100, times_redeemed: 0 });
    expect422(coupon, 'times_redeemed');
    expect(coupon.body.error.fields).toContainEqual({ path: 'times_redeemed', message: 'is not a field you can set here' });
    expect422(await teamA.api.post('/v1/products', { name: 'P', id: 'prod_mine', seq: 1, team_id: teamB.teamId }), 'id', 'seq', 'team_id');
    expect422(await teamA.api.post('/v1/campaigns', { name: 'C', currency: 'USD', created_at: '2020-01-01T00:00:00Z' }), 'created_at');
    expect422(await teamA.api.patch(`/v1/campaigns/${campaignId}`, { currency: 'EUR' }), 'currency');
    expect422(await teamA.api.patch(`/v1/products/${productId}`, { updated_at: '2020-01-01T00:00:00Z' }), 'updated_at');
    const c = await created(teamA.api.post('/v1/coupons', { code: 'PATCHME', percent_off: 5 }));
    expect422(await teamA.api.patch(`/v1/coupons/${c.id}`, { times_redeemed: 99 }), 'times_redeemed');
    expect422(await teamA.api.patch(`/v1/coupons/${c.id}`, { code: 'OTHER' }), 'code');
    expect((await teamA.api.get(`/v1/coupons/${c.id}`)).body.data).toEqual(c);
  });

  it('validates list queries', async () => {
    expect422(await teamA.api.get('/v1/products?limit=0'), 'query.limit');
    expect422(await teamA.api.get('/v1/products?limit=101'), 'query.limit');
    expect422(await teamA.api.get('/v1/products?created_gte=yesterday'), 'query.created_gte');
    expect422(await teamA.api.get('/v1/offers?campaign_id=nope'), 'query.campaign_id');
  });
});

describe('catalog: teams see only their own objects', () => {
  let f: Funnel;
  beforeAll(async () => {
    f = await buildFunnel(teamA.api, 'ISO');
  });

  it('another team gets 404 on GET and PATCH, and nothing changes', async () => {
    const targets: [string, any, Record<string, unknown>][] = [
      ['campaigns', f.campaign, { name: 'Hijacked', is_active: false }],
      ['products', f.productA, { name: 'Hijacked', sku: 'HIJACK' }],
      ['offers', f.oneTime, { price: 1, is_active: false }],
      ['upsells', f.upsell, { step: 9, is_active: false }],
      ['coupons', f.coupon, { max_redemptions: 1, is_active: false }],
    ];
    for (const [path, obj, patch] of targets) {
      const get = await teamB.api.get(`/v1/${path}/${obj.id}`);
      expect(get.status, path).toBe(404);
      expect(get.body).toMatchObject({ success: false, data: null, error: { code: 'not_found' } });
      const patched = await teamB.api.patch(`/v1/${path}/${obj.id}`, patch);
      expect(patched.status, path).toBe(404);
      expect(patched.body.error.code).toBe('not_found');
      const emptyPatch = await teamB.api.patch(`/v1/${path}/${obj.id}`, {});
      expect(emptyPatch.status, path).toBe(404);
      const after = await teamA.api.get(`/v1/${path}/${obj.id}`);
      expect(after.status).toBe(200);
      expect(after.body.data, path).toEqual(obj);
    }
  });

  it('unknown ids answer 404 the same way', async () => {
    for (const path of ['campaigns', 'products', 'offers', 'upsells', 'coupons']) {
      const r = await teamA.api.get(`/v1/${path}/${path.slice(0, 3)}_unknown`);
      expect(r.status, path).toBe(404);
      expect(r.body.error.code).toBe('not_found');
    }
  });

  it("another team's lists never show them, and its cursor is refused", async () => {
    const b = await app.newTeam('Team lists');
    for (const path of ['campaigns', 'products', 'offers', 'upsells', 'coupons']) {
      const r = await b.api.get(`/v1/${path}`);
      expect(r.body, path).toMatchObject({ success: true, data: [], has_more: false });
    }
    expect422(await b.api.get(`/v1/offers?starting_after=${f.oneTime.id}`), 'starting_after');
    const filtered = await b.api.get(`/v1/offers?campaign_id=${f.campaign.id}`);
    expect(filtered.body.data).toEqual([]);
  });

  it("another team's campaign, product or offer cannot be used in a body", async () => {
    const own = await created(teamB.api.post('/v1/campaigns', { name: 'B own', currency: 'USD' }));
    const ownProduct = await created(teamB.api.post('/v1/products', { name: 'B product' }));
    const base = { name: 'x', price: 100, billing: 'one_time', fulfillment_type: 'digital' };
    expect422(await teamB.api.post('/v1/offers', { ...base, campaign_id: f.campaign.id, product_id: ownProduct.id }), 'campaign_id');
    expect422(await teamB.api.post('/v1/offers', { ...base, campaign_id: own.id, product_id: f.productA.id }), 'product_id');
    expect422(await teamB.api.post('/v1/upsells', { campaign_id: own.id, offer_id: f.oneTime.id, step: 1, name: 'x' }), 'offer_id');
    expect422(await teamB.api.post('/v1/coupons', { code: 'STEAL', campaign_id: f.campaign.id, percent_off: 5 }), 'campaign_id');
  });
});

describe('catalog: consistency rules', () => {
  it('an upsell must sell an offer of its own campaign', async () => {
    const f = await buildFunnel(teamA.api, 'UPS');
    const r = await teamA.api.post('/v1/upsells', { campaign_id: f.otherCampaign.id, offer_id: f.recurring.id, step: 1, name: 'Wrong campaign' });
    expect422(r, 'offer_id');
    expect(r.body.message).toMatch(/campaign/);
    expect422(await teamA.api.post('/v1/upsells', { campaign_id: f.campaign.id, offer_id: f.recurring.id, step: 0, name: 'Step zero' }), 'step');
    const list = await teamA.api.get(`/v1/upsells?campaign_id=${f.otherCampaign.id}`);
    expect(list.body.data).toEqual([]);
  });

  it('a SKU is unique within a team: 409, not 500', async () => {
    const first = await created(teamA.api.post('/v1/products', { name: 'Original', sku: 'DUP-SKU' }));
    const dup = await teamA.api.post('/v1/products', { name: 'Copy', sku: 'DUP-SKU' });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ success: false, data: null, error: { code: 'conflict' } });
    expect(dup.body.message).toContain('DUP-SKU');
    const other = await created(teamA.api.post('/v1/products', { name: 'Other', sku: 'OTHER-SKU' }));
    const patched = await teamA.api.patch(`/v1/products/${other.id}`, { sku: 'DUP-SKU' });
    expect(patched.status).toBe(409);
    expect((await teamA.api.get(`/v1/products/${other.id}`)).body.data.sku).toBe('OTHER-SKU');
    expect((await teamA.api.get(`/v1/products/${first.id}`)).body.data).toEqual(first);
    // several products may go without a SKU, and another team may use the same one
    await created(teamA.api.post('/v1/products', { name: 'No SKU 1' }));
    await created(teamA.api.post('/v1/products', { name: 'No SKU 2', sku: null }));
    await created(teamB.api.post('/v1/products', { name: 'B copy', sku: 'DUP-SKU' }));
  });

  it('a coupon code is unique within a team regardless of case: 409', async () => {
    await created(teamA.api.post('/v1/coupons', { code: 'WELCOME', percent_off: 15 }));
    for (const code of ['WELCOME', 'welcome', 'Welcome']) {
      const dup = await teamA.api.post('/v1/coupons', { code, amount_off: 100, currency: 'USD' });
      expect(dup.status, code).toBe(409);
      expect(dup.body.error.code).toBe('conflict');
      expect(dup.body.message).toContain(code);
    }
    await created(teamB.api.post('/v1/coupons', { code: 'welcome', percent_off: 15 }));
  });

  it('max_redemptions cannot go below the redemptions already made', async () => {
    const c = await created(teamA.api.post('/v1/coupons', { code: 'LIMITED', percent_off: 20, max_redemptions: 3, expires_at: '2030-06-01T12:00:00+02:00' }));
    expect(c.expires_at).toBe('2030-06-01T10:00:00.000Z');
    await app.store.run((db) => db.updateTable('coupons').set({ times_redeemed: 2 }).where('id', '=', c.id).execute());
    expect422(await teamA.api.patch(`/v1/coupons/${c.id}`, { max_redemptions: 1 }), 'max_redemptions');
    const ok = await teamA.api.patch(`/v1/coupons/${c.id}`, { max_redemptions: 2, expires_at: null });
    expect(ok.body.data).toMatchObject({ max_redemptions: 2, times_redeemed: 2, expires_at: null });
  });
});

describe('catalog: pagination and filters', () => {
  let team: TestTeam;
  let ids: string[];

  beforeAll(async () => {
    team = await app.newTeam('Paging');
    ids = [];
    for (let i = 0; i < 105; i++) ids.push((await created(team.api.post('/v1/products', { name: `P${i}` }))).id);
    ids.reverse(); // newest first
  });

  async function walk(limit: number) {
    const pages: { ids: string[]; has_more: boolean }[] = [];
    let after: string | undefined;
    for (;;) {
      const r = await team.api.get(`/v1/products?limit=${limit}${after ? `&starting_after=${after}` : ''}`);
      expect(r.status, r.text).toBe(200);
      const page = { ids: r.body.data.map((p: any) => p.id), has_more: r.body.has_more };
      pages.push(page);
      if (!page.has_more) return pages;
      after = page.ids[page.ids.length - 1];
    }
  }

  it('pages of 20: five full pages and one of 5, newest first, no duplicates', async () => {
    const pages = await walk(20);
    expect(pages.map((p) => p.ids.length)).toEqual([20, 20, 20, 20, 20, 5]);
    expect(pages.map((p) => p.has_more)).toEqual([true, true, true, true, true, false]);
    const all = pages.flatMap((p) => p.ids);
    expect(new Set(all).size).toBe(105);
    expect(all).toEqual(ids);
  });

  it('pages of 100, and the default of 20', async () => {
    const pages = await walk(100);
    expect(pages.map((p) => [p.ids.length, p.has_more])).toEqual([
      [100, true],
      [5, false],
    ]);
    expect(pages.flatMap((p) => p.ids)).toEqual(ids);
    const first = await team.api.get('/v1/products');
    expect(first.body.data).toHaveLength(20);
    expect(first.body.data[0]).toMatchObject({ id: ids[0], name: 'P104' });
  });

  it('the order is stable: the same page twice, and a page after the last item is empty', async () => {
    const a = await team.api.get(`/v1/products?limit=7&starting_after=${ids[30]}`);
    const b = await team.api.get(`/v1/products?limit=7&starting_after=${ids[30]}`);
    expect(a.body.data).toEqual(b.body.data);
    expect(a.body.data.map((p: any) => p.id)).toEqual(ids.slice(31, 38));
    const end = await team.api.get(`/v1/products?starting_after=${ids[104]}`);
    expect(end.body).toMatchObject({ data: [], has_more: false });
    const exact = await team.api.get(`/v1/products?limit=5&starting_after=${ids[99]}`);
    expect(exact.body.has_more).toBe(false);
    expect(exact.body.data).toHaveLength(5);
  });

  it('an unknown or foreign starting_after answers 422', async () => {
    const unknown = await team.api.get('/v1/products?starting_after=prod_doesnotexist');
    expect422(unknown, 'starting_after');
    expect(unknown.body.error.fields).toContainEqual({ path: 'starting_after', message: 'no such object' });
    const foreign = await created(teamA.api.post('/v1/products', { name: 'Foreign cursor' }));
    expect422(await team.api.get(`/v1/products?starting_after=${foreign.id}`), 'starting_after');
    const campaign = await created(team.api.post('/v1/campaigns', { name: 'Wrong table', currency: 'USD' }));
    expect422(await team.api.get(`/v1/products?starting_after=${campaign.id}`), 'starting_after');
  });

  it('filters offers and upsells by campaign', async () => {
    const t = await app.newTeam('Filters');
    const f = await buildFunnel(t.api, 'F');
    const other = await created(
      t.api.post('/v1/offers', { campaign_id: f.otherCampaign.id, product_id: f.productB.id, name: 'EUR offer', price: 990, billing: 'one_time', fulfillment_type: 'digital' }),
    );
    const otherUpsell = await created(t.api.post('/v1/upsells', { campaign_id: f.otherCampaign.id, offer_id: other.id, step: 1, name: 'EUR upsell' }));

    const main = await t.api.get(`/v1/offers?campaign_id=${f.campaign.id}`);
    expect(main.body.data.map((o: any) => o.id)).toEqual([f.trial.id, f.recurring.id, f.oneTime.id]);
    const second = await t.api.get(`/v1/offers?campaign_id=${f.otherCampaign.id}`);
    expect(second.body.data.map((o: any) => o.id)).toEqual([other.id]);
    const all = await t.api.get('/v1/offers');
    expect(all.body.data).toHaveLength(4);
    const paged = await t.api.get(`/v1/offers?campaign_id=${f.campaign.id}&limit=2&starting_after=${f.trial.id}`);
    expect(paged.body).toMatchObject({ has_more: false });
    expect(paged.body.data.map((o: any) => o.id)).toEqual([f.recurring.id, f.oneTime.id]);

    expect((await t.api.get(`/v1/upsells?campaign_id=${f.otherCampaign.id}`)).body.data.map((u: any) => u.id)).toEqual([otherUpsell.id]);
    expect((await t.api.get(`/v1/upsells?campaign_id=${f.campaign.id}`)).body.data.map((u: any) => u.id)).toEqual([f.upsell.id]);
    expect((await t.api.get(`/v1/coupons?campaign_id=${f.otherCampaign.id}`)).body.data).toEqual([]);
  });

  it('filters by creation time, inclusive at both ends', async () => {
    const t = await app.newTeam('Created');
    const early = await created(t.api.post('/v1/products', { name: 'Early' }));
    await new Promise((r) => setTimeout(r, 25));
    const middle = await created(t.api.post('/v1/products', { name: 'Middle' }));
    await new Promise((r) => setTimeout(r, 25));
    const late = await created(t.api.post('/v1/products', { name: 'Late' }));
    const names = async (q: string) => (await t.api.get(`/v1/products?${q}`)).body.data.map((p: any) => p.name);

    expect(await names(`created_gte=${encodeURIComponent(middle.created_at)}`)).toEqual(['Late', 'Middle']);
    expect(await names(`created_lte=${encodeURIComponent(middle.created_at)}`)).toEqual(['Middle', 'Early']);
    expect(await names(`created_gte=${middle.created_at}&created_lte=${middle.created_at}`)).toEqual(['Middle']);
    expect(await names(`created_gte=${encodeURIComponent(new Date(Date.parse(late.created_at) + 1000).toISOString())}`)).toEqual([]);
    expect(await names(`created_lte=${encodeURIComponent(new Date(Date.parse(early.created_at) - 1000).toISOString())}`)).toEqual([]);
  });
});
