/*
 * The orders API's reads (Get Order, List Orders, the search box), apart from the service's writes.
 */
import { invalid, notFound } from '../../app/errors.ts';
import { iso } from '../../app/schemas.ts';
import type { Executor, Store } from '../../db/database.ts';
import { cursorSeq, type Page, toPage } from '../../db/pagination.ts';
import type { Row } from '../../db/schema.ts';
import type { AffiliateScope } from '../affiliates/service.ts';
import { type CustomersService, normalizeEmail } from '../customers/service.ts';
import { disputeView, type LedgerService, transactionView } from '../ledger/service.ts';
import { visibleToAffiliates } from './affiliate-view.ts';
import * as repo from './repo.ts';
import type { OrderView } from './views.ts';

export interface ListOrdersQuery {
  limit: number;
  starting_after?: string | undefined;
  created_gte?: Date | undefined;
  created_lte?: Date | undefined;
  status?: string | undefined;
  payment_status?: string | undefined;
  campaign_id?: string | undefined;
  customer_email?: string | undefined;
  customer_number?: string | undefined;
  is_test?: boolean | undefined;
  needs_qa?: boolean | undefined;
  rebill_of?: string | undefined;
  affiliate_id?: string | undefined;
  is_throttled?: boolean | undefined;
  q?: string | undefined;
}

/** What the reads need of the orders service. */
export interface OrderReadDeps {
  store: Store;
  customers: CustomersService;
  ledger: LedgerService;
  view(db: Executor, teamId: string, order: Row<'orders'>): Promise<OrderView>;
  views(db: Executor, teamId: string, orders: Row<'orders'>[]): Promise<OrderView[]>;
}

/** An affiliate-scoped caller sees only its affiliates' converted orders; a lead, a throttled or a test order is not found. */
function visibleTo(order: Row<'orders'>, scope: AffiliateScope): boolean {
  return !scope || visibleToAffiliates(order, scope);
}

export async function getOrder(d: OrderReadDeps, teamId: string, orderNumber: string, scope: AffiliateScope) {
  // One snapshot: the order's totals agree with the lines, transactions and disputes shown beside them.
  return d.store.snapshot(async (db) => {
    const order = await repo.findOrder(db, teamId, orderNumber);
    if (!order || !visibleTo(order, scope)) throw notFound('Order');
    const [view, events, transactions, disputes] = [
      await d.view(db, teamId, order),
      await repo.eventsOf(db, teamId, order.id),
      await d.ledger.orderTransactions(db, teamId, order.id),
      await d.ledger.listOrderDisputes(db, teamId, order.id),
    ];
    return {
      ...view,
      transactions: transactions.map(transactionView),
      disputes: disputes.map(disputeView),
      events: events.map((e) => ({ id: e.id, type: e.type, data: e.data, created_at: iso(e.created_at) })),
    };
  });
}

/**
 * The search box: an order number or its start (`ord_…`); four digits are a card's last 4 (the
 * order's transactions or its saved payment method); anything else an e-mail or a first or last
 * name starting with it (case-insensitively).
 */
function search(d: OrderReadDeps, db: Executor, teamId: string, term: string): repo.OrderSearch {
  const t = term.trim();
  if (/^ord_/i.test(t)) return { orderNumberPrefix: `ord_${t.slice(4)}` };
  if (/^\d{4}$/.test(t)) return d.ledger.cardLast4Matches(db, teamId, t);
  return { customerIds: d.customers.idsMatching(db, teamId, t) };
}

export async function listOrders(d: OrderReadDeps, teamId: string, q: ListOrdersQuery, scope: AffiliateScope): Promise<Page<OrderView>> {
  return d.store.run(async (db) => {
    const afterSeq = await cursorSeq(db, 'orders', teamId, q.starting_after);
    if (afterSeq === undefined) throw invalid('starting_after', 'no such object');
    const rows = await repo.listOrders(db, teamId, {
      limit: q.limit,
      afterSeq,
      status: q.status,
      paymentStatus: q.payment_status,
      campaignId: q.campaign_id,
      customerEmail: q.customer_email ? normalizeEmail(q.customer_email) : undefined,
      customerId: q.customer_number,
      isTest: q.is_test,
      needsQa: q.needs_qa,
      rebillOf: q.rebill_of,
      affiliateId: q.affiliate_id,
      isThrottled: q.is_throttled,
      search: q.q ? search(d, db, teamId, q.q) : undefined,
      affiliateScope: scope,
      createdGte: q.created_gte,
      createdLte: q.created_lte,
    });
    const page = toPage(rows, q.limit);
    return { items: await d.views(db, teamId, page.items), has_more: page.has_more };
  });
}
