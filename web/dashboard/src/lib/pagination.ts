import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';

/** One page of a /v1 list: `data[]` and `has_more`. */
export interface ListPage<T> {
  data: T[];
  has_more: boolean;
}

export interface PaginatedList<T> {
  items: T[];
  isLoading: boolean;
  isFetching: boolean;
  error: unknown;
  /** 1-based page number. */
  page: number;
  hasNext: boolean;
  hasPrevious: boolean;
  next: () => void;
  previous: () => void;
  refetch: () => void;
}

/**
 * A table over the API's cursor pagination (`limit` + `starting_after`): keeps the cursors of the
 * pages seen, so Previous goes back and Next continues after the last row. Changing `key` (the
 * filters) starts again at page 1.
 *
 *   const list = usePaginatedList({
 *     key: ['orders', filters],
 *     fetchPage: async (starting_after) => unwrap(await api.GET('/v1/orders', { params: { query: { ...filters, limit: 25, starting_after } } })),
 *     idOf: (o) => o.order_number,
 *   });
 */
export function usePaginatedList<T>(opts: {
  key: readonly unknown[];
  fetchPage: (startingAfter: string | undefined) => Promise<ListPage<T>>;
  idOf: (item: T) => string;
  enabled?: boolean;
}): PaginatedList<T> {
  const keyString = JSON.stringify(opts.key);
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  useEffect(() => setCursors([undefined]), [keyString]);
  const cursor = cursors[cursors.length - 1];
  const q = useQuery({
    queryKey: [...opts.key, 'page', cursor ?? null],
    queryFn: () => opts.fetchPage(cursor),
    placeholderData: keepPreviousData,
    enabled: opts.enabled ?? true,
  });
  const items = q.data?.data ?? [];
  const last = items[items.length - 1];
  return {
    items,
    isLoading: q.isPending && (opts.enabled ?? true),
    isFetching: q.isFetching,
    error: q.error,
    page: cursors.length,
    hasNext: !!q.data?.has_more && !!last,
    hasPrevious: cursors.length > 1,
    next: () => {
      if (q.data?.has_more && last) setCursors((c) => [...c, opts.idOf(last)]);
    },
    previous: () => setCursors((c) => (c.length > 1 ? c.slice(0, -1) : c)),
    refetch: () => void q.refetch(),
  };
}
