import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyRequest,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AuthenticatedTeam } from '../modules/teams/service.ts';
import { ApiError } from './errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the bearer-token hook on every /checkout and /v1 route. */
    team: AuthenticatedTeam | null;
    idempotency: { teamId: string; key: string; replayed: boolean; claimedAt?: Date } | null;
  }
}

/** The Fastify instance routes are registered on: zod schemas typed end to end. */
export type Http = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, ZodTypeProvider>;

export function teamOf(req: FastifyRequest): string {
  if (!req.team) throw new ApiError('unauthenticated');
  return req.team.teamId;
}
