/**
 * The crash test's reconciliation on made-up ledgers and records: a clean run counts nothing,
 * and each kind of damage a crash can leave is counted where it belongs. Fast; no processes.
 */
import { describe, expect, it } from 'vitest';
import type { DbOrder, DbRecords, DbTransaction } from './database.ts';
import { checkLedger, type NmiEntry } from './ledger-check.ts';

const at = new Date('2030-01-01T00:00:00Z');

function sale(id: string, orderId: string, amount: number, ref: string | null, extra: Partial<DbTransaction> = {}): DbTransaction {
  return { id, order_id: orderId, type: 'sale', status: 'approved', amount, provider_ref: ref, upsell_id: null, parent_id: null, response_code: '100', created_at: at, ...extra };
}

function refund(id: string, orderId: string, parent: string, amount: number, ref: string | null, status = 'approved'): DbTransaction {
  return { id, order_id: orderId, type: 'refund', status, amount, provider_ref: ref, upsell_id: null, parent_id: parent, response_code: '100', created_at: at };
}

function order(id: string, total: number, extra: Partial<DbOrder> = {}): DbOrder {
  return { id, status: 'completed', payment_status: 'completed', total, refunded_total: 0, payment_started_at: null, ...extra };
}

function nmiSale(transactionid: string, orderid: string | null, amount: number, refunded = 0, status = 'approved'): NmiEntry {
  return { transactionid, type: 'sale', amount_minor: amount, status, orderid, parent_transactionid: null, refunded_minor: refunded, voided: false };
}

function nmiRefund(transactionid: string, parent: string, amount: number): NmiEntry {
  return { transactionid, type: 'refund', amount_minor: amount, status: 'approved', orderid: null, parent_transactionid: parent };
}

/** One order: a first payment of 4395, an upsell of 900, a partial refund of 500 on the first. */
function clean(): { nmi: NmiEntry[]; db: DbRecords } {
  return {
    nmi: [nmiSale('1001', 'txn_a', 4395, 500), nmiSale('1002', 'txn_b', 900), nmiRefund('1003', '1001', 500), nmiSale('1004', 'txn_x', 4395, 0, 'declined')],
    db: {
      transactions: [
        sale('txn_a', 'ord_1', 4395, '1001'),
        sale('txn_b', 'ord_1', 900, '1002', { upsell_id: 'ups_1' }),
        refund('txn_r', 'ord_1', 'txn_a', 500, '1003'),
        sale('txn_x', 'ord_2', 4395, '1004', { status: 'declined' }),
      ],
      orders: [order('ord_1', 5295, { refunded_total: 500 }), order('ord_2', 4395, { status: 'declined', payment_status: 'declined' })],
      orderUpsells: [{ id: 'ou_1', order_id: 'ord_1', upsell_id: 'ups_1', status: 'approved', transaction_id: 'txn_b' }],
    },
  };
}

describe('checkLedger', () => {
  it('counts nothing on a clean run', () => {
    const { nmi, db } = clean();
    const r = checkLedger(nmi, db);
    expect(Object.values(r.counts).every((n) => n === 0), JSON.stringify(r)).toBe(true);
    expect(r.totals).toMatchObject({ nmiApprovedSales: 2, nmiOtherSales: 1, nmiChargedMinor: 5295, nmiApprovedRefunds: 1, dbApprovedSales: 2, dbApprovedRefunds: 1 });
  });

  it('(a) an approved charge whose record never came, or was left pending, or carries another ref', () => {
    const { nmi, db } = clean();
    nmi.push(nmiSale('2001', 'txn_lost', 4395), nmiSale('2002', 'txn_pending', 4395), nmiSale('2003', 'txn_other', 4395));
    db.transactions.push(sale('txn_pending', 'ord_3', 4395, null, { status: 'pending' }), sale('txn_other', 'ord_4', 4395, '9999'));
    db.orders.push(order('ord_3', 4395, { status: 'pending', payment_status: null }), order('ord_4', 4395));
    const c = checkLedger(nmi, db).counts;
    expect(c.unrecordedCharges).toBe(3);
    expect(c.unrecordedByRef).toBe(3);
    expect(c.unrecordedByOrderId).toBe(3);
  });

  it('(b) a step charged twice, at the provider or in the records', () => {
    const { nmi, db } = clean();
    // The first payment charged again under a second attempt of the same order.
    nmi.push(nmiSale('3001', 'txn_a2', 4395));
    db.transactions.push(sale('txn_a2', 'ord_1', 4395, '3001'));
    const c = checkLedger(nmi, db).counts;
    expect(c.doubleChargedOrders).toBe(1);
    expect(c.doubleChargedSteps).toBe(1);
    expect(c.ordersOverChargeCount).toBe(1);
  });

  it('(c) an outcome still unknown, an order stuck in pending, an upsell claim in flight', () => {
    const { nmi, db } = clean();
    db.transactions.push(refund('txn_r2', 'ord_1', 'txn_a', 100, null, 'pending'));
    db.transactions.push(sale('txn_f', 'ord_5', 4395, null, { status: 'declined', in_flight: true }));
    db.orders.push(order('ord_5', 4395, { status: 'declined', payment_status: 'declined' }));
    db.orders.push(order('ord_6', 4395, { status: 'pending', payment_status: null, payment_started_at: at }));
    db.orders.push(order('ord_7', 4395, { status: 'pending', payment_status: 'pending_redirect' }));
    db.orderUpsells.push({ id: 'ou_2', order_id: 'ord_8', upsell_id: 'ups_1', status: 'in_flight', transaction_id: null });
    const c = checkLedger(nmi, db).counts;
    expect(c.pendingTransactions).toBe(2);
    expect(c.pendingOrders).toBe(1);
    expect(c.inFlightUpsellClaims).toBe(1);
    expect(c.stuckOrders).toBe(4); // ord_1, ord_5, ord_6, ord_8; the redirect is waiting on the customer
  });

  it('(d) a refund the provider made twice, one it made that nobody recorded, a refunded_total that is off', () => {
    const { nmi, db } = clean();
    nmi.push(nmiRefund('4001', '1001', 500));
    nmi[0]!.refunded_minor = 1000;
    db.orders[1]!.refunded_total = 300;
    const c = checkLedger(nmi, db).counts;
    expect(c.refundMismatchedSales).toBe(1);
    expect(c.unrecordedRefunds).toBe(1);
    expect(c.refundedTotalMismatches).toBe(1);
    expect(c.refundMismatches).toBe(3);
  });

  it('(e) an approved record with no charge behind it, and a paid order whose total is not what was charged', () => {
    const { nmi, db } = clean();
    db.transactions.push(sale('txn_ghost', 'ord_2', 4395, '5555'));
    db.orders[1] = order('ord_2', 4395);
    db.orders[0]!.total = 4395; // the upsell was charged, its line never added
    const c = checkLedger(nmi, db).counts;
    expect(c.phantomSales).toBe(1);
    expect(c.paidTotalMismatches).toBe(1);
  });
});
