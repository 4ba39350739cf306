import { z } from 'zod';
import { ListQuery } from '../../app/schemas.ts';
import { PERMISSIONS, PROVIDER_KINDS, ROLES } from './permissions.ts';

const PermissionName = z.enum(Object.keys(PERMISSIONS) as [keyof typeof PERMISSIONS, ...(keyof typeof PERMISSIONS)[]]);
const AffiliateIds = z.array(z.string().trim().min(1).max(100)).max(100);

export const TokenParams = z.object({ id: z.string().max(100) }).strict();

export const CreateApiToken = z
  .object({
    name: z.string().trim().min(1).max(100),
    role: z.enum(ROLES).optional().describe('The token acts with this role\'s permissions (see GET /v1/permissions)'),
    permissions: z.array(z.string().max(64)).max(64).optional().describe('Or an explicit permission set (least privilege)'),
    affiliate_ids: AffiliateIds.optional().describe('For role `affiliate`: the affiliate ids the token may see'),
    expires_at: z.iso.datetime({ offset: true }).optional().describe('Optional end of life (ISO 8601)'),
  })
  .strict()
  .meta({ id: 'CreateApiToken' });

export const RotateApiToken = z
  .object({
    grace_seconds: z.number().int().min(0).max(7 * 86_400).default(86_400).describe('How long the old secret keeps working (0: revoked at once; default one day, at most 7 days)'),
  })
  .strict();

export const ApiToken = z
  .object({
    object: z.literal('api_token'),
    id: z.string(),
    name: z.string(),
    hint: z.string().describe('The last four characters, to recognise it'),
    role: z.enum(ROLES).nullable(),
    permissions: z.array(z.string()).describe('What the token can do'),
    affiliate_ids: z.array(z.string()),
    status: z.enum(['active', 'expired', 'revoked']),
    created_at: z.string(),
    created_by: z.string().nullable(),
    last_used_at: z.string().nullable().describe('To the minute'),
    expires_at: z.string().nullable(),
    revoked_at: z.string().nullable(),
    replaced_by: z.string().nullable().describe('The token a rotation issued in its place'),
  })
  .meta({ id: 'ApiToken' });

export const IssuedApiToken = ApiToken.extend({ secret: z.string().describe('The token itself: shown once, never again') }).meta({ id: 'IssuedApiToken' });

export const RotatedApiToken = z
  .object({ token: IssuedApiToken.describe('The replacement, with its secret (shown once)'), previous: ApiToken.describe('The rotated token: working until its expires_at') })
  .meta({ id: 'RotatedApiToken' });

export const ApiTokensQuery = ListQuery.pick({ limit: true, starting_after: true })
  .extend({ status: z.enum(['active', 'expired', 'revoked']).optional() })
  .strict();

export const GrantProvider = z
  .object({
    provider_id: z.string().max(100).describe('The provider organisation\'s id (a team of kind provider)'),
    kind: z.enum(PROVIDER_KINDS),
    permissions: z.array(PermissionName).max(32).optional().describe('Optional permissions on top of the kind\'s base set (customer_service: orders:fulfill, catalog:manage, coupons:manage, webhooks:manage)'),
    affiliate_ids: AffiliateIds.optional().describe('For kind `affiliate`: the affiliate ids it sees'),
  })
  .strict()
  .meta({ id: 'GrantProvider' });

export const UpdateProviderGrant = z
  .object({ permissions: z.array(PermissionName).max(32).optional(), affiliate_ids: AffiliateIds.optional() })
  .strict();

export const ProviderGrant = z
  .object({
    object: z.literal('provider_grant'),
    id: z.string(),
    provider_id: z.string(),
    kind: z.enum(PROVIDER_KINDS),
    permissions: z.array(z.string()).describe('Everything the provider\'s users can do here'),
    optional_permissions: z.array(z.string()).describe('The optional ones granted on top of the base set'),
    affiliate_ids: z.array(z.string()),
    created_at: z.string(),
    updated_at: z.string(),
    revoked_at: z.string().nullable().optional(),
  })
  .meta({ id: 'ProviderGrant' });

export const AuditQuery = ListQuery.extend({
  action: z.string().max(100).optional().describe('An action (`order.refunded`) or a family (`order.*`)'),
  actor_id: z.string().max(100).optional(),
  target_id: z.string().max(100).optional(),
}).strict();

export const AuditEntry = z
  .object({
    object: z.literal('audit_entry'),
    id: z.string(),
    action: z.string(),
    actor: z.object({ kind: z.string(), id: z.string(), label: z.string(), provider_id: z.string().nullable() }),
    target: z.object({ type: z.string().nullable(), id: z.string().nullable() }).nullable(),
    data: z.record(z.string(), z.unknown()),
    ip_address: z.string().nullable(),
    request_id: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'AuditEntry' });

export const PermissionCatalogue = z
  .object({
    permissions: z.array(z.object({ name: z.string(), description: z.string() })),
    roles: z.array(z.object({ role: z.string(), name: z.string(), permissions: z.array(z.string()) })),
    providers: z.array(z.object({ kind: z.string(), base: z.array(z.string()), optional: z.array(z.string()) })),
    you: z.object({ kind: z.string(), role: z.string().nullable(), permissions: z.array(z.string()), affiliate_ids: z.array(z.string()).nullable() }),
  })
  .meta({ id: 'PermissionCatalogue' });
