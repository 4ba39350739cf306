import type { AppContext } from '../../app/context.ts';
import { Envelope, listed, ListEnvelope, ok } from '../../app/envelope.ts';
import { type Http, teamOf } from '../../app/http.ts';
import {
  CreateEndpoint,
  DeliveriesQuery,
  Delivery,
  DeliveryWithAttempts,
  Endpoint,
  OrderDeliveriesQuery,
  EndpointWithSecret,
  IdParams,
  RotateSecret,
  StrictListQuery,
  UpdateEndpoint,
} from './schemas.ts';

const tags = ['webhooks'];

const SIGNING =
  'Deliveries are POSTed as JSON (the event exactly as `GET /v1/events/{id}` shows it) and signed the Standard Webhooks way: ' +
  '`webhook-id` is the event id, the same on every attempt and on replays; `webhook-timestamp` and `webhook-signature` ' +
  '(`v1,<base64 HMAC-SHA256>` of `id.timestamp.body`) are fresh on each attempt. Redirects are never followed (a 3xx is a failed attempt). ' +
  'A 2xx answer within the timeout is success; 410 Gone disables the endpoint; anything else is retried with jitter over about a day ' +
  '(immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h), honouring `Retry-After` up to 24 h. ' +
  'After 5 consecutive failed deliveries, or 5 days of failing continuously, the endpoint is disabled and `disabled_reason` says why.';

export function registerWebhookRoutes(app: Http, ctx: AppContext): void {
  const webhooks = ctx.services.webhooks;

  app.post(
    '/v1/webhook-endpoints',
    {
      config: { permission: 'webhooks:manage', audit: 'webhook_endpoint.created' },
      schema: {
        tags,
        summary: 'Create a webhook endpoint',
        description: `The answer carries \`secret\` (\`whsec_…\`) once; it is stored encrypted and never shown again. ${SIGNING}`,
        body: CreateEndpoint,
        response: { 201: Envelope(EndpointWithSecret) },
      },
    },
    async (req, reply) => reply.code(201).send(ok(await webhooks.createEndpoint(teamOf(req), req.body))),
  );
  app.get(
    '/v1/webhook-endpoints',
    { config: { permission: 'webhooks:manage' }, schema: { tags, summary: 'List webhook endpoints, newest first', querystring: StrictListQuery, response: { 200: ListEnvelope(Endpoint) } } },
    async (req) => listed(await webhooks.listEndpoints(teamOf(req), req.query)),
  );
  app.get(
    '/v1/webhook-endpoints/:id',
    { config: { permission: 'webhooks:manage' }, schema: { tags, summary: 'Retrieve a webhook endpoint', params: IdParams, response: { 200: Envelope(Endpoint) } } },
    async (req) => ok(await webhooks.getEndpoint(teamOf(req), req.params.id)),
  );
  app.patch(
    '/v1/webhook-endpoints/:id',
    {
      config: { permission: 'webhooks:manage', audit: 'webhook_endpoint.updated' },
      schema: {
        tags,
        summary: 'Update a webhook endpoint',
        description:
          '`is_active: false` stops deliveries and cancels pending ones (replay them later if you wish). `is_active: true` re-enables a ' +
          'disabled endpoint: `disabled_at`, `disabled_reason` and `consecutive_failures` are cleared.',
        params: IdParams,
        body: UpdateEndpoint,
        response: { 200: Envelope(Endpoint) },
      },
    },
    async (req) => ok(await webhooks.updateEndpoint(teamOf(req), req.params.id, req.body)),
  );
  app.delete(
    '/v1/webhook-endpoints/:id',
    {
      config: { permission: 'webhooks:manage', audit: 'webhook_endpoint.deleted' },
      schema: {
        tags,
        summary: 'Delete (deactivate) a webhook endpoint',
        description:
          'A soft delete: the endpoint stops receiving events and its pending deliveries are cancelled; it stays listed, inactive, ' +
          "with its delivery log (`disabled_reason: 'deleted by the merchant'`), and PATCH `is_active: true` revives it.",
        params: IdParams,
        response: { 200: Envelope(Endpoint) },
      },
    },
    async (req) => ok(await webhooks.deleteEndpoint(teamOf(req), req.params.id)),
  );
  app.post(
    '/v1/webhook-endpoints/:id/rotate-secret',
    {
      config: { permission: 'webhooks:manage', audit: 'webhook_endpoint.secret_rotated' },
      schema: {
        tags,
        summary: "Rotate an endpoint's signing secret",
        description:
          'Answers the new `secret` once. The previous secret keeps signing until `previous_secret_expires_at` (`grace_seconds`, ' +
          'default 86400, at most 7 days; 0 drops it at once): meanwhile `webhook-signature` carries two space-separated signatures, ' +
          'new secret first, so receivers verify with either. Rotating again drops the older previous secret.',
        params: IdParams,
        body: RotateSecret,
        response: { 200: Envelope(EndpointWithSecret) },
      },
    },
    async (req) => ok(await webhooks.rotateSecret(teamOf(req), req.params.id, req.body.grace_seconds)),
  );
  app.get(
    '/v1/webhook-endpoints/:id/deliveries',
    {
      config: { permission: 'webhooks:manage' },
      schema: {
        tags,
        summary: "List an endpoint's deliveries, newest first",
        params: IdParams,
        querystring: DeliveriesQuery,
        response: { 200: ListEnvelope(Delivery) },
      },
    },
    async (req) => listed(await webhooks.listDeliveries(teamOf(req), req.params.id, req.query)),
  );
  app.get(
    '/v1/webhook-deliveries',
    {
      config: { permission: 'webhooks:manage' },
      schema: {
        tags,
        summary: "List the deliveries of an order's events, newest first",
        description:
          'Every endpoint\'s deliveries of the events about `order_number` (order.completed, refund.created, …): the order page lists them to replay one ' +
          '(`POST /v1/webhook-deliveries/{id}/replay`). An order of another team, or none, has no deliveries (an empty list).',
        querystring: OrderDeliveriesQuery,
        response: { 200: ListEnvelope(Delivery) },
      },
    },
    async (req) => listed(await webhooks.listOrderDeliveries(teamOf(req), req.query)),
  );
  app.get(
    '/v1/webhook-deliveries/:id',
    {
      config: { permission: 'webhooks:manage' },
      schema: {
        tags,
        summary: 'Retrieve a webhook delivery with its attempts',
        description: 'Each attempt shows the status code, duration, the first 2 KB of the answer, and the error when there was no answer.',
        params: IdParams,
        response: { 200: Envelope(DeliveryWithAttempts) },
      },
    },
    async (req) => ok(await webhooks.getDelivery(teamOf(req), req.params.id)),
  );
  app.post(
    '/v1/webhook-deliveries/:id/replay',
    {
      config: { permission: 'webhooks:manage', audit: 'webhook_delivery.replayed' },
      schema: {
        tags,
        summary: 'Replay a webhook delivery',
        description:
          'Makes the delivery due now (202); the worker re-sends it with the same `webhook-id`. If that attempt fails, retries continue ' +
          'from the delivery’s attempt count, so an exhausted delivery gets just this attempt. 409 while an attempt is in flight or the ' +
          'endpoint is disabled.',
        params: IdParams,
        response: { 202: Envelope(Delivery) },
      },
    },
    async (req, reply) => reply.code(202).send(ok(await webhooks.replayDelivery(teamOf(req), req.params.id), 'Replay scheduled')),
  );
}
