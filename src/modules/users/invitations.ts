import type { MailLog } from './mailer.ts';
import { ApiError, notFound } from '../../app/errors.ts';
import { randomToken } from '../../app/ids.ts';
import type { ListQuery } from '../../app/schemas.ts';
import { sha256Hex } from '../../app/secrets.ts';
import { isUniqueViolation } from '../../db/helpers.ts';
import { listPage } from '../../db/pagination.ts';
import type { Row } from '../../db/schema.ts';
import { ROLE_NAMES } from '../access/permissions.ts';
import type { Principal } from '../access/principal.ts';
import { findTeam } from '../teams/repo.ts';
import { baseUrlOf, TOKEN_LENGTH, type UsersDeps } from './deps.ts';
import type { LoggedIn } from './login.ts';
import { checkAttempt, LOCK_SECONDS, MAX_FAILED_LOGINS } from './login.ts';
import { assertAffiliateIds, assertCanGrant, type AssignableRole } from './members.ts';
import { checkPasswordPolicy, hashPassword, verifyPassword } from './passwords.ts';
import { accessOn } from './principals.ts';
import * as repo from './repo.ts';
import { openSession, type RequestMeta } from './sessions.ts';
import { totpCodeAccepted } from './totp.ts';
import { invitationStatus, invitationView } from './views.ts';

export const INVITATION_TTL_DAYS = 7;
const INVITATION_PREFIX = 'csi_';

export interface InviteInput {
  email: string;
  role: AssignableRole;
  affiliate_ids?: string[] | undefined;
}

/**
 * Invites an address with a role the inviter holds every permission of. A second invitation to
 * the same address replaces the open one. The link (a random token, stored hashed) is mailed
 * after commit; `mail_sent` says whether the transport took it.
 */
export async function invite(d: UsersDeps, principal: Principal, input: InviteInput, log?: MailLog) {
  assertCanGrant(principal, input.role);
  assertAffiliateIds(input.role, input.affiliate_ids, 'An Affiliate invitation');
  const email = input.email.trim();
  const token = INVITATION_PREFIX + randomToken(TOKEN_LENGTH);
  const { invitation, teamName } = await createInvitation(d, principal, input, email, token);
  const base = baseUrlOf(d.config);
  const mailSent = await d.mailer.send(
    {
      to: email,
      subject: `You are invited to ${teamName} on Checkstand`,
      text: [
        `${principal.label} invited you to join ${teamName} on Checkstand as ${ROLE_NAMES[input.role]}.`,
        '',
        `Accept the invitation: ${base}/dashboard/accept-invitation?token=${token}`,
        '',
        `(Or POST ${base}/v1/invitations/accept with {"token": "${token}", "name": "…", "password": "…"}.)`,
        `The invitation expires on ${invitation.expires_at.toUTCString()}. If you did not expect it, ignore this mail.`,
      ].join('\n'),
    },
    log,
  );
  return { ...invitationView(invitation), mail_sent: mailSent };
}

/**
 * Replaces the address's open invitation with a new one. Two invitations to one address at the same
 * time: the second meets the first's row under the `invitations_open` unique index and answers 409.
 */
async function createInvitation(d: UsersDeps, principal: Principal, input: InviteInput, email: string, token: string) {
  try {
    return await d.store.transaction(async (trx) => {
      const existing = await repo.findUserByEmail(trx, email);
      if (existing && (await repo.findMembership(trx, principal.teamId, existing.id))) {
        throw new ApiError('member_exists', `${email} is already a member of this team.`);
      }
      await repo.revokeOpenInvitations(trx, principal.teamId, email);
      const invitation = await repo.insertInvitation(trx, {
        id: `inv_${randomToken()}`,
        team_id: principal.teamId,
        email,
        role: input.role,
        affiliate_ids: [...new Set(input.affiliate_ids ?? [])],
        token_hash: sha256Hex(token),
        invited_by: principal.actorId,
        expires_at: new Date(Date.now() + INVITATION_TTL_DAYS * 86_400_000),
      });
      return { invitation, teamName: (await findTeam(trx, principal.teamId))?.name ?? principal.teamId };
    });
  } catch (err) {
    if (isUniqueViolation(err, 'invitations_open')) {
      throw new ApiError('conflict', `Another invitation to ${email} was created at the same time: it is the open one now (GET /v1/invitations); invite again to replace it.`);
    }
    throw err;
  }
}

