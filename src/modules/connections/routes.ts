import { z } from 'zod';
import type { AppContext } from '../../app/context.ts';
import { ok } from '../../app/envelope.ts';
import { type Http, teamOf } from '../../app/http.ts';
import { Id, ListQuery } from '../../app/schemas.ts';

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

const CreateBody = z
  .object({
    name: z.string().trim().min(1).max(200),
    api_key: Secret.describe('The company key: needs the checkout_configuration, plan and access_pass permissions'),
    company_id: z.string().regex(/^biz_[A-Za-z0-9]+$/, 'must be a company ID starting biz_'),
    environment: Environment.describe('Sandbox (test mode) or Production; they are separate accounts'),
    webhook_secret: Secret.optional().describe('ws_… (sandbox) or whsec_… (production), as given; required for confirmations to work'),
    base_url: BaseUrl.optional().describe("The provider's API base; defaults to the environment's"),
  })
  .strict()
  .meta({ id: 'CreateExtpayConnection' });

const UpdateBody = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    api_key: Secret.optional(),
    webhook_secret: Secret.nullable().optional(),
    base_url: BaseUrl.optional(),
  })
  .strict()
  .meta({ id: 'UpdateExtpayConnection' });

export function registerConnectionRoutes(app: Http, ctx: AppContext): void {
  const connections = ctx.services.connections;
  const tags = ['payments-config'];

  app.post(
    '/v1/extpay-connections',
    { schema: { tags, summary: 'Add an external checkout provider (extpay) connection; created Active', body: CreateBody } },
    async (req, reply) => reply.code(201).send(ok(await connections.create(teamOf(req), req.body), 'Connection created.')),
  );
  app.get('/v1/extpay-connections', { schema: { tags, summary: 'List extpay connections', querystring: ListQuery.strict() } }, async (req) => {
    const page = await connections.list(teamOf(req), req.query);
    return { success: true, message: 'OK', data: page.items, has_more: page.has_more };
  });
  app.get('/v1/extpay-connections/:id', { schema: { tags, summary: 'Retrieve an extpay connection', params: Params } }, async (req) =>
    ok(await connections.get(teamOf(req), req.params.id)),
  );
  app.patch('/v1/extpay-connections/:id', { schema: { tags, summary: 'Update an extpay connection', params: Params, body: UpdateBody } }, async (req) =>
    ok(await connections.update(teamOf(req), req.params.id, req.body)),
  );
  app.post('/v1/extpay-connections/:id/activate', { schema: { tags, summary: 'Activate', params: Params } }, async (req) =>
    ok(await connections.setActive(teamOf(req), req.params.id, true), 'Connection activated.'),
  );
  app.post('/v1/extpay-connections/:id/deactivate', { schema: { tags, summary: 'Deactivate', params: Params } }, async (req) =>
    ok(await connections.setActive(teamOf(req), req.params.id, false), 'Connection deactivated.'),
  );
  app.delete('/v1/extpay-connections/:id', { schema: { tags, summary: 'Delete', params: Params } }, async (req) =>
    ok(await connections.remove(teamOf(req), req.params.id), 'Connection deleted.'),
  );
  app.post(
    '/v1/extpay-connections/:id/test',
    {
      schema: {
        tags,
        summary: 'Test the connection',
        description: 'One of exactly three results: `connected`, `cannot_create_checkouts` (permissions missing), `failed_to_authenticate` (wrong key, wrong company ID, or the other environment\'s credentials).',
        params: Params,
      },
    },
    async (req) => {
      const r = await connections.test(teamOf(req), req.params.id);
      return ok(r, r.message);
    },
  );
}
