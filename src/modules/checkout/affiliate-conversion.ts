import type { Tx } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import type { AffiliatesService } from '../affiliates/service.ts';
import type { OrdersService } from '../orders/service.ts';

/**
 * A first payment was approved: the affiliate's conversion (spec 2.3's throttle decision, the
 * commission, the postback) in the transaction that records the approval, under the order's row
 * lock. An automatic throttle is written on the order at once, so the answer's `is_throttled`
 * and every event after it carry it. Returns the order as it now is.
 */
export async function convertAffiliateOrder(
  d: { affiliates: AffiliatesService; orders: OrdersService },
  trx: Tx,
  order: Row<'orders'>,
  charge: { transactionId: string | null; amount: number },
): Promise<Row<'orders'>> {
  const decision = await d.affiliates.recordConversion(trx, order, charge);
  if (!decision) return order;
  await d.orders.recordEvents(trx, order.team_id, order.id, [
    { type: 'affiliate.converted', data: { affiliate_id: order.affiliate_id, throttled: decision.throttled, reason: decision.reason } },
  ]);
  if (!decision.throttled || order.is_throttle) return order;
  return d.orders.rows.updateOrder(trx, order.team_id, order.id, { is_throttle: true });
}
