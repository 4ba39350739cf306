import { type AliasableExpression, type Kysely, type SelectQueryBuilder, sql } from 'kysely';

/*
 * Several modules' reads in one statement (issue 13). A statement costs the server and the
 * database the same fixed work whether it answers one row or twenty (Bind, Execute, a result
 * object and its promises here; a portal, an executor and its snapshot there: ≈ 0.3 M instructions
 * of the server's alone, bench/README, twenty-seventh round), so the reads a request makes of rows it
 * already knows the keys of (an order's lines, its customer, its saved card, its claim on an upsell,
 * read after the order's lock) go as one statement answering one row: each module reads its own
 * table in a scalar subquery answering JSON (`to_json` of its row, or `json_agg` of its rows), and
 * reads the answer back with its own decoder. Each subquery is its own module's SQL; only the
 * outer `select` is shared.
 */

/** One module's read of its own rows as a scalar subquery answering JSON, selected as a column of a statement of several (jsonColumns). */
export type JsonRead = AliasableExpression<unknown>;

/**
 * One statement answering one row whose columns are the reads given (each under its name). The
 * subqueries run in one snapshot, the statement's: send it after the lock it must read under (its
 * own statement, in the same round trip: readTogether), never as part of the lock's statement, so
 * it sees what the lock waited for.
 */
export function jsonColumns<N extends string>(db: Kysely<any>, reads: Record<N, JsonRead>) {
  return db.selectNoFrom(Object.entries<JsonRead>(reads).map(([name, read]) => read.as(name))) as unknown as SelectQueryBuilder<any, never, Record<N, unknown>>;
}

/** A JSON value of a table's row (`to_json(alias)`), for a read of one row by key; null when there is none. */
export const rowJson = (alias: string) => sql<unknown>`to_json(${sql.id(alias)})`;

/** A JSON array of a table's rows (`json_agg(alias ORDER BY …)`), empty when there are none. */
export const rowsJson = (alias: string, orderBy: string) => sql<unknown>`coalesce(json_agg(${sql.id(alias)} order by ${sql.ref(`${alias}.${orderBy}`)}), '[]'::json)`;

/**
 * A row a statement answered as JSON, as node-postgres would have decoded its columns: the
 * timestamps named turned into dates; every other column as JSON has it, which is how
 * database.ts's parsers decode them too (bigint and numeric as numbers, booleans, json and jsonb
 * as values, text as strings). Each module reads back its own table's rows, naming their timestamps.
 */
export function rowFromJson<T>(json: unknown, timestamps: readonly string[]): T {
  const row = { ...(json as Record<string, unknown>) };
  for (const column of timestamps) {
    const value = row[column];
    if (typeof value === 'string') row[column] = new Date(value);
  }
  return row as T;
}
