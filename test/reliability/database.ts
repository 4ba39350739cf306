/**
 * A throwaway PostgreSQL database for one crash-test run, and a plain-SQL read of what the
 * test reconciles against the provider's ledger. Read with `pg` directly, not through the
 * app's code: the test judges the records, it does not trust the code that wrote them.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

export interface ScratchDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

async function admin<T>(serverUrl: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 10_000 });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** `CREATE DATABASE crash_<random>` on the server of `serverUrl`; `drop()` removes it WITH (FORCE). */
export async function createScratchDatabase(serverUrl: string): Promise<ScratchDatabase> {
  const name = `crash_${randomBytes(6).toString('hex')}`;
  await admin(serverUrl, (c) => c.query(`CREATE DATABASE ${name}`));
  let dropped = false;
  return {
    name,
    url: withDatabase(serverUrl, name),
    async drop() {
      if (dropped) return;
      await admin(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
      dropped = true;
    },
  };
}

export interface DbTransaction {
  id: string;
  order_id: string;
  type: string;
  status: string;
  amount: number;
  provider_ref: string | null;
  upsell_id: string | null;
  parent_id: string | null;
  response_code: string | null;
  /** Present once the payment core marks attempts in flight (migration 0008); undefined before. */
  in_flight?: boolean;
  created_at: Date;
}

export interface DbOrder {
  id: string;
  status: string;
  payment_status: string | null;
  total: number;
  refunded_total: number;
  payment_started_at: Date | null;
}

export interface DbOrderUpsell {
  id: string;
  order_id: string;
  upsell_id: string;
  status: string;
  transaction_id: string | null;
}

export interface DbRecords {
  transactions: DbTransaction[];
  orders: DbOrder[];
  orderUpsells: DbOrderUpsell[];
}

/** Every transaction, order and upsell claim of the database (one team: the test's). */
export async function readRecords(url: string): Promise<DbRecords> {
  return admin(url, async (c) => {
    // select *: columns the payment core adds (in_flight, step) come along when they exist.
    const t = await c.query(`SELECT * FROM transactions ORDER BY seq`);
    const o = await c.query(`SELECT * FROM orders ORDER BY seq`);
    const u = await c.query(`SELECT * FROM order_upsells ORDER BY created_at, id`);
    return {
      transactions: t.rows.map((r) => ({
        id: r.id,
        order_id: r.order_id,
        type: r.type,
        status: r.status,
        amount: Number(r.amount),
        provider_ref: r.provider_ref,
        upsell_id: r.upsell_id ?? null,
        parent_id: r.parent_id ?? null,
        response_code: r.response_code ?? null,
        ...(typeof r.in_flight === 'boolean' ? { in_flight: r.in_flight } : {}),
        created_at: r.created_at,
      })),
      orders: o.rows.map((r) => ({
        id: r.id,
        status: r.status,
        payment_status: r.payment_status ?? null,
        total: Number(r.total),
        refunded_total: Number(r.refunded_total ?? 0),
        payment_started_at: r.payment_started_at ?? null,
      })),
      orderUpsells: u.rows.map((r) => ({ id: r.id, order_id: r.order_id, upsell_id: r.upsell_id, status: r.status, transaction_id: r.transaction_id ?? null })),
    };
  });
}
