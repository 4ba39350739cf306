import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/app/ids.ts';
import { CARD, email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

let app: TestApp;
let a: TestTeam;
let b: TestTeam;
let funnel: Funnel;
const ids: Record<string, string> = {};

beforeAll(async () => {
  app = await startTestApp();
  a = await app.newTeam('A');
  b = await app.newTeam('B');
  funnel = await seedFunnel(app, a.teamId);
  await seedFunnel(app, b.teamId);
  const lead = await a.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email() }, products: [{ offer_id: funnel.offers.serum, quantity: 1 }] });
  ids.order = lead.body.data.order_number;
  ids.customer = lead.body.data.customer.customer_number;
  const paid = await a.api.post('/checkout/orders', {
    campaign_id: funnel.campaignId,
    currency: 'USD',
    customer: { email: email() },
    products: [{ offer_id: funnel.offers.serum, quantity: 1 }],
    payment: CARD,
  });
  ids.transaction = paid.body.data.transaction_id;
  await a.api.post(`/v1/customers/${ids.customer}/notes`, { body: 'VIP' });
  // Fulfillments and subscriptions are created by later payment work; rows are inserted directly here.
  ids.fulfillment = newId('fulfillment');
  ids.subscription = newId('subscription');
  await app.store.run(async (db) => {
    await db.insertInto('fulfillments').values({ id: ids.fulfillment!, team_id: a.teamId, order_id: ids.order!, status: 'pending', lines: '[]' }).execute();
    await db
      .insertInto('subscriptions')
      .values({
        id: ids.subscription!,
        team_id: a.teamId,
        order_id: ids.order!,
        customer_id: ids.customer!,
        offer_id: funnel.offers.trial,
        status: 'active',
        interval_unit: 'month',
        interval_count: 1,
        recurring_price: 2900,
        currency: 'USD',
      })
      .execute();
  });
  const ev = await app.store.transaction((trx) => app.ctx.services.events.emit(trx, a.teamId, 'order.upsell_added', { orderId: ids.order, object: { order_number: ids.order } }));
  ids.event = ev.id;
  ids.mail = newId('mail');
  await app.store.run((db) =>
    db
      .insertInto('mail_messages')
      .values({ id: ids.mail!, team_id: a.teamId, event_id: ev.id, order_id: ids.order!, kind: 'purchase_confirmation', to_address: 'a@example.com', subject: 's', text_body: 't', status: 'sent' })
      .execute(),
  );
  ids.campaign = funnel.campaignId;
  ids.product = (await a.api.get('/v1/products?limit=1')).body.data[0].id;
  ids.offer = funnel.offers.serum;
  ids.upsell = funnel.upsellId;
  ids.coupon = (await app.ctx.services.catalog.createCoupon(a.teamId, { code: 'TEN', percent_off: 10 })).id;
  const gw = await a.api.post('/v1/gateways', { name: 'A gateway', kind: 'nmi', base_url: 'http://127.0.0.1:9', credentials: { security_key: 'a-secret-key-123' } });
  ids.gateway = gw.body.data.id;
  ids['payment-orchestrator'] = (await a.api.post('/v1/payment-orchestrators', { name: 'A router', members: [{ gateway_id: ids.gateway }] })).body.data.id;
  ids['bin-blacklist'] = (await a.api.post('/v1/bin-blacklist', { prefix: '123456' })).body.data.id;
  ids['test-card'] = (await a.api.post('/v1/test-cards', { card_number: '4242424242424242' })).body.data.id;
  ids['fraud-rule'] = (await a.api.post('/v1/fraud-rules', { name: 'A rule', metric: 'declines', dimension: 'email', threshold: 5, window_seconds: 3600 })).body.data.id;
  ids['extpay-connection'] = (
    await a.api.post('/v1/extpay-connections', { name: 'A', api_key: 'key_a_123456789', company_id: 'biz_a', environment: 'Sandbox', base_url: 'http://127.0.0.1:9/api/v1' })
  ).body.data.id;
  // The tenancy app refuses private webhook targets: a public address literal registers without DNS.
  const endpoint = await a.api.post('/v1/webhook-endpoints', { url: 'https://93.184.215.14/hooks', event_types: ['*'] });
  ids['webhook-endpoint'] = endpoint.body.data.id;
  const hook = await app.store.transaction((trx) => app.ctx.services.events.emit(trx, a.teamId, 'order.upsell_added', { orderId: ids.order, object: {} }));
  ids['api-token'] = (await a.api.post('/v1/api-tokens', { name: 'A desk', role: 'support_l1' })).body.data.id;
  const provider = await app.ctx.services.teams.createTeam('A provider', 'provider');
  ids['provider-grant'] = (await a.api.post('/v1/provider-grants', { provider_id: provider.id, kind: 'customer_service' })).body.data.id;
  ids['webhook-delivery'] = (await app.store.run((db) => db.selectFrom('webhook_deliveries').select('id').where('event_id', '=', hook.id).executeTakeFirstOrThrow())).id;
  ids.affiliate = (await a.api.post('/v1/affiliates', { id: 'a-affiliate', name: 'A affiliate', throttle_rate: 10, automatic_throttling: true })).body.data.id;
  ids['affiliate-postback'] = `pb_${ids.order!.slice(4)}`;
  // The second order as an affiliate's approved conversion (what /v1/affiliate-orders shows), set directly.
  ids['affiliate-order'] = paid.body.data.order_number;
  await app.store.run((db) => db.updateTable('orders').set({ affiliate_id: 'a-affiliate', is_throttle: false, is_test: false, payment_status: 'completed' }).where('team_id', '=', a.teamId).where('id', '=', ids['affiliate-order']!).execute());
  const ticket = await a.api.post('/v1/tickets', { customer_number: ids.customer, subject: 'A ticket', message: { body: 'hello' } });
  ids.ticket = ticket.body.data.id;
  const attachment = await a.api.request('POST', `/v1/tickets/${ids.ticket}/attachments?filename=a.txt`, 'A file', { 'content-type': 'text/plain' });
  ids.attachment = attachment.body.data.id;
  ids.member = (await app.ctx.services.users.createUser({ teamId: a.teamId, email: 'owner-a@example.com', password: 'correct horse battery' })).id;
  ids.invitation = `inv_${ids.order!.slice(4)}`;
  await app.store.run((db) =>
    db
      .insertInto('invitations')
      .values({ id: ids.invitation!, team_id: a.teamId, email: 'invitee-a@example.com', role: 'support_l1', token_hash: `hash_${ids.invitation}`, expires_at: new Date(Date.now() + 86_400_000) })
      .execute(),
  );
  await app.store.run((db) =>
    db
      .insertInto('affiliate_postbacks')
      .values({ id: ids['affiliate-postback']!, team_id: a.teamId, affiliate_id: 'a-affiliate', order_id: ids.order!, event: 'conversion', source_id: 'x', url: 'https://93.184.215.14/pb', status: 'succeeded' })
      .execute(),
  );
});
afterAll(async () => app?.close());

