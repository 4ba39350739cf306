import { type Compilable, type OperationNodeSource, sql } from 'kysely';
import { deferWrite, type Executor, firstWithNext } from '../../db/database.ts';
import { firstRow, template, templatesBy } from '../../db/templates.ts';
import { CONVERTED_PAYMENT_STATUSES } from './affiliate-view.ts';
import type { IdSubquery, KeyedIdSubquery, NewRow, Row, RowPatch } from '../../db/schema.ts';
export * from './upsell-claims.ts';
export * from './lines-repo.ts';

/** What the search box (`q`) matches; an order matches any of the parts given (OR). */
export interface OrderSearch {
  /** Order numbers starting with this (an exact number is its own prefix). */
  orderNumberPrefix?: string | undefined;
  customerIds?: IdSubquery | undefined;
  orderIds?: IdSubquery | undefined;
  paymentMethodIds?: IdSubquery | undefined;
}

export async function insertOrder(db: Executor, row: NewRow<'orders'>): Promise<Row<'orders'>> {
  return db.insertInto('orders').values(row).returningAll().executeTakeFirstOrThrow();
}

/** The columns of a new lead's line the lead's statement writes (the order's id is the order's). */
export type NewLeadLine = Omit<NewRow<'order_lines'>, 'order_id'>;

/**
 * A new lead as one statement, committed on its own (no BEGIN, no COMMIT, one round trip): the
 * customer's upsert (the customers module's query, as the CTE "customer"), the order naming that
 * customer, and the order's lines and `lead.created` timeline row, written only when the order was.
 * When the customer already has an open lead in the campaign, the order's insert does nothing, nor
 * do the lines' and the timeline's (they are selected from the order's row), and only the upsert is
 * kept. The statement is all or nothing: a failure of any part leaves none of it.
 *
 * Answers one row: the order's columns (all null when it was not inserted) and the customer's row
 * as JSON in `customer_row`, for the customers module to read (customerFromJson).
 */
export function insertNewLeadQuery(
  db: Executor,
  upsertCustomer: CustomerUpsert,
  customer: NewRow<'customers'>,
  row: Omit<NewRow<'orders'>, 'customer_id'>,
  lines: NewLeadLine[],
  event: { id: string; type: string; data: Record<string, unknown> },
) {
  const lead = newLead(upsertCustomer);
  // The lines and the event's data as one JSON parameter each: the statement's text is the same for any number of lines.
  return lead(db, customer, row, JSON.stringify(lines), event.id, event.type, JSON.stringify(event.data));
}

/** The customers module's upsert of a customer's row, as a query (its table is its own). */
export type CustomerUpsert = (db: Executor, row: NewRow<'customers'>) => OperationNodeSource & Compilable<Row<'customers'>>;

/** The new lead's statement per customer upsert (one in practice: the customers module's). */
const newLead = templatesBy(newLeadTemplate);

function newLeadTemplate(upsertCustomer: CustomerUpsert) {
  return template(
    ['row', 'row', 'value', 'value', 'value', 'value'],
    (db: Executor, customer: NewRow<'customers'>, row: Omit<NewRow<'orders'>, 'customer_id'>, linesJson: string, eventId: string, eventType: string, eventDataJson: string) =>
      db
        .with('customer', () => upsertCustomer(db, customer) as never)
        .with('order', (q) =>
          q
            .insertInto('orders')
            .values({ ...row, customer_id: sql<string>`(select "id" from "customer")` })
            // A literal, not a parameter: a prepared statement cannot match a parameter to the partial index's predicate (42P10).
            .onConflict((oc) => oc.columns(['team_id', 'campaign_id', 'customer_id']).where('status', '=', sql.lit('lead')).doNothing())
            .returningAll(),
        )
        // One parameter for all the lines (a JSON array read as order_lines rows), so the statement's
        // text, and its prepared statement, is the same for any number of lines; in the array's order.
        .with('lines', (q) =>
          q
            .insertInto('order_lines')
            .columns(['id', 'team_id', 'order_id', 'offer_id', 'product_id', 'upsell_id', 'name', 'quantity', 'unit_price', 'shipping', 'line_total', 'billing_type', 'fulfillment_type'])
            .expression(
              sql`select l.id, l.team_id, o.id, l.offer_id, l.product_id, l.upsell_id, l.name, l.quantity, l.unit_price, l.shipping, l.line_total, l.billing_type, l.fulfillment_type
                  from "order" o cross join json_populate_recordset(null::order_lines, ${linesJson}::json) with ordinality as l
                  order by l.ordinality`,
            ),
        )
        // The customer's number is the upsert's (an existing customer keeps theirs), so the timeline
        // row's data takes it from the order's row.
        .with('timeline', (q) =>
          q
            .insertInto('order_events')
            .columns(['id', 'team_id', 'order_id', 'type', 'data'])
            .expression(sql`select ${eventId}, o.team_id, o.id, ${eventType}, ${eventDataJson}::jsonb || jsonb_build_object('customer_number', o.customer_id) from "order" o`),
        )
        .selectFrom(sql<Row<'customers'>>`"customer"`.as('c'))
        .leftJoin('order as o', (j) => j.onTrue())
        .selectAll('o')
        .select(sql<Record<string, unknown>>`to_jsonb(c)`.as('customer_row')),
  );
}

