/**
 * Reconciles the provider's ledger (the sandbox's NMI account, the truth about money) with the
 * database (what Checkstand recorded). Pure: the crash test fetches both and hands them here, and
 * ledger-check.test.ts feeds it small made-up cases.
 *
 * (a) every approved NMI sale is recorded: an approved `sale` transaction whose provider_ref is
 *     the NMI transactionid, and the NMI `orderid` (our attempt id) is that same transaction;
 * (b) no order is charged twice for one step (its first payment, or one upsell);
 * (c) no order is left without a way forward: nothing still pending (outcome unknown), no
 *     `pending` order outside a redirect, no upsell claim still in flight;
 * (d) no double refund: per NMI sale, what NMI refunded equals the approved refunds recorded
 *     against it (and never exceeds the sale), every NMI refund is recorded, and each order's
 *     refunded_total is the sum of its approved refunds;
 * (e) no record without money: every approved sale on the gateway is an approved NMI sale of the
 *     same amount, and a paid order's total is what was charged for it.
 */
import type { DbOrder, DbRecords, DbTransaction } from './database.ts';

/** One entry of GET /sandbox/nmi/ledger (src/sandbox/nmi-gateway.ts, NmiLedgerView). */
export interface NmiEntry {
  transactionid: string | null;
  type: string;
  amount_minor: number | null;
  status: string;
  response_code?: string;
  orderid: string | null;
  parent_transactionid: string | null;
  customer_vault_id?: string | null;
  refunded_minor?: number;
  voided?: boolean;
}

export interface CheckCounts {
  /** (a) approved NMI charges without their approved sale transaction. */
  unrecordedCharges: number;
  /** …of which no approved sale has the NMI transactionid as provider_ref. */
  unrecordedByRef: number;
  /** …of which the NMI orderid is not an approved sale transaction carrying that transactionid. */
  unrecordedByOrderId: number;
  /** (b) orders charged more than once for one step. */
  doubleChargedOrders: number;
  /** (b) steps (order × first payment / upsell) with more than one approved charge. */
  doubleChargedSteps: number;
  /** (b) orders with more approved NMI sales than 1 + their upsell claims. */
  ordersOverChargeCount: number;
  /** (c) orders left without a way forward. */
  stuckOrders: number;
  /** (c) transactions still pending or in flight (outcome never recorded). */
  pendingTransactions: number;
  /** (c) orders in status `pending` outside a redirect. */
  pendingOrders: number;
  /** (c) upsell claims still `in_flight`. */
  inFlightUpsellClaims: number;
  /** (d) refund problems: NMI sales whose refunds differ from the records + unrecorded NMI refunds + orders whose refunded_total is off. */
  refundMismatches: number;
  refundMismatchedSales: number;
  unrecordedRefunds: number;
  refundedTotalMismatches: number;
  /** (e) approved sale records without the matching NMI sale, and paid orders whose total is not what was charged. */
  recordsWithoutMoney: number;
  phantomSales: number;
  paidTotalMismatches: number;
}

export interface CheckTotals {
  nmiApprovedSales: number;
  nmiOtherSales: number;
  nmiChargedMinor: number;
  nmiApprovedRefunds: number;
  nmiRefundedMinor: number;
  dbApprovedSales: number;
  dbApprovedRefunds: number;
  dbRefundedMinor: number;
  ordersByStatus: Record<string, number>;
}

export interface CheckReport {
  counts: CheckCounts;
  totals: CheckTotals;
  /** A few examples per problem, for the log. */
  examples: Record<string, string[]>;
}

const MAX_EXAMPLES = 5;

/** Charges the gateway never saw: test cards and free upsells have made-up refs. */
function onGateway(t: DbTransaction): boolean {
  return !!t.provider_ref && !t.provider_ref.startsWith('test_') && !t.provider_ref.startsWith('none_');
}

function stepOf(t: DbTransaction): string {
  return t.upsell_id ? `upsell:${t.upsell_id}` : 'first_payment';
}