/** Fills a route template with team A's id of the right kind. */
function fill(path: string): string {
  return path.replace(/\{(\w+)\}/g, (_m, name: string) => {
    const kind = name === 'order_number' ? (path.startsWith('/v1/affiliate-orders') ? 'affiliate-order' : 'order') : name === 'customer_number' ? 'customer' : path.split('/')[2]!.replace(/ies$/, 'y').replace(/s$/, '');
    // DELETE routes are exercised too: they must 404 for another team before touching anything.
    const id = ids[kind];
    if (!id) throw new Error(`no fixture id for ${kind} in ${path}`);
    return id;
  });
}

async function snapshot() {
  return app.store.run(async (db) => ({
    order: await db.selectFrom('orders').selectAll().where('id', '=', ids.order!).executeTakeFirstOrThrow(),
    notes: (await db.selectFrom('customer_notes').select('id').where('customer_id', '=', ids.customer!).execute()).length,
    gateway: await db.selectFrom('gateways').selectAll().where('id', '=', ids.gateway!).executeTakeFirstOrThrow(),
    blocks: (await db.selectFrom('bin_blacklist').select('id').where('team_id', '=', a.teamId).execute()).length,
    testCards: (await db.selectFrom('test_cards').select('id').where('team_id', '=', a.teamId).execute()).length,
    transactions: (await db.selectFrom('transactions').select('id').where('team_id', '=', a.teamId).execute()).length,
    endpoint: await db.selectFrom('webhook_endpoints').selectAll().where('id', '=', ids['webhook-endpoint']!).executeTakeFirstOrThrow(),
    deliveries: await db.selectFrom('webhook_deliveries').select(['id', 'status', 'attempt_count']).where('team_id', '=', a.teamId).orderBy('id').execute(),
    campaign: await db.selectFrom('campaigns').selectAll().where('id', '=', ids.campaign!).executeTakeFirstOrThrow(),
    events: (await db.selectFrom('order_events').select('id').where('order_id', '=', ids.order!).execute()).length,
  }));
}

