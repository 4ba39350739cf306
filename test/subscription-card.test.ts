import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/app/ids.ts';
import { SANDBOX_CARDS } from '../src/sandbox/cards.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { email, seedFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';
import { nmiLedger, nmiSandboxGateway } from './support/nmi.ts';

// Replacing a card subscription's card (issue 14): POST /v1/subscriptions/{id}/payment-method
// verifies and vaults the new card at $0, over HTTP against the NMI sandbox.
let app: TestApp;
let team: TestTeam;
let sandbox: { url: string; close(): Promise<void> };

/** Luhn-valid cards the sandbox approves, each with its own last 4. */
const NEW_VISA = '4000056655665556';
const NEW_MASTERCARD = '5431111111111111';

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, slowMs: 50 });
  app = await startTestApp();
  team = await app.newTeam();
});
afterAll(async () => {
  await app?.close();
  await sandbox?.close();
});

const nmiGateway = () => nmiSandboxGateway(team, sandbox.url, { prefix: 'sc' });

const ledgerOf = (key: string) => nmiLedger(sandbox.url, key);

const card = (number: string, exp = '12/39') => ({ card_number: number, card_exp: exp, card_cvv: '123' });

/** A completed order with the trial and the serum on the campaign's gateway: one card subscription. */
async function subscribed(gatewayId: string, pan: string = SANDBOX_CARDS.approve) {
  const f = await seedFunnel(app, team.teamId);
  await app.ctx.services.catalog.updateCampaign(team.teamId, f.campaignId, { gateway_id: gatewayId });
  const r = await team.api.post('/checkout/orders', {
    campaign_id: f.campaignId,
    currency: 'USD',
    customer: { email: email('sub'), first_name: 'Ada', last_name: 'Lovelace' },
    products: [
      { offer_id: f.offers.serum, quantity: 1 },
      { offer_id: f.offers.trial, quantity: 1 },
    ],
    payment: card(pan),
  });
  expect(r.status, r.text).toBe(200);
  expect((await team.api.post('/checkout/orders/complete', { order_number: r.body.data.order_number })).status).toBe(200);
  const subs = await team.api.get(`/v1/subscriptions?order_number=${r.body.data.order_number}`);
  expect(subs.body.data).toHaveLength(1);
  return { funnel: f, orderNumber: r.body.data.order_number as string, subscriptionId: subs.body.data[0].id as string };
}

const methodsOf = (customerId: string) => app.store.run((db) => db.selectFrom('payment_methods').selectAll().where('customer_id', '=', customerId).orderBy('seq').execute());
const subscriptionRow = (id: string) => app.store.run((db) => db.selectFrom('subscriptions').selectAll().where('id', '=', id).executeTakeFirstOrThrow());

