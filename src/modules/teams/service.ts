import { configCache } from '../../app/cache.ts';
import { ApiError, notFound } from '../../app/errors.ts';
import { newId, randomToken } from '../../app/ids.ts';
import { sha256Hex } from '../../app/secrets.ts';
import type { Executor, Store } from '../../db/database.ts';
import type { NewRow, Row } from '../../db/schema.ts';
import { isAffiliateScoped, type Permission, PERMISSIONS, type Role, ROLE_PERMISSIONS } from '../access/permissions.ts';
import type { Principal } from '../access/principal.ts';
import * as repo from './repo.ts';

/** API tokens are `csk_` + 40 random characters: recognisable to secret scanners, ~238 bits. */
export const TOKEN_PREFIX = 'csk_';
const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * What a token may do: its role's permissions, its explicit set, or (neither: a CLI operator token)
 * the Team Owner's permissions. A token is never the Team Owner itself: its principal's role is
 * null for an operator token and for a token minted with role `owner`, so what only the owner
 * (a person) may do — transfer ownership — stays with the owner's session.
 */
export function tokenPrincipal(token: Row<'api_tokens'>): Principal {
  const role = (token.role as Role | null) ?? null;
  const permissions = token.permissions
    ? (token.permissions.filter((p) => p in PERMISSIONS) as Permission[])
    : ROLE_PERMISSIONS[role ?? 'owner'];
  const scoped = role !== null && isAffiliateScoped(role);
  return {
    teamId: token.team_id,
    kind: 'token',
    actorId: token.id,
    label: `token ${token.name} (${TOKEN_PREFIX}…${token.token_hint})`,
    tokenId: token.id,
    userId: null,
    sessionId: null,
    providerId: null,
    role: role === 'owner' ? null : role,
    permissions: new Set(permissions),
    affiliateIds: scoped || token.affiliate_ids.length > 0 ? token.affiliate_ids : null,
  };
}

/** A token as authentication caches it, by its secret's hash; `touchedAt` is this process's last last_used_at write. */
interface CachedToken {
  row: Readonly<Row<'api_tokens'>>;
  touchedAt: number;
}

/**
 * Token → principal without a query per request: the row by its secret's hash, for the cache's TTL.
 * Every revocation or rotation that goes through this process drops the entry once it commits
 * (`forgetToken`); another process keeps acting on its entry for at most the TTL (README: API tokens).
 * Expiry is judged against the clock on every request, never cached as valid.
 */
export function tokenCache(store: Store) {
  return configCache<CachedToken>(store, 'api_tokens');
}

/** Called by every write that revokes, expires or retires a token, after it committed. */
export function forgetToken(store: Store, token: Pick<Row<'api_tokens'>, 'token_hash'> | undefined): void {
  if (token) tokenCache(store).delete(token.token_hash);
}

export interface IssuedToken {
  token: Row<'api_tokens'>;
  /** The secret itself: shown once, never stored. */
  secret: string;
}

/** Inserts a token with a fresh secret; the secret is returned once and only its hash is stored. */
export async function issueToken(db: Executor, fields: Omit<NewRow<'api_tokens'>, 'id' | 'token_hash' | 'token_hint'>): Promise<IssuedToken> {
  const secret = TOKEN_PREFIX + randomToken(40);
  const token = await repo.insertToken(db, { ...fields, id: newId('token'), token_hash: sha256Hex(secret), token_hint: secret.slice(-4) });
  return { token, secret };
}

export interface Rotation {
  issued: IssuedToken;
  /** The old token, now pointing at its replacement and revoked or expiring at the grace's end. */
  retired: Row<'api_tokens'>;
}

/**
 * The one token rotation (the API's and the operator's), in the caller's transaction: locks the
 * old token, refuses a revoked, expired or already rotated one, issues a replacement with the same
 * name, role, permissions, affiliate ids and expiry, and retires the old one — revoked now
 * (`graceSeconds` 0) or expiring at the grace's end, never later than an expiry it already had.
 * `teamId` null (the operator) reaches any team; `check` runs on the locked row before anything is written.
 */
export async function rotateTokenIn(
  db: Executor,
  id: string,
  graceSeconds: number,
  by: { teamId: string | null; createdBy: string | null; check?: (old: Row<'api_tokens'>) => void },
): Promise<Rotation> {
  const old = await repo.findTokenForUpdate(db, id);
  if (!old || (by.teamId !== null && old.team_id !== by.teamId)) throw notFound(`API token ${id}`);
  const now = new Date();
  if (old.revoked_at || (old.expires_at && old.expires_at <= now)) throw new ApiError('conflict', `API token ${id} is no longer active: create a new one.`);
  if (old.replaced_by) throw new ApiError('conflict', `API token ${id} was already rotated into ${old.replaced_by}.`);
  by.check?.(old);
  const issued = await issueToken(db, {
    team_id: old.team_id,
    name: old.name,
    role: old.role,
    permissions: old.permissions,
    affiliate_ids: old.affiliate_ids,
    expires_at: old.expires_at,
    created_by: by.createdBy,
  });
  const graceEnd = now.getTime() + graceSeconds * 1000;
  const until = new Date(old.expires_at ? Math.min(old.expires_at.getTime(), graceEnd) : graceEnd);
  const retired = await repo.retireToken(db, id, { replaced_by: issued.token.id, ...(graceSeconds === 0 ? { revoked_at: now } : { expires_at: until }) });
  return { issued, retired };
}

