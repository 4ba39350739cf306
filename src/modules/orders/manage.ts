/**
 * The order page's own actions (issue 17): notes about the order, the QA flag, and cancelling an
 * order no money moved for. Each runs under the order's row lock, so a payment that starts or
 * ends meanwhile is seen before the order is cancelled.
 */
import { ApiError, invalid, notFound } from '../../app/errors.ts';
import type { ListQuery } from '../../app/schemas.ts';
import type { Store, Tx } from '../../db/database.ts';
import type { Page } from '../../db/pagination.ts';
import type { Row } from '../../db/schema.ts';
import type { CustomersService, noteView } from '../customers/service.ts';
import type { LedgerService } from '../ledger/service.ts';
import * as repo from './repo.ts';
import type { OrdersService, OrderView } from './service.ts';
import type { OrderStatus } from './states.ts';

type NoteView = ReturnType<typeof noteView>;

/** Orders a merchant may cancel: nothing was paid yet (a paid order is refunded or voided instead). */
export const CANCELLABLE: readonly OrderStatus[] = ['lead', 'pending', 'declined', 'pending_external_confirmation'];

export interface QaPatch {
  needs_qa: boolean;
  qa_reason?: string | undefined;
}

export class OrderDesk {
  constructor(
    private readonly store: Store,
    private readonly orders: OrdersService,
    private readonly customers: CustomersService,
    private readonly ledger: LedgerService,
  ) {}

  private async locked(trx: Tx, teamId: string, orderNumber: string): Promise<Row<'orders'>> {
    const order = await repo.findOrder(trx, teamId, orderNumber, { forUpdate: true });
    if (!order) throw notFound('Order');
    return order;
  }

  async addNote(teamId: string, orderNumber: string, body: string, author: string): Promise<NoteView> {
    return this.store.transaction(async (trx) => {
      const order = await repo.findOrder(trx, teamId, orderNumber);
      if (!order) throw notFound('Order');
      return this.customers.addOrderNote(trx, teamId, order, body, author);
    });
  }

  async listNotes(teamId: string, orderNumber: string, q: ListQuery): Promise<Page<NoteView>> {
    return this.store.run(async (db) => {
      const order = await repo.findOrder(db, teamId, orderNumber);
      if (!order) throw notFound('Order');
      return this.customers.listOrderNotes(db, teamId, order.id, q);
    });
  }

  /**
   * Sets or clears the QA flag. A change writes `qa.flagged` or `qa.cleared` on the timeline (with
   * the reason and who did it); sending the state the order already has changes nothing.
   */
  async setQa(teamId: string, orderNumber: string, patch: QaPatch, actor: string): Promise<OrderView> {
    if (!patch.needs_qa && patch.qa_reason !== undefined) throw invalid('qa_reason', 'is only accepted with needs_qa true');
    return this.store.transaction(async (trx) => {
      const order = await this.locked(trx, teamId, orderNumber);
      const reason = patch.needs_qa ? (patch.qa_reason ?? order.qa_reason) : null;
      if (order.needs_qa === patch.needs_qa && order.qa_reason === reason) return this.orders.view(trx, teamId, order);
      const event = patch.needs_qa ? { type: 'qa.flagged', data: { reason, by: actor } } : { type: 'qa.cleared', data: { previous_reason: order.qa_reason, by: actor } };
      const updated = await this.orders.updateWithEvents(trx, order, { needs_qa: patch.needs_qa, qa_reason: reason }, [event]);
      return this.orders.view(trx, teamId, updated);
    });
  }

  /**
   * Cancels an order no money moved for: a lead, an unpaid or declined order, or one waiting for
   * the external provider with nothing captured. A cancelled order answers as it is (idempotent).
   * A paid order is refused (refund or void it); so is one whose payment is still awaiting its
   * outcome, since that payment could still succeed on a cancelled order.
   */
  async cancel(teamId: string, orderNumber: string, reason: string | undefined, actor: string): Promise<OrderView> {
    return this.store.transaction(async (trx) => {
      const order = await this.locked(trx, teamId, orderNumber);
      if (order.status === 'cancelled') return this.orders.view(trx, teamId, order);
      const refundOrVoid = `Refund it (POST /v1/orders/${order.id}/refunds) or void its charge (POST /v1/orders/${order.id}/void) instead.`;
      if (!CANCELLABLE.includes(order.status as OrderStatus)) {
        throw new ApiError('conflict', `Order ${order.id} is ${order.status.replace(/_/g, ' ')}: money moved, so it cannot be cancelled. ${refundOrVoid}`);
      }
      const transactions = await this.ledger.orderTransactions(trx, teamId, order.id);
      if (transactions.some((t) => t.status === 'pending')) {
        throw new ApiError('payment_in_progress', `A payment of order ${order.id} is still awaiting its outcome, so it cannot be cancelled now. Void the payment, or retry once it is declined.`);
      }
      if (transactions.some((t) => t.status === 'approved' && t.amount > 0 && t.type !== 'verification')) {
        throw new ApiError('conflict', `Order ${order.id} has an approved charge, so it cannot be cancelled. ${refundOrVoid}`);
      }
      const updated = await this.orders.move(trx, order, { status: 'cancelled' }, { type: 'order.cancelled', data: { from: order.status, reason: reason ?? null, by: actor } });
      return this.orders.view(trx, teamId, updated);
    });
  }
}
