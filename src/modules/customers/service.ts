import { notFound } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import type { ListQuery } from '../../app/schemas.ts';
import type { Executor, Store, Tx } from '../../db/database.ts';
import { listPage, type Page } from '../../db/pagination.ts';
import type { KeyedIdSubquery, Row } from '../../db/schema.ts';
import * as repo from './repo.ts';

export interface CustomerInput {
  email: string;
  first_name?: string | undefined;
  last_name?: string | undefined;
  phone?: string | undefined;
}

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export function customerView(c: Row<'customers'>) {
  return {
    object: 'customer' as const,
    customer_number: c.id,
    email: c.email,
    first_name: c.first_name,
    last_name: c.last_name,
    phone: c.phone,
    created_at: c.created_at.toISOString(),
    updated_at: c.updated_at.toISOString(),
  };
}

export function noteView(n: Row<'customer_notes'>) {
  return {
    object: 'note' as const,
    id: n.id,
    customer_number: n.customer_id,
    order_number: n.order_id,
    body: n.body,
    author: n.author,
    created_at: n.created_at.toISOString(),
  };
}

export class CustomersService {
  constructor(private readonly store: Store) {}

  /** One customer per team and email; called by the orders module inside its transaction. */
  upsertByEmail(db: Executor, teamId: string, input: CustomerInput): Promise<Row<'customers'>> {
    return repo.upsertCustomer(db, this.customerRow(teamId, input));
  }

  /**
   * upsertByEmail as a query of a customer's row (newRow), for a statement of the orders module to
   * run as its CTE (a new lead's); its row is read back by fromJson. One function for the process:
   * the statement is built once (a template, src/db/templates.ts).
   */
  readonly upsertRowQuery = repo.upsertCustomerQuery;

  /** A new customer's row for upsertRowQuery. */
  newRow(teamId: string, input: CustomerInput) {
    return this.customerRow(teamId, input);
  }

  /** A customer's row as another module's statement answered it, as JSON (`to_jsonb`). */
  fromJson(json: Record<string, unknown>): Row<'customers'> {
    return repo.customerFromJson(json);
  }

  private customerRow(teamId: string, input: CustomerInput) {
    return {
      id: newId('customer'),
      team_id: teamId,
      email: normalizeEmail(input.email),
      first_name: input.first_name ?? null,
      last_name: input.last_name ?? null,
      phone: input.phone ?? null,
    };
  }

  find(db: Executor, teamId: string, customerNumber: string): Promise<Row<'customers'> | undefined> {
    return repo.findCustomer(db, teamId, customerNumber);
  }

  findMany(db: Executor, teamId: string, ids: readonly string[]): Promise<Row<'customers'>[]> {
    return repo.findCustomersByIds(db, teamId, ids);
  }

  /** findMany as a query to send with others (readTogether); `ids` not empty. */
  findManyQuery(db: Executor, teamId: string, ids: readonly string[]) {
    return repo.customersQuery(db, teamId, ids);
  }

  /** The customer another module's subquery names (an order's, by the order's id), as a query to send with others (readTogether). */
  findOfQuery(db: Executor, teamId: string, idOf: KeyedIdSubquery, key: string) {
    return repo.customerOfQuery(db, teamId, idOf, key);
  }

  update(db: Executor, teamId: string, id: string, patch: { first_name?: string; last_name?: string; phone?: string }) {
    return repo.updateCustomer(db, teamId, id, patch);
  }

  async get(teamId: string, customerNumber: string) {
    const c = await this.store.run((db) => repo.findCustomer(db, teamId, customerNumber));
    if (!c) throw notFound('Customer');
    return customerView(c);
  }

  async addNote(teamId: string, customerNumber: string, body: string, author: string) {
    return this.store.transaction(async (trx) => {
      const c = await repo.findCustomer(trx, teamId, customerNumber);
      if (!c) throw notFound('Customer');
      return noteView(await repo.insertNote(trx, { id: newId('note'), team_id: teamId, customer_id: c.id, body, author }));
    });
  }

  /** A note written by the system (a dispute, for example), in the caller's transaction; `orderId` when it is about one order. */
  async addSystemNote(trx: Tx, teamId: string, customerId: string, body: string, orderId: string | null = null) {
    return noteView(await repo.insertNote(trx, { id: newId('note'), team_id: teamId, customer_id: customerId, order_id: orderId, body, author: 'system' }));
  }

  /** A note about one order of the customer (the orders module checked the order), in the caller's transaction. */
  async addOrderNote(trx: Tx, teamId: string, order: { id: string; customer_id: string }, body: string, author: string) {
    return noteView(await repo.insertNote(trx, { id: newId('note'), team_id: teamId, customer_id: order.customer_id, order_id: order.id, body, author }));
  }

  /** The notes about one order, newest first (the orders module checked the order). */
  async listOrderNotes(db: Executor, teamId: string, orderId: string, q: ListQuery): Promise<Page<ReturnType<typeof noteView>>> {
    const filter = { createdGte: q.created_gte, createdLte: q.created_lte };
    return listPage(db, 'customer_notes', teamId, q, (afterSeq) => repo.listNotes(db, teamId, { orderId }, { limit: q.limit, afterSeq, ...filter }), noteView);
  }

  /** The team's customers a search term names (e-mail, first or last name prefix), as a subquery for the orders search. */
  idsMatching(db: Executor, teamId: string, term: string) {
    return repo.customerIdsMatching(db, teamId, term);
  }

  async list(teamId: string, q: ListQuery & { email?: string | undefined; name?: string | undefined; phone?: string | undefined }): Promise<Page<ReturnType<typeof customerView>>> {
    return this.store.run(async (db) => {
      const filter = { email: q.email, name: q.name, phone: q.phone, createdGte: q.created_gte, createdLte: q.created_lte };
      return listPage(db, 'customers', teamId, q, (afterSeq) => repo.listCustomers(db, teamId, { limit: q.limit, afterSeq, ...filter }), customerView);
    });
  }

  async listNotes(teamId: string, customerNumber: string, q: ListQuery): Promise<Page<ReturnType<typeof noteView>>> {
    return this.store.run(async (db) => {
      const c = await repo.findCustomer(db, teamId, customerNumber);
      if (!c) throw notFound('Customer');
      const filter = { createdGte: q.created_gte, createdLte: q.created_lte };
      return listPage(db, 'customer_notes', teamId, q, (afterSeq) => repo.listNotes(db, teamId, { customerId: c.id }, { limit: q.limit, afterSeq, ...filter }), noteView);
    });
  }
}
