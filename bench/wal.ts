/**
 * What PostgreSQL wrote over the measured window, from its write-ahead log: the bytes
 * (`pg_current_wal_lsn()`, any role), and, where `pg_walinspect` is there (PostgreSQL 15+; see
 * enableWalInspect), its records by kind: index entries, rows
 * inserted and updated, row locks, MultiXacts, commits. Counts of work done, not times: the same
 * funnels give the same counts however busy the machine is. The log is the server's, so anything
 * else written on it in the window (another database) is in it too.
 */
import type pg from 'pg';

export interface WalFigures {
  /** Bytes of WAL per completed funnel (records and full-page images). */
  bytes_per_flow: number;
  /** Records per completed funnel by kind; null where pg_walinspect is not available. */
  records_per_flow: {
    index_entries: number;
    heap_inserts: number;
    heap_updates: number;
    hot_updates: number;
    row_locks: number;
    multixacts: number;
    commits: number;
    /** Bytes of full-page images (a page's first change after a checkpoint writes it whole). */
    full_page_image_bytes: number;
  } | null;
  /** Why the records are not counted, when they are not. */
  records_note: string | null;
}

type RecordCounts = Omit<NonNullable<WalFigures['records_per_flow']>, 'full_page_image_bytes'>;

/** The record kinds (pg_get_wal_stats' "resource_manager/record_type", without "+INIT") each count sums. */
const KINDS: Record<keyof RecordCounts, string[]> = {
  index_entries: ['Btree/INSERT_LEAF', 'Btree/INSERT_POST'],
  heap_inserts: ['Heap/INSERT', 'Heap2/MULTI_INSERT'],
  heap_updates: ['Heap/UPDATE'],
  hot_updates: ['Heap/HOT_UPDATE'],
  row_locks: ['Heap/LOCK', 'Heap2/LOCK_UPDATED'],
  multixacts: ['MultiXact/CREATE_ID'],
  commits: ['Transaction/COMMIT'],
};

export async function walPosition(client: pg.Client): Promise<string> {
  const r = await client.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
  return r.rows[0]!.lsn;
}

/**
 * Makes pg_walinspect available in the bench database, or says why it is not: the bench creates it
 * only in a database it made itself (`--fresh-db`); in another it uses it when it is there already.
 */
export async function enableWalInspect(client: pg.Client, opts: { create: boolean }): Promise<string | null> {
  try {
    if (opts.create) {
      await client.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
      return null;
    }
    const r = await client.query("SELECT 1 FROM pg_extension WHERE extname = 'pg_walinspect'");
    return r.rowCount ? null : 'pg_walinspect is not installed in this database (the bench creates it only with --fresh-db)';
  } catch (err) {
    return `pg_walinspect: ${(err as Error).message}`;
  }
}

export async function walBetween(client: pg.Client, start: string, end: string, flows: number, inspectNote: string | null): Promise<WalFigures | null> {
  if (flows <= 0) return null;
  const per = (n: number) => Math.round((n / flows) * 10) / 10;
  const bytes = await client.query<{ b: string }>('SELECT pg_wal_lsn_diff($2::pg_lsn, $1::pg_lsn)::text AS b', [start, end]);
  const figures: WalFigures = { bytes_per_flow: Math.round(Number(bytes.rows[0]!.b) / flows), records_per_flow: null, records_note: inspectNote };
  if (inspectNote) return figures;
  try {
    const r = await client.query<{ kind: string; count: string; fpi: string }>(
      `SELECT split_part("resource_manager/record_type", '+', 1) AS kind, sum(count)::text AS count, sum(fpi_size)::text AS fpi
       FROM pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, true) GROUP BY 1`,
      [start, end],
    );
    const byKind = new Map(r.rows.map((x) => [x.kind, Number(x.count)]));
    const sum = (kinds: string[]) => kinds.reduce((n, k) => n + (byKind.get(k) ?? 0), 0);
    const counts = Object.fromEntries(Object.entries(KINDS).map(([name, kinds]) => [name, per(sum(kinds))])) as RecordCounts;
    figures.records_per_flow = { ...counts, full_page_image_bytes: Math.round(r.rows.reduce((n, x) => n + Number(x.fpi), 0) / flows) };
  } catch (err) {
    // A checkpoint in the window may have recycled the segments the window starts in.
    figures.records_note = `WAL records not read: ${(err as Error).message}`;
  }
  return figures;
}

export function walLine(w: WalFigures): string {
  const r = w.records_per_flow;
  return (
    `WAL per funnel: ${(w.bytes_per_flow / 1024).toFixed(1)} kB` +
    (r
      ? ` (full-page images ${(r.full_page_image_bytes / 1024).toFixed(1)} kB)    index entries ${r.index_entries}    rows inserted ${r.heap_inserts}, updated ${r.heap_updates} (+ ${r.hot_updates} HOT)    row locks ${r.row_locks}    MultiXacts ${r.multixacts}    commits ${r.commits}`
      : `    (records not counted: ${w.records_note ?? '?'})`)
  );
}
