import { z } from 'zod';
import type { AppContext } from '../../app/context.ts';
import { ok } from '../../app/envelope.ts';
import { type Http, teamOf } from '../../app/http.ts';
import { Id, ListQuery } from '../../app/schemas.ts';
import { EVENT_CATALOGUE, EVENT_TYPES } from './catalogue.ts';

const EventsQuery = ListQuery.extend({
  type: z.enum(EVENT_TYPES as [string, ...string[]]).optional(),
  order_number: Id('ord').optional(),
}).strict();

export function registerEventRoutes(app: Http, ctx: AppContext): void {
  const events = ctx.services.events;

  app.get('/v1/event-types', { schema: { tags: ['webhooks'], summary: 'The event catalogue: every type a webhook endpoint can subscribe to' } }, async () =>
    ok(Object.entries(EVENT_CATALOGUE).map(([type, description]) => ({ type, description }))),
  );

  app.get('/v1/events', { schema: { tags: ['webhooks'], summary: 'List events, newest first', querystring: EventsQuery } }, async (req) => {
    const page = await events.list(teamOf(req), req.query);
    return { success: true, message: 'OK', data: page.items, has_more: page.has_more };
  });

  app.get(
    '/v1/events/:id',
    { schema: { tags: ['webhooks'], summary: 'Retrieve an event', params: z.object({ id: Id('ev') }).strict() } },
    async (req) => ok(await events.get(teamOf(req), req.params.id)),
  );
}
