import { z } from 'zod';
import type { AppContext } from '../../app/context.ts';
import { Envelope, ListEnvelope, ok } from '../../app/envelope.ts';
import { ApiError } from '../../app/errors.ts';
import { type Http, teamOf } from '../../app/http.ts';
import { Id, ListQuery } from '../../app/schemas.ts';
import { EVENT_CATALOGUE, EVENT_TYPES } from './catalogue.ts';
import { Event, EventType } from './schemas.ts';

const EventsQuery = ListQuery.extend({
  type: z.enum(EVENT_TYPES as [string, ...string[]]).optional(),
  order_number: Id('ord').optional(),
}).strict();

/**
 * Two things are called "event": the webhook events here (`ev_…`, types like `order.upsell_added`,
 * the outbox webhook endpoints receive) and an order's timeline entries (`evt_…`, types like
 * `upsell.added`, the `events` of GET /v1/orders/{order_number}). A timeline id asked for here is
 * a 404 that says where it lives, not a validation error.
 */
const EventParams = z.object({ id: z.union([Id('ev'), Id('evt')]).describe('A webhook event id (`ev_…`); an order timeline entry id (`evt_…`) answers 404') }).strict();

function webhookEventId(id: string): string {
  if (!id.startsWith('evt_')) return id;
  throw new ApiError(
    'not_found',
    `${id} is an order timeline entry, not a webhook event: timeline entries (evt_…, e.g. upsell.added) are in the order's events, GET /v1/orders/{order_number}; webhook events (ev_…, e.g. order.upsell_added) are at GET /v1/events.`,
  );
}

export function registerEventRoutes(app: Http, ctx: AppContext): void {
  const events = ctx.services.events;

  app.get('/v1/event-types', { config: { permission: 'webhooks:manage' }, schema: { tags: ['webhooks'], summary: 'The event catalogue: every type a webhook endpoint can subscribe to', response: { 200: Envelope(z.array(EventType)) } } }, async () =>
    ok(Object.entries(EVENT_CATALOGUE).map(([type, description]) => ({ type, description }))),
  );

  app.get('/v1/events', { config: { permission: 'webhooks:manage' }, schema: { tags: ['webhooks'], summary: 'List events, newest first', querystring: EventsQuery, response: { 200: ListEnvelope(Event) } } }, async (req) => {
    const page = await events.list(teamOf(req), req.query);
    return { success: true as const, message: 'OK', data: page.items, has_more: page.has_more };
  });

  app.get(
    '/v1/events/:id',
    { config: { permission: 'webhooks:manage' }, schema: { tags: ['webhooks'], summary: 'Retrieve an event', params: EventParams, response: { 200: Envelope(Event) } } },
    async (req) => ok(await events.get(teamOf(req), webhookEventId(req.params.id))),
  );
}
