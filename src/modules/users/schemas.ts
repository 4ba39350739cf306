import { z } from 'zod';
import { Id, Timestamp } from '../../app/schemas.ts';
import { PROVIDER_KINDS, ROLES } from '../access/permissions.ts';
import { MAX_PASSWORD_LENGTH } from './passwords.ts';

export const Email = z
  .string()
  .trim()
  .max(254)
  .regex(/^[^@\s]+@[^@\s]+\.[^@\s]+$/, 'must be an e-mail address');

const Password = z.string().min(1).max(MAX_PASSWORD_LENGTH).describe('At least 10 characters, not the e-mail address, not a common password');
const TotpCode = z.string().trim().regex(/^\d{6}$/, 'must be the 6 digits of the authenticator app').describe('The 6-digit code of the authenticator app');

/** Every role but the Team Owner's, which moves only by a transfer. */
export const AssignableRole = z.enum(['account_admin', 'account_manager', 'support_l1', 'support_l2', 'affiliate']).describe('A predefined role (the README lists their permissions); owner is not assignable: transfer ownership instead');
const AffiliateIds = z.array(z.string().trim().min(1).max(100)).max(100).describe('The Affiliate role sees only these affiliate ids');

export const UserIdParams = z.object({ id: Id('usr') });
export const InvitationIdParams = z.object({ id: Id('inv') });

export const Login = z
  .object({
    email: z.string().trim().min(1).max(254),
    password: z.string().min(1).max(MAX_PASSWORD_LENGTH),
    totp_code: TotpCode.optional(),
    team_id: Id('team').optional().describe('The team to act on (default: the first team of the account)'),
  })
  .strict()
  .meta({ id: 'Login' });

export const SwitchTeam = z.object({ team_id: Id('team') }).strict().meta({ id: 'SwitchTeam' });
export const TotpCodeBody = z.object({ code: TotpCode }).strict().meta({ id: 'TotpCode' });

export const UpdateMember = z.object({ role: AssignableRole.optional(), affiliate_ids: AffiliateIds.optional() }).strict().meta({ id: 'UpdateMember' });

export const CreateInvitation = z
  .object({ email: Email, role: AssignableRole, affiliate_ids: AffiliateIds.optional() })
  .strict()
  .meta({ id: 'CreateInvitation' });

export const AcceptInvitation = z
  .object({
    token: z.string().min(1).max(200),
    name: z.string().trim().max(200).optional(),
    password: Password.describe('A new account: its password (the policy applies). An existing account: its current password'),
    totp_code: TotpCode.optional().describe('An existing account with two-factor on: a current code'),
  })
  .strict()
  .meta({ id: 'AcceptInvitation' });

export const RequestPasswordReset = z.object({ email: z.string().trim().min(1).max(254) }).strict().meta({ id: 'RequestPasswordReset' });
export const ConfirmPasswordReset = z.object({ token: z.string().min(1).max(200), password: Password }).strict().meta({ id: 'ConfirmPasswordReset' });

const RoleOrKind = z.enum([...ROLES, ...PROVIDER_KINDS]);

export const User = z
  .object({ object: z.literal('user'), id: z.string(), email: z.string(), name: z.string(), two_factor: z.boolean(), created_at: Timestamp })
  .meta({ id: 'User' });

export const Member = z
  .object({
    object: z.literal('member'),
    id: z.string().describe("The user's id"),
    email: z.string(),
    name: z.string(),
    role: z.enum(ROLES),
    role_name: z.string(),
    affiliate_ids: z.array(z.string()),
    two_factor: z.boolean(),
    joined_at: Timestamp,
  })
  .meta({ id: 'Member' });

export const Invitation = z
  .object({
    object: z.literal('invitation'),
    id: z.string(),
    email: z.string(),
    role: z.enum(ROLES),
    role_name: z.string(),
    affiliate_ids: z.array(z.string()),
    status: z.enum(['pending', 'accepted', 'revoked', 'expired']),
    invited_by: z.string().nullable().describe('The id of the user or token that invited'),
    created_at: Timestamp,
    expires_at: Timestamp,
    accepted_at: Timestamp.nullable(),
    revoked_at: Timestamp.nullable(),
    mail_sent: z.boolean().optional().describe('On creation: whether the mail transport took the invitation mail'),
  })
  .meta({ id: 'Invitation' });

export const Session = z
  .object({
    object: z.literal('session'),
    kind: z.enum(['token', 'user', 'provider_user', 'system']),
    user: User.nullable().describe('null for an API token'),
    team: z.object({ id: z.string(), name: z.string().nullable(), kind: z.enum(['merchant', 'provider']).nullable() }),
    role: RoleOrKind.nullable(),
    provider_id: z.string().nullable().describe('A provider user: the provider organisation it acts for'),
    permissions: z.array(z.string()),
    affiliate_ids: z.array(z.string()).nullable(),
    teams: z.array(
      z.object({ team_id: z.string(), name: z.string(), kind: z.enum(['merchant', 'provider']), via: z.enum(['member', 'provider']), role: RoleOrKind, provider_id: z.string().nullable() }),
    ).describe('Every team the user can switch to (POST /v1/session/team); empty for an API token'),
    csrf_token: z.string().nullable().describe('Send it as the x-csrf-token header on every POST, PATCH and DELETE of this session'),
    expires_at: Timestamp.nullable().describe('The absolute end of the session (it also ends after 12 hours without a request)'),
  })
  .meta({ id: 'Session' });

export const TotpEnrolment = z.object({ secret: z.string().describe('Base32'), otpauth_uri: z.string() }).meta({ id: 'TotpEnrolment' });
