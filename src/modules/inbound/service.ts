import { newId } from '../../app/ids.ts';
import type { Executor, Tx } from '../../db/database.ts';
import * as repo from './repo.ts';

/** The inbound webhooks' deduplication rows: one per (source, event id), written in the transaction of the event's effect. */
export class InboundService {
  /** Inbound provider events, one row per (source, event id): false when this one was seen before. */
  async recordInbound(trx: Tx, source: string, eventId: string, teamId: string, type: string, payload: Record<string, unknown>): Promise<boolean> {
    return repo.insertInbound(trx, { id: newId('inboundWebhook'), source, event_id: eventId, team_id: teamId, type, payload: JSON.stringify(payload) });
  }

  /** The team's sources (starting `prefix`) that recorded an event id. */
  sourcesOf(db: Executor, teamId: string, prefix: string, eventId: string): Promise<string[]> {
    return repo.inboundSourcesOf(db, teamId, prefix, eventId);
  }

  /** Whether an inbound event was already applied (a cheap early answer; the effect's own transaction decides). */
  inboundSeen(db: Executor, source: string, eventId: string): Promise<boolean> {
    return repo.inboundSeen(db, source, eventId);
  }
}
