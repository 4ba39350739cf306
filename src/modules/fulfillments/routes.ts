import { z } from 'zod';
import type { AppContext } from '../../app/context.ts';
import { ok } from '../../app/envelope.ts';
import { type Http, teamOf } from '../../app/http.ts';
import { Id, ListQuery } from '../../app/schemas.ts';

const FulfillmentsQuery = ListQuery.extend({
  order_number: Id('ord').optional(),
  status: z.enum(['pending', 'shipped', 'delivered', 'cancelled']).optional(),
}).strict();

export function registerFulfillmentRoutes(app: Http, ctx: AppContext): void {
  const fulfillments = ctx.services.fulfillments;

  app.get('/v1/fulfillments', { schema: { tags: ['records'], summary: 'List fulfillments, newest first', querystring: FulfillmentsQuery } }, async (req) => {
    const page = await fulfillments.list(teamOf(req), req.query);
    return { success: true, message: 'OK', data: page.items, has_more: page.has_more };
  });

  app.get(
    '/v1/fulfillments/:id',
    { schema: { tags: ['records'], summary: 'Retrieve a fulfillment', params: z.object({ id: Id('ful') }).strict() } },
    async (req) => ok(await fulfillments.get(teamOf(req), req.params.id)),
  );
}
