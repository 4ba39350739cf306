import { ApiError, notFound } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import type { Executor, Store } from '../../db/database.ts';
import { listPage, type PageRequest } from '../../db/pagination.ts';
import type { Row } from '../../db/schema.ts';
import { type Permission, PROVIDER_PERMISSIONS, type ProviderKind } from './permissions.ts';
import type { Principal } from './principal.ts';
import * as repo from './repo.ts';

/** What a grant lets the provider's users do: the kind's base set plus the optional ones the merchant granted. */
export function grantPermissions(grant: Pick<Row<'provider_grants'>, 'kind' | 'permissions'>): Permission[] {
  const rules = PROVIDER_PERMISSIONS[grant.kind as ProviderKind];
  const extra = grant.permissions.filter((p): p is Permission => (rules.optional as readonly string[]).includes(p));
  return [...new Set([...rules.base, ...extra])];
}

/** A provider organisation's user acting on a merchant team through its grant. */
export function providerPrincipal(grant: Row<'provider_grants'>, user: { id: string; email: string }, sessionId: string | null): Principal {
  return {
    teamId: grant.team_id,
    kind: 'provider_user',
    actorId: user.id,
    label: user.email,
    tokenId: null,
    userId: user.id,
    sessionId,
    providerId: grant.provider_id,
    role: grant.kind as ProviderKind,
    permissions: new Set(grantPermissions(grant)),
    affiliateIds: grant.kind === 'affiliate' ? grant.affiliate_ids : null,
  };
}

export function grantView(g: Row<'provider_grants'>) {
  return {
    object: 'provider_grant' as const,
    id: g.id,
    provider_id: g.provider_id,
    kind: g.kind as ProviderKind,
    permissions: grantPermissions(g),
    optional_permissions: g.permissions,
    affiliate_ids: g.affiliate_ids,
    created_at: g.created_at.toISOString(),
    updated_at: g.updated_at.toISOString(),
  };
}

export interface GrantInput {
  provider_id: string;
  kind: ProviderKind;
  permissions?: string[] | undefined;
  affiliate_ids?: string[] | undefined;
}

function checkOptional(kind: ProviderKind, permissions: string[] | undefined): string[] {
  const allowed = PROVIDER_PERMISSIONS[kind].optional as readonly string[];
  const bad = (permissions ?? []).filter((p) => !allowed.includes(p));
  if (bad.length > 0) {
    const which = allowed.length ? `only ${allowed.join(', ')} can be granted` : 'nothing can be added';
    throw new ApiError('validation_failed', `A ${kind} provider cannot be granted ${bad.join(', ')}: ${which}.`, {
      fields: [{ path: 'permissions', message: `${which} to a ${kind} provider` }],
    });
  }
  return [...new Set(permissions ?? [])];
}

/**
 * Least privilege, as for API tokens: nobody gives a provider a permission they do not hold
 * themselves (403 permission_denied naming the missing ones; nothing written).
 */
function refuseEscalation(caller: Principal, granted: readonly Permission[]): void {
  const missing = granted.filter((p) => !caller.permissions.has(p));
  if (missing.length > 0) {
    throw new ApiError('permission_denied', `A provider cannot be given permissions you do not hold: ${missing.join(', ')}.`, { data: { missing } });
  }
}

/**
 * Customer Service and Affiliate Providers (spec §5.6): other organisations (teams of kind
 * 'provider') whose users act on this team with what the merchant granted. Providers never get
 * billing, settings, credentials, tokens or users: the catalogue's provider rules make that so.
 */
export class ProvidersService {
  constructor(
    private readonly store: Store,
    /** The teams module's lookup: is this id a provider organisation? */
    private readonly teamKind: (db: Executor, teamId: string) => Promise<'merchant' | 'provider' | undefined>,
  ) {}

  /** For session authentication: the live grant a provider has on a team. */
  async liveGrant(db: Executor, teamId: string, providerId: string): Promise<Row<'provider_grants'> | undefined> {
    return repo.liveGrant(db, teamId, providerId);
  }

  /** For the team switcher: the merchant teams a provider organisation may act on. */
  async grantsOfProvider(db: Executor, providerId: string): Promise<Row<'provider_grants'>[]> {
    return repo.grantsOfProvider(db, providerId);
  }

  async grant(caller: Principal, input: GrantInput) {
    const teamId = caller.teamId;
    const permissions = checkOptional(input.kind, input.permissions);
    refuseEscalation(caller, grantPermissions({ kind: input.kind, permissions }));
    if (input.kind !== 'affiliate' && input.affiliate_ids?.length) {
      throw new ApiError('validation_failed', 'affiliate_ids: only an affiliate provider is scoped to affiliate ids.', {
        fields: [{ path: 'affiliate_ids', message: 'only for kind affiliate' }],
      });
    }
    if (input.provider_id === teamId) throw new ApiError('validation_failed', 'provider_id: a team cannot be its own provider.', { fields: [{ path: 'provider_id', message: 'is this team' }] });
    return this.store.transaction(async (db) => {
      if ((await this.teamKind(db, input.provider_id)) !== 'provider') throw notFound(`Provider organisation ${input.provider_id}`);
      if (await repo.liveGrant(db, teamId, input.provider_id)) {
        throw new ApiError('conflict', `Provider ${input.provider_id} already has access to this team: change or revoke its grant.`);
      }
      const g = await repo.insertGrant(db, {
        id: newId('grant'),
        team_id: teamId,
        provider_id: input.provider_id,
        kind: input.kind,
        permissions,
        affiliate_ids: input.affiliate_ids ?? [],
      });
      return grantView(g);
    });
  }

  async list(teamId: string, q: PageRequest) {
    return this.store.run((db) => listPage(db, 'provider_grants', teamId, q, (after) => repo.listGrants(db, teamId, after, q.limit), grantView));
  }

  async get(teamId: string, id: string) {
    const g = await this.store.run((db) => repo.findGrant(db, teamId, id));
    if (!g || g.revoked_at) throw notFound(`Provider grant ${id}`);
    return grantView(g);
  }

  async update(caller: Principal, id: string, patch: { permissions?: string[] | undefined; affiliate_ids?: string[] | undefined }) {
    const teamId = caller.teamId;
    return this.store.transaction(async (db) => {
      const g = await repo.findGrant(db, teamId, id);
      if (!g || g.revoked_at) throw notFound(`Provider grant ${id}`);
      const kind = g.kind as ProviderKind;
      const next: { permissions?: string[]; affiliate_ids?: string[] } = {};
      if (patch.permissions !== undefined) next.permissions = checkOptional(kind, patch.permissions);
      if (patch.affiliate_ids !== undefined) {
        if (kind !== 'affiliate') throw new ApiError('validation_failed', 'affiliate_ids: only an affiliate provider is scoped to affiliate ids.', { fields: [{ path: 'affiliate_ids', message: 'only for kind affiliate' }] });
        next.affiliate_ids = patch.affiliate_ids;
      }
      // What the provider can do after the change, all of which the caller must hold.
      refuseEscalation(caller, grantPermissions({ kind, permissions: next.permissions ?? g.permissions }));
      const updated = Object.keys(next).length ? await repo.updateGrant(db, teamId, id, next) : g;
      return grantView(updated ?? g);
    });
  }

  async revoke(teamId: string, id: string) {
    const g = await this.store.run((db) => repo.updateGrant(db, teamId, id, { revoked_at: new Date() }));
    if (!g) throw notFound(`Provider grant ${id}`);
    return { ...grantView(g), revoked_at: g.revoked_at?.toISOString() ?? null };
  }
}
