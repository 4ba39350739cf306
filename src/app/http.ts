import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyRequest,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Permission } from '../modules/access/permissions.ts';
import type { Principal } from '../modules/access/principal.ts';
import { ApiError } from './errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the authentication hook on every /checkout and /v1 route: who calls, on which team, with which permissions. */
    team: Principal | null;
    idempotency: { teamId: string; key: string; replayed: boolean; claimedAt?: Date } | null;
  }
  interface FastifyContextConfig {
    /**
     * The permission a route needs (src/modules/access/permissions.ts), checked by one hook;
     * 'public' routes (login, invitation acceptance, password reset) need no credentials.
     * Every /checkout and /v1 route must declare one: the server refuses to start otherwise.
     */
    permission?: Permission | 'public';
    /**
     * Money actions and changes to settings, credentials, roles and tokens name their audit action
     * (`<noun>.<verb>`, e.g. `order.refunded`, `gateway.updated`): a 2xx answer writes one
     * audit_log row (actor, target, request id, IP) before it is sent.
     */
    audit?: string;
    /**
     * The route narrows what it shows to the caller's affiliate ids (`Principal.affiliateIds`) and
     * hides throttled orders from them; affiliate-scoped callers get 403 on every other route.
     */
    affiliateScope?: boolean;
  }
}

/** The Fastify instance routes are registered on: zod schemas typed end to end. */
export type Http = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, ZodTypeProvider>;

export function teamOf(req: FastifyRequest): string {
  if (!req.team) throw new ApiError('unauthenticated');
  return req.team.teamId;
}

/** The authenticated caller (routes that need more than the team: notes' authors, audit, affiliate scope). */
export function principalOf(req: FastifyRequest): Principal {
  if (!req.team) throw new ApiError('unauthenticated');
  return req.team;
}
