import type { FastifyRequest, RouteOptions } from 'fastify';
import { PERMISSIONS } from '../modules/access/permissions.ts';
import type { Principal } from '../modules/access/principal.ts';
import { attachContractCheck, contractCheckEnabled } from './contract-check.ts';
import { ApiError } from './errors.ts';
import { documentResponses } from './openapi-responses.ts';

/** The authenticated part of the API: the funnel and the /v1 resources. */
export function isApiPath(url: string): boolean {
  return url.startsWith('/v1/') || url.startsWith('/checkout/');
}

/**
 * onRoute: every API route declares the permission it needs (`config.permission`); a route
 * without one stops the server at startup. The permission is published in the OpenAPI
 * operation as `x-permission` (the permission-matrix test reads it from /openapi.json), and its audit
 * action (`config.audit`) as `x-audit`. The same
 * hook documents each route's operationId and error answers, and in the test suite attaches the
 * contract check (src/app/contract-check.ts).
 */
export function declarePermission(route: RouteOptions): void {
  if (isApiPath(route.url)) publishPermission(route);
  // Every documented route: its operationId and the error answers it can give (openapi-responses.ts).
  documentResponses(route, isApiPath(route.url));
  if (contractCheckEnabled()) attachContractCheck(route);
}

function publishPermission(route: RouteOptions): void {
  const permission = (route.config as { permission?: string } | undefined)?.permission;
  if (!permission || (permission !== 'public' && !(permission in PERMISSIONS))) {
    throw new Error(`${String(route.method)} ${route.url} declares no known permission (config.permission)`);
  }
  const schema = (route.schema ?? {}) as Record<string, unknown>;
  schema['x-permission'] = permission;
  if ((route.config as { affiliateScope?: boolean } | undefined)?.affiliateScope) schema['x-affiliate-scope'] = true;
  // The audit action a change writes (test/audit-coverage.test.ts: every change declares one or is allowlisted).
  const audit = (route.config as { audit?: string } | undefined)?.audit;
  if (audit) schema['x-audit'] = audit;
  if (permission === 'public') schema.security = [];
  route.schema = schema;
}

/** The one permission check: a principal without the route's permission gets 403 permission_denied. */
export function requirePermission(req: FastifyRequest, principal: Principal): void {
  const needed = req.routeOptions.config.permission;
  if (!needed || needed === 'public') return;
  if (!principal.permissions.has(needed)) {
    throw new ApiError('permission_denied', `This ${principal.kind === 'token' ? 'API token' : 'account'} does not have the ${needed} permission (${PERMISSIONS[needed]}).`, {
      data: { permission: needed },
    });
  }
  // An affiliate-scoped caller (the Affiliate role, an Affiliate Provider, a token with affiliate_ids)
  // reaches only the routes that narrow their answers to its affiliates.
  if (principal.affiliateIds !== null && needed !== 'team:view' && !req.routeOptions.config.affiliateScope) {
    throw new ApiError('permission_denied', 'This route is not available to a caller scoped to affiliate ids: it would show other affiliates\' data.', {
      data: { permission: needed },
    });
  }
}
