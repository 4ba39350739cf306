import { randomToken } from '../../app/ids.ts';
import type { Tx } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import * as repo from './repo.ts';

export const DEFAULT_HOLD_DAYS = 30;
const DAY_MS = 86_400_000;

export type CommissionKind = Row<'affiliate_commissions'>['kind'];

/** What the affiliate's rule pays on one charge (minor units, rounded down); null when the rule pays nothing for this kind. */
export function commissionFor(a: Row<'affiliates'>, kind: CommissionKind, chargeAmount: number): number | null {
  if (a.commission_type === 'none') return null;
  if (kind === 'upsell' && !a.commission_on_upsells) return null;
  if (kind === 'rebill' && !a.commission_on_rebills) return null;
  if (a.commission_type === 'fixed') return a.commission_amount ?? 0;
  return Math.floor((chargeAmount * (a.commission_percent_bp ?? 0)) / 10_000);
}

export interface Earned {
  affiliate: Row<'affiliates'>;
  order: Row<'orders'>;
  kind: CommissionKind;
  transactionId: string;
  chargeAmount: number;
  holdDays: number;
}

/**
 * Writes the commission of one charge, pending until the hold runs out (then payable), in the
 * transaction that recorded the charge. The caller never calls it for a throttled order (spec 2.3).
 * One per (kind, charge): a repeat does nothing.
 */
export async function earnCommission(trx: Tx, e: Earned): Promise<Row<'affiliate_commissions'> | null> {
  const amount = commissionFor(e.affiliate, e.kind, e.chargeAmount);
  if (amount === null || e.order.is_throttle) return null;
  const holdDays = e.affiliate.commission_hold_days ?? e.holdDays;
  const row = await repo.insertCommission(trx, {
    id: `com_${randomToken()}`,
    team_id: e.order.team_id,
    affiliate_id: e.affiliate.id,
    order_id: e.order.id,
    kind: e.kind,
    transaction_id: e.transactionId,
    amount,
    currency: e.order.currency,
    status: holdDays === 0 ? 'payable' : 'pending',
    payable_at: new Date(Date.now() + holdDays * DAY_MS),
    sub1: e.order.affiliate_sub1,
    sub2: e.order.affiliate_sub2,
    sub3: e.order.affiliate_sub3,
    sub4: e.order.affiliate_sub4,
    sub5: e.order.affiliate_sub5,
  });
  return row ?? null;
}

/** A refund, void or chargeback of a charge reverses the commission earned on it (whole, whatever the amount refunded). */
export function reverseCommissionsOf(trx: Tx, teamId: string, orderId: string, chargeId: string | null, reason: string) {
  return repo.reverseCommissions(trx, teamId, orderId, chargeId ? [chargeId] : null, reason);
}
