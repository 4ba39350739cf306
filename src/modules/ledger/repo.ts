import { sql } from 'kysely';
import { deferWrite, type Executor, firstWithNext } from '../../db/database.ts';
import { firstRow, template, templatesBy } from '../../db/templates.ts';
import type { KeyedIdSubquery, NewRow, Row, RowPatch } from '../../db/schema.ts';
import { FIRST_PAYMENT_TYPES } from '../payments/states.ts';

export async function insertTransaction(db: Executor, row: NewRow<'transactions'>): Promise<Row<'transactions'>> {
  return db.insertInto('transactions').values(row).returningAll().executeTakeFirstOrThrow();
}

/**
 * An attempt row written now and sent with the transaction's next statement or its COMMIT
 * (sendWithNext): for a phase 1 that has nothing left to read after it, so the row, the claim that
 * names it and the COMMIT go in one round trip. The promise resolves with the row when that answer
 * arrives; if the insert fails, so does the transaction (nothing of it commits).
 */
export function insertTransactionWithNext(db: Executor, row: NewRow<'transactions'>): Promise<Row<'transactions'>> {
  // An insert that succeeds returns its row.
  return firstWithNext(db, insertTransactionQuery(db, row)) as Promise<Row<'transactions'>>;
}

const insertTransactionQuery = template(['row'], (db: Executor, row: NewRow<'transactions'>) => db.insertInto('transactions').values(row).returningAll());

