import { ApiError, notFound } from '../../app/errors.ts';
import { iso, type ListQuery } from '../../app/schemas.ts';
import { newId } from '../../app/ids.ts';
import type { Store, Tx } from '../../db/database.ts';
import { listPage, type Page } from '../../db/pagination.ts';
import type { Address, Row } from '../../db/schema.ts';
import type { EventsService } from '../events/service.ts';
import type { OrderEvent } from '../orders/service.ts';
import { csvLine } from './csv.ts';
import * as repo from './repo.ts';
import { FULFILLMENT } from './states.ts';
import './tables.ts';

/** An order's fulfillment of its physical lines, or null when it has none. */
function newFulfillment(teamId: string, orderId: string, lines: FulfillableLine[]) {
  const physical = lines.filter((l) => l.fulfillment_type === 'physical');
  if (physical.length === 0) return null;
  return {
    id: newId('fulfillment'),
    team_id: teamId,
    order_id: orderId,
    status: 'pending' as const,
    lines: JSON.stringify(physical.map((l) => ({ line_id: l.id, offer_id: l.offer_id, product_id: l.product_id, name: l.name, quantity: l.quantity }))),
  };
}

export function fulfillmentView(f: Row<'fulfillments'>) {
  return {
    object: 'fulfillment' as const,
    id: f.id,
    order_number: f.order_id,
    status: f.status,
    lines: f.lines,
    tracking_number: f.tracking_number,
    carrier: f.carrier,
    tracking_url: f.tracking_url,
    shipped_at: iso(f.shipped_at),
    created_at: iso(f.created_at),
    updated_at: iso(f.updated_at),
  };
}
type FulfillmentView = ReturnType<typeof fulfillmentView>;

export interface FulfillableLine {
  id: string;
  offer_id: string;
  product_id: string;
  name: string;
  quantity: number;
  fulfillment_type: string;
}

export interface ShipInput {
  carrier: string;
  tracking_number: string;
  tracking_url?: string | undefined;
  shipped_at?: Date | undefined;
}

/** What shipping needs from the modules built after this one (attached by the context). */
export interface ShippingDeps {
  events: EventsService;
  orders: { recordEvents(trx: Tx, teamId: string, orderId: string, events: OrderEvent[]): Promise<void> };
}

/** The export's columns: one row per line, the order and address repeated (what warehouse imports take). */
export const EXPORT_COLUMNS = [
  'fulfillment_id', 'order_number', 'created_at', 'customer_name', 'email', 'phone',
  'ship_to_name', 'address_line1', 'address_line2', 'city', 'state', 'postal_code', 'country',
  'product_id', 'offer_id', 'item_name', 'quantity',
] as const;

const EXPORT_BATCH = 500;

function fullName(first: string | null | undefined, last: string | null | undefined): string {
  return [first, last].filter(Boolean).join(' ');
}

export class FulfillmentsService {
  private shipping: ShippingDeps | null = null;

  constructor(private readonly store: Store) {}

  /** The context attaches these once the orders and events services exist. */
  attachShipping(deps: ShippingDeps): void {
    this.shipping = deps;
  }

  /**
   * Marks a fulfillment shipped, under its row lock: the timeline row on its order and the
   * `fulfillment.shipped` event commit with the change. The same carrier and tracking number again
   * is a no-op answered with the fulfillment as it is (`changed` false); other tracking on a shipped
   * one, or shipping a cancelled or delivered one, is a 409.
   */
  async ship(teamId: string, id: string, input: ShipInput): Promise<{ changed: boolean; fulfillment: FulfillmentView }> {
    const deps = this.shipping;
    if (!deps) throw new Error('FulfillmentsService.attachShipping() was not called');
    const r = await this.store.transaction(async (trx) => {
      const f = await repo.lockFulfillment(trx, teamId, id);
      if (!f) throw notFound('Fulfillment');
      if (f.status === 'shipped' && f.carrier === input.carrier && f.tracking_number === input.tracking_number) return { changed: false, row: f };
      if (f.status === 'shipped') {
        throw new ApiError('conflict', `This fulfillment was already shipped with ${f.carrier ?? 'a carrier'} tracking number ${f.tracking_number ?? '(none)'}; it cannot be shipped again with other tracking.`);
      }
      FULFILLMENT.assertMove(f.status, 'shipped');
      const shipped = { carrier: input.carrier, tracking_number: input.tracking_number, tracking_url: input.tracking_url ?? null, shipped_at: input.shipped_at ?? new Date() };
      const row = await repo.markShipped(trx, teamId, f.id, shipped);
      await deps.orders.recordEvents(trx, teamId, f.order_id, [
        { type: 'fulfillment.shipped', data: { fulfillment_id: f.id, carrier: shipped.carrier, tracking_number: shipped.tracking_number, tracking_url: shipped.tracking_url } },
      ]);
      await deps.events.emit(trx, teamId, 'fulfillment.shipped', { orderId: f.order_id, object: fulfillmentView(row) });
      return { changed: true, row };
    });
    if (r.changed) deps.events.nudge();
    return { changed: r.changed, fulfillment: fulfillmentView(r.row) };
  }

