import { iso } from '../../app/schemas.ts';
import type { Row } from '../../db/schema.ts';
import { type Role, ROLE_NAMES } from '../access/permissions.ts';
import type { Principal } from '../access/principal.ts';
import type { ReachableTeam } from './principals.ts';
import type { MemberRow } from './repo.ts';

export function userView(u: Row<'users'>) {
  return { object: 'user' as const, id: u.id, email: u.email, name: u.name, two_factor: u.totp_enabled_at !== null, created_at: iso(u.created_at as Date)! };
}

export function memberView(m: MemberRow) {
  return {
    object: 'member' as const,
    id: m.user_id,
    email: m.email,
    name: m.name,
    role: m.role as Role,
    role_name: ROLE_NAMES[m.role as Role],
    affiliate_ids: m.affiliate_ids,
    two_factor: m.totp_enabled_at !== null,
    joined_at: iso(m.created_at as Date)!,
  };
}

export function invitationStatus(i: Row<'invitations'>, now = Date.now()): 'pending' | 'accepted' | 'revoked' | 'expired' {
  if (i.accepted_at) return 'accepted';
  if (i.revoked_at) return 'revoked';
  return i.expires_at.getTime() <= now ? 'expired' : 'pending';
}

export function invitationView(i: Row<'invitations'>) {
  return {
    object: 'invitation' as const,
    id: i.id,
    email: i.email,
    role: i.role as Role,
    role_name: ROLE_NAMES[i.role as Role],
    affiliate_ids: i.affiliate_ids,
    status: invitationStatus(i),
    invited_by: i.invited_by,
    created_at: iso(i.created_at as Date)!,
    expires_at: iso(i.expires_at)!,
    accepted_at: iso(i.accepted_at),
    revoked_at: iso(i.revoked_at),
  };
}

/** Who am I: the caller (a session's user, or an API token), the team it acts on, and what it may do there. */
export function sessionView(
  p: Principal,
  extra: { user: Row<'users'> | null; team: Row<'teams'> | undefined; teams: ReachableTeam[]; csrfToken: string | null; expiresAt: Date | null },
) {
  const team = extra.team ? { name: extra.team.name, kind: extra.team.kind } : undefined;
  return {
    object: 'session' as const,
    kind: p.kind,
    user: extra.user ? userView(extra.user) : null,
    team: { id: p.teamId, name: team?.name ?? null, kind: team?.kind ?? null },
    role: p.role,
    provider_id: p.providerId,
    permissions: [...p.permissions].sort(),
    affiliate_ids: p.affiliateIds ? [...p.affiliateIds] : null,
    teams: extra.teams,
    csrf_token: extra.csrfToken,
    expires_at: iso(extra.expiresAt),
  };
}
