import { expect } from 'vitest';
import { startSandbox } from '../../src/sandbox/server.ts';
import { CARD, email, type Funnel, seedFunnel } from './fixtures.ts';
import { type ApiClient, startTestApp, type TestApp, type TestTeam } from './harness.ts';
import { nmiSandboxGateway } from './nmi.ts';

/** A test app, the sandbox card gateway, one team with a funnel and a gateway: what every affiliates test needs. */
export interface AffiliateWorld {
  app: TestApp;
  sandbox: { url: string; close(): Promise<void> };
  team: TestTeam;
  funnel: Funnel;
  gatewayId: string;
  close(): Promise<void>;
}

export async function affiliateWorld(env: Record<string, string> = {}): Promise<AffiliateWorld> {
  const sandbox = await startSandbox({ port: 0, slowMs: 200 });
  const app = await startTestApp(env);
  const team = await app.newTeam();
  const funnel = await seedFunnel(app, team.teamId);
  // Live mode on the sandbox: an order paid through a gateway in test mode is a test order, and a
  // test order is no affiliate conversion (README, Affiliates).
  const gateway = await nmiSandboxGateway(team, sandbox.url, { prefix: 'aff' });
  const live = await team.api.patch(`/v1/gateways/${gateway.id}`, { test_mode: false });
  expect(live.status, live.text).toBe(200);
  return {
    app,
    sandbox,
    team,
    funnel,
    gatewayId: gateway.id,
    async close() {
      await app.close();
      await sandbox.close();
    },
  };
}

let affSeq = 0;
export async function createAffiliate(api: ApiClient, body: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const r = await api.post('/v1/affiliates', { id: `aff-${process.pid}-${++affSeq}`, name: 'Affiliate', ...body });
  expect(r.status, r.text).toBe(201);
  return r.body.data;
}

export interface OrderOpts {
  affiliate?: Record<string, unknown>;
  is_throttle?: boolean;
  card?: typeof CARD;
  offer?: string;
}

/** Create Order through the sandbox card gateway: one conversion when approved. */
export async function createOrder(w: AffiliateWorld, o: OrderOpts = {}) {
  return w.team.api.post('/checkout/orders', {
    campaign_id: w.funnel.campaignId,
    currency: 'USD',
    customer: { email: email('aff'), first_name: 'Ada', last_name: 'L' },
    products: [{ offer_id: o.offer ?? w.funnel.offers.serum, quantity: 1 }],
    gateway_id: w.gatewayId,
    payment: o.card ?? CARD,
    ...(o.affiliate ? { affiliate: o.affiliate } : {}),
    ...(o.is_throttle !== undefined ? { is_throttle: o.is_throttle } : {}),
  });
}

/** Runs `count` jobs with at most `concurrency` at once; results in job order. */
export async function pool<T>(count: number, concurrency: number, job: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      for (;;) {
        const i = next++;
        if (i >= count) return;
        out[i] = await job(i);
      }
    }),
  );
  return out;
}

/** Every page of a /v1 list. */
export async function listAll(api: ApiClient, path: string): Promise<any[]> {
  const items: any[] = [];
  let after: string | undefined;
  for (;;) {
    const sep = path.includes('?') ? '&' : '?';
    const r = await api.get(`${path}${sep}limit=100${after ? `&starting_after=${after}` : ''}`);
    expect(r.status, r.text).toBe(200);
    items.push(...r.body.data);
    if (!r.body.has_more) return items;
    after = r.body.data.at(-1).id ?? r.body.data.at(-1).order_number;
  }
}