export function checkLedger(nmi: NmiEntry[], db: DbRecords): CheckReport {
  const examples: Record<string, string[]> = {};
  const note = (kind: string, text: string) => {
    const list = (examples[kind] ??= []);
    if (list.length < MAX_EXAMPLES) list.push(text);
  };

  const txById = new Map(db.transactions.map((t) => [t.id, t]));
  const approvedSalesByRef = new Map<string, DbTransaction>();
  const approvedRefundsByRef = new Map<string, DbTransaction>();
  for (const t of db.transactions) {
    if (t.status !== 'approved' || !t.provider_ref) continue;
    if (t.type === 'sale') approvedSalesByRef.set(t.provider_ref, t);
    if (t.type === 'refund') approvedRefundsByRef.set(t.provider_ref, t);
  }

  const nmiSales = nmi.filter((e) => e.type === 'sale');
  const nmiApproved = nmiSales.filter((e) => e.status === 'approved' && e.transactionid);
  const nmiApprovedByRef = new Map(nmiApproved.map((e) => [e.transactionid!, e]));
  const nmiRefunds = nmi.filter((e) => e.type === 'refund' && e.status === 'approved' && e.transactionid);

  // (a) every approved NMI charge has its record, found both ways.
  let unrecordedByRef = 0;
  let unrecordedByOrderId = 0;
  let unrecordedCharges = 0;
  /** The DB transaction each approved NMI sale belongs to (through orderid, else provider_ref). */
  const saleOf = new Map<string, DbTransaction>();
  for (const e of nmiApproved) {
    const byRef = approvedSalesByRef.get(e.transactionid!);
    const byOrderId = e.orderid ? txById.get(e.orderid) : undefined;
    const refMissing = !byRef;
    const orderIdMissing = !byOrderId || byOrderId.type !== 'sale' || byOrderId.status !== 'approved' || byOrderId.provider_ref !== e.transactionid;
    if (refMissing) unrecordedByRef++;
    if (orderIdMissing) unrecordedByOrderId++;
    if (refMissing || orderIdMissing) {
      unrecordedCharges++;
      const seen = byOrderId ? `transaction ${byOrderId.id} is ${byOrderId.type}/${byOrderId.status} ref ${byOrderId.provider_ref ?? 'null'}` : 'no transaction with that id';
      note('a', `NMI sale ${e.transactionid} (${e.amount_minor} minor, orderid ${e.orderid ?? 'null'}): ${refMissing ? 'no approved sale with this provider_ref; ' : ''}${seen}`);
    }
    const mapped = byOrderId ?? byRef;
    if (mapped) saleOf.set(e.transactionid!, mapped);
  }

  // (b) at most one approved charge per order and step, counted on both sides.
  const nmiPerStep = new Map<string, string[]>();
  const nmiPerOrder = new Map<string, number>();
  for (const [ref, t] of saleOf) {
    const key = `${t.order_id} ${stepOf(t)}`;
    nmiPerStep.set(key, [...(nmiPerStep.get(key) ?? []), ref]);
    nmiPerOrder.set(t.order_id, (nmiPerOrder.get(t.order_id) ?? 0) + 1);
  }
  const dbPerStep = new Map<string, string[]>();
  for (const t of db.transactions) {
    if (t.type !== 'sale' || t.status !== 'approved') continue;
    const key = `${t.order_id} ${stepOf(t)}`;
    dbPerStep.set(key, [...(dbPerStep.get(key) ?? []), t.id]);
  }
  const doubleSteps = new Set<string>();
  for (const [key, refs] of nmiPerStep) {
    if (refs.length < 2) continue;
    doubleSteps.add(key);
    note('b', `${key}: ${refs.length} approved NMI sales (${refs.join(', ')})`);
  }
  for (const [key, ids] of dbPerStep) {
    if (ids.length < 2 || doubleSteps.has(key)) continue;
    doubleSteps.add(key);
    note('b', `${key}: ${ids.length} approved sale transactions (${ids.join(', ')})`);
  }
  const claimsPerOrder = new Map<string, number>();
  for (const u of db.orderUpsells) claimsPerOrder.set(u.order_id, (claimsPerOrder.get(u.order_id) ?? 0) + 1);
  let ordersOverChargeCount = 0;
  const doubleOrders = new Set([...doubleSteps].map((k) => k.split(' ')[0]!));
  for (const [orderId, n] of nmiPerOrder) {
    const allowed = 1 + (claimsPerOrder.get(orderId) ?? 0);
    if (n > allowed) {
      ordersOverChargeCount++;
      doubleOrders.add(orderId);
      note('b', `order ${orderId}: ${n} approved NMI sales, at most ${allowed} expected (1 + ${allowed - 1} upsells)`);
    }
  }

  // (c) a way forward for every order.
  const stuck = new Set<string>();
  const unknown = db.transactions.filter((t) => t.status === 'pending' || t.in_flight === true);
  for (const t of unknown) {
    stuck.add(t.order_id);
    note('c', `transaction ${t.id} (${t.type} ${stepOf(t)}, order ${t.order_id}) is still ${t.status}${t.in_flight ? ', in flight' : ''}`);
  }
  const pendingOrders = db.orders.filter((o) => o.status === 'pending' && o.payment_status !== 'pending_redirect');
  for (const o of pendingOrders) {
    stuck.add(o.id);
    const txns = db.transactions.filter((t) => t.order_id === o.id).map((t) => `${t.type}/${t.status}`);
    note('c', `order ${o.id} is pending (payment_status ${o.payment_status ?? 'null'}, claim ${o.payment_started_at ? 'held' : 'none'}; transactions: ${txns.join(', ') || 'none'})`);
  }
  const inFlightClaims = db.orderUpsells.filter((u) => u.status === 'in_flight');
  for (const u of inFlightClaims) {
    stuck.add(u.order_id);
    note('c', `upsell claim ${u.id} (order ${u.order_id}, upsell ${u.upsell_id}) is still in_flight`);
  }

  // (d) refunds: NMI's refunded amount per sale equals the approved refunds recorded against it.
  const dbRefundedBySale = new Map<string, number>();
  const dbRefundedByOrder = new Map<string, number>();
  let dbApprovedRefunds = 0;
  let dbRefundedMinor = 0;
  for (const t of db.transactions) {
    if (t.type !== 'refund' || t.status !== 'approved') continue;
    dbApprovedRefunds++;
    dbRefundedMinor += t.amount;
    if (t.parent_id) dbRefundedBySale.set(t.parent_id, (dbRefundedBySale.get(t.parent_id) ?? 0) + t.amount);
    dbRefundedByOrder.set(t.order_id, (dbRefundedByOrder.get(t.order_id) ?? 0) + t.amount);
  }
  let refundMismatchedSales = 0;
  for (const e of nmiApproved) {
    const nmiRefunded = e.refunded_minor ?? 0;
    const sale = saleOf.get(e.transactionid!);
    const recorded = sale ? (dbRefundedBySale.get(sale.id) ?? 0) : 0;
    const over = nmiRefunded > (e.amount_minor ?? 0);
    if (nmiRefunded !== recorded || over) {
      refundMismatchedSales++;
      note('d', `NMI sale ${e.transactionid} (${e.amount_minor} minor): NMI refunded ${nmiRefunded}, recorded approved refunds ${recorded}${sale ? ` (sale ${sale.id})` : ' (no sale record)'}`);
    }
  }
  let unrecordedRefunds = 0;
  for (const e of nmiRefunds) {
    if (approvedRefundsByRef.has(e.transactionid!)) continue;
    unrecordedRefunds++;
    note('d', `NMI refund ${e.transactionid} (${e.amount_minor} minor of sale ${e.parent_transactionid}) has no approved refund transaction`);
  }
  let refundedTotalMismatches = 0;
  for (const o of db.orders) {
    const sum = dbRefundedByOrder.get(o.id) ?? 0;
    if (o.refunded_total !== sum) {
      refundedTotalMismatches++;
      note('d', `order ${o.id}: refunded_total ${o.refunded_total}, approved refunds add up to ${sum}`);
    }
  }

  // (e) every approved sale record is money that moved, and a paid order's total was charged.
  let phantomSales = 0;
  const chargedByOrder = new Map<string, number>();
  let dbApprovedSales = 0;
  for (const t of db.transactions) {
    if (t.type !== 'sale' || t.status !== 'approved') continue;
    dbApprovedSales++;
    chargedByOrder.set(t.order_id, (chargedByOrder.get(t.order_id) ?? 0) + t.amount);
    if (!onGateway(t)) continue;
    const e = nmiApprovedByRef.get(t.provider_ref!);
    if (!e || e.amount_minor !== t.amount) {
      phantomSales++;
      note('e', `sale ${t.id} (${t.amount} minor, order ${t.order_id}) is approved with provider_ref ${t.provider_ref}, ${e ? `but NMI charged ${e.amount_minor}` : 'which is no approved NMI sale'}`);
    }
  }
  let paidTotalMismatches = 0;
  const paid = (o: DbOrder) => o.payment_status === 'completed';
  for (const o of db.orders) {
    if (!paid(o)) continue;
    const charged = chargedByOrder.get(o.id) ?? 0;
    if (charged !== o.total) {
      paidTotalMismatches++;
      note('e', `order ${o.id} (${o.status}) totals ${o.total} but its approved sales add up to ${charged}`);
    }
  }

  const ordersByStatus: Record<string, number> = {};
  for (const o of db.orders) {
    const k = o.payment_status ? `${o.status}/${o.payment_status}` : o.status;
    ordersByStatus[k] = (ordersByStatus[k] ?? 0) + 1;
  }
  return {
    counts: {
      unrecordedCharges,
      unrecordedByRef,
      unrecordedByOrderId,
      doubleChargedOrders: doubleOrders.size,
      doubleChargedSteps: doubleSteps.size,
      ordersOverChargeCount,
      stuckOrders: stuck.size,
      pendingTransactions: unknown.length,
      pendingOrders: pendingOrders.length,
      inFlightUpsellClaims: inFlightClaims.length,
      refundMismatches: refundMismatchedSales + unrecordedRefunds + refundedTotalMismatches,
      refundMismatchedSales,
      unrecordedRefunds,
      refundedTotalMismatches,
      recordsWithoutMoney: phantomSales + paidTotalMismatches,
      phantomSales,
      paidTotalMismatches,
    },
    totals: {
      nmiApprovedSales: nmiApproved.length,
      nmiOtherSales: nmiSales.length - nmiApproved.length,
      nmiChargedMinor: nmiApproved.reduce((s, e) => s + (e.amount_minor ?? 0), 0),
      nmiApprovedRefunds: nmiRefunds.length,
      nmiRefundedMinor: nmiRefunds.reduce((s, e) => s + (e.amount_minor ?? 0), 0),
      dbApprovedSales,
      dbApprovedRefunds,
      dbRefundedMinor,
      ordersByStatus,
    },
    examples,
  };
}
