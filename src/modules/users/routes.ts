import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../app/context.ts';
import { Envelope, ListEnvelope, ok } from '../../app/envelope.ts';
import { ApiError } from '../../app/errors.ts';
import { type Http, principalOf, teamOf } from '../../app/http.ts';
import { ListQuery } from '../../app/schemas.ts';
import { clearSessionCookies, csrfTokenFor, requestMeta, setSessionCookie } from './cookies.ts';
import {
  AcceptInvitation,
  ConfirmPasswordReset,
  CreateInvitation,
  Invitation,
  InvitationIdParams,
  Login,
  Member,
  RequestPasswordReset,
  Session,
  SwitchTeam,
  TotpCodeBody,
  TotpEnrolment,
  UpdateMember,
  UserIdParams,
} from './schemas.ts';

const Done = Envelope(z.null());

/** 429 login_throttled carries Retry-After. */
async function withRetryAfter<T>(reply: FastifyReply, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ApiError && err.code === 'login_throttled') reply.header('retry-after', String(err.data?.retry_after_seconds ?? 900));
    throw err;
  }
}

/** Team members, browser sessions, invitations, password resets, two-factor. */
export function registerUserRoutes(app: Http, ctx: AppContext): void {
  const users = ctx.services.users;
  const secure = ctx.config.cookieSecure;
  const tags = ['members'];

  // ---- sessions

  app.post(
    '/v1/sessions',
    {
      config: { permission: 'public' },
      schema: {
        tags,
        summary: 'Log in',
        description:
          'E-mail and password (and `totp_code` when two-factor is on) → the `checkstand_session` cookie (HttpOnly, SameSite=Lax, Secure over HTTPS; 12 h idle, 7 days at most) and a CSRF token for the `x-csrf-token` header. ' +
          'A wrong e-mail or password is the same 401 `invalid_credentials`; after 5 failures the account is refused for 15 minutes (429 `login_throttled`).',
        body: Login,
        errors: ['invalid_credentials', 'totp_required', 'totp_invalid', 'login_throttled', 'not_found', 'permission_denied'],
        response: { 201: Envelope(Session) },
      },
    },
    async (req, reply) => {
      const r = await withRetryAfter(reply, () => users.login(req.body, requestMeta(req)));
      setSessionCookie(req, reply, r.secret, r.session, secure);
      req.team = r.principal;
      return reply.code(201).send(ok(await users.whoAmI(r.principal, csrfTokenFor(req, reply, r.session.id, secure)), 'Logged in.'));
    },
  );
  app.get(
    '/v1/session',
    { config: { permission: 'team:view' }, schema: { tags, summary: 'Who am I: the user (or token), the active team, the role and permissions', response: { 200: Envelope(Session) } } },
    async (req, reply) => {
      const p = principalOf(req);
      return ok(await users.whoAmI(p, p.sessionId ? csrfTokenFor(req, reply, p.sessionId, secure) : null));
    },
  );
  app.delete('/v1/session', { config: { permission: 'team:view' }, schema: { tags, summary: 'Log out', errors: ['session_required'], response: { 200: Done } } }, async (req, reply) => {
    await users.logout(principalOf(req));
    clearSessionCookies(req, reply, secure);
    return ok(null, 'Logged out.');
  });
  app.post(
    '/v1/session/team',
    {
      config: { permission: 'team:view' },
      schema: { tags, summary: 'Switch the active team', description: 'To another team of the user, or a merchant team that granted the user\'s provider organisation access.', body: SwitchTeam, errors: ['session_required', 'not_found'], response: { 200: Envelope(Session) } },
    },
    async (req, reply) => {
      const p = await users.switchTeam(principalOf(req), req.body.team_id);
      req.team = p;
      return ok(await users.whoAmI(p, csrfTokenFor(req, reply, p.sessionId!, secure)), 'Team switched.');
    },
  );

  // ---- two-factor (TOTP)

  app.post(
    '/v1/session/totp',
    { config: { permission: 'team:view' }, schema: { tags, summary: 'Start two-factor enrolment: the secret and its otpauth URI', errors: ['session_required', 'conflict'], response: { 201: Envelope(TotpEnrolment) } } },
    async (req, reply) => reply.code(201).send(ok(await users.startTotp(principalOf(req)), 'Scan the URI with an authenticator app, then confirm with a code.')),
  );
  app.post(
    '/v1/session/totp/confirm',
    { config: { permission: 'team:view', audit: 'user.totp_enabled' }, schema: { tags, summary: 'Turn two-factor on with a code of the new secret', body: TotpCodeBody, errors: ['session_required', 'conflict'], response: { 200: Done } } },
    async (req) => {
      await users.confirmTotp(principalOf(req), req.body.code);
      return ok(null, 'Two-factor authentication is on: logging in now needs a code.');
    },
  );
  app.delete(
    '/v1/session/totp',
    { config: { permission: 'team:view', audit: 'user.totp_disabled' }, schema: { tags, summary: 'Turn two-factor off (with a current code)', body: TotpCodeBody, errors: ['session_required', 'conflict'], response: { 200: Done } } },
    async (req) => {
      await users.disableTotp(principalOf(req), req.body.code);
      return ok(null, 'Two-factor authentication is off.');
    },
  );

  // ---- members

  app.get('/v1/members', { config: { permission: 'users:view' }, schema: { tags, summary: "The team's members", response: { 200: ListEnvelope(Member) } } }, async (req) => ({
    success: true as const,
    message: 'OK',
    data: await users.listMembers(teamOf(req)),
    has_more: false,
  }));
  app.get(
    '/v1/members/:id',
    { config: { permission: 'users:view' }, schema: { tags, summary: 'Retrieve a member', params: UserIdParams, response: { 200: Envelope(Member) } } },
    async (req) => ok(await users.getMember(teamOf(req), req.params.id)),
  );
  app.patch(
    '/v1/members/:id',
    {
      config: { permission: 'users:manage', audit: 'member.role_changed' },
      schema: { tags, summary: "Change a member's role or affiliate ids", description: 'Only to a role whose every permission the caller holds; the Team Owner\'s role changes only by a transfer (409 owner_required).', params: UserIdParams, body: UpdateMember, errors: ['owner_required'], response: { 200: Envelope(Member) } },
    },
    async (req) => ok(await users.updateMember(principalOf(req), req.params.id, req.body), 'Member updated.'),
  );
  app.delete(
    '/v1/members/:id',
    { config: { permission: 'users:manage', audit: 'member.removed' }, schema: { tags, summary: 'Remove a member from the team (not the Team Owner)', params: UserIdParams, errors: ['owner_required'], response: { 200: Envelope(Member) } } },
    async (req) => ok(await users.removeMember(principalOf(req), req.params.id), 'Member removed.'),
  );
  app.post(
    '/v1/members/:id/transfer-ownership',
    {
      config: { permission: 'users:manage', audit: 'ownership.transferred' },
      schema: { tags, summary: 'Make this member the Team Owner (Team Owner only); the old owner becomes an Account Admin', params: UserIdParams, errors: ['conflict'], response: { 200: Envelope(Member) } },
    },
    async (req) => ok(await users.transferOwnership(principalOf(req), req.params.id), 'Ownership transferred.'),
  );

  // ---- invitations

  app.post(
    '/v1/invitations',
    {
      config: { permission: 'users:manage', audit: 'invitation.created' },
      schema: { tags, summary: 'Invite someone by e-mail', description: 'Mails a link valid 7 days; a new invitation to the same address replaces the open one.', body: CreateInvitation, errors: ['member_exists'], response: { 201: Envelope(Invitation) } },
    },
    async (req, reply) => reply.code(201).send(ok(await users.invite(principalOf(req), req.body, req.log), 'Invitation sent.')),
  );
  app.get(
    '/v1/invitations',
    { config: { permission: 'users:view' }, schema: { tags, summary: 'Invitations, newest first', querystring: ListQuery, response: { 200: ListEnvelope(Invitation) } } },
    async (req) => {
      const page = await users.listInvitations(teamOf(req), req.query);
      return { success: true as const, message: 'OK', data: page.items, has_more: page.has_more };
    },
  );
  app.delete(
    '/v1/invitations/:id',
    { config: { permission: 'users:manage', audit: 'invitation.revoked' }, schema: { tags, summary: 'Revoke an open invitation', params: InvitationIdParams, errors: ['conflict'], response: { 200: Envelope(Invitation) } } },
    async (req) => ok(await users.revokeInvitation(teamOf(req), req.params.id), 'Invitation revoked.'),
  );
  app.post(
    '/v1/invitations/accept',
    {
      config: { permission: 'public', audit: 'invitation.accepted' },
      schema: { tags, summary: 'Accept an invitation and log in', description: 'A new account sets its name and password; an existing account gives its password (and `totp_code`). Used or expired: 410 invitation_expired.', body: AcceptInvitation,
        errors: ['not_found', 'invitation_expired', 'invalid_credentials', 'totp_invalid', 'login_throttled', 'weak_password', 'email_taken', 'member_exists'],
        response: { 201: Envelope(Session) } },
    },
    async (req, reply) => {
      const r = await withRetryAfter(reply, () => users.acceptInvitation(req.body, requestMeta(req)));
      setSessionCookie(req, reply, r.secret, r.session, secure);
      req.team = r.principal;
      return reply.code(201).send(ok(await users.whoAmI(r.principal, csrfTokenFor(req, reply, r.session.id, secure)), 'Welcome to the team.'));
    },
  );

  // ---- password reset

  app.post(
    '/v1/password-resets',
    { config: { permission: 'public' }, schema: { tags, summary: 'Mail a password reset link', description: 'Always 202, whether the address has an account or not.', body: RequestPasswordReset, response: { 202: Done } } },
    async (req, reply) => {
      users.requestPasswordReset(req.body.email, req.log);
      return reply.code(202).send(ok(null, 'If an account uses this address, a reset link is on its way.'));
    },
  );
  app.post(
    '/v1/password-resets/confirm',
    { config: { permission: 'public' }, schema: { tags, summary: 'Set a new password with the link\'s token (logs out every session)', body: ConfirmPasswordReset, errors: ['not_found', 'reset_expired', 'weak_password'], response: { 200: Envelope(z.object({ sessions_revoked: z.number() })) } } },
    async (req) => ok(await users.confirmPasswordReset(req.body.token, req.body.password), 'Password changed: log in with the new one.'),
  );
}
