import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/app/ids.ts';
import { type ApiResponse, startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

/**
 * Wherever configuration names another object by id, the id must be one of the team's: an
 * unknown id and another team's answer the same 422 on that field, on create and on PATCH, and
 * nothing is written.
 */

let app: TestApp;
let a: TestTeam;
let b: TestTeam;

interface Objects {
  gateway: string;
  gateway2: string;
  router: string;
  campaign: string;
  product: string;
  offer: string;
  upsell: string;
  coupon: string;
}
let own: Objects;
let foreign: Objects;

async function created(res: Promise<ApiResponse>): Promise<string> {
  const r = await res;
  expect(r.status, r.text).toBe(201);
  return r.body.data.id as string;
}

async function objectsOf(team: TestTeam, tag: string): Promise<Objects> {
  const gw = (n: number) => team.api.post('/v1/gateways', { name: `NMI ${tag}${n}`, kind: 'nmi', credentials: { security_key: `key-${tag}${n}-0123456789` } });
  const gateway = await created(gw(1));
  const gateway2 = await created(gw(2));
  const router = await created(team.api.post('/v1/payment-orchestrators', { name: `Router ${tag}`, members: [{ gateway_id: gateway }] }));
  const campaign = await created(team.api.post('/v1/campaigns', { name: `Funnel ${tag}`, currency: 'USD', gateway_id: gateway }));
  const product = await created(team.api.post('/v1/products', { name: `Serum ${tag}` }));
  const offer = await created(
    team.api.post('/v1/offers', { campaign_id: campaign, product_id: product, name: 'One', price: 4900, billing: 'one_time', fulfillment_type: 'physical' }),
  );
  const upsell = await created(team.api.post('/v1/upsells', { campaign_id: campaign, offer_id: offer, step: 1, name: 'Up' }));
  const coupon = await created(team.api.post('/v1/coupons', { code: `SAVE${tag}`, campaign_id: campaign, percent_off: 10 }));
  return { gateway, gateway2, router, campaign, product, offer, upsell, coupon };
}

beforeAll(async () => {
  app = await startTestApp();
  a = await app.newTeam('A');
  b = await app.newTeam('B');
  own = await objectsOf(a, 'A');
  foreign = await objectsOf(b, 'B');
});
afterAll(async () => app?.close());

/** Every configuration row that a reference could land in, as one comparable text. */
function dump(): Promise<string> {
  return app.store.run(async (db) => {
    const tables = ['campaigns', 'offers', 'upsells', 'coupons', 'payment_routers', 'payment_router_members'] as const;
    const rows = [];
    for (const t of tables) rows.push(await db.selectFrom(t).selectAll().orderBy('id').execute());
    return JSON.stringify(rows);
  });
}

const unknown: Objects = {
  gateway: newId('gateway'),
  gateway2: newId('gateway'),
  router: newId('router'),
  campaign: newId('campaign'),
  product: newId('product'),
  offer: newId('offer'),
  upsell: newId('upsell'),
  coupon: newId('coupon'),
};

const NOUN = { gateway: 'gateway', router: 'payment orchestrator', campaign: 'campaign', product: 'product', offer: 'offer' } as const;
type Kind = keyof typeof NOUN;

interface Case {
  name: string;
  kind: Kind;
  field: string;
  send: (id: string) => Promise<ApiResponse>;
}

const offerBody = (over: Record<string, unknown>) => ({ campaign_id: own.campaign, product_id: own.product, name: 'O', price: 100, billing: 'one_time', fulfillment_type: 'digital', ...over });

/** Writes that name another object; `id` goes in the field under test, every other reference is the team's own. */
const cases: Case[] = [
  { name: 'create campaign → gateway', kind: 'gateway', field: 'gateway_id', send: (id) => a.api.post('/v1/campaigns', { name: 'C', currency: 'USD', gateway_id: id }) },
  {
    name: 'create campaign → payment orchestrator',
    kind: 'router',
    field: 'payment_orchestrator_id',
    send: (id) => a.api.post('/v1/campaigns', { name: 'C', currency: 'USD', gateway_id: own.gateway, payment_orchestrator_id: id }),
  },
  { name: 'patch campaign → gateway', kind: 'gateway', field: 'gateway_id', send: (id) => a.api.patch(`/v1/campaigns/${own.campaign}`, { name: 'Renamed', gateway_id: id }) },
  {
    name: 'patch campaign → payment orchestrator',
    kind: 'router',
    field: 'payment_orchestrator_id',
    send: (id) => a.api.patch(`/v1/campaigns/${own.campaign}`, { is_active: false, payment_orchestrator_id: id }),
  },
  {
    name: 'create router → member gateway',
    kind: 'gateway',
    field: 'members.1.gateway_id',
    send: (id) => a.api.post('/v1/payment-orchestrators', { name: 'R', members: [{ gateway_id: own.gateway }, { gateway_id: id }] }),
  },
  {
    // A member replacement that fails must keep the old members: no delete without the insert.
    name: 'patch router → member gateway',
    kind: 'gateway',
    field: 'members.1.gateway_id',
    send: (id) => a.api.patch(`/v1/payment-orchestrators/${own.router}`, { name: 'Renamed', members: [{ gateway_id: own.gateway2 }, { gateway_id: id }] }),
  },
  { name: 'create offer → campaign', kind: 'campaign', field: 'campaign_id', send: (id) => a.api.post('/v1/offers', offerBody({ campaign_id: id })) },
  { name: 'create offer → product', kind: 'product', field: 'product_id', send: (id) => a.api.post('/v1/offers', offerBody({ product_id: id })) },
  { name: 'create upsell → campaign', kind: 'campaign', field: 'campaign_id', send: (id) => a.api.post('/v1/upsells', { campaign_id: id, offer_id: own.offer, step: 2, name: 'U' }) },
  { name: 'create upsell → offer', kind: 'offer', field: 'offer_id', send: (id) => a.api.post('/v1/upsells', { campaign_id: own.campaign, offer_id: id, step: 2, name: 'U' }) },
  { name: 'create coupon → campaign', kind: 'campaign', field: 'campaign_id', send: (id) => a.api.post('/v1/coupons', { code: `C${Math.random().toString(36).slice(2, 8)}`, campaign_id: id, percent_off: 5 }) },
];

const idOf = (set: Objects, kind: Kind) => set[kind];

function expectRefused(r: ApiResponse, c: Case) {
  expect(r.status, r.text).toBe(422);
  expect(r.body.error.code).toBe('validation_failed');
  expect(r.body.error.fields).toEqual([{ path: c.field, message: `no ${NOUN[c.kind]} with this id in your team` }]);
}

describe('references to other objects are checked within the team', () => {
  for (const c of cases) {
    it(`${c.name}: another team's id and an unknown id are a 422 on ${c.field}, and nothing is written`, async () => {
      const before = await dump();
      const other = await c.send(idOf(foreign, c.kind));
      expectRefused(other, c);
      const missing = await c.send(idOf(unknown, c.kind));
      expectRefused(missing, c);
      // The same answer either way: it never tells that the id exists in another team.
      expect(other.body.error).toEqual(missing.body.error);
      expect(await dump()).toBe(before);
    });
  }

  it("the team's own ids still work, on create and on PATCH", async () => {
    const router2 = await created(a.api.post('/v1/payment-orchestrators', { name: 'R2', members: [{ gateway_id: own.gateway }, { gateway_id: own.gateway2 }] }));
    const campaign = await a.api.post('/v1/campaigns', { name: 'Own', currency: 'USD', gateway_id: own.gateway, payment_orchestrator_id: own.router });
    expect(campaign.status, campaign.text).toBe(201);
    expect(campaign.body.data).toMatchObject({ gateway_id: own.gateway, payment_orchestrator_id: own.router });

    const patched = await a.api.patch(`/v1/campaigns/${campaign.body.data.id}`, { gateway_id: own.gateway2, payment_orchestrator_id: router2 });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.data).toMatchObject({ gateway_id: own.gateway2, payment_orchestrator_id: router2 });
    const cleared = await a.api.patch(`/v1/campaigns/${campaign.body.data.id}`, { gateway_id: null, payment_orchestrator_id: null });
    expect(cleared.body.data).toMatchObject({ gateway_id: null, payment_orchestrator_id: null });

    const members = await a.api.patch(`/v1/payment-orchestrators/${router2}`, { members: [{ gateway_id: own.gateway2 }] });
    expect(members.status, members.text).toBe(200);
    expect(members.body.data.members.map((m: { gateway_id: string }) => m.gateway_id)).toEqual([own.gateway2]);

    const offer = await created(a.api.post('/v1/offers', offerBody({ campaign_id: campaign.body.data.id })));
    await created(a.api.post('/v1/upsells', { campaign_id: campaign.body.data.id, offer_id: offer, step: 1, name: 'U' }));
    await created(a.api.post('/v1/coupons', { code: 'OWNREFS', campaign_id: campaign.body.data.id, percent_off: 5 }));
  });

  it('names every failing reference at once', async () => {
    const before = await dump();
    const r = await a.api.post('/v1/campaigns', { name: 'C', currency: 'USD', gateway_id: foreign.gateway, payment_orchestrator_id: unknown.router });
    expect(r.status, r.text).toBe(422);
    expect(r.body.error.fields).toEqual([
      { path: 'gateway_id', message: 'no gateway with this id in your team' },
      { path: 'payment_orchestrator_id', message: 'no payment orchestrator with this id in your team' },
    ]);
    const offer = await a.api.post('/v1/offers', offerBody({ campaign_id: foreign.campaign, product_id: unknown.product }));
    expect(offer.body.error.fields.map((f: { path: string }) => f.path)).toEqual(['campaign_id', 'product_id']);
    expect(await dump()).toBe(before);
  });

  it('references that cannot be changed after create are refused on PATCH, and nothing is written', async () => {
    const patches: Array<[string, Record<string, unknown>, string]> = [
      [`/v1/offers/${own.offer}`, { campaign_id: foreign.campaign }, 'campaign_id'],
      [`/v1/offers/${own.offer}`, { product_id: foreign.product }, 'product_id'],
      [`/v1/upsells/${own.upsell}`, { offer_id: foreign.offer }, 'offer_id'],
      [`/v1/upsells/${own.upsell}`, { campaign_id: foreign.campaign }, 'campaign_id'],
      [`/v1/coupons/${own.coupon}`, { campaign_id: foreign.campaign }, 'campaign_id'],
    ];
    const before = await dump();
    for (const [path, body, field] of patches) {
      const r = await a.api.patch(path, body);
      expect(r.status, `${path} ${r.text}`).toBe(422);
      expect(r.body.error.fields.map((f: { path: string }) => f.path)).toContain(field);
    }
    expect(await dump()).toBe(before);
  });
});
