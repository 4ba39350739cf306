import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app/context.ts';
import { errorBody } from '../../app/envelope.ts';
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
        const result = await ctx.services.orders.applyGatewayEvent(
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
  });
}
