import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/app/ids.ts';
import { sandboxApiBaseUrl } from '../src/providers/extpay/types.ts';
import { EXTPAY_CARDS, EXTPAY_PERMISSIONS } from '../src/sandbox/extpay-provider.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { CARD, email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { payOnHostedPage } from './support/extpay.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

let app: TestApp;
let team: TestTeam;
let other: TestTeam;
let funnel: Funnel;
let monthly: string;
let sandbox: { url: string; close(): Promise<void> };
let connectionId: string;
let api: string;

const FULL_KEY = 'key_subactions_full';
/** Can sell and read memberships, but not manage them: the provider refuses cancel, pause, resume, uncancel. */
const NO_MANAGE_KEY = 'key_subactions_nomanage';
const MANAGE_MESSAGE = 'This API key is missing the permissions: member:manage.';

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  api = sandboxApiBaseUrl(sandbox.url, 'sandbox');
  app = await startTestApp();
  team = await app.newTeam();
  other = await app.newTeam('Other');
  funnel = await seedFunnel(app, team.teamId);
  const product = (await team.api.get('/v1/products?limit=1')).body.data[0].id;
  const offer = await team.api.post('/v1/offers', {
    campaign_id: funnel.campaignId,
    product_id: product,
    name: 'Club monthly',
    price: 2900,
    billing: 'recurring',
    interval_unit: 'month',
    interval_count: 1,
    recurring_price: 2900,
    fulfillment_type: 'digital',
  });
  expect(offer.status, offer.text).toBe(201);
  monthly = offer.body.data.id;
  const company = await fetch(`${sandbox.url}/extpay/sandbox/sandbox/companies`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      company_id: 'biz_subactions',
      api_keys: [{ key: FULL_KEY }, { key: NO_MANAGE_KEY, permissions: EXTPAY_PERMISSIONS.filter((p) => p !== 'member:manage') }],
    }),
  });
  expect(company.status).toBe(200);
  const c = await team.api.post('/v1/extpay-connections', {
    name: 'Whop sandbox',
    api_key: FULL_KEY,
    company_id: 'biz_subactions',
    environment: 'Sandbox',
    webhook_secret: 'ws_subactions',
    base_url: api,
  });
  expect(c.status, c.text).toBe(201);
  connectionId = c.body.data.id;
  // Card orders approve on a listed test card, without a gateway: the subscription is what is under test.
  expect((await team.api.post('/v1/test-cards', { card_number: CARD.card_number })).status).toBe(201);
});
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});

/** An extpay order paid on the hosted page and captured; answers its order number. */
async function paidExtpayOrder(products: { offer_id: string; quantity: number }[]): Promise<string> {
  const r = await team.api.post('/checkout/orders', {
    campaign_id: funnel.campaignId,
    currency: 'USD',
    customer: { email: email('subx'), first_name: 'Ada', last_name: 'Lovelace' },
    products,
    payment: { method: 'extpay', return_url: 'https://shop.example/thanks' },
  });
  expect(r.status, r.text).toBe(200);
  const on = r.body.data.order_number as string;
  const receipt = await payOnHostedPage(r.body.data.checkout.purchase_url, EXTPAY_CARDS.paid);
  const cap = await team.api.post('/checkout/orders/capture', { order_number: on, payment_id: receipt });
  expect(cap.status, cap.text).toBe(200);
  return on;
}

/** A subscription billed by the provider: a monthly (`active`) or trial (`trialing`) membership. */
async function extpaySubscription(offer: 'monthly' | 'trial' = 'monthly') {
  const on = await paidExtpayOrder([{ offer_id: offer === 'monthly' ? monthly : funnel.offers.trial, quantity: 1 }]);
  const list = await team.api.get(`/v1/subscriptions?order_number=${on}`);
  expect(list.body.data).toHaveLength(1);
  const sub = list.body.data[0];
  expect(sub).toMatchObject({ externally_managed: true, status: offer === 'monthly' ? 'active' : 'trialing' });
  expect(sub.membership_ref).toMatch(/^mem_/);
  return sub as { id: string; membership_ref: string; order_number: string; status: string; next_billing_at: string };
}

