import { randomUUID } from 'node:crypto';
import cookie from '@fastify/cookie';
import csrf from '@fastify/csrf-protection';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import {
  hasZodFastifySchemaValidationErrors,
  jsonSchemaTransform,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import { isDatabaseUnavailable } from '../db/faults.ts';
import { isStalePlan } from '../db/statement-names.ts';
import { pendingMigrations } from '../db/migrate.ts';
import { registerAffiliateRoutes } from '../modules/affiliates/routes.ts';
import { registerCatalogRoutes } from '../modules/catalog/routes.ts';
import { registerOrderRoutes } from '../modules/orders/routes.ts';
import { registerConnectionRoutes } from '../modules/connections/routes.ts';
import { registerCustomerRoutes } from '../modules/customers/routes.ts';
import { registerEventRoutes } from '../modules/events/routes.ts';
import { registerFulfillmentRoutes } from '../modules/fulfillments/routes.ts';
import { registerFraudRoutes } from '../modules/fraud/routes.ts';
import { registerGatewayRoutes } from '../modules/gateways/routes.ts';
import { registerMailRoutes } from '../modules/mail/routes.ts';
import { registerPaymentRoutes } from '../modules/ledger/routes.ts';
import { registerReportRoutes } from '../modules/reports/routes.ts';
import { registerGatewayWebhookRoutes } from '../modules/inbound/routes.ts';
import { registerSubscriptionRoutes } from '../modules/subscriptions/routes.ts';
import { registerTeamRoutes } from '../modules/teams/routes.ts';
import { registerTicketRoutes } from '../modules/tickets/routes.ts';
import { CSRF_COOKIE, needsCsrf } from '../modules/users/cookies.ts';
import { registerUserRoutes } from '../modules/users/routes.ts';
import { registerAccessRoutes } from '../modules/access/routes.ts';
import { registerWebhookRoutes } from '../modules/webhooks/routes.ts';
import { declarePermission, requirePermission } from './access.ts';
import { registerAuditLog } from './audit-hook.ts';
import { registerDashboard } from './dashboard.ts';
import type { AppContext } from './context.ts';
import { errorBody } from './envelope.ts';
import { ApiError, type FieldError } from './errors.ts';
import { clientErrorHandler, frameworkErrors, refuseUndeclaredBodies, registerInputGuards } from './input-guard.ts';
import type { Http } from './http.ts';
import { MAX_KEY_LENGTH } from '../modules/idempotency/service.ts';
import { registerLimits } from './limits/index.ts';
import { registerMetrics } from './metrics.ts';
import { API_DESCRIPTION } from './openapi.ts';
import { Health, openapiTransformObject, Readiness } from './openapi-responses.ts';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;
/** A restart or failover usually takes a few seconds. */
const DATABASE_RETRY_AFTER_S = 2;

function fieldErrorsOf(err: FastifyError & { validationContext?: string }): FieldError[] {
  if (!hasZodFastifySchemaValidationErrors(err)) return [{ path: err.validationContext ?? 'body', message: err.message }];
  const context = err.validationContext === 'querystring' ? 'query' : err.validationContext;
  const where = context && context !== 'body' ? `${context}.` : '';
  return err.validation.flatMap((v) => {
    const base = v.instancePath.replace(/^\//, '').split('/').filter(Boolean).join('.');
    const params = v.params as { keys?: string[] };
    if (v.keyword === 'unrecognized_keys' && params.keys) {
      return params.keys.map((k) => ({ path: where + (base ? `${base}.${k}` : k), message: 'is not a field you can set here' }));
    }
    return [{ path: where + (base || '(root)'), message: v.message ?? 'is invalid' }];
  });
}

function sendError(reply: FastifyReply, err: ApiError) {
  return reply.code(err.status).send(errorBody(err.code, err.message, err.fields, err.data));
}

export async function buildServer(ctx: AppContext, logger: Logger): Promise<Http> {
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    bodyLimit: ctx.config.bodyLimitBytes,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    return503OnClosing: true,
    frameworkErrors,
    clientErrorHandler,
    trustProxy: ctx.config.trustProxy,
  }).withTypeProvider<ZodTypeProvider>();

  // JSON only: Fastify's default text/plain parser would let a string body reach validation.
  app.removeContentTypeParser('text/plain');
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerInputGuards(app as unknown as FastifyInstance);
  app.decorateRequest('team', null);
  app.decorateRequest('idempotency', null);

  app.addHook('onRequest', async (req, reply) => {
    reply.header('x-request-id', req.id);
  });

  app.setErrorHandler((err: FastifyError & { validationContext?: string }, req, reply) => {
    if (err instanceof ApiError) return sendError(reply, err);
    if (err.validation) {
      const fields = fieldErrorsOf(err);
      const summary = fields.map((f) => `${f.path}: ${f.message}`).join('; ');
      return sendError(reply, new ApiError('validation_failed', `The request is invalid: ${summary}`, { fields }));
    }
    switch (err.code) {
      case 'FST_CSRF_MISSING_SECRET':
      case 'FST_CSRF_INVALID_TOKEN':
        return sendError(reply, new ApiError('csrf_failed'));
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return sendError(reply, new ApiError('body_too_large'));
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return sendError(reply, new ApiError('unsupported_media_type'));
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
        return sendError(reply, new ApiError('malformed_json'));
    }
    if (err instanceof SyntaxError && err.statusCode === 400) return sendError(reply, new ApiError('malformed_json'));
    const stalePlan = isStalePlan(err);
    if (stalePlan || isDatabaseUnavailable(err)) {
      // The statement that failed was rolled back with its connection; the client retries with the same key.
      // A stale plan (a table changed under a prepared statement) is prepared again on the next try.
      req.log.warn({ err: { message: err.message, code: err.code } }, stalePlan ? 'request failed: a table changed under a prepared statement' : 'request failed: database unavailable');
      return sendError(reply.header('retry-after', String(DATABASE_RETRY_AFTER_S)), new ApiError('database_unavailable'));
    }
    if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
      return reply.code(err.statusCode).send(errorBody('validation_failed', 'The request could not be processed.'));
    }
    // Unknown: detail in the log only (the logger redacts card fields), a generic body to the client.
    req.log.error({ err }, 'unhandled error');
    return sendError(reply, new ApiError('internal'));
  });

  app.setNotFoundHandler((req, reply) => sendError(reply, new ApiError('route_not_found', `No such endpoint: ${req.method} ${req.url.split('?')[0]}`)));

  // Before swagger collects the routes: each API route's permission is declared, checked and documented.
  app.addHook('onRoute', declarePermission);

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Checkstand API', version: '1', description: API_DESCRIPTION },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API token (`csk_…`)' } } },
      security: [{ bearer: [] }],
      tags: [
        { name: 'checkout', description: 'The funnel: leads, orders, payments' },
        { name: 'catalog', description: 'Campaigns, products, offers, upsells, coupons' },
        { name: 'records', description: 'Orders, customers, transactions, fulfillments, subscriptions' },
        { name: 'payments-config', description: 'Gateways, payment orchestrators, BIN blacklist, fraud velocity rules, test cards' },
        { name: 'webhooks', description: 'Events, webhook endpoints and their deliveries, autoresponder mail' },
        { name: 'operations', description: 'Health, readiness, metrics' },
        { name: 'members', description: 'Team members, browser sessions, invitations, password resets, two-factor' },
        { name: 'tickets', description: 'Support tickets of customers: messages and attachments' },
      ],
    },
    transform: jsonSchemaTransform,
    transformObject: openapiTransformObject({
      servers: [{ url: ctx.config.publicBaseUrl ?? '/', description: ctx.config.publicBaseUrl ? 'This Checkstand (PUBLIC_BASE_URL)' : 'The Checkstand that serves this document' }],
    }),
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  const metrics = registerMetrics(app, ctx.store);
  await registerLimits(app, ctx, metrics);

  // Probes hit these every few seconds: no request log lines below warn.
  app.get('/healthz', { logLevel: 'warn', schema: { tags: ['operations'], summary: 'Liveness: the process answers', security: [], response: { 200: Health } } }, async () => ({ status: 'ok' as const }));
  app.get('/readyz', { logLevel: 'warn', schema: { tags: ['operations'], summary: 'Readiness: the database answers and every migration is applied', security: [], response: { 200: Readiness, 503: Readiness } } }, async (_req, reply) => {
    // During an outage this process already knows (a connection failed and no statement has
    // succeeded since), answer at once instead of queueing behind the pool until it is back.
    if (!ctx.store.health.up) return reply.code(503).header('retry-after', String(DATABASE_RETRY_AFTER_S)).send({ status: 'database_unreachable' });
    try {
      const pending = await ctx.store.run((db) => pendingMigrations(db));
      if (pending.length > 0) return reply.code(503).send({ status: 'migrations_pending', pending });
      return { status: 'ready' as const, database: ctx.store.kind };
    } catch {
      return reply.code(503).header('retry-after', String(DATABASE_RETRY_AFTER_S)).send({ status: 'database_unreachable' });
    }
  });

  // A browser pointed at the server lands somewhere useful: the demo funnel when `start` serves one, else the API docs.
  app.get('/', { schema: { hide: true } }, async (_req, reply) => reply.redirect(app.hasRoute({ method: 'GET', url: '/demo' }) ? '/demo' : '/docs'));
  // The merchant dashboard (web/dashboard, built by npm install) at /dashboard.
  await registerDashboard(app as unknown as FastifyInstance);

  await registerGatewayWebhookRoutes(app as unknown as FastifyInstance, ctx);

  // Browser sessions: the session cookie, and CSRF tokens bound to the session (checked in the API hook below).
  await app.register(cookie);
  await app.register(csrf, {
    cookieKey: CSRF_COOKIE,
    cookieOpts: { path: '/', sameSite: 'lax', httpOnly: true },
    csrfOpts: { hmacKey: ctx.secrets.keyedHash('csrf', 'session-binding') },
    getUserInfo: (req: FastifyRequest) => req.team?.sessionId ?? '',
    getToken: (req: FastifyRequest) => req.headers['x-csrf-token'] as string | undefined,
  });

  // Everything under /checkout and /v1 needs a bearer token and takes Idempotency-Key on POST.
  await app.register(async (api: Http) => {
    refuseUndeclaredBodies(api as unknown as FastifyInstance);
    api.addHook('onRequest', async (req: FastifyRequest, reply) => {
      if (req.routeOptions.config.permission === 'public') return;
      const header = req.headers.authorization;
      const secret = header?.startsWith('Bearer ') ? header.slice(7).trim() : undefined;
      const { teams, users } = ctx.services;
      req.team = secret === undefined && users.hasSession(req) ? await users.authenticateSession(req, reply) : await teams.authenticate(secret);
      requirePermission(req, req.team);
    });
    // A session's unsafe requests carry its CSRF token (x-csrf-token); bearer tokens are exempt.
    api.addHook('onRequest', (req, reply, done) => (needsCsrf(req) ? api.csrfProtection(req, reply, done) : done()));

    api.addHook('preHandler', async (req, reply) => {
      if (req.method !== 'POST') return;
      const raw = req.headers['idempotency-key'];
      if (raw === undefined) return;
      const key = Array.isArray(raw) ? raw[0] : raw;
      if (!key || key.length > MAX_KEY_LENGTH) {
        throw new ApiError('validation_failed', `Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} characters.`, {
          fields: [{ path: 'headers.idempotency-key', message: `must be 1 to ${MAX_KEY_LENGTH} characters` }],
        });
      }
      if (!req.team) return; // public routes (login) take no Idempotency-Key
      const teamId = req.team.teamId;
      const route = req.routeOptions.url ?? req.url;
      const outcome = await ctx.services.idempotency.begin(teamId, key, req.method, route, req.body);
      if (outcome.kind === 'replay') {
        req.idempotency = { teamId, key, replayed: true };
        return reply.code(outcome.status).header('idempotent-replayed', 'true').type('application/json; charset=utf-8').send(outcome.body);
      }
      req.idempotency = { teamId, key, replayed: false, claimedAt: outcome.claimedAt };
    });

    api.addHook('onSend', async (req, reply, payload) => {
      const idem = req.idempotency;
      if (!idem || idem.replayed) return payload;
      await ctx.services.idempotency.finish(idem.teamId, idem.key, reply.statusCode, typeof payload === 'string' ? payload : String(payload ?? ''), idem.claimedAt);
      return payload;
    });
    // After the idempotency hook: a committed action's answer is stored before its audit entry is written.
    registerAuditLog(api, ctx.services.audit);

    registerOrderRoutes(api, ctx);
    registerCatalogRoutes(api, ctx);
    registerCustomerRoutes(api, ctx);
    registerPaymentRoutes(api, ctx);
    registerFulfillmentRoutes(api, ctx);
    registerSubscriptionRoutes(api, ctx);
    registerTeamRoutes(api, ctx);
    registerUserRoutes(api, ctx);
    registerAccessRoutes(api, ctx);
    registerEventRoutes(api, ctx);
    registerConnectionRoutes(api, ctx);
    registerGatewayRoutes(api, ctx);
    registerFraudRoutes(api, ctx);
    registerWebhookRoutes(api, ctx);
    registerMailRoutes(api, ctx);
    registerAffiliateRoutes(api, ctx);
    registerTicketRoutes(api, ctx);
    registerReportRoutes(api, ctx);
  });

  return app as unknown as Http;
}
