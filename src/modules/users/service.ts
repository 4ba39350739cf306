import type { FastifyReply, FastifyRequest } from 'fastify';
import type { MailLog } from './mailer.ts';
import { ApiError } from '../../app/errors.ts';
import type { ListQuery } from '../../app/schemas.ts';
import type { Principal } from '../access/principal.ts';
import { findTeam } from '../teams/repo.ts';
import { setSessionCookie, sessionSecretOf } from './cookies.ts';
import type { UsersDeps } from './deps.ts';
import { type AcceptInput, acceptInvitation, invite, type InviteInput, listInvitations, revokeInvitation } from './invitations.ts';
import { login, type LoginInput, logout, switchTeam } from './login.ts';
import { type AssignableRole, getMember, listMembers, removeMember, transferOwnership, updateMember } from './members.ts';
import { confirmPasswordReset, requestPasswordReset } from './password-reset.ts';
import { reachableTeams } from './principals.ts';
import * as repo from './repo.ts';
import { type RequestMeta, resolveSession } from './sessions.ts';
import { confirmTotp, disableTotp, startTotp } from './totp.ts';
import { type CreateUserInput, createUser } from './bootstrap.ts';
import { sessionView } from './views.ts';

/** Team members, their browser sessions, invitations, password resets and two-factor (issue 16, item 1). */
export class UsersService {
  constructor(readonly deps: UsersDeps) {}

  /** True when the request carries a session cookie (the API hook then authenticates by it). */
  hasSession(req: FastifyRequest): boolean {
    return sessionSecretOf(req) !== undefined;
  }

  /**
   * The API hook's session branch: the cookie → a Principal (a member's role, or a provider
   * grant's permissions), or 401. Slides the cookie's Max-Age when the session was renewed.
   */
  async authenticateSession(req: FastifyRequest, reply: FastifyReply): Promise<Principal> {
    const secret = sessionSecretOf(req);
    if (!secret) throw new ApiError('unauthenticated');
    const r = await resolveSession(this.deps, secret);
    if (r.slid) setSessionCookie(req, reply, secret, r.session, this.deps.config.cookieSecure);
    return r.principal;
  }

  login(input: LoginInput, meta: RequestMeta) {
    return login(this.deps, input, meta);
  }

  logout(principal: Principal) {
    return logout(this.deps, requireSession(principal));
  }

  switchTeam(principal: Principal, teamId: string) {
    return switchTeam(this.deps, requireSession(principal), principal.userId!, teamId);
  }

  /** Who am I, for a session or an API token. */
  async whoAmI(principal: Principal, csrfToken: string | null) {
    return this.deps.store.run(async (db) => {
      const user = principal.userId ? ((await repo.findUser(db, principal.userId)) ?? null) : null;
      const session = principal.sessionId ? await repo.findSessionById(db, principal.sessionId) : undefined;
      // An API token acts on its own team only: no teams to switch to.
      const teams = user ? await reachableTeams(db, user.id) : [];
      return sessionView(principal, { user, team: await findTeam(db, principal.teamId), teams, csrfToken, expiresAt: session?.expires_at ?? null });
    });
  }

  createUser(input: CreateUserInput) {
    return createUser(this.deps, input);
  }

  // ---- members

  listMembers(teamId: string) {
    return listMembers(this.deps, teamId);
  }
  getMember(teamId: string, userId: string) {
    return getMember(this.deps, teamId, userId);
  }
  updateMember(principal: Principal, userId: string, patch: { role?: AssignableRole | undefined; affiliate_ids?: string[] | undefined }) {
    return updateMember(this.deps, principal, userId, patch);
  }
  removeMember(principal: Principal, userId: string) {
    return removeMember(this.deps, principal, userId);
  }
  transferOwnership(principal: Principal, userId: string) {
    return transferOwnership(this.deps, principal, userId);
  }

  // ---- invitations

  invite(principal: Principal, input: InviteInput, log?: MailLog) {
    return invite(this.deps, principal, input, log);
  }
  listInvitations(teamId: string, q: ListQuery) {
    return listInvitations(this.deps, teamId, q);
  }
  revokeInvitation(teamId: string, id: string) {
    return revokeInvitation(this.deps, teamId, id);
  }
  acceptInvitation(input: AcceptInput, meta: RequestMeta) {
    return acceptInvitation(this.deps, input, meta);
  }

  // ---- password reset

  requestPasswordReset(email: string, log?: MailLog) {
    return requestPasswordReset(this.deps, email, log);
  }
  confirmPasswordReset(token: string, password: string) {
    return confirmPasswordReset(this.deps, token, password);
  }

  // ---- two-factor

  startTotp(principal: Principal) {
    requireSession(principal);
    return startTotp(this.deps, principal.userId!);
  }
  confirmTotp(principal: Principal, code: string) {
    requireSession(principal);
    return confirmTotp(this.deps, principal.userId!, code);
  }
  disableTotp(principal: Principal, code: string) {
    requireSession(principal);
    return disableTotp(this.deps, principal.userId!, code);
  }
}

/** Routes about the browser session itself: an API token has none. */
function requireSession(principal: Principal): string {
  if (!principal.sessionId || !principal.userId) throw new ApiError('session_required');
  return principal.sessionId;
}
