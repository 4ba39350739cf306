import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app/context.ts';
import { errorBody } from '../../app/envelope.ts';
import { EXTPAY_WEBHOOK_REJECTION_HTTP, type ExtpayWebhookRejection, verifyExtpayWebhook } from '../../providers/extpay/webhook.ts';
import { THREEDS_WEBHOOK_REJECTION_HTTP, verifyThreeDsWebhook } from '../../providers/threeds/webhook.ts';

/**
 * Inbound provider webhooks. The body is read as raw bytes and verified before anything parses
 * it; a delivery is answered 2xx only after its effect has committed.
 */
export async function registerGatewayWebhookRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  await app.register(async (hooks) => {
    hooks.removeAllContentTypeParsers();
    hooks.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

    hooks.post<{ Params: { gateway_id: string } }>(
      '/webhooks/gateways/:gateway_id',
      { schema: { hide: true }, bodyLimit: 1024 * 1024 },
      async (req, reply) => {
        const gateway = await ctx.services.gateways.findGatewayForWebhook(req.params.gateway_id);
        if (!gateway || gateway.kind !== 'threeds') return reply.code(404).send(errorBody('not_found', 'No such gateway.'));
        let secret: string | undefined;
        try {
          secret = ctx.services.gateways.account(gateway).credentials.webhook_secret;
        } catch {
          secret = undefined;
        }
        const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        const verified = verifyThreeDsWebhook(raw, req.headers, secret);
        if (!verified.ok) {
          req.log.warn({ gateway_id: gateway.id, reason: verified.reason }, 'gateway webhook rejected');
          if (verified.reason === 'no_secret') return reply.code(403).send(errorBody('webhook_secret_missing', 'No webhook secret is saved for this gateway: its webhooks cannot be verified and are refused.'));
          return reply.code(THREEDS_WEBHOOK_REJECTION_HTTP[verified.reason]).send(errorBody('webhook_signature_invalid', `The webhook was rejected: ${verified.reason.replace(/_/g, ' ')}.`));
        }
        const event = verified.event;
        if (event.type === 'unknown' || !event.payment) return reply.code(200).send({ success: true, message: 'Ignored: not an event this service acts on.', data: null });
        const result = await ctx.services.checkout.gatewayEvents.applyGatewayEvent(
          gateway,
          {
            id: event.id,
            type: event.type,
            paymentId: event.payment.id,
            paymentMethod: event.payment.paymentMethod,
            ...(event.payment.declineCode ? { code: event.payment.declineCode } : {}),
            ...(event.payment.message ? { message: event.payment.message } : {}),
          },
          { id: event.id, type: event.rawType, created: event.created, payment_id: event.payment.id, status: event.payment.status },
        );
        return reply.code(200).send({ success: true, message: result === 'duplicate' ? 'Already processed.' : 'Processed.', data: { result } });
      },
    );

    /**
     * The external checkout provider (spec 6.1): one address for every connection. The payload's
     * company (and environment, when sent) names the candidate connections; the one whose secret
     * verifies the raw bytes is the sender. `?connection_id=` pins one, for setups that share a company.
     */
    hooks.post<{ Querystring: { connection_id?: string; environment?: string } }>(
      '/webhooks/extpay',
      { schema: { hide: true }, bodyLimit: 1024 * 1024 },
      async (req, reply) => {
        const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        const companyId = companyOf(raw);
        const env = req.query.environment === 'sandbox' || req.query.environment === 'production' ? req.query.environment : undefined;
        let candidates = companyId ? await ctx.services.connections.findForWebhook(companyId, env) : [];
        if (req.query.connection_id) candidates = candidates.filter((c) => c.id === req.query.connection_id);
        if (candidates.length === 0) {
          req.log.warn({ company_id: companyId }, 'extpay webhook for no known connection');
          return reply.code(404).send(errorBody('not_found', 'No extpay connection matches this delivery (its company_id).'));
        }
        const withSecret = candidates.map((c) => ({ row: c, conn: ctx.services.connections.connection(c) })).filter((c) => c.conn.webhookSecret);
        if (withSecret.length === 0) {
          req.log.warn({ company_id: companyId }, 'extpay webhook refused: no webhook secret saved');
          return reply.code(403).send(errorBody('webhook_secret_missing', 'No webhook secret is saved on the extpay connection: its webhooks cannot be verified and are refused.'));
        }
        let rejection: ExtpayWebhookRejection | null = null;
        for (const c of withSecret) {
          const verified = verifyExtpayWebhook(raw, req.headers, c.conn.webhookSecret);
          if (!verified.ok) {
            rejection ??= verified.reason;
            if (verified.reason !== 'signature_mismatch') rejection = verified.reason;
            continue;
          }
          const result = await ctx.services.extpayEvents.apply(c.row, verified.event);
          req.log.info({ connection_id: c.row.id, webhook_id: verified.event.id, type: verified.event.rawType, result }, 'extpay webhook');
          return reply.code(200).send({ success: true, message: result === 'duplicate' ? 'Already processed.' : result === 'ignored' ? 'Ignored: nothing of ours.' : 'Processed.', data: { result } });
        }
        req.log.warn({ company_id: companyId, reason: rejection }, 'extpay webhook rejected');
        return reply.code(EXTPAY_WEBHOOK_REJECTION_HTTP[rejection!]).send(errorBody('webhook_signature_invalid', `The webhook was rejected: ${rejection!.replace(/_/g, ' ')}.`));
      },
    );
  });
}

/**
 * The provider company a delivery names, read before verification only to find the candidate
 * secrets (nothing acts on it until the signature checks out): `company_id`, else `data.company.id`.
 */
function companyOf(raw: Buffer): string | null {
  try {
    const j = JSON.parse(raw.toString('utf8')) as { company_id?: unknown; data?: { company?: { id?: unknown }; company_id?: unknown } };
    const id = j.company_id ?? j.data?.company?.id ?? j.data?.company_id;
    return typeof id === 'string' && /^biz_[A-Za-z0-9_-]{1,64}$/.test(id) ? id : null;
  } catch {
    return null;
  }
}
