import { notFound } from '../../app/errors.ts';
import { iso, type ListQuery } from '../../app/schemas.ts';
import { newId } from '../../app/ids.ts';
import type { Store, Tx } from '../../db/database.ts';
import { listPage, type Page } from '../../db/pagination.ts';
import type { Row } from '../../db/schema.ts';
import * as repo from './repo.ts';

export function fulfillmentView(f: Row<'fulfillments'>) {
  return {
    object: 'fulfillment' as const,
    id: f.id,
    order_number: f.order_id,
    status: f.status,
    lines: f.lines,
    tracking_number: f.tracking_number,
    carrier: f.carrier,
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

export class FulfillmentsService {
  constructor(private readonly store: Store) {}

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
    const physical = lines.filter((l) => l.fulfillment_type === 'physical');
    if (physical.length === 0) return null;
    const row = await repo.insertFulfillmentOnce(trx, {
      id: newId('fulfillment'),
      team_id: teamId,
      order_id: orderId,
      status: 'pending',
      lines: JSON.stringify(physical.map((l) => ({ line_id: l.id, offer_id: l.offer_id, product_id: l.product_id, name: l.name, quantity: l.quantity }))),
    });
    return row ?? null;
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
