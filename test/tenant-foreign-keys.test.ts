/**
 * Rows that belong to an order, a customer, an event or a webhook delivery name their parent with
 * their team, in one foreign key to the parent's (team_id, id) (migration 0021, issue 13): a row
 * naming another team's parent is refused by the database, and the funnel's tables no longer check
 * their team against `teams` on every insert (a shared lock on the team's one row each time). Runs
 * embedded, and on PostgreSQL with TEST_DATABASE_URL.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { email, seedFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

describe('foreign keys with the team', () => {
  let app: TestApp;
  let a: TestTeam;
  let b: TestTeam;
  let order: { id: string; customerId: string };
  beforeAll(async () => {
    app = await startTestApp();
    a = await app.newTeam('Tenant A');
    b = await app.newTeam('Tenant B');
    const funnel = await seedFunnel(app, a.teamId);
    const lead = await a.api.post('/checkout/leads', { campaign_id: funnel.campaignId, customer: { email: email('tenant') }, products: [{ offer_id: funnel.offers.serum, quantity: 1 }] });
    expect(lead.status, lead.text).toBe(201);
    const row = await app.store.run((db) =>
      db.selectFrom('orders').select(['id', 'customer_id']).where('team_id', '=', a.teamId).executeTakeFirstOrThrow(),
    );
    order = { id: row.id, customerId: row.customer_id };
  });
  afterAll(async () => {
    await app?.close();
  });

  const insertEvent = (teamId: string, id: string) =>
    app.store.run((db) => sql`insert into order_events (id, team_id, order_id, type, data) values (${id}, ${teamId}, ${order.id}, 'note', '{}')`.execute(db));
  const insertCard = (teamId: string, id: string) =>
    app.store.run((db) =>
      sql`insert into payment_methods (id, team_id, customer_id, brand, bin, last4, exp) values (${id}, ${teamId}, ${order.customerId}, 'visa', '411111', '1111', '12/39')`.execute(db),
    );
  const code = (p: Promise<unknown>) => p.then(() => 'accepted', (err: { code?: string }) => err.code);

  it("refuses a row that names another team's order or customer (23503), and takes it with the order's own team", async () => {
    expect(await code(insertEvent(b.teamId, 'oev_tenant_other'))).toBe('23503');
    expect(await code(insertCard(b.teamId, 'pm_tenant_other'))).toBe('23503');
    expect(await code(insertEvent(a.teamId, 'oev_tenant_own'))).toBe('accepted');
    expect(await code(insertCard(a.teamId, 'pm_tenant_own'))).toBe('accepted');
    // Nothing of the refused rows was written.
    const rows = await app.store.run((db) => sql<{ n: number }>`select (select count(*) from order_events where id like 'oev_tenant_%')::int + (select count(*) from payment_methods where id like 'pm_tenant_%')::int as n`.execute(db));
    expect(rows.rows[0]!.n).toBe(2);
  });

  it('leaves the rows under an order, customer, event or delivery no foreign key to teams of their own', async () => {
    const children = ['order_lines', 'order_events', 'transactions', 'fulfillments', 'order_upsells', 'payment_methods', 'webhook_deliveries', 'mail_messages', 'webhook_attempts'];
    const refs = await app.store.run((db) =>
      sql<{ child: string; parent: string; columns: string }>`
        select c.conrelid::regclass::text as child, c.confrelid::regclass::text as parent,
               (select string_agg(attname, ',' order by attnum) from pg_attribute where attrelid = c.conrelid and attnum = any (c.conkey)) as columns
        from pg_constraint c where c.contype = 'f' and c.conrelid::regclass::text = any (${children})`.execute(db),
    );
    expect(refs.rows.filter((r) => r.parent === 'teams')).toEqual([]);
    const withTeam = (child: string) => refs.rows.filter((r) => r.child === child && r.columns.startsWith('team_id,')).map((r) => `${r.parent}(${r.columns})`);
    expect(withTeam('order_events')).toEqual(['orders(team_id,order_id)']);
    expect(withTeam('payment_methods')).toEqual(['customers(team_id,customer_id)']);
    expect(withTeam('webhook_attempts')).toEqual(['webhook_deliveries(team_id,delivery_id)']);
    expect(withTeam('mail_messages')).toEqual(['events(team_id,event_id)']);
  });
});
