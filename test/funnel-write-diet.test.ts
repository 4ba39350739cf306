/**
 * What the database writes for a card funnel besides its rows (migration 0022, issue 13): the
 * funnel's tables keep no unique index on `seq` alone (the sequence makes it unique; lists read it
 * under their team or parent), and the funnel's rows keep no foreign key to configuration rows (the
 * team, campaign, offer, product, upsell, gateway, webhook endpoint), so a funnel locks none of
 * those rows: PostgreSQL checked each such key by locking the row it names (FOR KEY SHARE), a shared
 * lock of every concurrent funnel on the same few rows. A configuration row that rows still name is
 * still refused deletion (and a new id), with the key's SQLSTATE, by a trigger. Runs embedded, and
 * on PostgreSQL with TEST_DATABASE_URL.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox } from '../src/sandbox/server.ts';
import { type ApiFunnel, runCardFunnel, seedApiFunnel } from './support/fixtures.ts';
import { startTestApp, type TestApp, type TestTeam } from './support/harness.ts';

describe('the funnel writes its rows and nothing on its configuration', () => {
  let app: TestApp;
  let team: TestTeam;
  let sandbox: { url: string; close(): Promise<void> };
  let ids: ApiFunnel;
  let xmaxBefore: { row: string; xmax: string }[] = [];
  const query = <T>(q: ReturnType<typeof sql<T>>) => app.store.run((db) => q.execute(db)).then((r) => r.rows);
  const configurationXmax = () =>
    query(sql<{ row: string; xmax: string }>`
      select 'team' as row, xmax::text from teams where id = ${team.teamId}
      union all select 'campaign', xmax::text from campaigns where id = ${ids.campaign}
      union all select 'product', xmax::text from products where id = ${ids.product}
      union all select 'offer', xmax::text from offers where id = ${ids.offer}
      union all select 'upsell offer', xmax::text from offers where id = ${ids.upsellOffer}
      union all select 'upsell', xmax::text from upsells where id = ${ids.upsell}
      union all select 'gateway', xmax::text from gateways where id = ${ids.gateway}
      union all select 'endpoint', xmax::text from webhook_endpoints where id = ${ids.endpoint}`);

  beforeAll(async () => {
    sandbox = await startSandbox({ port: 0 });
    app = await startTestApp({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
    team = await app.newTeam('Write diet');
    ids = await seedApiFunnel(team, sandbox.url, `diet_${process.pid}`);
    xmaxBefore = await configurationXmax();
    expect(xmaxBefore).toHaveLength(8);
    await runCardFunnel(team, ids, 'diet');
  });
  afterAll(async () => {
    await app?.close();
    await sandbox?.close();
  });

  /** The tables a card funnel writes. */
  const tables = ['orders', 'order_lines', 'order_events', 'transactions', 'customers', 'payment_methods', 'fulfillments', 'events', 'webhook_deliveries', 'webhook_attempts', 'mail_messages'];
  const code = (p: Promise<unknown>) => p.then(() => 'accepted', (err: { code?: string }) => err.code ?? String(err));

  it('a whole funnel (its lines, payment, saved card, upsell, completion, deliveries) leaves no lock on its team or configuration rows', async () => {
    // The funnel wrote what it names: lines of both offers, an upsell claim, a saved card, a delivery per event.
    const [written] = await query(sql<{ lines: number; claims: number; cards: number; deliveries: number }>`
      select (select count(*) from order_lines where team_id = ${team.teamId})::int as lines,
             (select count(*) from order_upsells where team_id = ${team.teamId})::int as claims,
             (select count(*) from payment_methods where team_id = ${team.teamId} and gateway_id = ${ids.gateway})::int as cards,
             (select count(*) from webhook_deliveries where team_id = ${team.teamId} and endpoint_id = ${ids.endpoint})::int as deliveries`);
    expect(written).toEqual({ lines: 2, claims: 1, cards: 1, deliveries: 2 });
    // A row a transaction locks (FOR KEY SHARE, as a foreign key's check does) takes that
    // transaction (or a MultiXact of several) as its xmax: the funnel changed none of them. (The
    // setup's own inserts, an offer naming its campaign and product, did lock them.)
    expect(await configurationXmax()).toEqual(xmaxBefore);
  });

  it('refuses to delete or re-key a configuration row that rows name (23503), and deletes one nothing names', async () => {
    const refused = {
      team: await code(query(sql`delete from teams where id = ${team.teamId}`)),
      campaign: await code(query(sql`delete from campaigns where id = ${ids.campaign}`)),
      product: await code(query(sql`delete from products where id = ${ids.product}`)),
      upsell: await code(query(sql`delete from upsells where id = ${ids.upsell}`)),
      gateway: await code(query(sql`delete from gateways where id = ${ids.gateway}`)),
      endpoint: await code(query(sql`delete from webhook_endpoints where id = ${ids.endpoint}`)),
      rekeyedOffer: await code(query(sql`update offers set id = 'off_rekeyed' where id = ${ids.offer}`)),
    };
    expect(refused).toEqual({ team: '23503', campaign: '23503', product: '23503', upsell: '23503', gateway: '23503', endpoint: '23503', rekeyedOffer: '23503' });
    const [kept] = await query(sql<{ n: number }>`
      select ((select count(*) from teams where id = ${team.teamId}) + (select count(*) from campaigns where id = ${ids.campaign})
        + (select count(*) from products where id = ${ids.product}) + (select count(*) from upsells where id = ${ids.upsell})
        + (select count(*) from gateways where id = ${ids.gateway}) + (select count(*) from webhook_endpoints where id = ${ids.endpoint})
        + (select count(*) from offers where id = ${ids.offer}))::int as n`);
    expect(kept!.n).toBe(7);
    // An update that keeps the id, and the delete of a row nothing names, go through.
    expect(await code(query(sql`update offers set name = 'renamed' where id = ${ids.offer}`))).toBe('accepted');
    const spare = await team.api.post('/v1/products', { name: 'spare' });
    expect(spare.status, spare.text).toBe(201);
    const gone = await query(sql<{ id: string }>`delete from products where id = ${spare.body.data.id as string} returning id`);
    expect(gone).toHaveLength(1);
  });

  it("keeps no unique index on seq alone in the funnel's tables, and one index on a fulfillment's order", async () => {
    const indexes = await query(sql<{ table: string; index: string; columns: string }>`
      select i.indrelid::regclass::text as table, i.indexrelid::regclass::text as index,
             (select string_agg(attname, ',' order by k.ord) from unnest(i.indkey) with ordinality as k(attnum, ord)
                join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum) as columns
      from pg_index i where i.indrelid::regclass::text = any (${tables})`);
    expect(indexes.filter((r) => r.columns === 'seq')).toEqual([]);
    expect(indexes.filter((r) => r.table === 'fulfillments' && r.columns === 'order_id').map((r) => r.index)).toEqual(['fulfillments_one_per_order']);
    // Every list still has its team's or parent's index on seq.
    expect(indexes.filter((r) => r.table === 'orders' && r.columns === 'team_id,seq').map((r) => r.index)).toContain('orders_team_seq');
  });

  it("keeps one index per key in the funnel's tables: orders' (team_id, id) serves the foreign keys and the prefix search, customers' (team_id, email) the same, one index over attempts in flight (0023)", async () => {
    const indexes = await query(sql<{ table: string; index: string; key: string; unique: boolean; def: string }>`
      select i.indrelid::regclass::text as table, i.indexrelid::regclass::text as index, i.indisunique as unique,
             pg_get_indexdef(i.indexrelid) as def,
             coalesce(pg_get_expr(i.indexprs, i.indrelid), '') || ' ' || i.indkey::text || ' where ' || coalesce(pg_get_expr(i.indpred, i.indrelid), '') as key
      from pg_index i where i.indrelid::regclass::text = any (${tables})`);
    // The same columns (and predicate) in two indexes, whatever their operator classes: every insert writes both.
    const byKey = new Map<string, string[]>();
    for (const r of indexes) byKey.set(`${r.table} ${r.key}`, [...(byKey.get(`${r.table} ${r.key}`) ?? []), r.index]);
    expect([...byKey.values()].filter((names) => names.length > 1)).toEqual([]);
    const orderKey = indexes.find((r) => r.index === 'orders_team_id_id_prefix');
    expect(orderKey?.unique).toBe(true);
    expect(orderKey?.def).toContain('text_pattern_ops');
    // The tenant foreign keys to an order are made on it.
    const keys = await query(sql<{ name: string; index: string }>`
      select conname as name, conindid::regclass::text as index from pg_constraint where contype = 'f' and confrelid = 'orders'::regclass and array_length(conkey, 1) = 2`);
    expect(keys.map((k) => k.name).sort()).toEqual(['fulfillments_order_fkey', 'order_events_order_fkey', 'order_lines_order_fkey', 'order_upsells_order_fkey', 'transactions_order_fkey']);
    expect(new Set(keys.map((k) => k.index))).toEqual(new Set(['orders_team_id_id_prefix']));
    expect(indexes.filter((r) => r.table === 'customers' && r.def.includes('(team_id, email')).map((r) => [r.index, r.unique])).toEqual([['customers_team_email', true]]);
    expect(indexes.filter((r) => r.table === 'transactions' && r.def.includes('WHERE in_flight')).map((r) => r.index)).toEqual(['transactions_one_in_flight_per_step']);
    // A row naming another team's order is still refused by the key on the one index.
    const [order] = await query(sql<{ id: string }>`select id from orders where team_id = ${team.teamId} limit 1`);
    const other = await app.newTeam('Write diet, other team');
    const refused = await code(query(sql`insert into order_events (id, team_id, order_id, type) values ('oev_cross_team', ${other.teamId}, ${order!.id}, 'note')`));
    expect(refused).toBe('23503');
  });
});
