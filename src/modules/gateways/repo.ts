import { type SelectQueryBuilder, type SqlBool, sql } from 'kysely';
import type { Executor } from '../../db/database.ts';
import type { DB, NewRow, Row, RowPatch } from '../../db/schema.ts';

/** One page of a list: rows strictly after the cursor row, newest first, `limit + 1` of them. */
export interface ListWindow {
  afterSeq: number | null;
  limit: number;
  createdGte?: Date | undefined;
  createdLte?: Date | undefined;
}

type ListedTable = 'gateways' | 'payment_routers' | 'bin_blacklist' | 'test_cards';

function windowed<T extends ListedTable, O>(q: SelectQueryBuilder<DB, T, O>, w: ListWindow): SelectQueryBuilder<DB, T, O> {
  if (w.afterSeq !== null) q = q.where(sql<SqlBool>`seq < ${w.afterSeq}`);
  if (w.createdGte) q = q.where(sql<SqlBool>`created_at >= ${w.createdGte}`);
  // The API shows created_at to the millisecond while the column keeps microseconds: compare
  // below the next millisecond, so an object's own created_at passed back here includes it.
  if (w.createdLte) q = q.where(sql<SqlBool>`created_at < ${new Date(w.createdLte.getTime() + 1)}`);
  return q.orderBy(sql.ref('seq'), 'desc').limit(w.limit + 1);
}

// ---- gateways

export async function findGateway(db: Executor, teamId: string, id: string): Promise<Row<'gateways'> | undefined> {
  return db.selectFrom('gateways').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}

export async function findGateways(db: Executor, teamId: string, ids: readonly string[]): Promise<Row<'gateways'>[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('gateways').selectAll().where('team_id', '=', teamId).where('id', 'in', ids).execute();
}

