import type { Executor } from '../../db/database.ts';
import type { NewRow, Row } from '../../db/schema.ts';

export async function insertTeam(db: Executor, team: NewRow<'teams'>): Promise<Row<'teams'>> {
  return db.insertInto('teams').values(team).returningAll().executeTakeFirstOrThrow();
}

export async function findTeam(db: Executor, teamId: string): Promise<Row<'teams'> | undefined> {
  return db.selectFrom('teams').selectAll().where('id', '=', teamId).executeTakeFirst();
}

export async function listTeams(db: Executor): Promise<Row<'teams'>[]> {
  return db.selectFrom('teams').selectAll().orderBy('created_at').execute();
}

export async function insertToken(db: Executor, token: NewRow<'api_tokens'>): Promise<Row<'api_tokens'>> {
  return db.insertInto('api_tokens').values(token).returningAll().executeTakeFirstOrThrow();
}

export async function findTokenByHash(db: Executor, tokenHash: string): Promise<Row<'api_tokens'> | undefined> {
  return db.selectFrom('api_tokens').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

export async function findToken(db: Executor, tokenId: string): Promise<Row<'api_tokens'> | undefined> {
  return db.selectFrom('api_tokens').selectAll().where('id', '=', tokenId).executeTakeFirst();
}

export async function listTokens(db: Executor, teamId?: string): Promise<Row<'api_tokens'>[]> {
  let q = db.selectFrom('api_tokens').selectAll().orderBy('created_at');
  if (teamId) q = q.where('team_id', '=', teamId);
  return q.execute();
}

export async function touchToken(db: Executor, tokenId: string, at: Date): Promise<void> {
  await db.updateTable('api_tokens').set({ last_used_at: at }).where('id', '=', tokenId).execute();
}

export async function revokeToken(db: Executor, tokenId: string, at: Date): Promise<Row<'api_tokens'> | undefined> {
  return db
    .updateTable('api_tokens')
    .set({ revoked_at: at })
    .where('id', '=', tokenId)
    .where('revoked_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

export async function updateTeam(db: Executor, teamId: string, patch: { name?: string; time_zone?: string }): Promise<Row<'teams'> | undefined> {
  return db.updateTable('teams').set(patch).where('id', '=', teamId).returningAll().executeTakeFirst();
}

export async function findTokenForUpdate(db: Executor, tokenId: string): Promise<Row<'api_tokens'> | undefined> {
  return db.selectFrom('api_tokens').selectAll().where('id', '=', tokenId).forUpdate().executeTakeFirst();
}

/** A team's tokens, newest first; `status` narrows to active, revoked or expired ones. */
export async function listTokenPage(
  db: Executor,
  teamId: string,
  afterSeq: number | null,
  limit: number,
  status: 'active' | 'revoked' | 'expired' | null,
): Promise<Row<'api_tokens'>[]> {
  let q = db.selectFrom('api_tokens').selectAll().where('team_id', '=', teamId);
  const now = new Date();
  if (status === 'revoked') q = q.where('revoked_at', 'is not', null);
  if (status === 'active') q = q.where('revoked_at', 'is', null).where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]));
  if (status === 'expired') q = q.where('revoked_at', 'is', null).where('expires_at', '<=', now);
  if (afterSeq !== null) q = q.where('seq', '<', afterSeq);
  return q.orderBy('seq', 'desc').limit(limit + 1).execute();
}

export async function retireToken(
  db: Executor,
  tokenId: string,
  patch: { replaced_by: string; revoked_at?: Date; expires_at?: Date },
): Promise<Row<'api_tokens'>> {
  return db.updateTable('api_tokens').set(patch).where('id', '=', tokenId).returningAll().executeTakeFirstOrThrow();
}
