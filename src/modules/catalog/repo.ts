import type { Executor } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';

export async function findCampaign(db: Executor, teamId: string, id: string): Promise<Row<'campaigns'> | undefined> {
  return db.selectFrom('campaigns').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}

export async function findOffers(db: Executor, teamId: string, ids: readonly string[]): Promise<Row<'offers'>[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('offers').selectAll().where('team_id', '=', teamId).where('id', 'in', ids).execute();
}

export async function findUpsell(db: Executor, teamId: string, id: string): Promise<Row<'upsells'> | undefined> {
  return db.selectFrom('upsells').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}
