import type { Executor } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import { isAffiliateScoped, type ProviderKind, type Role, ROLE_PERMISSIONS } from '../access/permissions.ts';
import { providerPrincipal as grantPrincipal } from '../access/providers.ts';
import type { Principal } from '../access/principal.ts';
import { findTeam } from '../teams/repo.ts';
import * as repo from './repo.ts';

/** A member acting on their own team: their role's permissions (the Affiliate role sees its affiliate ids only). */
export function memberPrincipal(user: Row<'users'>, m: Row<'memberships'>, sessionId: string | null): Principal {
  const role = m.role as Role;
  return {
    teamId: m.team_id,
    kind: 'user',
    actorId: user.id,
    label: user.email,
    tokenId: null,
    userId: user.id,
    sessionId,
    providerId: null,
    role,
    permissions: new Set(ROLE_PERMISSIONS[role]),
    affiliateIds: isAffiliateScoped(role) ? m.affiliate_ids : null,
  };
}

/** The provider organisations (teams of kind 'provider') the user is a member of. */
async function providerTeamsOf(db: Executor, memberships: Row<'memberships'>[]): Promise<string[]> {
  const teams = await Promise.all(memberships.map((m) => findTeam(db, m.team_id)));
  return teams.filter((t) => t?.kind === 'provider').map((t) => t!.id);
}

/**
 * What the user may do on `teamId`, decided afresh on every request: as a member (their role), or
 * through a live grant the merchant team gave one of the user's provider organisations. null: no
 * access (never a member, removed, or the grant revoked).
 */
export async function accessOn(db: Executor, user: Row<'users'>, teamId: string, sessionId: string | null): Promise<Principal | null> {
  const own = await repo.findMembership(db, teamId, user.id);
  if (own) return memberPrincipal(user, own, sessionId);
  const providers = await providerTeamsOf(db, await repo.membershipsOfUser(db, user.id));
  const [grant] = await repo.liveGrantsOn(db, teamId, providers);
  if (!grant) return null;
  const team = await findTeam(db, teamId);
  return team?.kind === 'merchant' ? grantPrincipal(grant, user, sessionId) : null;
}

export interface ReachableTeam {
  team_id: string;
  name: string;
  kind: 'merchant' | 'provider';
  /** 'member': the user's own membership; 'provider': through a provider organisation's grant. */
  via: 'member' | 'provider';
  role: Role | ProviderKind;
  provider_id: string | null;
}

/** Every team the user can act on: their memberships, then the merchant teams that granted their provider organisations access. */
export async function reachableTeams(db: Executor, userId: string): Promise<ReachableTeam[]> {
  const memberships = await repo.membershipsOfUser(db, userId);
  const out: ReachableTeam[] = [];
  for (const m of memberships) {
    const t = await findTeam(db, m.team_id);
    if (t) out.push({ team_id: t.id, name: t.name, kind: t.kind, via: 'member', role: m.role as Role, provider_id: null });
  }
  const providers = out.filter((t) => t.kind === 'provider').map((t) => t.team_id);
  for (const g of await repo.liveGrantsOf(db, providers)) {
    if (out.some((t) => t.team_id === g.team_id)) continue;
    const t = await findTeam(db, g.team_id);
    if (t?.kind === 'merchant') out.push({ team_id: t.id, name: t.name, kind: t.kind, via: 'provider', role: g.kind as ProviderKind, provider_id: g.provider_id });
  }
  return out;
}
