import { sql } from 'kysely';
import type { Executor } from '../../db/database.ts';
import type { KeyedIdSubquery, NewRow, Row } from '../../db/schema.ts';
import { allRows, template, templatesBy } from '../../db/templates.ts';

/** Inserts or refreshes the customer with this email; given names and phone overwrite, absent ones are kept. */
export async function upsertCustomer(db: Executor, row: NewRow<'customers'>): Promise<Row<'customers'>> {
  return upsertCustomerQuery(db, row).executeTakeFirstOrThrow();
}

/** upsertCustomer as a query to send with others (readTogether). */
export function upsertCustomerQuery(db: Executor, row: NewRow<'customers'>) {
  return db
    .insertInto('customers')
    .values(row)
    .onConflict((oc) =>
      oc.columns(['team_id', 'email']).doUpdateSet({
        first_name: sql`coalesce(excluded.first_name, customers.first_name)`,
        last_name: sql`coalesce(excluded.last_name, customers.last_name)`,
        phone: sql`coalesce(excluded.phone, customers.phone)`,
        updated_at: sql`now()`,
      }),
    )
    .returningAll();
}

/**
 * A customer's row from its JSON (`to_jsonb(customers)`), as node-postgres would have decoded its
 * columns: timestamps as dates, the rest as JSON has them (bigint `seq` is a number either way).
 */
export function customerFromJson(json: Record<string, unknown>): Row<'customers'> {
  return { ...(json as unknown as Row<'customers'>), created_at: new Date(json.created_at as string), updated_at: new Date(json.updated_at as string) };
}

export async function findCustomer(db: Executor, teamId: string, id: string): Promise<Row<'customers'> | undefined> {
  return db.selectFrom('customers').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}

export async function findCustomersByIds(db: Executor, teamId: string, ids: readonly string[]): Promise<Row<'customers'>[]> {
  if (ids.length === 0) return [];
  return allRows(db, customersQuery(db, teamId, ids));
}

/** Customers by id, as a query to send with others (readTogether); `ids` not empty. */
export const customersQuery = template(['value', 'list'], (db: Executor, teamId: string, ids: readonly string[]) =>
  db.selectFrom('customers').selectAll().where('team_id', '=', teamId).where('id', 'in', ids),
);

/**
 * The team's customer whose id another module's subquery names (an order's customer, by the
 * order's id: KeyedIdSubquery), as a query to send with others (readTogether). Compiled once per
 * subquery (one template each), like any hot read.
 */
export function customerOfQuery(db: Executor, teamId: string, idOf: KeyedIdSubquery, key: string) {
  return customerOf(idOf)(db, teamId, key);
}

const customerOf = templatesBy((idOf: KeyedIdSubquery) =>
  template(['value', 'value'], (db: Executor, teamId: string, key: string) =>
    db.selectFrom('customers').selectAll().where('team_id', '=', teamId).where('id', '=', idOf(db, teamId, key)),
  ),
);

export async function updateCustomer(
  db: Executor,
  teamId: string,
  id: string,
  patch: { first_name?: string | null; last_name?: string | null; phone?: string | null },
): Promise<Row<'customers'>> {
  return db
    .updateTable('customers')
    .set({ ...patch, updated_at: new Date() })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function insertNote(db: Executor, row: NewRow<'customer_notes'>): Promise<Row<'customer_notes'>> {
  return db.insertInto('customer_notes').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function listNotes(
  db: Executor,
  teamId: string,
  of: { customerId: string } | { orderId: string },
  opts: { limit: number; afterSeq: number | null; createdGte?: Date | undefined; createdLte?: Date | undefined },
): Promise<Row<'customer_notes'>[]> {
  let q = db.selectFrom('customer_notes').selectAll().where('team_id', '=', teamId);
  q = 'orderId' in of ? q.where('order_id', '=', of.orderId) : q.where('customer_id', '=', of.customerId);
  if (opts.afterSeq !== null) q = q.where('seq', '<', opts.afterSeq);
  if (opts.createdGte) q = q.where('created_at', '>=', opts.createdGte);
  if (opts.createdLte) q = q.where('created_at', '<=', opts.createdLte);
  return q.orderBy('seq', 'desc').limit(opts.limit + 1).execute();
}

/** `%` and `_` match themselves: a search term is text, not a pattern. */
function containing(term: string): string {
  return `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

export interface CustomerSearch {
  email?: string | undefined;
  name?: string | undefined;
  phone?: string | undefined;
  createdGte?: Date | undefined;
  createdLte?: Date | undefined;
}

/**
 * The team's customers newest first. E-mail and name match anywhere, case-insensitively (a prefix is
 * a match too); a name matches the first, the last or the full name; phone matches on its digits.
 */
export async function listCustomers(db: Executor, teamId: string, f: CustomerSearch & { limit: number; afterSeq: number | null }): Promise<Row<'customers'>[]> {
  let q = db.selectFrom('customers').selectAll().where('team_id', '=', teamId);
  if (f.afterSeq !== null) q = q.where('seq', '<', f.afterSeq);
  if (f.email) q = q.where('email', 'ilike', containing(f.email.trim()));
  if (f.name) {
    const pattern = containing(f.name.trim().replace(/\s+/g, ' '));
    q = q.where(sql<boolean>`(first_name ilike ${pattern} or last_name ilike ${pattern} or concat_ws(' ', first_name, last_name) ilike ${pattern})`);
  }
  if (f.phone) q = q.where(sql<boolean>`regexp_replace(coalesce(phone, ''), '[^0-9]', '', 'g') like ${containing(f.phone.replace(/\D/g, ''))}`);
  if (f.createdGte) q = q.where('created_at', '>=', f.createdGte);
  if (f.createdLte) q = q.where('created_at', '<=', f.createdLte);
  return q.orderBy('seq', 'desc').limit(f.limit + 1).execute();
}

/** `%`, `_` and `\\` match themselves, and the pattern matches what starts with the term. */
export function startingWith(term: string): string {
  return `${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * The ids of the team's customers a search box term names, as a subquery (the orders search embeds
 * it): an e-mail starting with the term (e-mails are stored lower case), or a first or last name
 * starting with it, case-insensitively; "Ada Lov" is a first name and the start of a last name.
 * Each branch is a prefix match on an index of migration 0019.
 */
export function customerIdsMatching(db: Executor, teamId: string, term: string) {
  const t = term.trim().toLowerCase().replace(/\s+/g, ' ');
  const prefix = startingWith(t);
  const [first, ...rest] = t.split(' ');
  return db
    .selectFrom('customers')
    .select('customers.id')
    .where('customers.team_id', '=', teamId)
    .where((eb) =>
      eb.or([
        eb('customers.email', 'like', prefix),
        eb(sql`lower(customers.first_name)`, 'like', prefix),
        eb(sql`lower(customers.last_name)`, 'like', prefix),
        ...(rest.length > 0
          ? [eb.and([eb(sql`lower(customers.first_name)`, '=', first!), eb(sql`lower(customers.last_name)`, 'like', startingWith(rest.join(' ')))])]
          : []),
      ]),
    );
}
