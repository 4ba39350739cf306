import type { Schemas } from '../../lib/api.ts';

type Transaction = Schemas['Transaction'];

export interface Charge {
  txn: Transaction;
  /** What is left to refund (minor units): the amount less approved and in-flight refunds. */
  refundable: number;
  refunded: number;
  voided: boolean;
  /** A void is possible: not voided, nothing refunded yet. */
  voidable: boolean;
}

/**
 * The order's charges the API can reverse (approved sales), with what is left of each, computed
 * as the API does (ledger/service: refunds and voids in `approved` or `pending` against the sale).
 */
export function chargesOf(transactions: Transaction[]): Charge[] {
  return transactions
    .filter((t) => t.type === 'sale' && t.status === 'approved')
    .map((txn) => {
      const children = transactions.filter((c) => c.parent_id === txn.id && (c.status === 'approved' || c.status === 'pending'));
      const refunded = children.filter((c) => c.type === 'refund').reduce((s, c) => s + c.amount, 0);
      const voided = children.some((c) => c.type === 'void');
      return { txn, refunded, voided, refundable: voided ? 0 : Math.max(0, txn.amount - refunded), voidable: !voided && refunded === 0 };
    });
}

export function chargeLabel(c: Charge, money: (n: number) => string): string {
  const card = c.txn.card ? `${c.txn.card.brand ?? 'card'} •••• ${c.txn.card.last4}` : c.txn.connection_id ? 'extpay' : 'payment';
  return `${money(c.txn.amount)} · ${card} · ${c.txn.upsell_id ? 'upsell' : 'first payment'} (${c.txn.id})`;
}
