import { ApiError } from '../../app/errors.ts';
import { randomToken } from '../../app/ids.ts';
import { sha256Hex } from '../../app/secrets.ts';
import type { Executor } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import type { Principal } from '../access/principal.ts';
import type { UsersDeps } from './deps.ts';
import { accessOn } from './principals.ts';
import * as repo from './repo.ts';

/** The cookie that carries a browser session's secret (the database keeps only its SHA-256). */
export const SESSION_COOKIE = 'checkstand_session';
/** Idle limit: every request slides it; the cookie's Max-Age says the same. */
export const SESSION_IDLE_SECONDS = 12 * 3600;
/** Absolute limit from login, whatever the activity. */
export const SESSION_ABSOLUTE_SECONDS = 7 * 24 * 3600;
/** last_seen_at (and the cookie) are renewed at most once a minute per session. */
const TOUCH_RESOLUTION_MS = 60_000;
const SESSION_PREFIX = 'css_';

export interface RequestMeta {
  ip: string | null;
  userAgent: string | null;
}

export interface OpenedSession {
  session: Row<'sessions'>;
  /** The cookie's value: shown to the browser once, never stored. */
  secret: string;
}

/** In the caller's transaction: a new session of `user` acting on `teamId`. */
export async function openSession(db: Executor, userId: string, teamId: string, meta: RequestMeta): Promise<OpenedSession> {
  const secret = SESSION_PREFIX + randomToken(43);
  const session = await repo.insertSession(db, {
    id: `sess_${randomToken()}`,
    user_id: userId,
    token_hash: sha256Hex(secret),
    team_id: teamId,
    ip_address: meta.ip,
    user_agent: meta.userAgent?.slice(0, 500) ?? null,
    expires_at: new Date(Date.now() + SESSION_ABSOLUTE_SECONDS * 1000),
  });
  return { session, secret };
}

/** Seconds the cookie should live from now: the idle limit, never past the absolute one. */
export function cookieMaxAge(session: Row<'sessions'>, now = Date.now()): number {
  return Math.max(0, Math.min(SESSION_IDLE_SECONDS, Math.floor((session.expires_at.getTime() - now) / 1000)));
}

export interface ResolvedSession {
  principal: Principal;
  session: Row<'sessions'>;
  user: Row<'users'>;
  /** The session was renewed: send the cookie again with a fresh Max-Age. */
  slid: boolean;
}

const ended = (why: string) => new ApiError('unauthenticated', `${why}: log in again (POST /v1/sessions).`);

/**
 * The cookie's secret → the session → the user → what they may do on the session's team, decided
 * afresh on every request: a revoked session, a removed member or a revoked provider grant is
 * refused at once (401).
 */
export async function resolveSession(d: UsersDeps, secret: string): Promise<ResolvedSession> {
  if (!secret.startsWith(SESSION_PREFIX) || secret.length > 100) throw ended('The session cookie is not valid');
  return d.store.run(async (db) => {
    const session = await repo.findSessionByHash(db, sha256Hex(secret));
    const now = Date.now();
    if (!session || session.revoked_at) throw ended('This session has ended');
    const lastSeen = (session.last_seen_at as Date).getTime();
    if (session.expires_at.getTime() <= now || lastSeen + SESSION_IDLE_SECONDS * 1000 <= now) throw ended('This session has expired');
    const user = await repo.findUser(db, session.user_id);
    if (!user) throw ended('This session has ended');
    const principal = await accessOn(db, user, session.team_id, session.id);
    if (!principal) throw ended('You no longer have access to the team this session was acting on');
    const slid = now - lastSeen > TOUCH_RESOLUTION_MS;
    if (slid) await repo.touchSession(db, session.id, new Date(now));
    return { principal, session, user, slid };
  });
}
