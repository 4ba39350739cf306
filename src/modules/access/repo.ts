import type { Executor } from '../../db/database.ts';
import type { NewRow, Row } from '../../db/schema.ts';

// ---- provider grants

export async function insertGrant(db: Executor, grant: NewRow<'provider_grants'>): Promise<Row<'provider_grants'>> {
  return db.insertInto('provider_grants').values(grant).returningAll().executeTakeFirstOrThrow();
}

/** The provider's live (not revoked) grant on a team, if any. */
export async function liveGrant(db: Executor, teamId: string, providerId: string): Promise<Row<'provider_grants'> | undefined> {
  return db
    .selectFrom('provider_grants')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('provider_id', '=', providerId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
}

export async function findGrant(db: Executor, teamId: string, id: string): Promise<Row<'provider_grants'> | undefined> {
  return db.selectFrom('provider_grants').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}

export async function listGrants(db: Executor, teamId: string, afterSeq: number | null, limit: number): Promise<Row<'provider_grants'>[]> {
  let q = db.selectFrom('provider_grants').selectAll().where('team_id', '=', teamId).where('revoked_at', 'is', null);
  if (afterSeq !== null) q = q.where('seq', '<', afterSeq);
  return q.orderBy('seq', 'desc').limit(limit + 1).execute();
}

/** The merchant teams a provider organisation has live grants on (for its users' team switcher). */
export async function grantsOfProvider(db: Executor, providerId: string): Promise<Row<'provider_grants'>[]> {
  return db.selectFrom('provider_grants').selectAll().where('provider_id', '=', providerId).where('revoked_at', 'is', null).orderBy('seq').execute();
}

export async function updateGrant(
  db: Executor,
  teamId: string,
  id: string,
  patch: { permissions?: string[]; affiliate_ids?: string[]; revoked_at?: Date },
): Promise<Row<'provider_grants'> | undefined> {
  return db
    .updateTable('provider_grants')
    .set({ ...patch, updated_at: new Date() })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

// ---- audit log (append-only: no update or delete here, and a trigger refuses them)

export async function insertAudit(db: Executor, row: NewRow<'audit_log'>): Promise<void> {
  await db.insertInto('audit_log').values(row).execute();
}

export interface AuditFilter {
  action?: string | undefined;
  actor_id?: string | undefined;
  target_id?: string | undefined;
  created_gte?: Date | undefined;
  created_lte?: Date | undefined;
}

/** `order.*` is a prefix, not a pattern: `%`, `_` and the escape character itself match only themselves. */
function escapeLike(prefix: string): string {
  return prefix.replace(/[\\%_]/g, (c) => `\\${c}`);
}

export async function listAudit(db: Executor, teamId: string, f: AuditFilter, afterSeq: number | null, limit: number): Promise<Row<'audit_log'>[]> {
  let q = db.selectFrom('audit_log').selectAll().where('team_id', '=', teamId);
  if (f.action) q = f.action.endsWith('.*') ? q.where('action', 'like', `${escapeLike(f.action.slice(0, -1))}%`) : q.where('action', '=', f.action);
  if (f.actor_id) q = q.where('actor_id', '=', f.actor_id);
  if (f.target_id) q = q.where('target_id', '=', f.target_id);
  if (f.created_gte) q = q.where('created_at', '>=', f.created_gte);
  if (f.created_lte) q = q.where('created_at', '<=', f.created_lte);
  if (afterSeq !== null) q = q.where('seq', '<', afterSeq);
  return q.orderBy('seq', 'desc').limit(limit + 1).execute();
}
