import { sql } from 'kysely';
import type { Executor } from '../../db/database.ts';
import type { NewRow, Row } from '../../db/schema.ts';

// ---- users

export async function findUserByEmail(db: Executor, email: string): Promise<Row<'users'> | undefined> {
  return db.selectFrom('users').selectAll().where(sql<string>`lower(email)`, '=', email.trim().toLowerCase()).executeTakeFirst();
}

export async function findUser(db: Executor, id: string): Promise<Row<'users'> | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function lockUser(db: Executor, id: string): Promise<Row<'users'> | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

export async function insertUser(db: Executor, row: NewRow<'users'>): Promise<Row<'users'>> {
  return db.insertInto('users').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateUser(
  db: Executor,
  id: string,
  patch: { password_hash?: string; totp_secret_enc?: string | null; totp_enabled_at?: Date | null; totp_last_step?: number | null; failed_logins?: number; locked_until?: Date | null },
): Promise<Row<'users'> | undefined> {
  return db.updateTable('users').set({ ...patch, updated_at: new Date() }).where('id', '=', id).returningAll().executeTakeFirst();
}

/** Takes a TOTP time step for the user: false when a code of this step (or a later one) was already used. */
export async function claimTotpStep(db: Executor, id: string, step: number): Promise<boolean> {
  const r = await db
    .updateTable('users')
    .set({ totp_last_step: step })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', step)]))
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/**
 * Reserves one password check, in the statement that checks the lock (a hot counter: see
 * ARCHITECTURE.md): while the account is locked nothing changes; else the attempt counts at once
 * (`failed_logins + 1`, given back by `releaseLoginAttempt` or zeroed by a success). With `max`
 * attempts already counted and none of them settled, this one sets the lock instead (a crashed
 * process's reservations cannot keep the account open or shut for ever). So however many attempts
 * arrive at once, at most `max` are evaluated before the lock. `reserved: false` carries the lock's end.
 */
export async function reserveLoginAttempt(db: Executor, id: string, max: number, lockSeconds: number): Promise<{ reserved: boolean; lockedUntil: Date | null }> {
  // One UPDATE: a parallel attempt waits for the row and sees this one's count. Afterwards the lock is
  // active exactly when this attempt was not reserved (it was locked, or it set the lock).
  const r = await sql<{ locked_until: Date | null; locked: boolean }>`
    UPDATE users SET
      failed_logins = CASE WHEN locked_until > now() THEN failed_logins WHEN failed_logins < ${max} THEN failed_logins + 1 ELSE 0 END,
      locked_until = CASE WHEN locked_until > now() OR failed_logins < ${max} THEN locked_until ELSE now() + make_interval(secs => ${lockSeconds}) END,
      updated_at = now()
    WHERE id = ${id}
    RETURNING locked_until, coalesce(locked_until > now(), false) AS locked`.execute(db);
  const row = r.rows[0];
  if (!row) return { reserved: false, lockedUntil: null };
  return row.locked ? { reserved: false, lockedUntil: row.locked_until } : { reserved: true, lockedUntil: null };
}

/**
 * A reserved attempt failed (wrong password or code): it stays counted; when `max` are counted,
 * the account locks for `lockSeconds` and the count starts again.
 */
export async function settleLoginFailure(db: Executor, id: string, max: number, lockSeconds: number): Promise<void> {
  await sql`
    UPDATE users SET
      locked_until = CASE WHEN failed_logins >= ${max} THEN now() + make_interval(secs => ${lockSeconds}) ELSE locked_until END,
      failed_logins = CASE WHEN failed_logins >= ${max} THEN 0 ELSE failed_logins END,
      updated_at = now()
    WHERE id = ${id}`.execute(db);
}

/** A reserved attempt that was neither a success nor a failure (the password was right, a code is still needed): no longer counted. */
export async function releaseLoginAttempt(db: Executor, id: string): Promise<void> {
  await sql`UPDATE users SET failed_logins = GREATEST(failed_logins - 1, 0), updated_at = now() WHERE id = ${id}`.execute(db);
}

/** A success: the count starts again and a lock (set meanwhile by a parallel attempt) is lifted. */
export async function clearLoginFailures(db: Executor, id: string): Promise<void> {
  await db.updateTable('users').set({ failed_logins: 0, locked_until: null, updated_at: new Date() }).where('id', '=', id).execute();
}

// ---- memberships

export async function findMembership(db: Executor, teamId: string, userId: string): Promise<Row<'memberships'> | undefined> {
  return db.selectFrom('memberships').selectAll().where('team_id', '=', teamId).where('user_id', '=', userId).executeTakeFirst();
}

export async function lockMembership(db: Executor, teamId: string, userId: string): Promise<Row<'memberships'> | undefined> {
  return db.selectFrom('memberships').selectAll().where('team_id', '=', teamId).where('user_id', '=', userId).forUpdate().executeTakeFirst();
}

export async function membershipsOfUser(db: Executor, userId: string): Promise<Row<'memberships'>[]> {
  return db.selectFrom('memberships').selectAll().where('user_id', '=', userId).orderBy('seq').execute();
}

export async function findOwner(db: Executor, teamId: string): Promise<Row<'memberships'> | undefined> {
  return db.selectFrom('memberships').selectAll().where('team_id', '=', teamId).where('role', '=', 'owner').executeTakeFirst();
}

export type MemberRow = Row<'memberships'> & { email: string; name: string; totp_enabled_at: Date | null };

export async function listMembers(db: Executor, teamId: string): Promise<MemberRow[]> {
  return db
    .selectFrom('memberships')
    .innerJoin('users', 'users.id', 'memberships.user_id')
    .selectAll('memberships')
    .select(['users.email', 'users.name', 'users.totp_enabled_at'])
    .where('memberships.team_id', '=', teamId)
    .orderBy('memberships.seq')
    .execute();
}

export async function findMember(db: Executor, teamId: string, userId: string): Promise<MemberRow | undefined> {
  return db
    .selectFrom('memberships')
    .innerJoin('users', 'users.id', 'memberships.user_id')
    .selectAll('memberships')
    .select(['users.email', 'users.name', 'users.totp_enabled_at'])
    .where('memberships.team_id', '=', teamId)
    .where('memberships.user_id', '=', userId)
    .executeTakeFirst();
}

export async function insertMembership(db: Executor, row: NewRow<'memberships'>): Promise<Row<'memberships'>> {
  return db.insertInto('memberships').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateMembership(db: Executor, teamId: string, userId: string, patch: { role?: string; affiliate_ids?: string[] }): Promise<void> {
  await db.updateTable('memberships').set({ ...patch, updated_at: new Date() }).where('team_id', '=', teamId).where('user_id', '=', userId).execute();
}

export async function deleteMembership(db: Executor, teamId: string, userId: string): Promise<void> {
  await db.deleteFrom('memberships').where('team_id', '=', teamId).where('user_id', '=', userId).execute();
}

// ---- sessions

export async function insertSession(db: Executor, row: NewRow<'sessions'>): Promise<Row<'sessions'>> {
  return db.insertInto('sessions').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function findSessionByHash(db: Executor, tokenHash: string): Promise<Row<'sessions'> | undefined> {
  return db.selectFrom('sessions').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

export async function touchSession(db: Executor, id: string, at: Date): Promise<void> {
  await db.updateTable('sessions').set({ last_seen_at: at }).where('id', '=', id).execute();
}

export async function setSessionTeam(db: Executor, id: string, teamId: string): Promise<void> {
  await db.updateTable('sessions').set({ team_id: teamId }).where('id', '=', id).execute();
}

export async function revokeSession(db: Executor, id: string): Promise<void> {
  await db.updateTable('sessions').set({ revoked_at: new Date() }).where('id', '=', id).where('revoked_at', 'is', null).execute();
}

export async function revokeUserSessions(db: Executor, userId: string): Promise<number> {
  const r = await db.updateTable('sessions').set({ revoked_at: new Date() }).where('user_id', '=', userId).where('revoked_at', 'is', null).executeTakeFirst();
  return Number(r.numUpdatedRows);
}

// ---- invitations

export async function insertInvitation(db: Executor, row: NewRow<'invitations'>): Promise<Row<'invitations'>> {
  return db.insertInto('invitations').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function lockInvitationByHash(db: Executor, tokenHash: string): Promise<Row<'invitations'> | undefined> {
  return db.selectFrom('invitations').selectAll().where('token_hash', '=', tokenHash).forUpdate().executeTakeFirst();
}

export async function findInvitation(db: Executor, teamId: string, id: string): Promise<Row<'invitations'> | undefined> {
  return db.selectFrom('invitations').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}

export async function listInvitations(db: Executor, teamId: string, afterSeq: number | null, limit: number): Promise<Row<'invitations'>[]> {
  let q = db.selectFrom('invitations').selectAll().where('team_id', '=', teamId);
  if (afterSeq !== null) q = q.where('seq', '<', afterSeq);
  return q.orderBy('seq', 'desc').limit(limit + 1).execute();
}

/** Closes the open invitation of this address (a new one replaces it). */
export async function revokeOpenInvitations(db: Executor, teamId: string, email: string): Promise<void> {
  await db
    .updateTable('invitations')
    .set({ revoked_at: new Date() })
    .where('team_id', '=', teamId)
    .where(sql<string>`lower(email)`, '=', email.toLowerCase())
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .execute();
}

export async function closeInvitation(db: Executor, teamId: string, id: string, how: 'accepted_at' | 'revoked_at'): Promise<Row<'invitations'> | undefined> {
  return db
    .updateTable('invitations')
    .set({ [how]: new Date() })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

// ---- password resets

export async function insertPasswordReset(db: Executor, row: NewRow<'password_resets'>): Promise<void> {
  await db.insertInto('password_resets').values(row).execute();
}

export async function lockPasswordResetByHash(db: Executor, tokenHash: string): Promise<Row<'password_resets'> | undefined> {
  return db.selectFrom('password_resets').selectAll().where('token_hash', '=', tokenHash).forUpdate().executeTakeFirst();
}

export async function markPasswordResetUsed(db: Executor, id: string): Promise<void> {
  await db.updateTable('password_resets').set({ used_at: new Date() }).where('id', '=', id).execute();
}

/** A new reset link makes the user's earlier unused ones void. */
export async function voidPasswordResets(db: Executor, userId: string): Promise<void> {
  await db.updateTable('password_resets').set({ used_at: new Date() }).where('user_id', '=', userId).where('used_at', 'is', null).execute();
}

// ---- provider grants (read-only here: the access module manages them)

/** The live grants any of these provider organisations hold on `teamId` (at most one each). */
export async function liveGrantsOn(db: Executor, teamId: string, providerIds: readonly string[]): Promise<Row<'provider_grants'>[]> {
  if (providerIds.length === 0) return [];
  return db
    .selectFrom('provider_grants')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('provider_id', 'in', providerIds)
    .where('revoked_at', 'is', null)
    .orderBy('seq')
    .execute();
}

/** Every live grant of these provider organisations (the merchant teams their users can switch to). */
export async function liveGrantsOf(db: Executor, providerIds: readonly string[]): Promise<Row<'provider_grants'>[]> {
  if (providerIds.length === 0) return [];
  return db.selectFrom('provider_grants').selectAll().where('provider_id', 'in', providerIds).where('revoked_at', 'is', null).orderBy('seq').execute();
}

export async function findSessionById(db: Executor, id: string): Promise<Row<'sessions'> | undefined> {
  return db.selectFrom('sessions').selectAll().where('id', '=', id).executeTakeFirst();
}
