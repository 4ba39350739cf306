import { z } from 'zod';
import type { AppContext } from '../../app/context.ts';
import { Envelope, ListEnvelope, ok } from '../../app/envelope.ts';
import { type Http, teamOf } from '../../app/http.ts';
import { Id, ListQuery } from '../../app/schemas.ts';
import { Fulfillment } from './schemas.ts';

const FulfillmentsQuery = ListQuery.extend({
  order_number: Id('ord').optional(),
  status: z.enum(['pending', 'shipped', 'delivered', 'cancelled']).optional(),
}).strict();

export function registerFulfillmentRoutes(app: Http, ctx: AppContext): void {
  const fulfillments = ctx.services.fulfillments;

  app.get('/v1/fulfillments', { config: { permission: 'orders:view' }, schema: { tags: ['records'], summary: 'List fulfillments, newest first', querystring: FulfillmentsQuery, response: { 200: ListEnvelope(Fulfillment) } } }, async (req) => {
    const page = await fulfillments.list(teamOf(req), req.query);
    return { success: true as const, message: 'OK', data: page.items as never, has_more: page.has_more };
  });

  app.get(
    '/v1/fulfillments/:id',
    { config: { permission: 'orders:view' }, schema: { tags: ['records'], summary: 'Retrieve a fulfillment', params: z.object({ id: Id('ful') }).strict(), response: { 200: Envelope(Fulfillment) } } },
    // `lines` is stored as JSON (unknown[] to the database types); the schema names its fields.
    async (req) => ok((await fulfillments.get(teamOf(req), req.params.id)) as never),
  );
}