/** A subscription billed here (card): an approved card order, completed. */
async function cardSubscription() {
  const r = await team.api.post('/checkout/orders', {
    campaign_id: funnel.campaignId,
    currency: 'USD',
    customer: { email: email('subc') },
    products: [{ offer_id: monthly, quantity: 1 }],
    payment: CARD,
  });
  expect(r.status, r.text).toBe(200);
  const on = r.body.data.order_number;
  expect((await team.api.post('/checkout/orders/complete', { order_number: on })).status).toBe(200);
  const sub = (await team.api.get(`/v1/subscriptions?order_number=${on}`)).body.data[0];
  expect(sub).toMatchObject({ externally_managed: false, status: 'active' });
  return sub as { id: string; order_number: string; next_billing_at: string };
}

/** The membership as the provider holds it. */
async function membership(id: string) {
  const r = await fetch(`${api}/memberships/${id}`, { headers: { authorization: `Bearer ${FULL_KEY}` } });
  expect(r.status).toBe(200);
  return (await r.json()) as { status: string; cancel_at_period_end: boolean; payment_collection_paused: boolean; renewal_period_end: string };
}

async function row(id: string) {
  return app.store.run((db) => db.selectFrom('subscriptions').selectAll().where('id', '=', id).executeTakeFirstOrThrow());
}

async function updatedEvents(orderId: string) {
  return app.store.run(async (db) => {
    const rows = await db.selectFrom('events').select('payload').where('order_id', '=', orderId).where('type', '=', 'subscription.updated').orderBy('seq').execute();
    return rows.map((r) => (typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload).object as { id: string; status: string });
  });
}

