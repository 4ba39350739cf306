import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import type { Store } from './database.ts';

/**
 * Table statistics kept current (issue 13). A connection plans each prepared statement once and
 * keeps the plan until the statistics of a table it reads change. Planned on a table that was
 * never analyzed (a new database: every table empty), the funnel's by-key statements choose a
 * team's index over the primary key, the two costing the same on an empty table: closing a
 * payment attempt (`where team_id = $1 and id = $2 …`) then walks `transactions_team_seq`, every
 * transaction of the team, on each call, and an upsell's saved card `payment_methods_team_last4`.
 * `ANALYZE` writes the statistics and makes every connection plan those statements again, on the
 * primary key.
 *
 * PostgreSQL's autovacuum analyzes a table once more rows changed than
 * `autovacuum_analyze_threshold + autovacuum_analyze_scale_factor × rows` (50 + 10 % by default),
 * within `autovacuum_naptime` (a minute) of crossing it. The embedded database (PGlite: one
 * process, no background workers) never does: without this, its plans made on the empty tables
 * stay for the life of the process, and the funnel slows as the team's history grows. The worker
 * runs this on both databases every `ANALYZE_EVERY_MS` with autovacuum's own threshold, so on
 * PostgreSQL it mostly finds autovacuum was there first; `SKIP_LOCKED` skips a table autovacuum
 * or another worker is analyzing instead of waiting for it.
 */
export const ANALYZE_EVERY_MS = 10_000;

/** The longest pause between two tables' analyses on the embedded database. */
const MAX_PAUSE_MS = 1_000;

export interface AnalyzeResult {
  /** The tables analyzed, by name (none when no table crossed the threshold). */
  analyzed: string[];
  /** How long analyzing them took, all together. */
  ms: number;
}

export async function analyzeChangedTables(store: Store): Promise<AnalyzeResult> {
  const due = await store.run(async (db) => {
    const r = await sql<{ relname: string }>`
      select s.relname
      from pg_stat_user_tables s join pg_class c on c.oid = s.relid
      where s.schemaname = current_schema()
        and s.n_mod_since_analyze > current_setting('autovacuum_analyze_threshold')::float8
          + current_setting('autovacuum_analyze_scale_factor')::float8 * greatest(c.reltuples, 0)
      order by s.relname`.execute(db);
    return r.rows.map((row) => row.relname);
  });
  if (due.length === 0) return { analyzed: [], ms: 0 };
  // One table per statement: the embedded database runs each statement to its end on its one
  // thread, so a request waits for one table's analysis (10–60 ms in `npm run bench`), not for all
  // of them together (300 ms and more when a dozen tables came due at once). There, a pause as
  // long as the last table took lets the requests' statements through before the next one (what
  // autovacuum's cost delay does for PostgreSQL's other sessions): otherwise a request gets one
  // statement in between two tables, and one of six statements waits behind six analyses.
  let ms = 0;
  for (const [i, name] of due.entries()) {
    const started = performance.now();
    await store.run((db) => sql`analyze (skip_locked) ${sql.id(name)}`.execute(db));
    const took = performance.now() - started;
    ms += took;
    if (store.kind === 'pglite' && i < due.length - 1) await sleep(Math.min(took, MAX_PAUSE_MS));
  }
  return { analyzed: due, ms: Math.round(ms) };
}
