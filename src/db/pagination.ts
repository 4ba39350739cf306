import { sql } from 'kysely';
import type { Executor } from './database.ts';
import { invalid } from '../app/errors.ts';
import type { DB } from './schema.ts';

export interface PageRequest {
  limit: number;
  starting_after?: string | undefined;
}

export interface Page<T> {
  items: T[];
  has_more: boolean;
}

/** Tables listed with cursor pagination: each has `seq`, `id` and `team_id`. */
export type ListableTable = {
  [K in keyof DB]: DB[K] extends { seq: unknown; id: string; team_id: string } ? K : never;
}[keyof DB];

/**
 * The `seq` of the cursor row, looked up within the team: an id of another team, or an
 * unknown one, resolves to undefined (the caller answers as for any unknown cursor).
 */
export async function cursorSeq(db: Executor, table: ListableTable, teamId: string, id: string | undefined): Promise<number | null | undefined> {
  if (!id) return null;
  const r = await sql<{ seq: number }>`select seq from ${sql.table(table)} where team_id = ${teamId} and id = ${id}`.execute(db);
  return r.rows[0]?.seq;
}

/** Rows were fetched with `limit + 1`: the extra one only tells whether more follow. */
export function toPage<T>(rows: T[], limit: number): Page<T> {
  return { items: rows.slice(0, limit), has_more: rows.length > limit };
}

/**
 * One page of a cursor list: resolves `starting_after` within the team (an unknown or foreign
 * id is a 422 on that field), fetches `limit + 1` rows after it and maps them to their views.
 */
export async function listPage<R, V>(
  db: Executor,
  table: ListableTable,
  teamId: string,
  q: PageRequest,
  fetch: (afterSeq: number | null) => Promise<R[]>,
  view: (row: R) => V,
): Promise<Page<V>> {
  const afterSeq = await cursorSeq(db, table, teamId, q.starting_after);
  if (afterSeq === undefined) throw invalid('starting_after', 'no such object');
  const page = toPage(await fetch(afterSeq), q.limit);
  return { items: page.items.map(view), has_more: page.has_more };
}
