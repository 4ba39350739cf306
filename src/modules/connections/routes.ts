import { z } from 'zod';
import type { AppContext } from '../../app/context.ts';
import { Envelope, ListEnvelope, ok } from '../../app/envelope.ts';
import { type Http, teamOf } from '../../app/http.ts';
import { DoctorReport } from '../../app/openapi-responses.ts';
import { Id, ListQuery } from '../../app/schemas.ts';
import { ConnectionTest, DeletedExtpayConnection, ExtpayConnection } from './schemas.ts';
import { extpayAdapter } from '../../providers/extpay/adapter.ts';
import { extpayProvider } from '../../providers/extpay/provider.ts';
import { ConnectionDoctor } from './doctor.ts';
import { extpayWebhookUrl } from '../../app/seed.ts';

const Params = z.object({ id: Id('xc') }).strict();
const Secret = z.string().trim().min(1).max(500);
const BaseUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
  .max(2000)
  .transform((u) => u.replace(/\/+$/, ''));
/** The form says Sandbox / Production; either case is accepted. */
const Environment = z
  .string()
  .transform((v) => v.toLowerCase())
  .pipe(z.enum(['sandbox', 'production'], { error: 'must be Sandbox or Production' }));

const ApiVersionDate = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date, YYYY-MM-DD')
  .describe("The provider's Api-Version-Date every request sends; defaults to the version this release speaks");

const CreateBody = z
  .object({
    name: z.string().trim().min(1).max(200),
    api_key: Secret.describe('The company key: needs the checkout_configuration, plan and access_pass permissions'),
    company_id: z.string().regex(/^biz_[A-Za-z0-9]+$/, 'must be a company ID starting biz_'),
    environment: Environment.describe('Sandbox (test mode) or Production; they are separate accounts'),
    webhook_secret: Secret.optional().describe('ws_… (sandbox) or whsec_… (production), as given; required for confirmations to work'),
    base_url: BaseUrl.optional().describe("The provider's API base; defaults to the environment's"),
    api_version_date: ApiVersionDate.optional(),
  })
  .strict()
  .meta({ id: 'CreateExtpayConnection' });

const UpdateBody = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    api_key: Secret.optional(),
    webhook_secret: Secret.nullable().optional(),
    base_url: BaseUrl.optional(),
    api_version_date: ApiVersionDate.nullable().optional(),
  })
  .strict()
  .meta({ id: 'UpdateExtpayConnection' });

export function registerConnectionRoutes(app: Http, ctx: AppContext): void {
  const connections = ctx.services.connections;
  const tags = ['payments-config'];

  app.post(
    '/v1/extpay-connections',
    { config: { permission: 'connections:manage', audit: 'extpay_connection.created' }, schema: { tags, summary: 'Add an external checkout provider (extpay) connection; created Active', body: CreateBody, response: { 201: Envelope(ExtpayConnection) } } },
    async (req, reply) => reply.code(201).send(ok(await connections.create(teamOf(req), req.body), 'Connection created.')),
  );
  app.get('/v1/extpay-connections', { config: { permission: 'connections:manage' }, schema: { tags, summary: 'List extpay connections', querystring: ListQuery.strict(), response: { 200: ListEnvelope(ExtpayConnection) } } }, async (req) => {
    const page = await connections.list(teamOf(req), req.query);
    return { success: true as const, message: 'OK', data: page.items, has_more: page.has_more };
  });
  app.get('/v1/extpay-connections/:id', { config: { permission: 'connections:manage' }, schema: { tags, summary: 'Retrieve an extpay connection', params: Params, response: { 200: Envelope(ExtpayConnection) } } }, async (req) =>
    ok(await connections.get(teamOf(req), req.params.id)),
  );
  app.patch('/v1/extpay-connections/:id', { config: { permission: 'connections:manage', audit: 'extpay_connection.updated' }, schema: { tags, summary: 'Update an extpay connection', params: Params, body: UpdateBody, errors: ['conflict'], response: { 200: Envelope(ExtpayConnection) } } }, async (req) =>
    ok(await connections.update(teamOf(req), req.params.id, req.body)),
  );
  app.post('/v1/extpay-connections/:id/activate', { config: { permission: 'connections:manage', audit: 'extpay_connection.activated' }, schema: { tags, summary: 'Activate an extpay connection', params: Params, response: { 200: Envelope(ExtpayConnection) } } }, async (req) =>
    ok(await connections.setActive(teamOf(req), req.params.id, true), 'Connection activated.'),
  );
  app.post('/v1/extpay-connections/:id/deactivate', { config: { permission: 'connections:manage', audit: 'extpay_connection.deactivated' }, schema: { tags, summary: 'Deactivate an extpay connection', params: Params, response: { 200: Envelope(ExtpayConnection) } } }, async (req) =>
    ok(await connections.setActive(teamOf(req), req.params.id, false), 'Connection deactivated.'),
  );
  app.delete('/v1/extpay-connections/:id', { config: { permission: 'connections:manage', audit: 'extpay_connection.deleted' }, schema: { tags, summary: 'Delete an extpay connection', params: Params, response: { 200: Envelope(DeletedExtpayConnection) } } }, async (req) =>
    ok(await connections.remove(teamOf(req), req.params.id), 'Connection deleted.'),
  );
  app.post(
    '/v1/extpay-connections/:id/test',
    {
      config: { permission: 'connections:manage' },
      schema: {
        tags,
        summary: 'Test the connection',
        description:
          'One of exactly three results in `status` (also `result`): `connected`, `cannot_create_checkouts` (permissions missing, named in `missing_permissions`), `failed_to_authenticate` (wrong key, wrong company ID, or the other environment\'s credentials).',
        params: Params,
        response: { 200: Envelope(ConnectionTest) },
      },
    },
    async (req) => {
      const r = await connections.test(teamOf(req), req.params.id);
      return ok(r, r.message);
    },
  );

  // The address the provider's webhook must name, from configuration: a request's Host header cannot aim the test delivery elsewhere.
  const doctor = new ConnectionDoctor(connections, ctx.services.extpayEvents, extpayProvider(extpayAdapter), extpayWebhookUrl(ctx.config));
  app.post(
    '/v1/extpay-connections/:id/doctor',
    {
      config: { permission: 'connections:manage' },
      schema: {
        tags,
        summary: 'Diagnose the connection',
        description:
          "Named checks, each `pass`, `warn` or `fail` with a plain-language `fix`: the key authenticates; it belongs to this environment; the pinned API version is accepted; the company matches the key; every permission the integration uses is granted (named); the provider's webhook points at this install and subscribes to every kind needed; a signed test delivery verifies with the saved secret; clock skew. Changes nothing at the provider except one test delivery. See docs/providers.md.",
        params: Params,
        response: { 200: Envelope(DoctorReport) },
      },
    },
    async (req) => {
      const r = await doctor.run(teamOf(req), req.params.id);
      return ok(r, r.status === 'pass' ? 'Every check passed.' : r.status === 'warn' ? 'Some checks need a look.' : 'Some checks failed: see each fix.');
    },
  );
}