async function control(path: string, body: unknown = {}) {
  const r = await fetch(`${sandbox.url}/extpay/sandbox/sandbox/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(r.status, await r.clone().text()).toBe(200);
  return r.json();
}

async function withConnection<T>(patch: Record<string, unknown>, run: () => Promise<T>): Promise<T> {
  const before = (await team.api.get(`/v1/extpay-connections/${connectionId}`)).body.data;
  expect((await team.api.patch(`/v1/extpay-connections/${connectionId}`, patch)).status).toBe(200);
  try {
    return await run();
  } finally {
    expect((await team.api.patch(`/v1/extpay-connections/${connectionId}`, { api_key: FULL_KEY, base_url: before.base_url })).status).toBe(200);
  }
}

describe('externally managed subscriptions: every action goes to the provider first (spec 3.2)', () => {
  it('cancels at once: the membership is cancelled at the provider and its answer is mirrored', async () => {
    const sub = await extpaySubscription();
    const r = await team.api.post(`/v1/subscriptions/${sub.id}/cancel`, {});
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ success: true, message: 'Subscription cancelled.', data: { object: 'subscription', id: sub.id, status: 'cancelled' } });
    const m = await membership(sub.membership_ref);
    expect(m.status).toBe('canceled');
    expect((await row(sub.id)).status).toBe('cancelled');
    expect(r.body.data.next_billing_at).toBe(new Date(m.renewal_period_end).toISOString());
    expect(await updatedEvents(sub.order_number)).toEqual([expect.objectContaining({ id: sub.id, status: 'cancelled' })]);
  });

  it('cancels at period end, then Reactivate un-cancels the membership at the provider', async () => {
    const sub = await extpaySubscription();
    const r = await team.api.post(`/v1/subscriptions/${sub.id}/cancel`, { at_period_end: true });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.status).toBe('cancel_at_period_end');
    expect(await membership(sub.membership_ref)).toMatchObject({ status: 'active', cancel_at_period_end: true });
    expect((await row(sub.id)).status).toBe('cancel_at_period_end');

    const back = await team.api.post(`/v1/subscriptions/${sub.id}/reactivate`);
    expect(back.status, back.text).toBe(200);
    expect(back.body).toMatchObject({ message: 'Subscription reactivated.', data: { status: 'active' } });
    expect(await membership(sub.membership_ref)).toMatchObject({ status: 'active', cancel_at_period_end: false });
    expect((await row(sub.id)).status).toBe('active');
    expect((await updatedEvents(sub.order_number)).map((e) => e.status)).toEqual(['cancel_at_period_end', 'active']);
  });

  it('pauses and restarts payment collection at the provider; a body is optional', async () => {
    const sub = await extpaySubscription('trial');
    const paused = await team.api.request('POST', `/v1/subscriptions/${sub.id}/pause`);
    expect(paused.status, paused.text).toBe(200);
    expect(paused.body.data.status).toBe('paused');
    expect((await membership(sub.membership_ref)).payment_collection_paused).toBe(true);
    expect((await row(sub.id)).status).toBe('paused');

    const resumed = await team.api.post(`/v1/subscriptions/${sub.id}/resume`, {});
    expect(resumed.status, resumed.text).toBe(200);
    // The trial membership is back to what the provider says: still trialing.
    expect(resumed.body.data.status).toBe('trialing');
    expect((await membership(sub.membership_ref)).payment_collection_paused).toBe(false);
    expect((await row(sub.id)).status).toBe('trialing');
    expect((await updatedEvents(sub.order_number)).map((e) => e.status)).toEqual(['paused', 'trialing']);
  });

  it('pause → paused, resume → active on a paid monthly membership', async () => {
    const sub = await extpaySubscription();
    expect((await team.api.post(`/v1/subscriptions/${sub.id}/pause`)).body.data.status).toBe('paused');
    const r = await team.api.post(`/v1/subscriptions/${sub.id}/resume`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.status).toBe('active');
    expect((await row(sub.id)).status).toBe('active');
  });

  it("a provider refusal changes nothing here and surfaces the provider's message (409 provider_rejected)", async () => {
    const sub = await extpaySubscription();
    const before = await row(sub.id);
    await withConnection({ api_key: NO_MANAGE_KEY }, async () => {
      for (const [path, body] of [
        ['cancel', {}],
        ['cancel', { at_period_end: true }],
        ['pause', {}],
      ] as const) {
        const r = await team.api.post(`/v1/subscriptions/${sub.id}/${path}`, body);
        expect(r.status, r.text).toBe(409);
        expect(r.body).toMatchObject({ success: false, error: { code: 'provider_rejected' } });
        expect(r.body.message).toMatch(/^The provider refused to (cancel|pause) the membership/);
        expect(r.body.message).toContain(MANAGE_MESSAGE);
      }
    });
    expect(await row(sub.id)).toEqual(before);
    expect(await membership(sub.membership_ref)).toMatchObject({ status: 'active', cancel_at_period_end: false, payment_collection_paused: false });
    expect(await updatedEvents(sub.order_number)).toEqual([]);

    // A move the provider will not make is refused the same way, in its words.
    const again = await team.api.post(`/v1/subscriptions/${sub.id}/reactivate`);
    expect(again.status, again.text).toBe(409);
    expect(again.body.error.code).toBe('provider_rejected');
    expect(again.body.message).toContain('Only a membership scheduled to cancel at period end can be uncanceled.');
    expect(await row(sub.id)).toEqual(before);
  });

  it('a provider that cannot be reached: 502, nothing changes', async () => {
    const sub = await extpaySubscription();
    const before = await row(sub.id);
    await withConnection({ base_url: 'http://127.0.0.1:9/api/v1' }, async () => {
      const r = await team.api.post(`/v1/subscriptions/${sub.id}/cancel`);
      expect(r.status, r.text).toBe(502);
      expect(r.body.error.code).toBe('gateway_unavailable');
    });
    expect(await row(sub.id)).toEqual(before);
    expect((await membership(sub.membership_ref)).status).toBe('active');
  });

  it('without a membership reference (missed payment.succeeded) cancel is refused until Sync from Provider recovers it', async () => {
    const sub = await extpaySubscription();
    await app.store.run((db) => db.updateTable('subscriptions').set({ membership_ref: null, next_billing_at: null }).where('id', '=', sub.id).execute());
    for (const path of ['cancel', 'pause', 'resume', 'reactivate']) {
      const r = await team.api.post(`/v1/subscriptions/${sub.id}/${path}`);
      expect(r.status, `${path}: ${r.text}`).toBe(409);
      expect(r.body.error.code).toBe('membership_missing');
      expect(r.body.message).toMatch(/no membership reference/);
    }
    expect((await membership(sub.membership_ref)).status).toBe('active');
    expect((await row(sub.id)).membership_ref).toBeNull();

    const synced = await team.api.post(`/v1/subscriptions/${sub.id}/sync`);
    expect(synced.status, synced.text).toBe(200);
    expect(synced.body.data).toMatchObject({ membership_ref: sub.membership_ref, status: 'active', next_billing_at: sub.next_billing_at });
    expect((await row(sub.id)).membership_ref).toBe(sub.membership_ref);

    const cancelled = await team.api.post(`/v1/subscriptions/${sub.id}/cancel`);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body.data.status).toBe('cancelled');
    expect((await membership(sub.membership_ref)).status).toBe('canceled');
  });

  it('Sync from Provider refreshes status and next billing date after a renewal and a failed renewal (past_due)', async () => {
    const sub = await extpaySubscription();
    const renewed = await control(`memberships/${sub.membership_ref}/renew`);
    await control(`memberships/${sub.membership_ref}/fail_renewal`);
    const m = await membership(sub.membership_ref);
    expect(m.status).toBe('past_due');
    expect(m.renewal_period_end).toBe(renewed.membership.renewal_period_end);
    // No webhook reaches this app: the local row is stale until synced.
    expect(await row(sub.id)).toMatchObject({ status: 'active', next_billing_at: new Date(sub.next_billing_at) });

    const r = await team.api.post(`/v1/subscriptions/${sub.id}/sync`, {});
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ message: 'Subscription synced from the provider.', data: { status: 'past_due', next_billing_at: new Date(m.renewal_period_end).toISOString() } });
    expect(r.body.data.next_billing_at).not.toBe(sub.next_billing_at);
    expect(await row(sub.id)).toMatchObject({ status: 'past_due', next_billing_at: new Date(m.renewal_period_end) });
    expect((await updatedEvents(sub.order_number)).map((e) => e.status)).toEqual(['past_due']);

    // Nothing new at the provider: no change, no event.
    expect((await team.api.post(`/v1/subscriptions/${sub.id}/sync`)).status).toBe(200);
    expect(await updatedEvents(sub.order_number)).toHaveLength(1);
  });

  it('Sync from Provider when the provider has no membership for the order yet: 409 membership_missing', async () => {
    // A one-time payment starts no membership; a subscription row on its order stands in for one whose membership never started.
    const on = await paidExtpayOrder([{ offer_id: funnel.offers.serum, quantity: 1 }]);
    const id = newId('subscription');
    const order = (await team.api.get(`/v1/orders/${on}`)).body.data;
    await app.store.run((db) =>
      db
        .insertInto('subscriptions')
        .values({
          id,
          team_id: team.teamId,
          order_id: on,
          customer_id: order.customer.customer_number,
          offer_id: monthly,
          status: 'active',
          externally_managed: true,
          connection_id: connectionId,
          interval_unit: 'month',
          interval_count: 1,
          recurring_price: 2900,
          currency: 'USD',
        })
        .execute(),
    );
    const r = await team.api.post(`/v1/subscriptions/${id}/sync`);
    expect(r.status, r.text).toBe(409);
    expect(r.body.error.code).toBe('membership_missing');
    expect(r.body.message).toMatch(/provider has no membership for this subscription yet/);
    expect((await row(id)).membership_ref).toBeNull();
  });

  it('Rebill Now is refused with the spec message (4.5)', async () => {
    const sub = await extpaySubscription();
    const before = await row(sub.id);
    const r = await team.api.post(`/v1/subscriptions/${sub.id}/rebill`);
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ success: false, message: 'Subscription is managed by a third party and cannot be billed manually.', error: { code: 'subscription_externally_managed' } });
    expect(await row(sub.id)).toEqual(before);
  });

  it("another team gets 404 on every action and the provider's membership is untouched", async () => {
    const sub = await extpaySubscription();
    const before = await row(sub.id);
    for (const path of ['cancel', 'pause', 'resume', 'reactivate', 'sync', 'rebill']) {
      const r = await other.api.post(`/v1/subscriptions/${sub.id}/${path}`);
      expect(r.status, path).toBe(404);
      expect(r.body).toMatchObject({ success: false, data: null, error: { code: 'not_found' } });
    }
    expect(await row(sub.id)).toEqual(before);
    expect(await membership(sub.membership_ref)).toMatchObject({ status: 'active', cancel_at_period_end: false, payment_collection_paused: false });
  });

  it('refuses unknown fields and a non-boolean at_period_end (422)', async () => {
    const sub = await extpaySubscription();
    expect((await team.api.post(`/v1/subscriptions/${sub.id}/cancel`, { at_period_end: 'yes' })).status).toBe(422);
    expect((await team.api.post(`/v1/subscriptions/${sub.id}/cancel`, { when: 'now' })).status).toBe(422);
    expect((await team.api.post(`/v1/subscriptions/${sub.id}/pause`, { void_payments: true })).status).toBe(422);
    expect((await membership(sub.membership_ref)).status).toBe('active');
  });
});

describe('card subscriptions: changed here, with state checks', () => {
  it('pause, restart, cancel at period end, reactivate, cancel, reactivate; refusals name the current state', async () => {
    const sub = await cardSubscription();
    const step = async (path: string, body: unknown, status: string) => {
      const r = await team.api.post(`/v1/subscriptions/${sub.id}/${path}`, body);
      expect(r.status, `${path}: ${r.text}`).toBe(200);
      expect(r.body.data.status).toBe(status);
      expect((await row(sub.id)).status).toBe(status);
    };
    const refused = async (path: string, state: string) => {
      const before = await row(sub.id);
      const r = await team.api.post(`/v1/subscriptions/${sub.id}/${path}`);
      expect(r.status, `${path}: ${r.text}`).toBe(409);
      expect(r.body.error.code).toBe('subscription_not_actionable');
      expect(r.body.message).toContain(`This subscription is ${state}`);
      expect(await row(sub.id)).toEqual(before);
    };

    await refused('resume', 'active');
    await refused('reactivate', 'active');
    await step('pause', {}, 'paused');
    await refused('pause', 'paused');
    await step('resume', {}, 'active');
    await step('cancel', { at_period_end: true }, 'cancel_at_period_end');
    await refused('pause', 'cancel_at_period_end');
    await step('reactivate', {}, 'active');
    await step('cancel', {}, 'cancelled');
    await refused('pause', 'cancelled');
    await refused('resume', 'cancelled');
    await refused('cancel', 'cancelled');
    await step('reactivate', {}, 'active');

    expect((await updatedEvents(sub.order_number)).map((e) => e.status)).toEqual(['paused', 'active', 'cancel_at_period_end', 'active', 'cancelled', 'active']);
    // The next billing date is ours and is left alone: the status says whether anything is billed.
    expect((await row(sub.id)).next_billing_at?.toISOString()).toBe(sub.next_billing_at);
  });

  it('Sync from Provider is refused and changes nothing; Rebill Now bills the next cycle on the saved card', async () => {
    const sub = await cardSubscription();
    const before = await row(sub.id);
    const sync = await team.api.post(`/v1/subscriptions/${sub.id}/sync`);
    expect(sync.status).toBe(409);
    expect(sync.body).toMatchObject({ error: { code: 'subscription_not_actionable' } });
    expect(sync.body.message).toMatch(/only subscriptions billed by an external provider can be synced/i);
    expect(await row(sub.id)).toEqual(before);
    expect(await updatedEvents(sub.order_number)).toEqual([]);
    // A listed test card: approved without a gateway (test/rebills.test.ts bills through the sandbox).
    const rebill = await team.api.post(`/v1/subscriptions/${sub.id}/rebill`);
    expect(rebill.status, rebill.text).toBe(200);
    expect(rebill.body.data).toMatchObject({ cycle: 1, subscription: { id: sub.id, status: 'active' } });
    expect((await row(sub.id)).cycle).toBe(1);
  });

  it('another team gets 404 and the subscription is unchanged', async () => {
    const sub = await cardSubscription();
    const before = await row(sub.id);
    for (const path of ['cancel', 'pause', 'resume', 'reactivate', 'sync', 'rebill']) {
      expect((await other.api.post(`/v1/subscriptions/${sub.id}/${path}`)).status, path).toBe(404);
    }
    expect(await row(sub.id)).toEqual(before);
  });
});

describe('OpenAPI', () => {
  it('documents each action with a summary and says externally managed subscriptions change at the provider first', async () => {
    const spec = (await app.anonymous.get('/openapi.json')).body as { paths: Record<string, { post?: { summary?: string; description?: string } }> };
    for (const path of ['cancel', 'pause', 'resume', 'reactivate', 'sync', 'rebill']) {
      const op = spec.paths[`/v1/subscriptions/{id}/${path}`]?.post;
      expect(op?.summary, path).toBeTruthy();
      expect(op?.description, path).toBeTruthy();
    }
    for (const path of ['cancel', 'pause', 'resume', 'reactivate']) expect(spec.paths[`/v1/subscriptions/{id}/${path}`]!.post!.description).toMatch(/changed at the provider first/);
  });
});