export async function insertGateway(db: Executor, row: NewRow<'gateways'>): Promise<Row<'gateways'>> {
  return db.insertInto('gateways').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateGateway(db: Executor, teamId: string, id: string, patch: RowPatch<'gateways'>): Promise<Row<'gateways'> | undefined> {
  return db
    .updateTable('gateways')
    .set({ ...patch, updated_at: sql`now()` })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export async function listGateways(db: Executor, teamId: string, w: ListWindow): Promise<Row<'gateways'>[]> {
  return windowed(db.selectFrom('gateways').selectAll().where('team_id', '=', teamId), w).execute();
}

/** Approved sales through the gateway in [from, to): what counts against a monthly cap. */
/**
 * Reserves `amount` of a gateway's monthly volume in the statement that checks the cap: the row is
 * created or grown only while the result stays within `limit` (null: no cap). Undefined: over the cap.
 */
export async function reserveVolume(db: Executor, teamId: string, gatewayId: string, month: string, amount: number, limit: number | null): Promise<number | undefined> {
  if (limit !== null && amount > limit) return undefined;
  const r = await sql<{ amount: number }>`
    INSERT INTO gateway_volume (gateway_id, month, team_id, amount) VALUES (${gatewayId}, ${month}, ${teamId}, ${amount})
    ON CONFLICT (gateway_id, month) DO UPDATE SET amount = gateway_volume.amount + EXCLUDED.amount
    WHERE ${limit}::bigint IS NULL OR gateway_volume.amount + EXCLUDED.amount <= ${limit}::bigint
    RETURNING amount`.execute(db);
  return r.rows[0] ? Number(r.rows[0].amount) : undefined;
}

/** Gives back volume an attempt reserved and did not use (declined or failed). */
export async function releaseVolume(db: Executor, teamId: string, gatewayId: string, month: string, amount: number): Promise<void> {
  await db
    .updateTable('gateway_volume')
    .set((eb) => ({ amount: sql<number>`greatest(0, ${eb.ref('amount')} - ${amount})` }))
    .where('team_id', '=', teamId)
    .where('gateway_id', '=', gatewayId)
    .where('month', '=', month)
    .execute();
}

/** Approved sales of a gateway in [from, to): the ledger's reading of its volume (the cap is checked on gateway_volume). */
export async function sumApprovedSales(db: Executor, teamId: string, gatewayId: string, from: Date, to: Date): Promise<number> {
  const r = await db
    .selectFrom('transactions')
    .select(sql<number>`coalesce(sum(amount), 0)`.as('total'))
    .where('team_id', '=', teamId)
    .where('gateway_id', '=', gatewayId)
    .where('status', '=', 'approved')
    .where('type', '=', 'sale')
    .where('created_at', '>=', from)
    .where('created_at', '<', to)
    .executeTakeFirstOrThrow();
  return Number(r.total);
}

/** Approved sales of each of `gatewayIds` in [from, to), by gateway id (absent: none). */
export async function sumApprovedSalesByGateway(db: Executor, teamId: string, gatewayIds: readonly string[], from: Date, to: Date): Promise<Map<string, number>> {
  if (gatewayIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('transactions')
    .select(['gateway_id', sql<number>`sum(amount)`.as('total')])
    .where('team_id', '=', teamId)
    .where('gateway_id', 'in', [...new Set(gatewayIds)])
    .where('status', '=', 'approved')
    .where('type', '=', 'sale')
    .where('created_at', '>=', from)
    .where('created_at', '<', to)
    .groupBy('gateway_id')
    .execute();
  return new Map(rows.flatMap((r) => (r.gateway_id ? [[r.gateway_id, Number(r.total)] as const] : [])));
}

/**
 * Brings a gateway's counter for `month` up to the ledger's approved sales (never down): run when a
 * cap starts to apply, since charges on an uncapped gateway reserve nothing.
 */
export async function seedVolume(db: Executor, teamId: string, gatewayId: string, month: string, approved: number): Promise<void> {
  await sql`
    INSERT INTO gateway_volume (gateway_id, month, team_id, amount) VALUES (${gatewayId}, ${month}, ${teamId}, ${approved})
    ON CONFLICT (gateway_id, month) DO UPDATE SET amount = greatest(gateway_volume.amount, EXCLUDED.amount)`.execute(db);
}

/** Which of `ids` name a gateway or payment router of the team. */
export async function ownedIds(db: Executor, table: 'gateways' | 'payment_routers', teamId: string, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.selectFrom(table).select('id').where('team_id', '=', teamId).where('id', 'in', ids).execute();
  return new Set(rows.map((r) => r.id));
}

// ---- payment routers

export async function findRouter(db: Executor, teamId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<Row<'payment_routers'> | undefined> {
  let q = db.selectFrom('payment_routers').selectAll().where('team_id', '=', teamId).where('id', '=', id);
  if (opts.forUpdate) q = q.forUpdate();
  return q.executeTakeFirst();
}

export async function insertRouter(db: Executor, row: NewRow<'payment_routers'>): Promise<Row<'payment_routers'>> {
  return db.insertInto('payment_routers').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateRouter(db: Executor, teamId: string, id: string, patch: RowPatch<'payment_routers'>): Promise<Row<'payment_routers'> | undefined> {
  return db
    .updateTable('payment_routers')
    .set({ ...patch, updated_at: sql`now()` })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export async function listRouters(db: Executor, teamId: string, w: ListWindow): Promise<Row<'payment_routers'>[]> {
  return windowed(db.selectFrom('payment_routers').selectAll().where('team_id', '=', teamId), w).execute();
}

/** Members of the given routers, by ascending priority, then id. */
export async function listRouterMembers(db: Executor, teamId: string, routerIds: readonly string[]): Promise<Row<'payment_router_members'>[]> {
  if (routerIds.length === 0) return [];
  return db
    .selectFrom('payment_router_members')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('router_id', 'in', routerIds)
    .orderBy('priority', 'asc')
    .orderBy('id', 'asc')
    .execute();
}

export async function insertRouterMembers(db: Executor, rows: NewRow<'payment_router_members'>[]): Promise<void> {
  if (rows.length === 0) return;
  await db.insertInto('payment_router_members').values(rows).execute();
}

export async function deleteRouterMembers(db: Executor, teamId: string, routerId: string): Promise<void> {
  await db.deleteFrom('payment_router_members').where('team_id', '=', teamId).where('router_id', '=', routerId).execute();
}

// ---- BIN blacklist

export async function insertBinBlock(db: Executor, row: NewRow<'bin_blacklist'>): Promise<Row<'bin_blacklist'>> {
  return db.insertInto('bin_blacklist').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function deleteBinBlock(db: Executor, teamId: string, id: string): Promise<Row<'bin_blacklist'> | undefined> {
  return db.deleteFrom('bin_blacklist').where('team_id', '=', teamId).where('id', '=', id).returningAll().executeTakeFirst();
}

export async function listBinBlocks(db: Executor, teamId: string, w: ListWindow): Promise<Row<'bin_blacklist'>[]> {
  return windowed(db.selectFrom('bin_blacklist').selectAll().where('team_id', '=', teamId), w).execute();
}

/** The longest listed prefix among the candidates (the card's first 6, 7 and 8 digits). */
export async function findBinBlock(db: Executor, teamId: string, prefixes: readonly string[]): Promise<Row<'bin_blacklist'> | undefined> {
  if (prefixes.length === 0) return undefined;
  return db
    .selectFrom('bin_blacklist')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('prefix', 'in', prefixes)
    .orderBy(sql`length(prefix)`, 'desc')
    .limit(1)
    .executeTakeFirst();
}

// ---- test cards

export async function insertTestCard(db: Executor, row: NewRow<'test_cards'>): Promise<Row<'test_cards'>> {
  return db.insertInto('test_cards').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function deleteTestCard(db: Executor, teamId: string, id: string): Promise<Row<'test_cards'> | undefined> {
  return db.deleteFrom('test_cards').where('team_id', '=', teamId).where('id', '=', id).returningAll().executeTakeFirst();
}

export async function listTestCards(db: Executor, teamId: string, w: ListWindow): Promise<Row<'test_cards'>[]> {
  return windowed(db.selectFrom('test_cards').selectAll().where('team_id', '=', teamId), w).execute();
}

export async function findTestCardByHash(db: Executor, teamId: string, cardHash: string): Promise<Row<'test_cards'> | undefined> {
  return db.selectFrom('test_cards').selectAll().where('team_id', '=', teamId).where('card_hash', '=', cardHash).executeTakeFirst();
}

/** Inbound webhooks carry no token: the gateway id in their URL is the only key (ids are unguessable). */
export async function findGatewayById(db: Executor, id: string): Promise<Row<'gateways'> | undefined> {
  return db.selectFrom('gateways').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Up to `limit` of the team's blacklisted prefixes, for the configuration cache (card-lists.ts). */
export async function listBinPrefixes(db: Executor, teamId: string, limit: number): Promise<Row<'bin_blacklist'>[]> {
  return db.selectFrom('bin_blacklist').selectAll().where('team_id', '=', teamId).orderBy('seq').limit(limit).execute();
}

/** Up to `limit` of the team's test-card hashes, for the configuration cache (card-lists.ts). */
export async function listTestCardHashes(db: Executor, teamId: string, limit: number): Promise<string[]> {
  const rows = await db.selectFrom('test_cards').select('card_hash').where('team_id', '=', teamId).orderBy('seq').limit(limit).execute();
  return rows.map((r) => r.card_hash);
}
