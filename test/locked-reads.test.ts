/**
 * The reads after an order's lock as one statement (issue 13; src/db/row-json.ts,
 * src/modules/checkout/locked-reads.ts): each module's rows read back from the statement's JSON are
 * the rows its own query answers (dates as dates, amounts as numbers, nulls as nulls, the lines in
 * their order), for an order with two lines, a saved card and an upsell claim, and nothing for an
 * order that does not exist or another team's. On the embedded database, and on PostgreSQL with
 * TEST_DATABASE_URL (the harness picks).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTogether } from '../src/db/database.ts';
import { LockedReads } from '../src/modules/checkout/locked-reads.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { runCardFunnel, seedApiFunnel, type ApiFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

describe('the reads after an order lock, as one statement', () => {
  let app: TestApp;
  let team: TestTeam;
  let other: TestTeam;
  let sandbox: { url: string; close(): Promise<void> };
  let funnel: ApiFunnel;
  let reads: LockedReads;
  beforeAll(async () => {
    sandbox = await startSandbox({ port: 0 });
    app = await startTestApp({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
    team = await app.newTeam('Locked reads');
    other = await app.newTeam('Locked reads, another team');
    funnel = await seedApiFunnel(team, sandbox.url, `lr_${process.pid}`);
    const { orders, customers, ledger } = app.ctx.services;
    reads = new LockedReads({ orders, customers, ledger });
  });
  afterAll(async () => {
    await app?.close();
    await sandbox?.close();
  });

  /** The order's rows as plain queries answer them (node-postgres decoding each column): what the one statement must answer. */
  async function separately(teamId: string, orderId: string, upsellId: string) {
    return app.store.run(async (db) => {
      const order = await db.selectFrom('orders').selectAll().where('team_id', '=', teamId).where('id', '=', orderId).executeTakeFirstOrThrow();
      return {
        lines: await db.selectFrom('order_lines').selectAll().where('team_id', '=', teamId).where('order_id', '=', orderId).orderBy('seq').execute(),
        customer: await db.selectFrom('customers').selectAll().where('team_id', '=', teamId).where('id', '=', order.customer_id).executeTakeFirst(),
        method: await db.selectFrom('payment_methods').selectAll().where('team_id', '=', teamId).where('id', '=', order.payment_method_id!).executeTakeFirst(),
        claim: await db.selectFrom('order_upsells').selectAll().where('team_id', '=', teamId).where('order_id', '=', orderId).where('upsell_id', '=', upsellId).executeTakeFirst(),
      };
    });
  }

  async function together(teamId: string, orderId: string, upsellId: string) {
    return app.store.transaction(async (trx) => {
      const [[forUpsell], [forPayment]] = await readTogether(trx, [reads.upsellQuery(trx, teamId, orderId, upsellId), reads.linesAndCustomerQuery(trx, teamId, orderId)] as const);
      return { upsell: reads.upsell(forUpsell), payment: reads.linesAndCustomer(forPayment) };
    });
  }

  it("answers each module's rows as its own query does", async () => {
    const orderId = await runCardFunnel(team, funnel, 'lr');
    const plain = await separately(team.teamId, orderId, funnel.upsell);
    // The funnel's order: its line and the upsell's, its customer, its saved card, its claim on the upsell.
    expect(plain.lines).toHaveLength(2);
    expect(plain.customer && plain.method && plain.claim).toBeTruthy();

    const { upsell, payment } = await together(team.teamId, orderId, funnel.upsell);
    expect(upsell.lines).toEqual(plain.lines);
    expect(upsell.customer).toEqual(plain.customer);
    expect(upsell.method).toEqual(plain.method);
    expect(upsell.claim).toEqual(plain.claim);
    expect(payment).toEqual({ lines: plain.lines, customer: plain.customer });
    // toEqual compares dates by value; the types themselves must be node-postgres's too.
    for (const line of upsell.lines) {
      expect(line.created_at).toBeInstanceOf(Date);
      expect(typeof line.unit_price).toBe('number');
      expect(typeof line.seq).toBe('number');
    }
    expect(upsell.lines.map((l) => l.seq)).toEqual([...upsell.lines.map((l) => l.seq)].sort((a, b) => a - b));
    expect(upsell.customer!.updated_at).toBeInstanceOf(Date);
    expect(upsell.method!.created_at).toBeInstanceOf(Date);
    expect(typeof upsell.method!.is_test).toBe('boolean');
    expect(upsell.claim!.updated_at).toBeInstanceOf(Date);
    expect(typeof upsell.claim!.response_status).toBe('number');
    // Every column is there, none added.
    expect(Object.keys(upsell.claim!).sort()).toEqual(Object.keys(plain.claim!).sort());
    expect(Object.keys(upsell.lines[0]!).sort()).toEqual(Object.keys(plain.lines[0]!).sort());
  });

  it('answers nothing for an order that does not exist, or of another team', async () => {
    const orderId = await runCardFunnel(team, funnel, 'lr2');
    const none = { upsell: { claim: undefined, method: undefined, customer: undefined, lines: [] }, payment: { lines: [], customer: undefined } };
    expect(await together(team.teamId, 'ord_doesnotexist', funnel.upsell)).toEqual(none);
    expect(await together(other.teamId, orderId, funnel.upsell)).toEqual(none);
    // A lead: lines and a customer, no saved card, no claim.
    const lead = await team.api.post('/checkout/leads', { campaign_id: funnel.campaign, customer: { email: `lr3.${process.pid}@example.com` }, products: [{ offer_id: funnel.offer, quantity: 2 }] });
    expect(lead.status, lead.text).toBe(201);
    const leadReads = await together(team.teamId, lead.body.data.order_number, funnel.upsell);
    expect(leadReads.upsell.lines.map((l) => l.quantity)).toEqual([2]);
    expect(leadReads.upsell.customer?.email).toBe(`lr3.${process.pid}@example.com`);
    expect(leadReads.upsell.method).toBeUndefined();
    expect(leadReads.upsell.claim).toBeUndefined();
  });
});
