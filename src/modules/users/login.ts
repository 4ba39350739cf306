import { ApiError } from '../../app/errors.ts';
import type { Executor } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import type { Principal } from '../access/principal.ts';
import type { UsersDeps } from './deps.ts';
import { burnPasswordCheck, verifyPassword, warmPasswordCheck } from './passwords.ts';
import { accessOn, reachableTeams } from './principals.ts';
import * as repo from './repo.ts';
import { type OpenedSession, openSession, type RequestMeta, resolveSession } from './sessions.ts';
import { totpCodeAccepted } from './totp.ts';

/** Failed logins after which an account is refused for LOCK_SECONDS. */
export const MAX_FAILED_LOGINS = 5;
export const LOCK_SECONDS = 15 * 60;

export interface LoginInput {
  email: string;
  password: string;
  totp_code?: string | undefined;
  team_id?: string | undefined;
}

export interface LoggedIn extends OpenedSession {
  user: Row<'users'>;
  principal: Principal;
}

const invalidCredentials = () => new ApiError('invalid_credentials');

export function throttled(until: Date): ApiError {
  const seconds = Math.max(1, Math.ceil((until.getTime() - Date.now()) / 1000));
  return new ApiError('login_throttled', `Too many failed logins for this account: try again in ${Math.ceil(seconds / 60)} minutes.`, {
    data: { retry_after_seconds: seconds },
  });
}

/**
 * Where a new session starts: the team asked for (404 if the user cannot act on it), else the
 * user's first membership.
 */
export async function startingTeam(db: Executor, user: Row<'users'>, teamId: string | undefined): Promise<Principal> {
  if (teamId) {
    const p = await accessOn(db, user, teamId, null);
    if (!p) throw new ApiError('not_found', 'Team not found among the teams this account can act on.');
    return p;
  }
  const [first] = await reachableTeams(db, user.id);
  const p = first ? await accessOn(db, user, first.team_id, null) : null;
  if (!p) throw new ApiError('permission_denied', 'This account is not a member of any team.');
  return p;
}

/**
 * E-mail and password (and the TOTP code when two-factor is on) → a new session. An unknown
 * address costs the same scrypt work and answers the same 401 as a wrong password. Each attempt is
 * counted before its password is checked, in the statement that checks the lock (`checkAttempt`),
 * so parallel guesses cannot all slip past it: at most MAX_FAILED_LOGINS are evaluated, then the
 * account is refused for LOCK_SECONDS (429 login_throttled, the password not even checked). A
 * success starts the count again; a right password still waiting for its code is not counted.
 */
export async function login(d: UsersDeps, input: LoginInput, meta: RequestMeta): Promise<LoggedIn> {
  const [user] = await Promise.all([d.store.run((db) => repo.findUserByEmail(db, input.email)), warmPasswordCheck()]);
  if (!user) {
    await burnPasswordCheck(input.password);
    throw invalidCredentials();
  }
  await checkAttempt(d, user.id);
  const fail = async (err: ApiError): Promise<never> => {
    await d.store.run((db) => repo.settleLoginFailure(db, user.id, MAX_FAILED_LOGINS, LOCK_SECONDS));
    throw err;
  };
  if (!(await verifyPassword(input.password, user.password_hash))) await fail(invalidCredentials());
  if (user.totp_enabled_at) {
    if (!input.totp_code) {
      await d.store.run((db) => repo.releaseLoginAttempt(db, user.id));
      throw new ApiError('totp_required');
    }
    if (!(await d.store.run((db) => totpCodeAccepted(db, d.secrets, user, input.totp_code)))) await fail(new ApiError('totp_invalid'));
  }
  // The credentials were right: the count starts again even if no team can be entered below.
  await d.store.run((db) => repo.clearLoginFailures(db, user.id));
  return d.store.transaction(async (trx) => {
    const start = await startingTeam(trx, user, input.team_id);
    const opened = await openSession(trx, user.id, start.teamId, meta);
    return { ...opened, user, principal: { ...start, sessionId: opened.session.id } };
  });
}

/** Reserves one password check for the account (repo.reserveLoginAttempt), or 429 login_throttled. */
export async function checkAttempt(d: UsersDeps, userId: string): Promise<void> {
  const r = await d.store.run((db) => repo.reserveLoginAttempt(db, userId, MAX_FAILED_LOGINS, LOCK_SECONDS));
  if (!r.reserved) throw throttled(r.lockedUntil ?? new Date(Date.now() + LOCK_SECONDS * 1000));
}

export async function logout(d: UsersDeps, sessionId: string): Promise<void> {
  await d.store.run((db) => repo.revokeSession(db, sessionId));
}

/** Moves the session to another team the user can act on (a membership, or a provider grant). */
export async function switchTeam(d: UsersDeps, sessionId: string, userId: string, teamId: string): Promise<Principal> {
  return d.store.transaction(async (trx) => {
    const user = await repo.findUser(trx, userId);
    if (!user) throw new ApiError('unauthenticated');
    const p = await accessOn(trx, user, teamId, sessionId);
    if (!p) throw new ApiError('not_found', 'Team not found among the teams this account can act on.');
    await repo.setSessionTeam(trx, sessionId, teamId);
    return p;
  });
}

export { resolveSession };
