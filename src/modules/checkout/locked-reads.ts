import { jsonColumns } from '../../db/row-json.ts';
import type { Executor } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import { template, templatesBy } from '../../db/templates.ts';
import type { CheckoutDeps } from './use-case.ts';

/**
 * What a payment, an upsell and a completion read of the order's rows once they hold its lock, as
 * one statement each (src/db/row-json.ts): every module reads its own table, as JSON, in a column
 * of the statement's one row, and reads it back with its own decoder. Sent in the lock's round
 * trip (readTogether), as the statement after the lock's, so it reads what the lock waited for (a
 * line an upsell added, a claim another request took) as separate statements did. Built and
 * compiled once (templates.ts). Two statements where there were three (a payment, a completion) and five (an upsell).
 */
export class LockedReads {
  constructor(private readonly d: Pick<CheckoutDeps, 'orders' | 'customers' | 'ledger'>) {}

  /** The order's lines and its customer (by the order's id), as a query to send after its lock. */
  readonly linesAndCustomerQuery = template(['value', 'value'], (db: Executor, teamId: string, orderId: string) =>
    jsonColumns(db, {
      lines: this.d.orders.rows.linesJson(db, teamId, orderId),
      customer: this.d.customers.findOfJson(db, teamId, this.d.orders.rows.customerIdOfOrder, orderId),
    }),
  );

  /** linesAndCustomerQuery's row, read back by each row's module. */
  linesAndCustomer(row: { lines: unknown; customer: unknown } | undefined): { lines: Row<'order_lines'>[]; customer: Row<'customers'> | undefined } {
    return {
      lines: row ? this.d.orders.rows.linesFromJson(row.lines) : [],
      customer: row?.customer == null ? undefined : this.d.customers.fromJson(row.customer),
    };
  }

  /**
   * An upsell's reads after the order's lock: the order's claim on this upsell, its saved payment
   * method and its customer (both by the order's id) and its lines.
   */
  readonly upsellQuery = template(['value', 'value', 'value'], (db: Executor, teamId: string, orderId: string, upsellId: string) =>
    jsonColumns(db, {
      claim: this.d.orders.rows.orderUpsellJson(db, teamId, orderId, upsellId),
      method: this.d.ledger.paymentMethodOfJson(db, teamId, this.d.orders.rows.paymentMethodIdOfOrder, orderId),
      customer: this.d.customers.findOfJson(db, teamId, this.d.orders.rows.customerIdOfOrder, orderId),
      lines: this.d.orders.rows.linesJson(db, teamId, orderId),
    }),
  );

  /** upsellQuery's row, read back by each row's module. */
  upsell(row: { claim: unknown; method: unknown; customer: unknown; lines: unknown } | undefined) {
    return {
      claim: this.d.orders.rows.orderUpsellFromJson(row?.claim),
      method: this.d.ledger.paymentMethodFromJson(row?.method),
      ...this.linesAndCustomer(row),
    };
  }
}

/** One LockedReads per set of services (one per process): its statements are compiled once. */
export const lockedReadsOf = templatesBy((d: Pick<CheckoutDeps, 'orders' | 'customers' | 'ledger'>) => new LockedReads(d));