export async function listInvitations(d: UsersDeps, teamId: string, q: ListQuery) {
  return d.store.run((db) => listPage(db, 'invitations', teamId, q, (after) => repo.listInvitations(db, teamId, after, q.limit), invitationView));
}

export async function revokeInvitation(d: UsersDeps, teamId: string, id: string) {
  const closed = await d.store.run((db) => repo.closeInvitation(db, teamId, id, 'revoked_at'));
  if (closed) return invitationView(closed);
  const inv = await d.store.run((db) => repo.findInvitation(db, teamId, id));
  if (!inv) throw notFound('Invitation');
  throw new ApiError('conflict', `This invitation is already ${invitationStatus(inv)}.`);
}

export interface AcceptInput {
  token: string;
  name?: string | undefined;
  password: string;
  totp_code?: string | undefined;
}

function openOrGone(inv: Row<'invitations'> | undefined): Row<'invitations'> {
  if (!inv) throw notFound('Invitation');
  const status = invitationStatus(inv);
  if (status !== 'pending') throw new ApiError('invitation_expired', `This invitation is ${status}: ask for a new one.`, { data: { status } });
  return inv;
}

/**
 * The invitee sets a name and password (a new account), or proves an existing account with its
 * password (and TOTP code): either way they join the team with the invited role and are logged in.
 * One transaction re-checks the invitation under its row lock: accepted once, never twice.
 */
export async function acceptInvitation(d: UsersDeps, input: AcceptInput, meta: RequestMeta): Promise<LoggedIn> {
  const hash = sha256Hex(input.token);
  const inv = openOrGone(await d.store.run((db) => repo.lockInvitationByHash(db, hash)));
  const existing = await d.store.run((db) => repo.findUserByEmail(db, inv.email));
  let passwordHash: string | null = null;
  if (existing) {
    await checkAttempt(d, existing.id);
    const good =
      (await verifyPassword(input.password, existing.password_hash)) &&
      (!existing.totp_enabled_at || (await d.store.run((db) => totpCodeAccepted(db, d.secrets, existing, input.totp_code))));
    if (good) await d.store.run((db) => repo.clearLoginFailures(db, existing.id));
    else {
      await d.store.run((db) => repo.settleLoginFailure(db, existing.id, MAX_FAILED_LOGINS, LOCK_SECONDS));
      throw new ApiError('invalid_credentials', `${inv.email} already has a Checkstand account: enter its password${existing.totp_enabled_at ? ' and a two-factor code (totp_code)' : ''} to join the team.`);
    }
  } else {
    checkPasswordPolicy(input.password, inv.email);
    passwordHash = await hashPassword(input.password);
  }
  try {
    return await d.store.transaction(async (trx) => {
      const locked = openOrGone(await repo.lockInvitationByHash(trx, hash));
      const user =
        existing ??
        (await repo.insertUser(trx, { id: `usr_${randomToken()}`, email: locked.email, name: input.name?.trim() ?? '', password_hash: passwordHash! }));
      if (await repo.findMembership(trx, locked.team_id, user.id)) throw new ApiError('member_exists', `${locked.email} is already a member of this team.`);
      await repo.insertMembership(trx, { id: `mem_${randomToken()}`, team_id: locked.team_id, user_id: user.id, role: locked.role, affiliate_ids: locked.affiliate_ids });
      await repo.closeInvitation(trx, locked.team_id, locked.id, 'accepted_at');
      const principal = await accessOn(trx, user, locked.team_id, null);
      const opened = await openSession(trx, user.id, locked.team_id, meta);
      return { ...opened, user, principal: { ...principal!, sessionId: opened.session.id } };
    });
  } catch (err) {
    if (isUniqueViolation(err, 'users_email')) throw new ApiError('email_taken', `An account for ${inv.email} was created at the same time: log in and accept again.`);
    throw err;
  }
}
