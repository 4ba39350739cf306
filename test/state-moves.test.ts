import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/app/ids.ts';
import type { ExtpayMembership } from '../src/providers/extpay/types.ts';
import { email, type Funnel, seedFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

/**
 * Status writes go through their tables. Subscription status writes go through the SUBSCRIPTION table. A card subscription's own actions
 * are refused off the table; the provider's membership state is the truth for one it bills, so an
 * off-table move is applied anyway and flagged on the timeline (a refusal would make the provider
 * redeliver its event forever).
 */
let app: TestApp;
let team: TestTeam;
let funnel: Funnel;

beforeAll(async () => {
  app = await startTestApp();
  team = await app.newTeam('Mirror');
  funnel = await seedFunnel(app, team.teamId);
});
afterAll(async () => app?.close());

async function subscriptionIn(status: string): Promise<{ orderId: string; subId: string; membership: string }> {
  const lead = await team.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email('mirror') }, products: [{ offer_id: funnel.offers.trial, quantity: 1 }] });
  expect(lead.status).toBe(201);
  const orderId: string = lead.body.data.order_number;
  const subId = newId('subscription');
  const membership = `mem_${subId.slice(4)}`;
  await app.store.run((db) =>
    db
      .insertInto('subscriptions')
      .values({
        id: subId,
        team_id: team.teamId,
        order_id: orderId,
        customer_id: lead.body.data.customer.customer_number,
        offer_id: funnel.offers.trial,
        status,
        interval_unit: 'month',
        interval_count: 1,
        recurring_price: 2900,
        currency: 'USD',
        externally_managed: true,
        membership_ref: membership,
      })
      .execute(),
  );
  return { orderId, subId, membership };
}

function membership(id: string, status: ExtpayMembership['status']): ExtpayMembership {
  return { id, status, cancelAtPeriodEnd: false, paused: false, planId: null, memberId: null, companyId: null, renewalPeriodStart: null, renewalPeriodEnd: null, canceledAt: null, metadata: {} };
}

describe('subscription status moves', () => {
  it("the provider's membership state is applied even off the table, and the timeline flags it", async () => {
    const s = await subscriptionIn('expired');
    const changed = await app.store.transaction((trx) => app.ctx.services.subscriptions.applyMembership(trx, team.teamId, membership(s.membership, 'active')));
    expect(changed.map((c) => c.status)).toEqual(['active']);
    const events = (await team.api.get(`/v1/orders/${s.orderId}`)).body.data.events;
    expect(events).toContainEqual(expect.objectContaining({ type: 'subscription.status_changed', data: { subscription_id: s.subId, from_status: 'expired', to_status: 'active', off_table: true } }));
  });

  it('a move on the table is recorded without the flag', async () => {
    const s = await subscriptionIn('active');
    await app.store.transaction((trx) => app.ctx.services.subscriptions.applyMembership(trx, team.teamId, membership(s.membership, 'past_due')));
    const events = (await team.api.get(`/v1/orders/${s.orderId}`)).body.data.events;
    expect(events).toContainEqual(expect.objectContaining({ type: 'subscription.status_changed', data: { subscription_id: s.subId, from_status: 'active', to_status: 'past_due' } }));
  });
});

