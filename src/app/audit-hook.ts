import type { FastifyReply, FastifyRequest } from 'fastify';
import { auditData, type AuditService } from '../modules/access/audit.ts';

const TARGET_PARAMS = ['order_number', 'customer_number', 'id'] as const;

/** The object a request acted on: its path id, or the id of what it created. */
function targetOf(req: FastifyRequest, payload: unknown): { type: string | null; id: string | null } {
  const url = req.routeOptions.url ?? '';
  const type = url.split('/')[2] ?? null;
  const params = (req.params ?? {}) as Record<string, unknown>;
  for (const p of TARGET_PARAMS) if (typeof params[p] === 'string') return { type, id: params[p] as string };
  if (typeof payload === 'string' && payload.length < 65_536) {
    try {
      const data = (JSON.parse(payload) as { data?: { id?: unknown; order_number?: unknown } }).data;
      const id = data?.id ?? data?.order_number;
      if (typeof id === 'string') return { type, id };
    } catch {
      // not JSON: no target id
    }
  }
  return { type, id: null };
}

/**
 * onSend: a route that declares `config.audit` writes one audit_log row for each 2xx answer,
 * before the answer leaves (a replayed idempotent answer writes none: it was recorded the first time).
 */
export function auditHook(audit: AuditService) {
  return async (req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const action = req.routeOptions.config.audit;
    if (!action || !req.team || reply.statusCode >= 300 || req.idempotency?.replayed) return payload;
    const target = targetOf(req, payload);
    await audit.record(req.team, {
      action,
      targetType: target.type,
      targetId: target.id,
      data: auditData(req.body),
      ip: req.ip ?? null,
      requestId: req.id,
    });
    return payload;
  };
}
