import type { ListQuery } from '../../app/schemas.ts';
import type { Executor, Store } from '../../db/database.ts';
import { type ListableTable, listPage, type Page } from '../../db/pagination.ts';
import type { ListWindow } from './repo.ts';

/** One page of rows (views are built by the caller), through the shared cursor pagination. */
export function pageOf<R>(db: Executor, table: ListableTable, teamId: string, query: ListQuery, fetch: (w: ListWindow) => Promise<R[]>): Promise<Page<R>> {
  return listPage(db, table, teamId, query, (afterSeq) => fetch({ afterSeq, limit: query.limit, createdGte: query.created_gte, createdLte: query.created_lte }), (r) => r);
}

/** One page of views of the module's rows, in its own read. */
export function listViews<R, V>(
  store: Store,
  table: ListableTable,
  teamId: string,
  query: ListQuery,
  fetch: (db: Executor, w: ListWindow) => Promise<R[]>,
  view: (row: R) => V,
): Promise<Page<V>> {
  return store.run(async (db) => {
    const page = await pageOf(db, table, teamId, query, (w) => fetch(db, w));
    return { items: page.items.map(view), has_more: page.has_more };
  });
}