export async function updateTransaction(db: Executor, teamId: string, id: string, patch: RowPatch<'transactions'>): Promise<Row<'transactions'>> {
  return db.updateTable('transactions').set(patch).where('team_id', '=', teamId).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

export async function findTransaction(db: Executor, teamId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<Row<'transactions'> | undefined> {
  let q = db.selectFrom('transactions').selectAll().where('team_id', '=', teamId).where('id', '=', id);
  if (opts.forUpdate) q = q.forUpdate();
  return q.executeTakeFirst();
}

export interface TransactionFilter {
  limit: number;
  afterSeq: number | null;
  orderId?: string | undefined;
  status?: string | undefined;
  type?: string | undefined;
  isTest?: boolean | undefined;
  createdGte?: Date | undefined;
  createdLte?: Date | undefined;
}

export async function listTransactions(db: Executor, teamId: string, f: TransactionFilter): Promise<Row<'transactions'>[]> {
  let q = db.selectFrom('transactions').selectAll().where('team_id', '=', teamId);
  if (f.afterSeq !== null) q = q.where('seq', '<', f.afterSeq);
  if (f.orderId) q = q.where('order_id', '=', f.orderId);
  if (f.status) q = q.where('status', '=', f.status);
  if (f.type) q = q.where('type', '=', f.type);
  if (f.isTest !== undefined) q = q.where('is_test', '=', f.isTest);
  if (f.createdGte) q = q.where('created_at', '>=', f.createdGte);
  if (f.createdLte) q = q.where('created_at', '<=', f.createdLte);
  return q.orderBy('seq', 'desc').limit(f.limit + 1).execute();
}

export async function listOrderTransactions(db: Executor, teamId: string, orderId: string): Promise<Row<'transactions'>[]> {
  return db.selectFrom('transactions').selectAll().where('team_id', '=', teamId).where('order_id', '=', orderId).orderBy('seq').execute();
}

/** Approved and in-flight refunds and voids against one sale: what is no longer refundable. */
export async function reversedAmount(db: Executor, teamId: string, saleId: string): Promise<{ refunded: number; voided: boolean }> {
  const r = await db
    .selectFrom('transactions')
    .select([
      sql<number>`coalesce(sum(amount) filter (where type = 'refund'), 0)`.as('refunded'),
      sql<number>`count(*) filter (where type = 'void')`.as('voids'),
    ])
    .where('team_id', '=', teamId)
    .where('parent_id', '=', saleId)
    .where('status', 'in', ['approved', 'pending'])
    .executeTakeFirstOrThrow();
  return { refunded: Number(r.refunded), voided: Number(r.voids) > 0 };
}

export async function insertPaymentMethod(db: Executor, row: NewRow<'payment_methods'>): Promise<Row<'payment_methods'>> {
  return db.insertInto('payment_methods').values(row).returningAll().executeTakeFirstOrThrow();
}

/**
 * A saved payment method for the statement that names it by id (the attempt's UPDATE, or the test
 * card's transaction), deferred (deferWrite): it rides in that statement as a CTE, no statement of
 * its own, and nothing is read back (the caller holds its id). If it fails, so does that statement.
 */
export async function deferPaymentMethod(db: Executor, row: NewRow<'payment_methods'>): Promise<void> {
  await deferWrite(db, insertPaymentMethodQuery(db, row));
}

const insertPaymentMethodQuery = template(['row'], (db: Executor, row: NewRow<'payment_methods'>) => db.insertInto('payment_methods').values(row));

/** Takes back a saved method this transaction wrote (deferPaymentMethod) and may not keep. */
export async function dropPaymentMethod(db: Executor, teamId: string, id: string): Promise<void> {
  await db.deleteFrom('payment_methods').where('team_id', '=', teamId).where('id', '=', id).execute();
}

export async function findPaymentMethod(db: Executor, teamId: string, id: string): Promise<Row<'payment_methods'> | undefined> {
  return firstRow(db, paymentMethodQuery(db, teamId, id));
}

/** A saved payment method by its id (findPaymentMethod). */
const paymentMethodQuery = template(['value', 'value'], (db: Executor, teamId: string, id: string) =>
  db.selectFrom('payment_methods').selectAll().where('team_id', '=', teamId).where('id', '=', id),
);

/**
 * The saved payment method another module's subquery names (an order's, by the order's id:
 * KeyedIdSubquery), as a query to send with others (readTogether); compiled once per subquery.
 */
export function paymentMethodOfQuery(db: Executor, teamId: string, idOf: KeyedIdSubquery, key: string) {
  return paymentMethodOf(idOf)(db, teamId, key);
}

const paymentMethodOf = templatesBy((idOf: KeyedIdSubquery) =>
  template(['value', 'value'], (db: Executor, teamId: string, key: string) =>
    db.selectFrom('payment_methods').selectAll().where('team_id', '=', teamId).where('id', '=', idOf(db, teamId, key)),
  ),
);

export async function findByProviderRef(db: Executor, teamId: string, gatewayId: string, providerRef: string): Promise<Row<'transactions'> | undefined> {
  return db
    .selectFrom('transactions')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('gateway_id', '=', gatewayId)
    .where('provider_ref', '=', providerRef)
    .where('type', 'in', FIRST_PAYMENT_TYPES)
    .executeTakeFirst();
}


/**
 * System scan for the reconciliation schedule (every team): first payments still pending at
 * their gateway since before `olderThan`, oldest first.
 */
export async function listStalePending(db: Executor, olderThan: Date, limit: number): Promise<Row<'transactions'>[]> {
  return db
    .selectFrom('transactions')
    .selectAll()
    .where('type', 'in', FIRST_PAYMENT_TYPES)
    .where('status', '=', 'pending')
    .where('in_flight', '=', false)
    .where((eb) =>
      eb.or([
        // first payments: at a 3-D Secure gateway, or an extpay checkout (its plan, or its payment once known)
        eb.and([eb('upsell_id', 'is', null), eb.or([eb('provider_ref', 'is not', null), eb('plan_ref', 'is not', null)])]),
        // extpay upsells the provider accepted and has not confirmed
        eb.and([eb('upsell_id', 'is not', null), eb('connection_id', 'is not', null), eb('provider_ref', 'is not', null)]),
      ]),
    )
    .where('created_at', '<', olderThan)
    // A checkout nobody paid in a day is abandoned: it stops being re-checked (and cannot crowd out newer ones).
    .where('created_at', '>', new Date(olderThan.getTime() - 24 * 3600_000))
    .orderBy('created_at')
    .limit(limit)
    .execute();
}

/**
 * A payment method saved at the external provider by one checkout (original_ref = the checkout id):
 * the first payment's settlement and `setup_intent.succeeded` both land here, in either order; a
 * provider payment method id, once known, is never replaced by "unknown".
 */
export async function upsertExtpayMethod(
  db: Executor,
  row: NewRow<'payment_methods'> & { connection_id: string; original_ref: string },
): Promise<Row<'payment_methods'>> {
  return db
    .insertInto('payment_methods')
    .values(row)
    .onConflict((oc) =>
      oc
        .columns(['team_id', 'connection_id', 'original_ref'])
        .where('connection_id', 'is not', null)
        .doUpdateSet({
          vault_ref: sql`coalesce(excluded.vault_ref, payment_methods.vault_ref)`,
          member_ref: sql`coalesce(excluded.member_ref, payment_methods.member_ref)`,
          brand: sql`case when excluded.brand = 'unknown' then payment_methods.brand else excluded.brand end`,
          last4: sql`case when excluded.last4 = '' then payment_methods.last4 else excluded.last4 end`,
        }),
    )
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The sale a provider payment id names on one connection (first payment, upsell, or renewal). */
export async function findExternalSale(db: Executor, teamId: string, connectionId: string, paymentRef: string, opts: { forUpdate?: boolean } = {}) {
  let q = db
    .selectFrom('transactions')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('connection_id', '=', connectionId)
    .where('provider_ref', '=', paymentRef)
    .where('type', '=', 'sale');
  if (opts.forUpdate) q = q.forUpdate();
  return q.executeTakeFirst();
}

/** A first payment still waiting on the checkout whose plan this is. */
export async function findPendingByPlan(db: Executor, teamId: string, connectionId: string, planRef: string) {
  return db
    .selectFrom('transactions')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('connection_id', '=', connectionId)
    .where('plan_ref', '=', planRef)
    .where('type', '=', 'sale')
    .orderBy('seq', 'desc')
    .executeTakeFirst();
}

/** Whether an upsell charge on this connection has been sent and its payment id not yet recorded. */
export async function hasUpsellInFlight(db: Executor, teamId: string, connectionId: string): Promise<boolean> {
  const r = await db
    .selectFrom('transactions')
    .select('id')
    .where('team_id', '=', teamId)
    .where('connection_id', '=', connectionId)
    .where('type', '=', 'sale')
    .where('status', '=', 'pending')
    .where('upsell_id', 'is not', null)
    .where('provider_ref', 'is', null)
    // A charge whose call never came back stops holding deliveries back after a while.
    .where('created_at', '>', new Date(Date.now() - 10 * 60_000))
    .limit(1)
    .executeTakeFirst();
  return r !== undefined;
}

/** The provisional refund a provider refund settles: by its refund id, else the oldest unsettled one of the charge. */
export async function findRefundToSettle(db: Executor, teamId: string, saleId: string, refundRef: string) {
  const byRef = await db
    .selectFrom('transactions')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('parent_id', '=', saleId)
    .where('type', '=', 'refund')
    .where('provider_ref', '=', refundRef)
    .forUpdate()
    .executeTakeFirst();
  if (byRef) return byRef;
  return db
    .selectFrom('transactions')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('parent_id', '=', saleId)
    .where('type', '=', 'refund')
    // provisional, or still being requested (the provider's refund.created can beat our own record of its answer)
    .where((eb) => eb.or([eb('provisional', '=', true), eb('status', '=', 'pending')]))
    .where('provider_ref', 'is', null)
    .orderBy('seq')
    .forUpdate()
    .executeTakeFirst();
}

export async function findDispute(db: Executor, teamId: string, providerRef: string) {
  return db.selectFrom('disputes').selectAll().where('team_id', '=', teamId).where('provider_ref', '=', providerRef).forUpdate().executeTakeFirst();
}

export async function insertDispute(db: Executor, row: NewRow<'disputes'>): Promise<Row<'disputes'>> {
  return db.insertInto('disputes').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateDispute(db: Executor, teamId: string, id: string, patch: RowPatch<'disputes'>): Promise<Row<'disputes'>> {
  return db
    .updateTable('disputes')
    .set({ ...patch, updated_at: new Date() })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function listOrderDisputes(db: Executor, teamId: string, orderId: string): Promise<Row<'disputes'>[]> {
  return db.selectFrom('disputes').selectAll().where('team_id', '=', teamId).where('order_id', '=', orderId).orderBy('seq').execute();
}

export async function updatePaymentMethod(db: Executor, teamId: string, id: string, patch: RowPatch<'payment_methods'>): Promise<Row<'payment_methods'>> {
  return db.updateTable('payment_methods').set(patch).where('team_id', '=', teamId).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}


// ---- attempts (atomic phases)

/**
 * Records the provider's answer to an attempt that is still in flight, in the caller's transaction.
 * Undefined when another path (the recovery run, or the request that made it) recorded it first.
 */
export async function closeAttempt(db: Executor, teamId: string, id: string, patch: RowPatch<'transactions'>): Promise<Row<'transactions'> | undefined> {
  return firstRow(db, closeAttemptQuery(db, { ...patch, in_flight: false }, teamId, id));
}

const closeAttemptQuery = template(['row', 'value', 'value'], (db: Executor, set: RowPatch<'transactions'>, teamId: string, id: string) =>
  db.updateTable('transactions').set(set).where('team_id', '=', teamId).where('id', '=', id).where('in_flight', '=', true).returningAll(),
);

/**
 * closeAttempt() sent with the transaction's next statement or its COMMIT (deferWrite), unanswered:
 * for a caller that writes what follows from the answer (the order's move) in the same socket
 * write, before it knows the attempt was still in flight. The statement checks its own row count
 * (checkstand_expect_rows, migration 0020): when another path recorded the answer first it fails
 * with SQLSTATE CS409, and nothing of the transaction commits.
 */
export async function closeAttemptAtCommit(db: Executor, teamId: string, id: string, patch: RowPatch<'transactions'>): Promise<void> {
  await deferWrite(db, closeAttemptCheckedQuery(db, { ...patch, in_flight: false }, teamId, id, `Attempt ${id} is no longer in flight.`));
}

const closeAttemptCheckedQuery = template(['row', 'value', 'value', 'value'], (db: Executor, set: RowPatch<'transactions'>, teamId: string, id: string, refusal: string) =>
  db
    .with('closed', (w) => w.updateTable('transactions').set(set).where('team_id', '=', teamId).where('id', '=', id).where('in_flight', '=', true).returning('id'))
    .selectFrom('closed')
    .select(sql<number>`checkstand_expect_rows(count(*), 1, ${refusal})`.as('closed')),
);

export async function findInFlight(db: Executor, teamId: string, orderId: string, step: string): Promise<Row<'transactions'> | undefined> {
  return db.selectFrom('transactions').selectAll().where('team_id', '=', teamId).where('order_id', '=', orderId).where('step', '=', step).where('in_flight', '=', true).executeTakeFirst();
}

/** System scan for the recovery run (every team): attempts whose answer nobody recorded, oldest first. */
export async function listInFlight(db: Executor, olderThan: Date, limit: number): Promise<Row<'transactions'>[]> {
  return db.selectFrom('transactions').selectAll().where('in_flight', '=', true).where('created_at', '<', olderThan).orderBy('created_at').limit(limit).execute();
}

/** Subqueries of the orders search (GET /v1/orders?q=): the orders a card ending in `last4` paid or tried to pay, and the saved methods of such a card. */
export function cardLast4Matches(db: Executor, teamId: string, last4: string) {
  return {
    orderIds: db.selectFrom('transactions').select('transactions.order_id').where('transactions.team_id', '=', teamId).where('transactions.card_last4', '=', last4),
    paymentMethodIds: db.selectFrom('payment_methods').select('payment_methods.id').where('payment_methods.team_id', '=', teamId).where('payment_methods.last4', '=', last4),
  };
}