describe('dispute and upsell claim moves', () => {
  async function saleOf(orderId: string) {
    const id = newId('transaction');
    return app.store.run((db) =>
      db
        .insertInto('transactions')
        .values({ id, team_id: team.teamId, order_id: orderId, type: 'sale', status: 'approved', amount: 2900, currency: 'USD', gateway_id: null, provider_ref: `pay_${id}` })
        .returningAll()
        .executeTakeFirstOrThrow(),
    );
  }
  const dispute = (id: string, status: 'needs_response' | 'won' | 'lost') => ({ id, status, reason: 'fraudulent', amount: 2900, currency: 'usd', paymentId: null, createdAt: null });

  it("the provider's dispute state is applied even off the DISPUTE table, and says so", async () => {
    const s = await subscriptionIn('active');
    const sale = await saleOf(s.orderId);
    const ext = app.ctx.services.ledger.external;
    const id = `dspt_${sale.id.slice(4)}`;
    await app.store.transaction((trx) => ext.recordExternalDispute(trx, team.teamId, sale, dispute(id, 'needs_response')));
    const onTable = await app.store.transaction((trx) => ext.recordExternalDispute(trx, team.teamId, sale, dispute(id, 'won')));
    expect(onTable).toMatchObject({ offTable: false, dispute: { status: 'won' } });
    // won is final in the table; the provider reversing it is recorded anyway, flagged.
    const offTable = await app.store.transaction((trx) => ext.recordExternalDispute(trx, team.teamId, sale, dispute(id, 'lost')));
    expect(offTable).toMatchObject({ offTable: true, dispute: { status: 'lost' } });
  });

  it('an upsell claim moves only as ORDER_UPSELL allows, in the statement that writes it', async () => {
    const s = await subscriptionIn('active');
    const claimId = newId('orderUpsell');
    await app.store.run((db) =>
      db.insertInto('order_upsells').values({ id: claimId, team_id: team.teamId, order_id: s.orderId, upsell_id: funnel.upsellId, quantity: 1, status: 'in_flight' }).execute(),
    );
    const orders = app.ctx.services.orders;
    await app.store.transaction((trx) => orders.moveUpsellClaim(trx, team.teamId, claimId, 'pending'));
    await app.store.transaction((trx) => orders.moveUpsellClaim(trx, team.teamId, claimId, 'approved'));
    await expect(app.store.transaction((trx) => orders.moveUpsellClaim(trx, team.teamId, claimId, 'pending'))).rejects.toMatchObject({
      code: 'conflict',
      message: 'An upsell claim can only become pending from in_flight.',
    });
    const row = await app.store.run((db) => db.selectFrom('order_upsells').select('status').where('id', '=', claimId).executeTakeFirstOrThrow());
    expect(row.status).toBe('approved');
    // On PostgreSQL the move goes with the COMMIT, unanswered until then: its refusal fails the
    // COMMIT, and nothing the transaction wrote before it commits (here an order's timeline row).
    const marker = `refused_${claimId}`;
    await expect(
      app.store.transaction(async (trx) => {
        await orders.recordEvents(trx, team.teamId, s.orderId, [{ type: marker }]);
        await orders.moveUpsellClaim(trx, team.teamId, claimId, 'declined', { response_status: 402 });
      }),
    ).rejects.toMatchObject({ code: 'conflict', message: 'An upsell claim can only become declined from in_flight or pending.' });
    const written = await app.store.run((db) => db.selectFrom('order_events').select('id').where('type', '=', marker).execute());
    expect(written).toEqual([]);
    const after = await app.store.run((db) => db.selectFrom('order_upsells').select(['status', 'response_status']).where('id', '=', claimId).executeTakeFirstOrThrow());
    expect(after).toEqual({ status: 'approved', response_status: null });
  });

  it("an order's move answers the row as written, without reading it back", async () => {
    const s = await subscriptionIn('active');
    const orders = app.ctx.services.orders;
    const moved = await app.store.transaction(async (trx) => {
      const held = (await orders.rows.findOrder(trx, team.teamId, s.orderId, { forUpdate: true }))!;
      const cancelled = await orders.move(trx, held, { status: 'cancelled' }, { type: 'order.cancelled', data: { by: 'test' } }, { needs_qa: true, qa_reason: 'moved' });
      // A second change on the first one's answer, as a payment's answer and its affiliate throttle do.
      return orders.updateWithEvents(trx, cancelled, { is_throttle: true, payment_method_id: null, rebill_cycle: undefined }, []);
    });
    const stored = await app.store.run((db) => db.selectFrom('orders').selectAll().where('id', '=', s.orderId).executeTakeFirstOrThrow());
    expect(moved).toEqual(stored);
    expect(stored).toMatchObject({ status: 'cancelled', needs_qa: true, qa_reason: 'moved', is_throttle: true });
    const timeline = await app.store.run((db) => db.selectFrom('order_events').select('type').where('order_id', '=', s.orderId).where('type', '=', 'order.cancelled').execute());
    expect(timeline).toHaveLength(1);
  });
});
