import type { AppContext } from '../../app/context.ts';
import { Envelope, listed, ListEnvelope, ok } from '../../app/envelope.ts';
import { type Http, principalOf, teamOf } from '../../app/http.ts';
import { ListQuery } from '../../app/schemas.ts';
import { PERMISSIONS, PROVIDER_PERMISSIONS, ROLE_NAMES, ROLE_PERMISSIONS, ROLES } from './permissions.ts';
import {
  ApiToken,
  ApiTokensQuery,
  AuditEntry,
  AuditQuery,
  CreateApiToken,
  GrantProvider,
  IssuedApiToken,
  PermissionCatalogue,
  ProviderGrant,
  RotateApiToken,
  RotatedApiToken,
  TokenParams,
  UpdateProviderGrant,
} from './schemas.ts';

const tags = ['access'];

/** API tokens, provider grants, the audit log and the permission catalogue. */
export function registerAccessRoutes(app: Http, ctx: AppContext): void {
  const { apiTokens, providers, audit } = ctx.services;

  app.get(
    '/v1/permissions',
    { config: { permission: 'team:view' }, schema: { tags, summary: 'The permission catalogue, the roles, the provider kinds, and what the caller holds', response: { 200: Envelope(PermissionCatalogue) } } },
    async (req) => {
      const me = principalOf(req);
      return ok({
        permissions: Object.entries(PERMISSIONS).map(([name, description]) => ({ name, description })),
        roles: ROLES.map((role) => ({ role, name: ROLE_NAMES[role], permissions: [...ROLE_PERMISSIONS[role]] })),
        providers: Object.entries(PROVIDER_PERMISSIONS).map(([kind, p]) => ({ kind, base: [...p.base], optional: [...p.optional] })),
        you: { kind: me.kind, role: me.role, permissions: [...me.permissions].sort(), affiliate_ids: me.affiliateIds ? [...me.affiliateIds] : null },
      });
    },
  );

  // ---- API tokens (spec §5.3)

  app.post(
    '/v1/api-tokens',
    {
      config: { permission: 'api_tokens:manage', audit: 'api_token.created' },
      schema: {
        tags,
        summary: 'Create an API token',
        description: 'Bound to a role or an explicit permission set, never more than the creator holds (403 `permission_denied` otherwise). The `secret` is in this answer only.',
        body: CreateApiToken,
        response: { 201: Envelope(IssuedApiToken) },
      },
    },
    async (req, reply) => reply.code(201).send(ok(await apiTokens.create(principalOf(req), req.body), 'API token created: copy the secret now, it is not shown again.')),
  );
  app.get(
    '/v1/api-tokens',
    { config: { permission: 'api_tokens:manage' }, schema: { tags, summary: 'List API tokens, newest first (never their secrets)', querystring: ApiTokensQuery, response: { 200: ListEnvelope(ApiToken) } } },
    async (req) => listed(await apiTokens.list(teamOf(req), req.query)),
  );
  app.get(
    '/v1/api-tokens/:id',
    { config: { permission: 'api_tokens:manage' }, schema: { tags, summary: 'Retrieve an API token', params: TokenParams, response: { 200: Envelope(ApiToken) } } },
    async (req) => ok(await apiTokens.get(teamOf(req), req.params.id)),
  );
  app.post(
    '/v1/api-tokens/:id/rotate',
    {
      config: { permission: 'api_tokens:manage', audit: 'api_token.rotated' },
      schema: {
        tags,
        summary: 'Rotate an API token',
        description: 'Issues a replacement with the same name and permissions; the old secret keeps working for `grace_seconds` (default one day), then stops.',
        params: TokenParams,
        body: RotateApiToken.optional(),
        response: { 201: Envelope(RotatedApiToken) },
      },
    },
    async (req, reply) => reply.code(201).send(ok(await apiTokens.rotate(principalOf(req), req.params.id, req.body?.grace_seconds ?? 86_400), 'API token rotated: copy the new secret now.')),
  );
  app.delete(
    '/v1/api-tokens/:id',
    { config: { permission: 'api_tokens:manage', audit: 'api_token.revoked' }, schema: { tags, summary: 'Revoke an API token (at once)', params: TokenParams, response: { 200: Envelope(ApiToken) } } },
    async (req) => ok(await apiTokens.revoke(teamOf(req), req.params.id), 'API token revoked.'),
  );

  // ---- Customer Service and Affiliate Providers (spec §5.6)

  app.post(
    '/v1/provider-grants',
    {
      config: { permission: 'providers:manage', audit: 'provider.granted' },
      schema: {
        tags,
        summary: 'Give a provider organisation access to this team',
        description: '404 when `provider_id` is not a provider organisation; 409 when it already has access (change or revoke that grant).',
        body: GrantProvider,
        errors: ['not_found', 'conflict'],
        response: { 201: Envelope(ProviderGrant) },
      },
    },
    async (req, reply) => reply.code(201).send(ok(await providers.grant(principalOf(req), req.body), 'Provider granted.')),
  );
  app.get(
    '/v1/provider-grants',
    { config: { permission: 'users:view' }, schema: { tags, summary: 'List the providers with access to this team', querystring: ListQuery.pick({ limit: true, starting_after: true }).strict(), response: { 200: ListEnvelope(ProviderGrant) } } },
    async (req) => listed(await providers.list(teamOf(req), req.query)),
  );
  app.get(
    '/v1/provider-grants/:id',
    { config: { permission: 'users:view' }, schema: { tags, summary: "Retrieve a provider's grant", params: TokenParams, response: { 200: Envelope(ProviderGrant) } } },
    async (req) => ok(await providers.get(teamOf(req), req.params.id)),
  );
  app.patch(
    '/v1/provider-grants/:id',
    {
      config: { permission: 'providers:manage', audit: 'provider.updated' },
      schema: { tags, summary: "Change a provider's optional permissions or affiliate ids", params: TokenParams, body: UpdateProviderGrant, response: { 200: Envelope(ProviderGrant) } },
    },
    async (req) => ok(await providers.update(principalOf(req), req.params.id, req.body), 'Provider grant updated.'),
  );
  app.delete(
    '/v1/provider-grants/:id',
    { config: { permission: 'providers:manage', audit: 'provider.revoked' }, schema: { tags, summary: "Revoke a provider's access (at once)", params: TokenParams, response: { 200: Envelope(ProviderGrant) } } },
    async (req) => ok(await providers.revoke(teamOf(req), req.params.id), 'Provider access revoked.'),
  );

  // ---- audit log

  app.get(
    '/v1/audit-log',
    {
      config: { permission: 'audit:view' },
      schema: {
        tags,
        summary: 'The audit log, newest first',
        description: 'Who (token, user or provider user), what (money actions, settings, credentials, roles, tokens), when, from where. Append-only.',
        querystring: AuditQuery,
        response: { 200: ListEnvelope(AuditEntry) },
      },
    },
    async (req) => listed(await audit.list(teamOf(req), req.query)),
  );
}
