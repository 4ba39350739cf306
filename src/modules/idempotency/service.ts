import { ApiError } from '../../app/errors.ts';
import type { Secrets } from '../../app/secrets.ts';
import type { Store } from '../../db/database.ts';
import * as repo from './repo.ts';

/** An in-flight key older than this is taken to belong to a crashed request and may be re-run. */
const ABANDONED_AFTER_MS = 2 * 60_000;
export const MAX_KEY_LENGTH = 255;

export type Begin =
  | { kind: 'proceed' }
  | { kind: 'replay'; status: number; body: string };

/** Canonical JSON: keys sorted at every depth, so field order never changes the fingerprint. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.keys(value as Record<string, unknown>)
    .sort()
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(',')}}`;
}

/**
 * Stripe's idempotency semantics, scoped to (team, key): the first request runs and its
 * response is stored; a retry with the same body gets that response replayed; a retry while
 * the first still runs gets 409; the same key with another body gets 422.
 */
export class IdempotencyService {
  constructor(
    private readonly store: Store,
    private readonly secrets: Secrets,
    private readonly ttlHours: number,
  ) {}

  /**
   * A keyed hash of method, route and canonical body. Card fields are inside the body, so the
   * hash is keyed with the service secret: the stored fingerprint cannot be brute-forced back
   * into a card number.
   */
  fingerprint(method: string, route: string, body: unknown): string {
    return this.secrets.keyedHash('idempotency', `${method} ${route}\n${canonicalJson(body ?? null)}`);
  }

  async begin(teamId: string, key: string, method: string, route: string, body: unknown): Promise<Begin> {
    const fingerprint = this.fingerprint(method, route, body);
    for (let attempt = 0; attempt < 3; attempt++) {
      const now = new Date();
      const claimed = await this.store.run((db) =>
        repo.claimKey(db, {
          team_id: teamId,
          key,
          fingerprint,
          method,
          path: route,
          state: 'in_flight',
          created_at: now,
          expires_at: new Date(now.getTime() + this.ttlHours * 3600_000),
        }),
      );
      if (claimed) return { kind: 'proceed' };

      const existing = await this.store.run((db) => repo.findKey(db, teamId, key));
      if (!existing) continue; // released between our insert and read: try to claim again
      const expired = new Date(existing.expires_at).getTime() <= now.getTime();
      const abandoned = existing.state === 'in_flight' && now.getTime() - existing.created_at.getTime() > ABANDONED_AFTER_MS;
      if (expired || abandoned) {
        await this.store.run((db) => repo.releaseKey(db, teamId, key, existing.created_at));
        continue;
      }
      if (existing.fingerprint !== fingerprint) throw new ApiError('idempotency_key_reused');
      if (existing.state === 'in_flight') throw new ApiError('idempotency_in_flight');
      return { kind: 'replay', status: existing.response_status ?? 200, body: existing.response_body ? this.secrets.decrypt(existing.response_body) : '' };
    }
    throw new ApiError('idempotency_in_flight');
  }

  /**
   * Stores the response to replay, sealed with the service key: some responses carry a secret
   * shown once (a webhook signing secret), and none may sit in the database in clear.
   * 5xx responses release the key instead, so the client may retry.
   */
  async finish(teamId: string, key: string, status: number, body: string): Promise<void> {
    if (status >= 500) await this.store.run((db) => repo.releaseKey(db, teamId, key));
    else await this.store.run((db) => repo.completeKey(db, teamId, key, status, this.secrets.encrypt(body)));
  }

  async purgeExpired(): Promise<number> {
    return this.store.run((db) => repo.deleteExpiredKeys(db, new Date()));
  }
}
