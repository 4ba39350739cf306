import type { Tx } from '../../db/database.ts';
import { UseCase } from '../checkout/use-case.ts';

/** The 3-D Secure gateway's verified webhooks, dispatched by event type to the one finalize path. */
export class GatewayEvents extends UseCase {
  /**
   * A verified gateway webhook (PAYMENT_SUCCEEDED / PAYMENT_FAILED / PAYMENT_UNDER_REVIEW):
   * deduplicated by event id in the same transaction as its effect, so a redelivery is a no-op
   * and a failed attempt leaves nothing behind for the gateway's retry.
   */
  async applyGatewayEvent(
    gateway: { id: string; team_id: string },
    event: { id: string; type: string; paymentId: string; paymentMethod: string | null; code?: string; message?: string },
    payload: Record<string, unknown>,
  ): Promise<'processed' | 'duplicate' | 'ignored'> {
    const teamId = gateway.team_id;
    let fresh = false;
    const guard = async (trx: Tx) => (fresh = await this.inbound.recordInbound(trx, `gateway:${gateway.id}`, event.id, teamId, event.type, payload));
    const txn = await this.store.run((db) => this.ledger.findByProviderRef(db, teamId, gateway.id, event.paymentId));
    if (!txn) {
      await this.store.transaction((trx) => guard(trx));
      return fresh ? 'ignored' : 'duplicate';
    }
    if (event.type === 'PAYMENT_SUCCEEDED') {
      await this.uc.finalize.finalizeFirstPayment(teamId, txn.order_id, txn.id, { approved: true, paymentMethod: event.paymentMethod }, guard);
    } else if (event.type === 'PAYMENT_FAILED') {
      await this.uc.finalize.finalizeFirstPayment(teamId, txn.order_id, txn.id, { approved: false, code: event.code ?? 'declined', message: event.message ?? 'The payment failed.' }, guard);
    } else if (event.type === 'PAYMENT_UNDER_REVIEW') {
      await this.uc.finalize.markUnderReview(teamId, txn.order_id, txn.id, guard);
    } else {
      await this.store.transaction((trx) => guard(trx));
      return fresh ? 'ignored' : 'duplicate';
    }
    return fresh ? 'processed' : 'duplicate';
  }
}