export async function findOrder(db: Executor, teamId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<Row<'orders'> | undefined> {
  return firstRow(db, findOrderQuery(db, teamId, id, opts));
}

function findOrderQuery(db: Executor, teamId: string, id: string, opts: { forUpdate?: boolean } = {}) {
  return opts.forUpdate ? orderForUpdate(db, teamId, id) : orderByKey(db, teamId, id);
}

const orderQuery = (db: Executor, teamId: string, id: string) => db.selectFrom('orders').selectAll().where('team_id', '=', teamId).where('id', '=', id);
// Two templates: FOR UPDATE is part of the SQL, not a value.
const orderByKey = template(['value', 'value'], orderQuery);
const orderForUpdate = template(['value', 'value'], (db: Executor, teamId: string, id: string) => orderQuery(db, teamId, id).forUpdate());

/** The order under its row lock, as a query to send with others (readTogether): the statements after it run once the lock is granted. */
export function lockOrderQuery(db: Executor, teamId: string, id: string) {
  return orderForUpdate(db, teamId, id);
}

/**
 * The order's customer and its saved payment method by the order's id, as subqueries for the
 * customers and ledger modules' reads of those rows (KeyedIdSubquery): sent with the order's lock,
 * they read the order as locked.
 */
export const customerIdOfOrder: KeyedIdSubquery = (db, teamId, orderId) =>
  db.selectFrom('orders').select('customer_id').where('team_id', '=', teamId).where('id', '=', orderId);
export const paymentMethodIdOfOrder: KeyedIdSubquery = (db, teamId, orderId) =>
  db.selectFrom('orders').select('payment_method_id').where('team_id', '=', teamId).where('id', '=', orderId);

/**
 * The order's row lock, taken with the next statement the transaction sends (sendWithNext): for a
 * caller whose next statements do not depend on the order's columns. They run after the lock is
 * granted, as if it had been awaited first.
 */
export function lockOrderWithNext(db: Executor, teamId: string, id: string): Promise<Row<'orders'> | undefined> {
  return firstWithNext(db, findOrderQuery(db, teamId, id, { forUpdate: true }));
}

export async function findOpenLead(db: Executor, teamId: string, campaignId: string, customerId: string): Promise<Row<'orders'> | undefined> {
  return db
    .selectFrom('orders')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('campaign_id', '=', campaignId)
    .where('customer_id', '=', customerId)
    .where('status', '=', 'lead')
    .forUpdate()
    .executeTakeFirst();
}

export async function updateOrder(db: Executor, teamId: string, id: string, patch: RowPatch<'orders'>): Promise<Row<'orders'>> {
  return updateOrderWithEvents(db, teamId, id, patch, []);
}

/**
 * The order's row update and its timeline rows in one statement (a data-modifying CTE): one round
 * trip where a status move and its order_events row used to take two.
 */
export async function updateOrderWithEvents(db: Executor, teamId: string, id: string, patch: RowPatch<'orders'>, events: NewRow<'order_events'>[]): Promise<Row<'orders'>> {
  const q: Pick<Executor, 'updateTable'> = events.length > 0 ? db.with('timeline', (t) => t.insertInto('order_events').values(events)) : db;
  return q.updateTable('orders').set({ ...patch, updated_at: new Date() }).where('team_id', '=', teamId).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

/** The order's JSON columns: an address is written as its JSON text and read back as an object. */
const JSON_COLUMNS = ['shipping_address', 'billing_address'] as const satisfies ReadonlyArray<keyof RowPatch<'orders'>>;

/** What an update of a held order may write: the row's plain columns (no JSON column, no SQL expression). */
export type HeldOrderPatch = Omit<RowPatch<'orders'>, (typeof JSON_COLUMNS)[number]>;

/**
 * Whether a patch of an order is one updateHeldOrder() may write: no JSON column (an address is
 * written as its JSON text and read back as an object, so the row must come back from the
 * database) and plain values only (a string, a number, a boolean, a date, null).
 */
export function isHeldOrderPatch(patch: RowPatch<'orders'>): patch is HeldOrderPatch {
  return Object.entries(patch).every(([column, value]) => value === undefined || (!(JSON_COLUMNS as readonly string[]).includes(column) && isPlainValue(value)));
}

function isPlainValue(value: unknown): boolean {
  return value === null || value === undefined || typeof value !== 'object' || value instanceof Date;
}

/**
 * An update of an order this transaction holds under its row lock, with its timeline rows, sent with
 * the transaction's next statement or its COMMIT (deferWrite): no round trip of its own, and no row
 * read back. The answer is `held` (the row as read under the lock in this transaction, or as a
 * previous call answered it) with the patch: nothing else can change the row meanwhile, and each
 * column takes the value given (none is computed by the database, `updated_at` included). A failure
 * fails the statement after it or the COMMIT, and nothing of the transaction commits.
 */
export async function updateHeldOrder(
  db: Executor,
  held: Row<'orders'>,
  patch: HeldOrderPatch,
  events: NewRow<'order_events'>[],
  opts: HeldOrderOptions = {},
): Promise<Row<'orders'>> {
  const set: Record<string, unknown> = { updated_at: new Date() };
  for (const [column, value] of Object.entries(patch)) {
    if (value === undefined) continue; // as Kysely's set() skips it
    if (!isPlainValue(value)) throw new Error(`updateHeldOrder: ${column} is not a plain value`);
    set[column] = value;
  }
  // Two deferred writes into different tables: the driver sends them as one statement, with the
  // deferred writes around them (the outbox event, its deliveries, the mail row).
  if (events.length > 0) await deferWrite(db, insertEventsQuery(db, events));
  if (opts.unchangedSinceEarlierPhase) {
    const refusal = `Order ${held.id} changed since it was last read.`;
    await deferWrite(db, updateUnchangedOrderQuery(db, set, held.team_id, held.id, held.status, held.updated_at, refusal));
  } else {
    await deferWrite(db, updateOrderByKey(db, set, held.team_id, held.id));
  }
  return { ...held, ...set } as Row<'orders'>;
}

export interface HeldOrderOptions {
  /**
   * `held` is the row as an earlier transaction of the same request left it (its phase 1), not as
   * read under this transaction's lock: the UPDATE checks the row still has that status and
   * `updated_at` (every write of an order sets it: updateOrder, updateHeldOrder) and otherwise
   * fails with SQLSTATE CS409 (checkstand_expect_rows), aborting the transaction, so the caller
   * can take the ordinary way (lock, read, write). `updated_at` is compared to the millisecond, as a
   * JavaScript Date holds it.
   */
  unchangedSinceEarlierPhase?: boolean;
}

const updateUnchangedOrderQuery = template(
  ['row', 'value', 'value', 'value', 'value', 'value'],
  (db: Executor, set: RowPatch<'orders'>, teamId: string, id: string, status: string, updatedAt: Date, refusal: string) =>
    db
      .with('moved', (w) =>
        w
          .updateTable('orders')
          .set(set)
          .where('team_id', '=', teamId)
          .where('id', '=', id)
          .where('status', '=', status as Row<'orders'>['status'])
          .where(sql<Date>`date_trunc('milliseconds', "updated_at")`, '=', updatedAt)
          .returning('id'),
      )
      .selectFrom('moved')
      .select(sql<number>`checkstand_expect_rows(count(*), 1, ${refusal})`.as('moved')),
);

const insertEventsQuery = template(['rows'], (db: Executor, events: NewRow<'order_events'>[]) => db.insertInto('order_events').values(events));
const updateOrderByKey = template(['row', 'value', 'value'], (db: Executor, set: RowPatch<'orders'>, teamId: string, id: string) =>
  db.updateTable('orders').set(set).where('team_id', '=', teamId).where('id', '=', id),
);

export async function insertEvents(db: Executor, events: NewRow<'order_events'>[]): Promise<void> {
  if (events.length > 0) await db.insertInto('order_events').values(events).execute();
}

export async function eventsOf(db: Executor, teamId: string, orderId: string): Promise<Row<'order_events'>[]> {
  return db.selectFrom('order_events').selectAll().where('team_id', '=', teamId).where('order_id', '=', orderId).orderBy('seq').execute();
}

export interface OrderFilter {
  limit: number;
  afterSeq: number | null;
  status?: string | undefined;
  paymentStatus?: string | undefined;
  campaignId?: string | undefined;
  customerEmail?: string | undefined;
  customerId?: string | undefined;
  isTest?: boolean | undefined;
  needsQa?: boolean | undefined;
  rebillOf?: string | undefined;
  createdGte?: Date | undefined;
  createdLte?: Date | undefined;
  affiliateId?: string | undefined;
  isThrottled?: boolean | undefined;
  search?: OrderSearch | undefined;
  /** An affiliate-scoped caller: only these affiliates' converted orders, never a throttled or test one (affiliate-view.ts). */
  affiliateScope?: readonly string[] | null;
}

export async function listOrders(db: Executor, teamId: string, f: OrderFilter): Promise<Row<'orders'>[]> {
  let q = db.selectFrom('orders').selectAll('orders').where('orders.team_id', '=', teamId);
  if (f.afterSeq !== null) q = q.where('orders.seq', '<', f.afterSeq);
  if (f.status) q = q.where('orders.status', '=', f.status);
  if (f.paymentStatus) q = q.where('orders.payment_status', '=', f.paymentStatus);
  if (f.campaignId) q = q.where('orders.campaign_id', '=', f.campaignId);
  if (f.customerId) q = q.where('orders.customer_id', '=', f.customerId);
  if (f.needsQa !== undefined) q = q.where('orders.needs_qa', '=', f.needsQa);
  if (f.rebillOf) q = q.where('orders.rebill_of', '=', f.rebillOf);
  if (f.customerEmail) {
    const email = f.customerEmail;
    q = q.where(({ exists, selectFrom }) =>
      exists(
        selectFrom('customers')
          .select('customers.id')
          .whereRef('customers.id', '=', 'orders.customer_id')
          .where('customers.team_id', '=', teamId)
          .where('customers.email', '=', email),
      ),
    );
  }
  if (f.isTest !== undefined) q = q.where('orders.is_test', '=', f.isTest);
  if (f.createdGte) q = q.where('orders.created_at', '>=', f.createdGte);
  if (f.createdLte) q = q.where('orders.created_at', '<=', f.createdLte);
  if (f.affiliateId) q = q.where('orders.affiliate_id', '=', f.affiliateId);
  if (f.isThrottled !== undefined) q = q.where('orders.is_throttle', '=', f.isThrottled);
  if (f.search) {
    const s = f.search;
    q = q.where((eb) =>
      eb.or([
        ...(s.orderNumberPrefix ? [eb('orders.id', 'like', `${s.orderNumberPrefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`)] : []),
        ...(s.customerIds ? [eb('orders.customer_id', 'in', s.customerIds)] : []),
        ...(s.orderIds ? [eb('orders.id', 'in', s.orderIds)] : []),
        ...(s.paymentMethodIds ? [eb('orders.payment_method_id', 'in', s.paymentMethodIds)] : []),
      ]),
    );
  }
  if (f.affiliateScope) {
    q = q.where('orders.is_throttle', '=', false).where('orders.is_test', '=', false).where('orders.payment_status', 'in', [...CONVERTED_PAYMENT_STATUSES]);
    q = f.affiliateScope.length ? q.where('orders.affiliate_id', 'in', [...f.affiliateScope]) : q.where(sql<boolean>`false`);
  }
  return q.orderBy('orders.seq', 'desc').limit(f.limit + 1).execute();
}

/** The rebill order of one cycle of a card subscription (at most one: orders_one_rebill_per_cycle), locked. */
export async function findRebillOrder(db: Executor, teamId: string, subscriptionId: string, cycle: number): Promise<Row<'orders'> | undefined> {
  return db
    .selectFrom('orders')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('subscription_id', '=', subscriptionId)
    .where('rebill_cycle', '=', cycle)
    .forUpdate()
    .executeTakeFirst();
}

/**
 * Attributed orders created in the period that are not test orders (the affiliate report's leads,
 * throttled ones included: a lead cannot tell which conversions were throttled), per affiliate, the value of one sub id (`groupBy` sub1…sub5, else none) and currency.
 */
export async function countAttributedLeads(
  db: Executor,
  teamId: string,
  f: { affiliateIds: readonly string[] | null; groupBy: string; createdGte?: Date | undefined; createdLte?: Date | undefined },
): Promise<Array<{ affiliate_id: string; sub: string | null; currency: string; leads: number }>> {
  const subColumn = /^sub[1-5]$/.test(f.groupBy) ? sql<string | null>`${sql.ref(`affiliate_${f.groupBy}`)}` : sql<string | null>`null::text`;
  const where = [sql`team_id = ${teamId}`, sql`affiliate_id is not null`, sql`not is_test`, sql`rebill_of is null`];
  if (f.affiliateIds) where.push(f.affiliateIds.length ? sql`affiliate_id in (${sql.join(f.affiliateIds.map((i) => sql`${i}`))})` : sql`false`);
  if (f.createdGte) where.push(sql`created_at >= ${f.createdGte}`);
  if (f.createdLte) where.push(sql`created_at <= ${f.createdLte}`);
  const r = await sql<{ affiliate_id: string; sub: string | null; currency: string; leads: string | number }>`
    select affiliate_id, ${subColumn} as sub, currency, count(*) as leads
    from orders where ${sql.join(where, sql` and `)} group by 1, 2, 3`.execute(db);
  return r.rows.map((x) => ({ ...x, leads: Number(x.leads) }));
}
