import { newId } from '../../app/ids.ts';
import type { Store } from '../../db/database.ts';
import { listPage, type PageRequest } from '../../db/pagination.ts';
import type { Row } from '../../db/schema.ts';
import type { Principal } from './principal.ts';
import * as repo from './repo.ts';

export interface AuditEntry {
  action: string;
  targetType: string | null;
  targetId: string | null;
  data: Record<string, unknown>;
  ip: string | null;
  requestId: string | null;
}

export function auditView(r: Row<'audit_log'>) {
  return {
    object: 'audit_entry' as const,
    id: r.id,
    action: r.action,
    actor: { kind: r.actor_kind, id: r.actor_id, label: r.actor_label, provider_id: r.provider_id },
    target: r.target_type || r.target_id ? { type: r.target_type, id: r.target_id } : null,
    data: r.data,
    ip_address: r.ip_address,
    request_id: r.request_id,
    created_at: r.created_at.toISOString(),
  };
}

/**
 * Request fields kept in an entry: numbers and booleans, and a few plain strings (names and codes);
 * never free text that could carry a card number or a credential (gateway keys, webhook secrets,
 * passwords) — a refund's or cancellation's `reason` is free text: only its presence is kept (`fields`).
 */
const KEPT_STRINGS = new Set(['role', 'status', 'kind', 'name', 'type', 'currency', 'mode', 'email', 'time_zone']);

export function auditData(body: unknown): Record<string, unknown> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return {};
  const out: Record<string, unknown> = {};
  const fields: string[] = [];
  for (const [k, v] of Object.entries(body as Record<string, unknown>)) {
    fields.push(k);
    if (typeof v === 'number' || typeof v === 'boolean' || v === null) out[k] = v;
    else if (typeof v === 'string' && KEPT_STRINGS.has(k) && v.length <= 200) out[k] = v;
    else if (Array.isArray(v) && (k === 'permissions' || k === 'affiliate_ids') && v.every((x) => typeof x === 'string')) out[k] = v;
  }
  return { fields, ...out };
}

/** The append-only audit log: who did what to which object, when, and from where. */
export class AuditService {
  constructor(private readonly store: Store) {}

  async record(principal: Principal, entry: AuditEntry): Promise<void> {
    await this.store.run((db) =>
      repo.insertAudit(db, {
        id: newId('audit'),
        team_id: principal.teamId,
        actor_kind: principal.kind,
        actor_id: principal.actorId,
        actor_label: principal.label,
        provider_id: principal.providerId,
        action: entry.action,
        target_type: entry.targetType,
        target_id: entry.targetId,
        data: JSON.stringify(entry.data),
        ip_address: entry.ip,
        request_id: entry.requestId,
      }),
    );
  }

  async list(teamId: string, q: PageRequest & repo.AuditFilter) {
    return this.store.run((db) => listPage(db, 'audit_log', teamId, q, (after) => repo.listAudit(db, teamId, q, after, q.limit), auditView));
  }
}
