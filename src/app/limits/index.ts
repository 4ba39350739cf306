import type { FastifyInstance } from 'fastify';
import type client from 'prom-client';
import type { AppContext } from '../context.ts';
import { registerRateLimits } from './rate-limits.ts';
import { registerShedding } from './shedding.ts';

/**
 * Abuse and overload protection, ahead of every route: shedding first (an overloaded process
 * should not even count), then the request budgets. Register before the routes.
 */
export async function registerLimits(app: FastifyInstance, ctx: AppContext, registry: client.Registry) {
  await registerShedding(app, ctx.config.overload, registry);
  await registerRateLimits(app, ctx.config.rateLimits, ctx.store, registry);
}