describe('tenancy: another team never sees or changes team A', () => {
  it('answers 404 on every parameterised /v1 route in the OpenAPI document, and A is unchanged', async () => {
    const spec = (await app.anonymous.get('/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    const before = await snapshot();
    const checked: string[] = [];
    for (const [path, ops] of Object.entries(spec.paths)) {
      if (!path.includes('{')) continue;
      for (const method of Object.keys(ops)) {
        const url = fill(path);
        const body =
          method === 'post'
            ? path.endsWith('/notes') || path.endsWith('/messages')
              ? { body: 'note from B' }
              : path.endsWith('/ship')
                ? { carrier: 'UPS', tracking_number: '1ZB' }
              : path.endsWith('/attachments')
                ? 'a file from B'
              : path.endsWith('/throttle/simulate')
                ? { throttle_rate: 50 }
              : path.endsWith('/payment-method')
                ? { card_number: '4111111111111111', card_exp: '12/39', card_cvv: '123' }
                : {}
            : method === 'patch'
              ? path.startsWith('/v1/coupons')
                ? { is_active: false }
                : path.startsWith('/v1/members')
                  ? { role: 'support_l1' }
                : path.startsWith('/v1/provider-grants')
                  ? { permissions: ['webhooks:manage'] }
                  : path.startsWith('/v1/webhook-endpoints')
                  ? { description: 'hijacked' }
                  : path.startsWith('/v1/subscriptions')
                    ? { quantity: 2 }
                  : path.startsWith('/v1/tickets')
                    ? { status: 'closed' }
                  : path.startsWith('/v1/orders')
                    ? { needs_qa: true, qa_reason: 'hijacked' }
                    : { name: 'hijacked' }
              : method === 'put'
                ? { subject: 'hijacked', body: 'hijacked' }
                : undefined;
        const r = await b.api.request(method.toUpperCase(), url, body, typeof body === 'string' ? { 'content-type': 'text/plain' } : {});
        expect(r.status, `${method} ${path}`).toBe(404);
        expect(r.body).toMatchObject({ success: false, data: null, error: { code: 'not_found' } });
        // A's token still sees it.
        if (method === 'get') expect((await a.api.get(url)).status, `A: get ${path}`).toBe(200);
        checked.push(`${method} ${path}`);
      }
    }
    expect(checked.length).toBeGreaterThanOrEqual(38);
    expect(await snapshot()).toEqual(before);
    // A's ticket, its messages and its fulfillment are as A left them.
    expect((await a.api.get(`/v1/tickets/${ids.ticket}`)).body.data).toMatchObject({ status: 'open', subject: 'A ticket' });
    expect((await a.api.get(`/v1/tickets/${ids.ticket}/messages`)).body.data).toHaveLength(1);
    expect((await a.api.get(`/v1/fulfillments/${ids.fulfillment}`)).body.data).toMatchObject({ status: 'pending' });
  });

  it('answers 404 on /checkout routes given team A ids, with no state change', async () => {
    const before = await snapshot();
    const bFunnelCampaign = (await b.api.get('/v1/campaigns?limit=1')).body.data[0].id;
    const attempts = [
      b.api.post('/checkout/leads', { order_number: ids.order, phone: '+1 555 0000' }),
      b.api.post('/checkout/leads', { campaign_id: ids.campaign, customer: { email: email() } }),
      b.api.post('/checkout/orders', { campaign_id: ids.campaign, currency: 'USD', customer: { email: email() }, products: [{ offer_id: ids.offer, quantity: 1 }], payment: CARD }),
      b.api.post('/checkout/orders/payment', { order_number: ids.order, payment: CARD }),
    ];
    for (const r of await Promise.all(attempts)) {
      expect(r.status, JSON.stringify(r.body)).toBe(404);
      expect(r.body.success).toBe(false);
    }
    // B's own campaign with A's offer: the offer is not B's, refused on the field.
    const mixed = await b.api.post('/checkout/leads', { campaign_id: bFunnelCampaign, customer: { email: email() }, products: [{ offer_id: ids.offer, quantity: 1 }] });
    expect(mixed.status).toBe(422);
    expect(await snapshot()).toEqual(before);
  });

  it("lists only the team's own rows, and filters cannot reach across", async () => {
    for (const list of ['/v1/orders', '/v1/transactions', '/v1/fulfillments', '/v1/subscriptions', '/v1/campaigns', '/v1/products']) {
      const rb = await b.api.get(`${list}?limit=100`);
      expect(rb.status, list).toBe(200);
      const aIds = new Set(Object.values(ids));
      for (const item of rb.body.data) expect(aIds.has(item.id ?? item.order_number), list).toBe(false);
    }
    expect((await b.api.get(`/v1/orders?customer_number=${ids.customer}`)).body.data).toEqual([]);
    expect((await b.api.get(`/v1/transactions?order_number=${ids.order}`)).body.data).toEqual([]);
    expect((await b.api.get(`/v1/orders?starting_after=${ids.order}`)).status).toBe(422);
  });

  it('refuses a missing, malformed, unknown or revoked token with 401 in the envelope', async () => {
    const { ApiClient } = await import('./support/harness.ts');
    for (const token of [undefined, 'nonsense', 'csk_unknown0000000000000000000000000000000']) {
      const r = await new ApiClient(app.url, token).get('/v1/orders');
      expect(r.status).toBe(401);
      expect(r.body).toMatchObject({ success: false, error: { type: 'authentication_error' } });
    }
    const basic = await app.anonymous.get('/v1/orders', { authorization: 'Basic Zm9vOmJhcg==' });
    expect(basic.status).toBe(401);
  });
});