  /** The CSV a warehouse imports: the team's fulfillments in one status (oldest first), one row per line. */
  async exportCsv(teamId: string, q: { status: string; created_gte?: Date | undefined; created_lte?: Date | undefined }): Promise<{ csv: string; rows: number }> {
    return this.store.run(async (db) => {
      let out = csvLine(EXPORT_COLUMNS);
      let rows = 0;
      for (let afterSeq = 0; ; ) {
        const batch = await repo.exportBatch(db, teamId, { afterSeq, batch: EXPORT_BATCH, status: q.status, createdGte: q.created_gte, createdLte: q.created_lte });
        for (const f of batch) {
          const a = (f.shipping_address ?? {}) as Address;
          const customer = fullName(f.first_name, f.last_name);
          const shipTo = fullName(a.first_name, a.last_name) || customer;
          const lines = (Array.isArray(f.lines) ? f.lines : []) as { product_id?: string; offer_id?: string; name?: string; quantity?: number }[];
          for (const l of lines) {
            out += csvLine([
              f.id, f.order_id, f.created_at.toISOString(), customer, f.email, f.phone,
              shipTo, a.line1, a.line2, a.city, a.state, a.postal_code, a.country,
              l.product_id, l.offer_id, l.name, l.quantity,
            ]);
            rows++;
          }
        }
        if (batch.length < EXPORT_BATCH) break;
        afterSeq = Number(batch.at(-1)!.seq);
      }
      return { csv: out, rows };
    });
  }

  /**
   * A line added after completion (an upsell after Capture completed a redirected payment):
   * joins the order's fulfillment while it is still pending, or starts one.
   */
  async addLateLine(trx: Tx, teamId: string, orderId: string, line: FulfillableLine): Promise<void> {
    if (line.fulfillment_type !== 'physical') return;
    const existing = await repo.findOrderFulfillment(trx, teamId, orderId);
    const entry = { line_id: line.id, offer_id: line.offer_id, product_id: line.product_id, name: line.name, quantity: line.quantity };
    if (!existing) {
      await this.createForOrder(trx, teamId, orderId, [line]);
      return;
    }
    // Shipped already: the late line is not silently added to a parcel that has left.
    if (existing.status !== 'pending') return;
    await repo.setFulfillmentLines(trx, teamId, existing.id, [...(existing.lines as unknown[]), entry]);
  }

  /** At completion: one pending fulfillment holding the order's physical lines (none for digital-only orders). */
  async createForOrder(trx: Tx, teamId: string, orderId: string, lines: FulfillableLine[]): Promise<Row<'fulfillments'> | null> {
    const row = newFulfillment(teamId, orderId, lines);
    return row ? ((await repo.insertFulfillmentOnce(trx, row)) ?? null) : null;
  }

  /**
   * createForOrder for an order's first completion, under its row lock (no fulfillment can exist
   * yet): the insert goes with the transaction's next statement or its COMMIT, and the answer is the
   * new fulfillment's id (null for digital-only orders). A fulfillment that did exist fails the
   * transaction (the order's unique index), so nothing of the completion commits.
   */
  async createForFirstCompletion(trx: Tx, teamId: string, orderId: string, lines: FulfillableLine[]): Promise<string | null> {
    const row = newFulfillment(teamId, orderId, lines);
    if (!row) return null;
    await repo.insertFulfillmentWithNext(trx, row);
    return row.id;
  }

  async get(teamId: string, id: string): Promise<FulfillmentView> {
    const f = await this.store.run((db) => repo.findFulfillment(db, teamId, id));
    if (!f) throw notFound('Fulfillment');
    return fulfillmentView(f);
  }

  async list(teamId: string, q: ListQuery & { order_number?: string | undefined; status?: string | undefined }): Promise<Page<FulfillmentView>> {
    return this.store.run(async (db) => {
      const filter = { orderId: q.order_number, status: q.status, createdGte: q.created_gte, createdLte: q.created_lte };
      return listPage(db, 'fulfillments', teamId, q, (afterSeq) => repo.listFulfillments(db, teamId, { limit: q.limit, afterSeq, ...filter }), fulfillmentView);
    });
  }
}
