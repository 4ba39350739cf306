import { ApiError } from '../../app/errors.ts';
import type { Secrets } from '../../app/secrets.ts';
import type { Store } from '../../db/database.ts';
import { isDatabaseUnavailable } from '../../db/faults.ts';
import * as repo from './repo.ts';

/** An in-flight key older than this is taken to belong to a crashed request and may be re-run. */
const ABANDONED_AFTER_MS = 2 * 60_000;
export const MAX_KEY_LENGTH = 255;

export type Begin =
  | { kind: 'proceed'; claimedAt: Date }
  | { kind: 'replay'; status: number; body: string };

/** A finished request whose key could not be released or completed yet (the database was away). */
interface Unsettled {
  teamId: string;
  key: string;
  claimedAt: Date | undefined;
  status: number;
  /** The sealed response to store; null releases the key (a 5xx). */
  sealed: string | null;
}

const slot = (teamId: string, key: string) => `${teamId}\n${key}`;

/** A piece of output text, as opposed to a value still to be written. */
class Text {
  constructor(readonly text: string) {}
}

/**
 * Canonical JSON: keys sorted at every depth, so field order never changes the fingerprint.
 * Walks with an explicit stack, not recursion: the body is client input, and however deep it
 * nests it must not overflow the call stack.
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  const todo: unknown[] = [value];
  while (todo.length > 0) {
    const item = todo.pop();
    if (item instanceof Text) {
      out.push(item.text);
    } else if (item === null || typeof item !== 'object') {
      out.push(JSON.stringify(item) ?? 'null');
    } else if (Array.isArray(item)) {
      todo.push(new Text(']'));
      for (let i = item.length - 1; i >= 0; i--) todo.push(item[i], new Text(i > 0 ? ',' : ''));
      todo.push(new Text('['));
    } else {
      const obj = item as Record<string, unknown>;
      const keys = Object.keys(obj).sort().filter((k) => obj[k] !== undefined);
      todo.push(new Text('}'));
      for (let i = keys.length - 1; i >= 0; i--) todo.push(obj[keys[i]!], new Text(`${i > 0 ? ',' : ''}${JSON.stringify(keys[i])}:`));
      todo.push(new Text('{'));
    }
  }
  return out.join('');
}

/**
 * Stripe's idempotency semantics, scoped to (team, key): the first request runs and its
 * response is stored; a retry with the same body gets that response replayed; a retry while
 * the first still runs gets 409; the same key with another body gets 422.
 */
export class IdempotencyService {
  private readonly unsettled = new Map<string, Unsettled>();
  private settling: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Store,
    private readonly secrets: Secrets,
    private readonly ttlHours: number,
  ) {
    store.health.on('up', () => void this.settleAll());
  }

  /**
   * A keyed hash of method, route and canonical body. Card fields are inside the body, so the
   * hash is keyed with the service secret: the stored fingerprint cannot be brute-forced back
   * into a card number.
   */
  fingerprint(method: string, route: string, body: unknown): string {
    return this.secrets.keyedHash('idempotency', `${method} ${route}\n${canonicalJson(body ?? null)}`);
  }

  async begin(teamId: string, key: string, method: string, route: string, body: unknown): Promise<Begin> {
    const unsettled = this.unsettled.get(slot(teamId, key));
    if (unsettled) await this.settle(unsettled);
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
      if (claimed) return { kind: 'proceed', claimedAt: now };

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
   *
   * When the database is gone at this moment (a request that failed because it went away, or one
   * that finished just as it did), the release or the stored response is kept in memory and
   * written as soon as the database answers again: on its return, or first thing when the same
   * key comes back to this process. Until then another process answers `409 in flight` for the
   * key, and after ABANDONED_AFTER_MS anyone may re-run it.
   */
  async finish(teamId: string, key: string, status: number, body: string, claimedAt?: Date): Promise<void> {
    const pending: Unsettled = { teamId, key, claimedAt, status, sealed: status >= 500 ? null : this.secrets.encrypt(body) };
    try {
      await this.settle(pending);
    } catch (err) {
      if (!isDatabaseUnavailable(err)) throw err;
      this.unsettled.set(slot(teamId, key), pending);
      this.scheduleSettling();
    }
  }

  /** Keys whose release or response could not be written because the database was away. */
  get unsettledCount(): number {
    return this.unsettled.size;
  }

  private async settle(p: Unsettled): Promise<void> {
    if (p.sealed === null) await this.store.run((db) => repo.releaseKey(db, p.teamId, p.key, p.claimedAt));
    else {
      const sealed = p.sealed;
      await this.store.run((db) => repo.completeKey(db, p.teamId, p.key, p.status, sealed, p.claimedAt));
    }
    this.unsettled.delete(slot(p.teamId, p.key));
  }

  private scheduleSettling(): void {
    if (this.settling) return;
    this.settling = setTimeout(() => {
      this.settling = undefined;
      void this.settleAll();
    }, 1_000);
    this.settling.unref();
  }

  private async settleAll(): Promise<void> {
    for (const p of [...this.unsettled.values()]) {
      try {
        await this.settle(p);
      } catch {
        break; // still away: try again in a second
      }
    }
    if (this.unsettled.size > 0) this.scheduleSettling();
  }

  async purgeExpired(): Promise<number> {
    return this.store.run((db) => repo.deleteExpiredKeys(db, new Date()));
  }
}
