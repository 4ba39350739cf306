import { type SelectQueryBuilder, type SqlBool, sql } from 'kysely';
import type { Executor } from '../../db/database.ts';
import type { DB, NewRow, Row, RowPatch } from '../../db/schema.ts';

export async function findCampaign(db: Executor, teamId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<Row<'campaigns'> | undefined> {
  let q = db.selectFrom('campaigns').selectAll().where('team_id', '=', teamId).where('id', '=', id);
  if (opts.forUpdate) q = q.forUpdate();
  return q.executeTakeFirst();
}

export async function findOffers(db: Executor, teamId: string, ids: readonly string[]): Promise<Row<'offers'>[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('offers').selectAll().where('team_id', '=', teamId).where('id', 'in', ids).execute();
}

export async function findUpsell(db: Executor, teamId: string, id: string): Promise<Row<'upsells'> | undefined> {
  return db.selectFrom('upsells').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}

/** One page of a list: rows strictly after the cursor row, newest first, `limit + 1` of them. */
export interface ListWindow {
  afterSeq: number | null;
  limit: number;
  createdGte?: Date | undefined;
  createdLte?: Date | undefined;
}

type CatalogTable = 'campaigns' | 'products' | 'offers' | 'upsells' | 'coupons';

function windowed<T extends CatalogTable, O>(q: SelectQueryBuilder<DB, T, O>, w: ListWindow): SelectQueryBuilder<DB, T, O> {
  if (w.afterSeq !== null) q = q.where(sql<SqlBool>`seq < ${w.afterSeq}`);
  if (w.createdGte) q = q.where(sql<SqlBool>`created_at >= ${w.createdGte}`);
  // The API shows created_at to the millisecond while the column keeps microseconds: compare
  // below the next millisecond, so an object's own created_at passed back here includes it.
  if (w.createdLte) q = q.where(sql<SqlBool>`created_at < ${new Date(w.createdLte.getTime() + 1)}`);
  return q.orderBy(sql.ref('seq'), 'desc').limit(w.limit + 1);
}

// ---- campaigns

export async function insertCampaign(db: Executor, row: NewRow<'campaigns'>): Promise<Row<'campaigns'>> {
  return db.insertInto('campaigns').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateCampaign(db: Executor, teamId: string, id: string, patch: RowPatch<'campaigns'>): Promise<Row<'campaigns'> | undefined> {
  return db
    .updateTable('campaigns')
    .set({ ...patch, updated_at: sql`now()` })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** The abandoned-lead follow-up was switched on now (database time, as the leads' own `updated_at`). */
export async function stampAbandonmentEnabled(db: Executor, teamId: string, id: string): Promise<Row<'campaigns'> | undefined> {
  return db.updateTable('campaigns').set({ abandonment_enabled_at: sql`now()` }).where('team_id', '=', teamId).where('id', '=', id).returningAll().executeTakeFirst();
}

/** The campaign's purchase-confirmation template; null for both resets it to the default. */
export async function setCampaignPurchaseEmail(
  db: Executor,
  teamId: string,
  id: string,
  template: { subject: string; body: string } | null,
): Promise<Row<'campaigns'> | undefined> {
  return db
    .updateTable('campaigns')
    .set({ purchase_email_subject: template?.subject ?? null, purchase_email_body: template?.body ?? null, updated_at: sql`now()` })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export async function listCampaigns(db: Executor, teamId: string, w: ListWindow): Promise<Row<'campaigns'>[]> {
  return windowed(db.selectFrom('campaigns').selectAll().where('team_id', '=', teamId), w).execute();
}

// ---- products

export async function findProduct(db: Executor, teamId: string, id: string): Promise<Row<'products'> | undefined> {
  return db.selectFrom('products').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}

export async function insertProduct(db: Executor, row: NewRow<'products'>): Promise<Row<'products'>> {
  return db.insertInto('products').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateProduct(db: Executor, teamId: string, id: string, patch: RowPatch<'products'>): Promise<Row<'products'> | undefined> {
  return db
    .updateTable('products')
    .set({ ...patch, updated_at: sql`now()` })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export async function listProducts(db: Executor, teamId: string, w: ListWindow): Promise<Row<'products'>[]> {
  return windowed(db.selectFrom('products').selectAll().where('team_id', '=', teamId), w).execute();
}

// ---- offers

export async function findOffer(db: Executor, teamId: string, id: string): Promise<Row<'offers'> | undefined> {
  return db.selectFrom('offers').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}

export async function insertOffer(db: Executor, row: NewRow<'offers'>): Promise<Row<'offers'>> {
  return db.insertInto('offers').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateOffer(db: Executor, teamId: string, id: string, patch: RowPatch<'offers'>): Promise<Row<'offers'> | undefined> {
  return db
    .updateTable('offers')
    .set({ ...patch, updated_at: sql`now()` })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export async function listOffers(db: Executor, teamId: string, campaignId: string | undefined, w: ListWindow): Promise<Row<'offers'>[]> {
  let q = db.selectFrom('offers').selectAll().where('team_id', '=', teamId);
  if (campaignId) q = q.where('campaign_id', '=', campaignId);
  return windowed(q, w).execute();
}

// ---- upsells

export async function insertUpsell(db: Executor, row: NewRow<'upsells'>): Promise<Row<'upsells'>> {
  return db.insertInto('upsells').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateUpsell(db: Executor, teamId: string, id: string, patch: RowPatch<'upsells'>): Promise<Row<'upsells'> | undefined> {
  return db
    .updateTable('upsells')
    .set({ ...patch, updated_at: sql`now()` })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export async function listUpsells(db: Executor, teamId: string, campaignId: string | undefined, w: ListWindow): Promise<Row<'upsells'>[]> {
  let q = db.selectFrom('upsells').selectAll().where('team_id', '=', teamId);
  if (campaignId) q = q.where('campaign_id', '=', campaignId);
  return windowed(q, w).execute();
}

// ---- coupons

export async function findCoupon(db: Executor, teamId: string, id: string): Promise<Row<'coupons'> | undefined> {
  return db.selectFrom('coupons').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}

/** Locks the coupon row: a patch checks `times_redeemed` while redemptions may be counting up. */
export async function findCouponByCode(db: Executor, teamId: string, code: string): Promise<Row<'coupons'> | undefined> {
  return db.selectFrom('coupons').selectAll().where('team_id', '=', teamId).where(sql`lower(code)`, '=', code.toLowerCase()).executeTakeFirst();
}

export async function insertRedemption(db: Executor, row: NewRow<'coupon_redemptions'>): Promise<boolean> {
  const r = await db.insertInto('coupon_redemptions').values(row).onConflict((oc) => oc.column('order_id').doNothing()).returning('id').executeTakeFirst();
  return r !== undefined;
}

/** Takes one use of a coupon in the statement that checks its limit; false when it is used up. */
export async function reserveRedemption(db: Executor, teamId: string, id: string): Promise<boolean> {
  const r = await db
    .updateTable('coupons')
    .set((eb) => ({ times_redeemed: eb('times_redeemed', '+', 1), updated_at: new Date() }))
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .where((eb) => eb.or([eb('max_redemptions', 'is', null), eb('times_redeemed', '<', eb.ref('max_redemptions'))]))
    .returning('id')
    .executeTakeFirst();
  return r !== undefined;
}

/** Gives back the use an order's declined payment held; false when the order held none. */
export async function releaseRedemption(db: Executor, teamId: string, couponId: string, orderId: string): Promise<boolean> {
  const gone = await db.deleteFrom('coupon_redemptions').where('team_id', '=', teamId).where('coupon_id', '=', couponId).where('order_id', '=', orderId).returning('id').executeTakeFirst();
  if (!gone) return false;
  await db
    .updateTable('coupons')
    .set((eb) => ({ times_redeemed: sql<number>`greatest(0, ${eb.ref('times_redeemed')} - 1)`, updated_at: new Date() }))
    .where('team_id', '=', teamId)
    .where('id', '=', couponId)
    .execute();
  return true;
}

export async function incrementRedemptions(db: Executor, teamId: string, id: string): Promise<void> {
  await db
    .updateTable('coupons')
    .set((eb) => ({ times_redeemed: eb('times_redeemed', '+', 1), updated_at: new Date() }))
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .execute();
}

export async function lockCoupon(db: Executor, teamId: string, id: string): Promise<Row<'coupons'> | undefined> {
  return db.selectFrom('coupons').selectAll().where('team_id', '=', teamId).where('id', '=', id).forUpdate().executeTakeFirst();
}

export async function insertCoupon(db: Executor, row: NewRow<'coupons'>): Promise<Row<'coupons'>> {
  return db.insertInto('coupons').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateCoupon(db: Executor, teamId: string, id: string, patch: RowPatch<'coupons'>): Promise<Row<'coupons'> | undefined> {
  return db
    .updateTable('coupons')
    .set({ ...patch, updated_at: sql`now()` })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export async function listCoupons(db: Executor, teamId: string, campaignId: string | undefined, w: ListWindow): Promise<Row<'coupons'>[]> {
  let q = db.selectFrom('coupons').selectAll().where('team_id', '=', teamId);
  if (campaignId) q = q.where('campaign_id', '=', campaignId);
  return windowed(q, w).execute();
}
