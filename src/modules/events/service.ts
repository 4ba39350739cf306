import { notFound } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import { iso, type ListQuery } from '../../app/schemas.ts';
import type { Executor, Store, Tx } from '../../db/database.ts';
import { listPage, type Page } from '../../db/pagination.ts';
import type { Row } from '../../db/schema.ts';
import type { EventType } from './catalogue.ts';
import * as repo from './repo.ts';

export function eventView(e: Row<'events'>) {
  return { object: 'event' as const, id: e.id, type: e.type, created_at: iso(e.created_at), data: e.payload };
}
export type EventView = ReturnType<typeof eventView>;

/** An event as its emitter and the sinks see it: what was written, not the columns the database fills in (seq, created_at). */
export type EmittedEvent = Pick<Row<'events'>, 'id' | 'team_id' | 'type' | 'order_id' | 'payload'>;

/** What webhooks and mail do with an event, inside the transaction that emitted it. */
export interface EventSink {
  onEvent(trx: Tx, event: EmittedEvent): Promise<void>;
}

/**
 * The transactional outbox. A state change and the events it causes commit together:
 * `emit` runs in the caller's transaction, writes the event and lets each sink (webhook
 * deliveries, autoresponder mail) write its own rows in that same transaction. Workers
 * deliver those rows after commit.
 */
export class EventsService {
  private readonly sinks: EventSink[] = [];
  private readonly wakers = new Set<(queue?: string) => void>();

  constructor(private readonly store: Store) {}

  registerSink(sink: EventSink): void {
    this.sinks.push(sink);
  }

  /**
   * In-process workers ask to be woken when work may be waiting. A worker that LISTENs for the
   * database's notifications (src/worker/worker.ts) is woken by those, queue by queue, and ignores
   * a nudge that names no queue; one that cannot listen drains every queue on any nudge.
   */
  onWork(wake: (queue?: string) => void): () => void {
    this.wakers.add(wake);
    return () => this.wakers.delete(wake);
  }

  /** Call after a transaction that emitted events has committed; `queue`: the drainer's name, when known. */
  nudge(queue?: string): void {
    for (const w of this.wakers) w(queue);
  }

  async emit(trx: Tx, teamId: string, type: EventType, opts: { orderId?: string | null; object: Record<string, unknown> }): Promise<EmittedEvent> {
    const payload = JSON.stringify({ object: opts.object });
    const row = { id: newId('event'), team_id: teamId, type, order_id: opts.orderId ?? null, payload };
    // Nothing of the row is read back: the insert goes out with the transaction's next statement.
    await repo.writeEvent(trx, row);
    // The sinks get the payload as the database stores it (JSON), not the caller's objects.
    const event: EmittedEvent = { ...row, payload: JSON.parse(payload) as Row<'events'>['payload'] };
    for (const sink of this.sinks) await sink.onEvent(trx, event);
    return event;
  }

  findOrderEvent(db: Executor, teamId: string, orderId: string, type: EventType) {
    return repo.findOrderEvent(db, teamId, orderId, type);
  }

  async get(teamId: string, id: string): Promise<EventView> {
    const e = await this.store.run((db) => repo.findEvent(db, teamId, id));
    if (!e) throw notFound('Event');
    return eventView(e);
  }

  async list(teamId: string, q: ListQuery & { type?: string | undefined; order_number?: string | undefined }): Promise<Page<EventView>> {
    return this.store.run(async (db) => {
      const filter = { type: q.type, orderId: q.order_number, createdGte: q.created_gte, createdLte: q.created_lte };
      return listPage(db, 'events', teamId, q, (afterSeq) => repo.listEvents(db, teamId, { limit: q.limit, afterSeq, ...filter }), eventView);
    });
  }
}
