import { ApiError, notFound } from '../../app/errors.ts';
import { isUniqueViolation } from '../../db/helpers.ts';
import { type Permission, type Role, ROLE_NAMES, ROLE_PERMISSIONS } from '../access/permissions.ts';
import type { Principal } from '../access/principal.ts';
import type { UsersDeps } from './deps.ts';
import * as repo from './repo.ts';
import { memberView } from './views.ts';

export type AssignableRole = Exclude<Role, 'owner'>;

/**
 * No self-escalation: a caller can give (or take away) a role only when it holds every
 * permission of that role itself; 403 permission_denied naming what it lacks.
 */
export function assertCanGrant(principal: Principal, role: Role, verb = 'grant'): void {
  const missing = ROLE_PERMISSIONS[role].filter((p: Permission) => !principal.permissions.has(p));
  if (missing.length > 0) {
    throw new ApiError('permission_denied', `You cannot ${verb} the ${ROLE_NAMES[role]} role: it has permissions you do not hold (${missing.join(', ')}).`, {
      data: { permissions: missing },
    });
  }
}

/** An Affiliate sees only its affiliate ids: without any it would see nothing (422, as for an affiliate API token). */
export function assertAffiliateIds(role: Role, affiliateIds: readonly string[] | undefined, what: string): void {
  if (role === 'affiliate' && !affiliateIds?.length) {
    throw new ApiError('validation_failed', `${what} needs the affiliate ids the member may see (affiliate_ids).`, {
      fields: [{ path: 'affiliate_ids', message: 'required for role affiliate' }],
    });
  }
}

const ownerRequired = () =>
  new ApiError('owner_required', "A team always has one Team Owner: the owner cannot be removed or given another role. Transfer ownership first (POST /v1/members/{id}/transfer-ownership).");

export async function listMembers(d: UsersDeps, teamId: string) {
  return (await d.store.run((db) => repo.listMembers(db, teamId))).map(memberView);
}

export async function getMember(d: UsersDeps, teamId: string, userId: string) {
  const m = await d.store.run((db) => repo.findMember(db, teamId, userId));
  if (!m) throw notFound('Member');
  return memberView(m);
}

/** Role and affiliate ids, under the membership's row lock; the owner's role only changes by a transfer. */
export async function updateMember(d: UsersDeps, principal: Principal, userId: string, patch: { role?: AssignableRole | undefined; affiliate_ids?: string[] | undefined }) {
  return d.store.transaction(async (trx) => {
    const m = await repo.lockMembership(trx, principal.teamId, userId);
    if (!m) throw notFound('Member');
    if (m.role === 'owner') throw ownerRequired();
    assertCanGrant(principal, m.role as Role, 'change');
    if (patch.role) assertCanGrant(principal, patch.role);
    assertAffiliateIds((patch.role ?? m.role) as Role, patch.affiliate_ids ?? m.affiliate_ids, 'An Affiliate member');
    const set = { ...(patch.role ? { role: patch.role } : {}), ...(patch.affiliate_ids ? { affiliate_ids: [...new Set(patch.affiliate_ids)] } : {}) };
    if (Object.keys(set).length > 0) await repo.updateMembership(trx, principal.teamId, userId, set);
    return memberView((await repo.findMember(trx, principal.teamId, userId))!);
  });
}

/** The member loses access on their next request (sessions re-check membership every time). */
export async function removeMember(d: UsersDeps, principal: Principal, userId: string) {
  return d.store.transaction(async (trx) => {
    const m = await repo.findMember(trx, principal.teamId, userId);
    if (!m) throw notFound('Member');
    if (m.role === 'owner') throw ownerRequired();
    if (userId !== principal.userId) assertCanGrant(principal, m.role as Role, 'remove');
    await repo.deleteMembership(trx, principal.teamId, userId);
    return memberView(m);
  });
}

/**
 * The Team Owner hands ownership to another member, who becomes the owner; the old owner becomes
 * an Account Admin. In one transaction, demotion first: the partial unique index keeps one owner.
 */
export async function transferOwnership(d: UsersDeps, principal: Principal, userId: string) {
  try {
    return await d.store.transaction(async (trx) => {
      // Not found before forbidden: an id from another team (or none) is 404 to every caller, as on
      // every /v1 route; only a member of this team gets the 403 for a caller who is not its owner.
      const target = await repo.lockMembership(trx, principal.teamId, userId);
      if (!target) throw notFound('Member');
      if (principal.role !== 'owner') throw new ApiError('permission_denied', 'Only the Team Owner can transfer ownership.');
      if (target.role === 'owner') throw new ApiError('conflict', 'This member is already the Team Owner.');
      const owner = await repo.findOwner(trx, principal.teamId);
      if (owner) await repo.updateMembership(trx, principal.teamId, owner.user_id, { role: 'account_admin' });
      await repo.updateMembership(trx, principal.teamId, userId, { role: 'owner', affiliate_ids: [] });
      return memberView((await repo.findMember(trx, principal.teamId, userId))!);
    });
  } catch (err) {
    if (isUniqueViolation(err, 'memberships_one_owner')) throw new ApiError('conflict', 'Ownership changed at the same time: retry.');
    throw err;
  }
}
