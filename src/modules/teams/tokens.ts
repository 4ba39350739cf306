import { ApiError, notFound } from '../../app/errors.ts';
import type { Store } from '../../db/database.ts';
import { listPage, type PageRequest } from '../../db/pagination.ts';
import type { Row } from '../../db/schema.ts';
import { type Permission, PERMISSIONS, type Role, ROLE_PERMISSIONS } from '../access/permissions.ts';
import type { Principal } from '../access/principal.ts';
import * as repo from './repo.ts';
import { forgetToken, issueToken, rotateTokenIn, TOKEN_PREFIX, tokenPrincipal } from './service.ts';

/** Rotation keeps the old secret working this long unless told otherwise: a day to redeploy. */
export const DEFAULT_ROTATION_GRACE_S = 86_400;
export const MAX_ROTATION_GRACE_S = 7 * 86_400;

export function apiTokenView(t: Row<'api_tokens'>, now = new Date()) {
  const p = tokenPrincipal(t);
  const status: 'active' | 'expired' | 'revoked' = t.revoked_at ? 'revoked' : t.expires_at && t.expires_at <= now ? 'expired' : 'active';
  return {
    object: 'api_token' as const,
    id: t.id,
    name: t.name,
    hint: `${TOKEN_PREFIX}…${t.token_hint}`,
    role: t.role as Role | null,
    permissions: [...p.permissions].sort(),
    affiliate_ids: t.affiliate_ids,
    status,
    created_at: t.created_at.toISOString(),
    created_by: t.created_by,
    last_used_at: t.last_used_at?.toISOString() ?? null,
    expires_at: t.expires_at?.toISOString() ?? null,
    revoked_at: t.revoked_at?.toISOString() ?? null,
    replaced_by: t.replaced_by,
  };
}

export interface CreateTokenInput {
  name: string;
  role?: Role | undefined;
  permissions?: string[] | undefined;
  affiliate_ids?: string[] | undefined;
  expires_at?: string | undefined;
}

/** Least privilege: nobody mints (or rotates into being) a token that can do more than they can. */
function refuseEscalation(caller: Principal, wanted: Iterable<Permission>): void {
  const missing = [...wanted].filter((p) => !caller.permissions.has(p));
  if (missing.length > 0) {
    throw new ApiError('permission_denied', `A token cannot be given permissions its creator does not have: ${missing.join(', ')}.`, {
      data: { missing },
    });
  }
}

function wantedPermissions(input: CreateTokenInput): { role: Role | null; permissions: Permission[] | null; effective: Permission[] } {
  if ((input.role === undefined) === (input.permissions === undefined)) {
    throw new ApiError('validation_failed', 'Give the token either a role or an explicit permissions list (least privilege), not both or neither.', {
      fields: [{ path: 'role', message: 'exactly one of role and permissions' }],
    });
  }
  if (input.role) return { role: input.role, permissions: null, effective: [...ROLE_PERMISSIONS[input.role]] };
  const unknown = input.permissions!.filter((p) => !(p in PERMISSIONS));
  if (unknown.length > 0) {
    throw new ApiError('validation_failed', `Unknown permissions: ${unknown.join(', ')}.`, { fields: [{ path: 'permissions', message: `unknown: ${unknown.join(', ')}` }] });
  }
  const permissions = [...new Set(input.permissions as Permission[])];
  return { role: null, permissions, effective: permissions };
}

/** `/v1/api-tokens`: tokens managed through the API, each bound to a role or a permission set (spec §5.3). */
export class ApiTokensService {
  constructor(private readonly store: Store) {}

  async create(caller: Principal, input: CreateTokenInput) {
    const { role, permissions, effective } = wantedPermissions(input);
    refuseEscalation(caller, effective);
    if (role === 'affiliate' && !input.affiliate_ids?.length) {
      throw new ApiError('validation_failed', 'An affiliate token needs the affiliate ids it may see.', { fields: [{ path: 'affiliate_ids', message: 'required for role affiliate' }] });
    }
    const expiresAt = input.expires_at ? new Date(input.expires_at) : null;
    if (expiresAt && expiresAt.getTime() <= Date.now()) {
      throw new ApiError('validation_failed', 'expires_at: must be in the future.', { fields: [{ path: 'expires_at', message: 'must be in the future' }] });
    }
    const issued = await this.store.run((db) =>
      issueToken(db, {
        team_id: caller.teamId,
        name: input.name,
        role,
        permissions,
        affiliate_ids: input.affiliate_ids ?? [],
        expires_at: expiresAt,
        created_by: caller.actorId,
      }),
    );
    return { ...apiTokenView(issued.token), secret: issued.secret };
  }

  async list(teamId: string, q: PageRequest & { status?: 'active' | 'revoked' | 'expired' | undefined }) {
    return this.store.run((db) =>
      listPage(db, 'api_tokens', teamId, q, (after) => repo.listTokenPage(db, teamId, after, q.limit, q.status ?? null), (t) => apiTokenView(t)),
    );
  }

  async get(teamId: string, id: string) {
    const t = await this.store.run((db) => repo.findToken(db, id));
    if (!t || t.team_id !== teamId) throw notFound(`API token ${id}`);
    return apiTokenView(t);
  }

  /**
   * A replacement with the same name and permissions; the old secret keeps working for
   * `graceSeconds` (0: revoked at once) and points at its replacement.
   */
  async rotate(caller: Principal, id: string, graceSeconds: number) {
    const rotated = await this.store.transaction((db) =>
      rotateTokenIn(db, id, graceSeconds, { teamId: caller.teamId, createdBy: caller.actorId, check: (old) => refuseEscalation(caller, tokenPrincipal(old).permissions) }),
    );
    // After the commit: this process refuses (or expires) the old secret on its very next request.
    forgetToken(this.store, rotated.retired);
    return { token: { ...apiTokenView(rotated.issued.token), secret: rotated.issued.secret }, previous: apiTokenView(rotated.retired) };
  }

  async revoke(teamId: string, id: string) {
    const t = await this.store.run((db) => repo.findToken(db, id));
    if (!t || t.team_id !== teamId) throw notFound(`API token ${id}`);
    if (t.revoked_at) return apiTokenView(t);
    const revoked = await this.store.run((db) => repo.revokeToken(db, id, new Date()));
    forgetToken(this.store, t);
    return apiTokenView(revoked ?? t);
  }
}