describe('replacing the card of a card subscription', () => {
  it('verifies and vaults the new card at the same gateway, points the subscription at it, leaves the old card untouched and announces it', async () => {
    const g = await nmiGateway();
    const { subscriptionId } = await subscribed(g.id);
    const before = await subscriptionRow(subscriptionId);
    const [old] = await methodsOf(before.customer_id);
    expect(before.payment_method_id).toBe(old!.id);

    const r = await team.api.post(`/v1/subscriptions/${subscriptionId}/payment-method`, card(NEW_VISA, '08/31'));
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ success: true, data: { id: subscriptionId, status: 'trialing', payment_method: { brand: 'visa', last4: '5556', exp: '08/31' } } });
    expect(r.text).not.toContain(NEW_VISA);
    expect((await team.api.get(`/v1/subscriptions/${subscriptionId}`)).body.data.payment_method).toMatchObject({ last4: '5556', exp: '08/31' });

    const gw = await ledgerOf(g.key);
    expect(gw.map((e) => [e.type, e.status, e.last4])).toEqual([
      ['sale', 'approved', '1111'],
      ['validate', 'approved', '5556'],
    ]);
    const newVault = gw[1]!.customer_vault_id!;
    expect(newVault).not.toBe(old!.vault_ref);

    const methods = await methodsOf(before.customer_id);
    expect(methods).toHaveLength(2);
    expect(methods[0]).toEqual(old);
    expect(methods[1]).toMatchObject({ gateway_id: g.id, vault_ref: newVault, original_ref: gw[1]!.transactionid, brand: 'visa', bin: '400005', last4: '5556', exp: '08/31' });
    expect((await subscriptionRow(subscriptionId)).payment_method_id).toBe(methods[1]!.id);

    const txns = await team.api.get(`/v1/transactions?type=verification&order_number=${before.order_id}`);
    expect(txns.body.data).toMatchObject([{ type: 'verification', status: 'approved', amount: 0, provider_ref: gw[1]!.transactionid, card: { last4: '5556' } }]);
    const events = await team.api.get('/v1/events?type=subscription.updated');
    expect(events.body.data.some((e: { data: { object: { id: string; payment_method: { last4: string } } } }) => e.data.object.id === subscriptionId && e.data.object.payment_method.last4 === '5556')).toBe(true);
  });

  it('makes a past-due subscription due now, and the rebill engine charges the new card', async () => {
    const g = await nmiGateway();
    const { subscriptionId } = await subscribed(g.id, SANDBOX_CARDS.rebillSoftDecline);
    const declined = await team.api.post(`/v1/subscriptions/${subscriptionId}/rebill`, {});
    expect(declined.status, declined.text).toBe(402);
    const pastDue = await subscriptionRow(subscriptionId);
    expect(pastDue.status).toBe('past_due');
    expect(pastDue.retry_at!.getTime()).toBeGreaterThan(Date.now());

    const before = Date.now();
    const r = await team.api.post(`/v1/subscriptions/${subscriptionId}/payment-method`, card(NEW_MASTERCARD));
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ status: 'past_due', payment_method: { brand: 'mastercard', last4: '1111' } });
    const due = await subscriptionRow(subscriptionId);
    expect(due.retry_at!.getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(due.retry_at!.getTime()).toBeLessThanOrEqual(Date.now());

    const tally = await app.ctx.services.checkout.rebill.runDue();
    expect(tally.charged).toBeGreaterThanOrEqual(1);
    expect((await subscriptionRow(subscriptionId)).status).toBe('active');
    const sales = (await ledgerOf(g.key)).filter((e) => e.type === 'sale');
    expect(sales.map((e) => [e.status, e.last4])).toEqual([
      ['approved', SANDBOX_CARDS.rebillSoftDecline.slice(-4)],
      ['declined', SANDBOX_CARDS.rebillSoftDecline.slice(-4)],
      ['approved', '1111'],
    ]);
  });

  it('uses the campaign\'s gateway when the one that saved the old card is inactive', async () => {
    const g = await nmiGateway();
    const { funnel, subscriptionId } = await subscribed(g.id);
    const g2 = await nmiGateway();
    expect((await team.api.patch(`/v1/gateways/${g.id}`, { is_active: false })).status).toBe(200);
    await app.ctx.services.catalog.updateCampaign(team.teamId, funnel.campaignId, { gateway_id: g2.id });
    const r = await team.api.post(`/v1/subscriptions/${subscriptionId}/payment-method`, card(NEW_VISA));
    expect(r.status, r.text).toBe(200);
    expect((await ledgerOf(g.key)).map((e) => e.type)).toEqual(['sale']);
    expect((await ledgerOf(g2.key)).map((e) => [e.type, e.status])).toEqual([['validate', 'approved']]);
    const sub = await subscriptionRow(subscriptionId);
    const method = (await methodsOf(sub.customer_id)).find((m) => m.id === sub.payment_method_id);
    expect(method).toMatchObject({ gateway_id: g2.id, last4: '5556' });
  });

  it('refuses a declined card with 422 and the decline in the envelope, saving nothing', async () => {
    const g = await nmiGateway();
    const { subscriptionId } = await subscribed(g.id);
    const before = await subscriptionRow(subscriptionId);
    const r = await team.api.post(`/v1/subscriptions/${subscriptionId}/payment-method`, card(SANDBOX_CARDS.lost));
    expect(r.status, r.text).toBe(422);
    expect(r.body).toMatchObject({ success: false, error: { type: 'card_error', code: 'card_verification_declined' }, data: { decline_code: '251' } });
    expect(r.body.message).toMatch(/Lost card/i);
    expect((await ledgerOf(g.key)).map((e) => [e.type, e.status, e.customer_vault_id])).toEqual([
      ['sale', 'approved', expect.any(String)],
      ['validate', 'declined', null],
    ]);
    expect(await methodsOf(before.customer_id)).toHaveLength(1);
    expect((await subscriptionRow(subscriptionId)).payment_method_id).toBe(before.payment_method_id);
    const txn = await team.api.get(`/v1/transactions/${r.body.data.transaction_id}`);
    expect(txn.body.data).toMatchObject({ type: 'verification', status: 'declined', response_code: '251' });
    // Invalid card fields are refused before any gateway call, as on the payment object.
    const invalid = await team.api.post(`/v1/subscriptions/${subscriptionId}/payment-method`, { card_number: '4111111111111112', card_exp: '13/30', card_cvv: '1' });
    expect(invalid.status).toBe(422);
    expect(invalid.body.error.fields.map((f: { path: string }) => f.path).sort()).toEqual(['card_cvv', 'card_exp', 'card_number']);
    expect(await ledgerOf(g.key)).toHaveLength(2);
  });

  it('lets the recovery run record a card replacement whose answer was lost, without touching the order', async () => {
    const g = await nmiGateway();
    const { orderNumber, subscriptionId } = await subscribed(g.id);
    const r = await team.api.post(`/v1/subscriptions/${subscriptionId}/payment-method`, card(SANDBOX_CARDS.insufficientFunds));
    expect(r.status).toBe(422);
    const id = r.body.data.transaction_id as string;
    // As if the process died after the gateway answered: the attempt is still in flight.
    await app.store.run((db) => db.updateTable('transactions').set({ in_flight: true, status: 'pending', response_code: 'in_flight' }).where('id', '=', id).execute());
    const busy = await team.api.post(`/v1/subscriptions/${subscriptionId}/payment-method`, card(NEW_VISA));
    expect(busy.status).toBe(409);
    expect(busy.body.error.code).toBe('payment_in_progress');
    const tally = await app.ctx.services.checkout.reconcile.recoverUnknownAttempts(0);
    expect(tally).toMatchObject({ declined: 1, unresolved: 0 });
    const t = await app.store.run((db) => db.selectFrom('transactions').selectAll().where('id', '=', id).executeTakeFirstOrThrow());
    expect(t).toMatchObject({ type: 'verification', status: 'declined', in_flight: false, response_code: '202' });
    const order = await team.api.get(`/v1/orders/${orderNumber}`);
    expect(order.body.data.status).toBe('completed');
    expect((await team.api.post(`/v1/subscriptions/${subscriptionId}/payment-method`, card(NEW_VISA))).status).toBe(200);
  });

  it('answers 409 for an externally managed subscription and 404 for another team\'s', async () => {
    const g = await nmiGateway();
    const { subscriptionId } = await subscribed(g.id);
    const other = await app.newTeam('Other');
    const foreign = await other.api.post(`/v1/subscriptions/${subscriptionId}/payment-method`, card(NEW_VISA));
    expect(foreign.status).toBe(404);

    const sub = await subscriptionRow(subscriptionId);
    const externalId = newId('subscription');
    await app.store.run((db) =>
      db
        .insertInto('subscriptions')
        .values({ ...sub, seq: undefined, id: externalId, externally_managed: true, membership_ref: 'mem_test', payment_method_id: null } as never)
        .execute(),
    );
    const external = await team.api.post(`/v1/subscriptions/${externalId}/payment-method`, card(NEW_VISA));
    expect(external.status, external.text).toBe(409);
    expect(external.body.error.code).toBe('subscription_externally_managed');
    expect((await ledgerOf(g.key)).map((e) => e.type)).toEqual(['sale']);
  });
});
