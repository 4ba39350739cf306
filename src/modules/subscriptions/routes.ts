import { z } from 'zod';
import type { AppContext } from '../../app/context.ts';
import { ok } from '../../app/envelope.ts';
import { type Http, teamOf } from '../../app/http.ts';
import { Id, ListQuery } from '../../app/schemas.ts';

const SubscriptionsQuery = ListQuery.extend({
  status: z.enum(['active', 'trialing', 'past_due', 'paused', 'cancelled']).optional(),
  customer_number: Id('cus').optional(),
  order_number: Id('ord').optional(),
}).strict();

export function registerSubscriptionRoutes(app: Http, ctx: AppContext): void {
  const subscriptions = ctx.services.subscriptions;

  app.get('/v1/subscriptions', { schema: { tags: ['records'], summary: 'List subscriptions, newest first', querystring: SubscriptionsQuery } }, async (req) => {
    const page = await subscriptions.list(teamOf(req), req.query);
    return { success: true, message: 'OK', data: page.items, has_more: page.has_more };
  });

  app.get(
    '/v1/subscriptions/:id',
    { schema: { tags: ['records'], summary: 'Retrieve a subscription', params: z.object({ id: Id('sub') }).strict() } },
    async (req) => ok(await subscriptions.get(teamOf(req), req.params.id)),
  );
}
