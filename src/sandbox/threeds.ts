import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { formatMajorAmount } from '../app/currency.ts';
import { type Answer, AccountSettingsBody, PaymentListQuery, RefundListQuery, ThreeDsSandboxGateway, type ThreeDsSandboxGatewayOptions } from './threeds-gateway.ts';

export type ThreeDsSandboxOptions = ThreeDsSandboxGatewayOptions;

const IdParams = z.object({ id: z.string().min(1).max(100) });
const CompleteQuery = z.object({ result: z.enum(['success', 'fail', 'abandon']) });
const ResolveBody = z.object({ result: z.enum(['succeeded', 'declined']) }).strict();
const LedgerQuery = z.object({ api_key: z.string().min(1).max(200) }).strict();
const ResetBody = z.object({ api_key: z.string().min(1).max(200).optional() }).strict();

function badRequest(reply: FastifyReply, error: z.ZodError) {
  // The issue messages name fields, never echo values.
  return reply.code(400).send({ error: { type: 'invalid_request_error', code: 'parameter_invalid', message: error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ') } });
}

function send(reply: FastifyReply, a: Answer & { replayed?: boolean }) {
  if (a.replayed) reply.header('idempotent-replayed', 'true');
  return reply.code(a.status).send(a.body);
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font:16px system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}a.button{display:block;margin:.6rem 0;padding:.8rem;border:1px solid #888;border-radius:.4rem;text-align:center;text-decoration:none;color:inherit}a.ok{background:#e6f4ea}a.fail{background:#fde8e8}</style>
</head><body>${body}</body></html>`;
}

function idempotencyKey(req: FastifyRequest): string | undefined {
  const v = req.headers['idempotency-key'];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The 3-D Secure card gateway's JSON API (`/v1/…`), its hosted authentication page
 * (`/authenticate/…`) and the test controls (`/sandbox/…`). Mounted by `src/sandbox/server.ts` under
 * `/3ds`, so a gateway's base URL is `{sandbox}/3ds`. Wire format: docs/sandbox.md.
 */
export const threedsSandbox: FastifyPluginAsync<ThreeDsSandboxOptions> = async (app, opts) => {
  const gateway = new ThreeDsSandboxGateway(opts);
  app.addHook('preClose', async () => {
    gateway.close();
  });

  // Malformed JSON and the like answer in the gateway's error shape, scoped to this plugin.
  app.setErrorHandler((err: { statusCode?: number; message?: string }, _req, reply) => {
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    const message = status === 500 ? 'Internal sandbox error.' : (err.message ?? 'Invalid request.');
    if (status === 500) app.log.error(err);
    return reply.code(status).send({ error: { type: status === 500 ? 'api_error' : 'invalid_request_error', code: status === 500 ? 'internal_error' : 'invalid_request', message } });
  });
  app.setNotFoundHandler((_req, reply) => reply.code(404).send({ error: { type: 'invalid_request_error', code: 'unknown_path', message: 'Unknown path.' } }));

  const authenticated = (req: FastifyRequest, reply: FastifyReply): string | null => {
    const auth = gateway.authenticate(req.headers.authorization);
    if ('apiKey' in auth) return auth.apiKey;
    void send(reply, auth);
    return null;
  };
  const hostedBase = (req: FastifyRequest) => `${req.protocol}://${req.host}${app.prefix}`;

  // ---- the gateway API ----

  app.post('/v1/payments', async (req, reply) => {
    const apiKey = authenticated(req, reply);
    if (apiKey === null) return reply;
    return send(reply, gateway.idempotent(apiKey, idempotencyKey(req), { method: 'POST', path: '/v1/payments', body: req.body }, () => gateway.createPayment(apiKey, req.body, hostedBase(req))));
  });

  app.get('/v1/payments', async (req, reply) => {
    const apiKey = authenticated(req, reply);
    if (apiKey === null) return reply;
    const q = PaymentListQuery.safeParse(req.query);
    if (!q.success) return badRequest(reply, q.error);
    return send(reply, gateway.listPayments(apiKey, q.data.reference));
  });

  app.get('/v1/webhook_endpoints', async (req, reply) => {
    const apiKey = authenticated(req, reply);
    if (apiKey === null) return reply;
    return send(reply, gateway.webhookEndpoints(apiKey));
  });

  app.post('/v1/webhook_endpoints/test', async (req, reply) => {
    const apiKey = authenticated(req, reply);
    if (apiKey === null) return reply;
    return send(reply, await gateway.testWebhook(apiKey));
  });

  app.get('/v1/refunds', async (req, reply) => {
    const apiKey = authenticated(req, reply);
    if (apiKey === null) return reply;
    const q = RefundListQuery.safeParse(req.query);
    if (!q.success) return badRequest(reply, q.error);
    return send(reply, gateway.listRefunds(apiKey, q.data));
  });

  app.get('/v1/payments/:id', async (req, reply) => {
    const apiKey = authenticated(req, reply);
    if (apiKey === null) return reply;
    const p = IdParams.safeParse(req.params);
    if (!p.success) return badRequest(reply, p.error);
    return send(reply, gateway.retrievePayment(apiKey, p.data.id));
  });

  app.post('/v1/payments/:id/cancel', async (req, reply) => {
    const apiKey = authenticated(req, reply);
    if (apiKey === null) return reply;
    const p = IdParams.safeParse(req.params);
    if (!p.success) return badRequest(reply, p.error);
    const id = p.data.id;
    return send(reply, gateway.idempotent(apiKey, idempotencyKey(req), { method: 'POST', path: `/v1/payments/${id}/cancel`, body: req.body ?? {} }, () => gateway.cancelPayment(apiKey, id)));
  });

  app.post('/v1/refunds', async (req, reply) => {
    const apiKey = authenticated(req, reply);
    if (apiKey === null) return reply;
    return send(reply, gateway.idempotent(apiKey, idempotencyKey(req), { method: 'POST', path: '/v1/refunds', body: req.body }, () => gateway.createRefund(apiKey, req.body)));
  });

  // ---- the hosted 3DS page ----

  app.get('/authenticate/:id', async (req, reply) => {
    const p = IdParams.safeParse(req.params);
    const payment = p.success ? gateway.hostedPayment(p.data.id) : null;
    reply.type('text/html; charset=utf-8').header('cache-control', 'no-store');
    if (!payment) return reply.code(404).send(page('Payment not found', '<h1>Payment not found</h1>'));
    const id = encodeURIComponent(payment.id);
    const amount = `${formatMajorAmount(payment.amount, payment.currency)} ${payment.currency}`;
    const head = `<h1>3-D Secure check</h1><p>Sandbox bank. Confirm the payment of <strong>${escapeHtml(amount)}</strong> with ${escapeHtml(payment.brand)} •••• ${escapeHtml(payment.last4)}.</p>`;
    if (!payment.awaiting)
      return reply.send(
        page('3-D Secure check', `${head}<p>This payment is ${escapeHtml(payment.status)}; nothing is left to authenticate.</p><a class="button" href="${app.prefix}/authenticate/${id}/complete?result=success">Continue</a>`),
      );
    return reply.send(
      page(
        '3-D Secure check',
        `${head}
<a class="button ok" id="authenticate" href="${app.prefix}/authenticate/${id}/complete?result=success">Authenticate</a>
<a class="button fail" id="fail" href="${app.prefix}/authenticate/${id}/complete?result=fail">Fail authentication</a>
<a class="button" id="abandon" href="${app.prefix}/authenticate/${id}/complete?result=abandon">Abandon (back to the shop)</a>`,
      ),
    );
  });

  app.get('/authenticate/:id/complete', async (req, reply) => {
    const p = IdParams.safeParse(req.params);
    const q = CompleteQuery.safeParse(req.query);
    if (!p.success) return badRequest(reply, p.error);
    if (!q.success) return badRequest(reply, q.error);
    const r = gateway.completeAuthentication(p.data.id, q.data.result);
    if (!r) return reply.code(404).type('text/html; charset=utf-8').send(page('Payment not found', '<h1>Payment not found</h1>'));
    return reply.header('cache-control', 'no-store').redirect(r.redirect, 302);
  });

  // ---- test controls ----

  app.post('/sandbox/accounts', async (req, reply) => {
    const b = AccountSettingsBody.safeParse(req.body ?? {});
    if (!b.success) return badRequest(reply, b.error);
    const { api_key, ...settings } = b.data;
    return gateway.configureAccount(api_key, settings);
  });

  app.post('/sandbox/payments/:id/resolve', async (req, reply) => {
    const p = IdParams.safeParse(req.params);
    const b = ResolveBody.safeParse(req.body ?? {});
    if (!p.success) return badRequest(reply, p.error);
    if (!b.success) return badRequest(reply, b.error);
    return send(reply, gateway.resolveReview(p.data.id, b.data.result));
  });

  app.get('/sandbox/ledger', async (req, reply) => {
    const q = LedgerQuery.safeParse(req.query);
    if (!q.success) return badRequest(reply, q.error);
    return gateway.ledger(q.data.api_key);
  });

  app.post('/sandbox/events/:id/redeliver', async (req, reply) => {
    const p = IdParams.safeParse(req.params);
    if (!p.success) return badRequest(reply, p.error);
    return send(reply, await gateway.redeliver(p.data.id));
  });

  app.post('/sandbox/reset', async (req, reply) => {
    const b = ResetBody.safeParse(req.body ?? {});
    if (!b.success) return badRequest(reply, b.error);
    gateway.reset(b.data.api_key);
    return { ok: true };
  });
};