export function tokenView(t: Row<'api_tokens'>) {
  return {
    id: t.id,
    team_id: t.team_id,
    name: t.name,
    hint: `${TOKEN_PREFIX}…${t.token_hint}`,
    created_at: t.created_at.toISOString(),
    last_used_at: t.last_used_at?.toISOString() ?? null,
    expires_at: t.expires_at?.toISOString() ?? null,
    revoked_at: t.revoked_at?.toISOString() ?? null,
  };
}

export function teamView(t: Row<'teams'>) {
  return { object: 'team' as const, id: t.id, name: t.name, time_zone: t.time_zone, created_at: t.created_at.toISOString() };
}

export class TeamsService {
  private readonly tokens: ReturnType<typeof tokenCache>;

  constructor(private readonly store: Store) {
    this.tokens = tokenCache(store);
  }

  /** The IANA time zone the team's billing days and nightly rebill hour are counted in (UTC unless set). */
  async timeZoneOf(db: Executor, teamId: string): Promise<string> {
    return (await repo.findTeam(db, teamId))?.time_zone ?? 'UTC';
  }

  /** The team as GET /v1/team shows it. */
  async get(teamId: string) {
    const team = await this.store.run((db) => repo.findTeam(db, teamId));
    if (!team) throw new ApiError('not_found', 'Team not found.');
    return teamView(team);
  }

  /** In the caller's transaction (subscriptions reschedule their billing days in the same one). */
  async update(db: Executor, teamId: string, patch: { name?: string; time_zone?: string }) {
    // An empty PATCH changes nothing (an UPDATE with nothing to SET is not SQL).
    const empty = Object.values(patch).every((v) => v === undefined);
    const team = empty ? await repo.findTeam(db, teamId) : await repo.updateTeam(db, teamId, patch);
    if (!team) throw new ApiError('not_found', 'Team not found.');
    return teamView(team);
  }

  /** A merchant team, or (kind 'provider') a Customer Service or Affiliate Provider organisation. */
  async createTeam(name: string, kind: 'merchant' | 'provider' = 'merchant'): Promise<Row<'teams'>> {
    return this.store.run((db) => repo.insertTeam(db, { id: newId('team'), name, kind }));
  }

  async kindOf(db: Executor, teamId: string): Promise<'merchant' | 'provider' | undefined> {
    return (await repo.findTeam(db, teamId))?.kind;
  }

  async listTeams(): Promise<Row<'teams'>[]> {
    return this.store.run((db) => repo.listTeams(db));
  }

  /** A full-access operator token (the CLI's and the demo's); the API's tokens carry a role or a permission set (tokens.ts). */
  async createToken(teamId: string, name: string): Promise<IssuedToken> {
    const team = await this.store.run((db) => repo.findTeam(db, teamId));
    if (!team) throw new ApiError('not_found', `Team ${teamId} not found.`);
    return this.store.run((db) => issueToken(db, { team_id: teamId, name }));
  }

  async listTokens(teamId?: string): Promise<Row<'api_tokens'>[]> {
    return this.store.run((db) => repo.listTokens(db, teamId));
  }

  async revokeToken(tokenId: string): Promise<Row<'api_tokens'>> {
    const revoked = await this.store.run((db) => repo.revokeToken(db, tokenId, new Date()));
    if (!revoked) throw new ApiError('not_found', `Active token ${tokenId} not found.`);
    forgetToken(this.store, revoked);
    return revoked;
  }

  /**
   * The operator's rotation (CLI, control socket): the same as the API's (`rotateTokenIn`), in one
   * transaction; the replacement keeps the old token's role, permissions, affiliate ids and expiry.
   */
  async rotateToken(tokenId: string, graceSeconds: number): Promise<IssuedToken & { old: Row<'api_tokens'> }> {
    const r = await this.store.transaction((db) => rotateTokenIn(db, tokenId, graceSeconds, { teamId: null, createdBy: null }));
    forgetToken(this.store, r.retired);
    return { ...r.issued, old: r.retired };
  }

  /** Resolves a bearer secret to its team and permissions, or throws 401. */
  async authenticate(secret: string | undefined): Promise<Principal> {
    if (!secret || !secret.startsWith(TOKEN_PREFIX) || secret.length > 200) throw new ApiError('unauthenticated');
    const hash = sha256Hex(secret);
    const cached = await this.tokens.get(hash, async () => {
      const row = await this.store.run((db) => repo.findTokenByHash(db, hash));
      return row ? { row: Object.freeze(row), touchedAt: row.last_used_at?.getTime() ?? 0 } : undefined;
    });
    if (!cached) throw new ApiError('unauthenticated');
    const token = cached.row;
    const now = new Date();
    if (token.revoked_at) throw new ApiError('token_revoked');
    if (token.expires_at && token.expires_at <= now) throw new ApiError('token_expired');
    // last_used_at to the minute: one write per token per minute, not one per request.
    if (now.getTime() - cached.touchedAt > LAST_USED_RESOLUTION_MS) {
      cached.touchedAt = now.getTime();
      await this.store.run((db) => repo.touchToken(db, token.id, now));
    }
    return tokenPrincipal(token);
  }
}
