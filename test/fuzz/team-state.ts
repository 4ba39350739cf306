import { sql } from 'kysely';
import type { Store } from '../../src/db/database.ts';

/**
 * What a refused request must leave as it found: every row of the team in every table with a
 * `team_id`, as a count and a hash of the rows' text per table. Tables a refused request may
 * legitimately write are left out: the stored answer of an Idempotency-Key.
 */
const MAY_CHANGE_ON_REFUSAL = new Set(['idempotency_keys', 'api_tokens']);

export type TeamState = Map<string, string>;

export class TeamStateProbe {
  private constructor(
    private readonly store: Store,
    private readonly tables: string[],
  ) {}

  static async open(store: Store): Promise<TeamStateProbe> {
    const rows = await store.run((db) =>
      sql<{ table_name: string }>`SELECT table_name FROM information_schema.columns
        WHERE column_name = 'team_id' AND table_schema = current_schema() ORDER BY table_name`.execute(db),
    );
    return new TeamStateProbe(store, rows.rows.map((r) => r.table_name).filter((t) => !MAY_CHANGE_ON_REFUSAL.has(t)));
  }

  get tableNames(): readonly string[] {
    return this.tables;
  }

  async snapshot(teamId: string): Promise<TeamState> {
    const parts = this.tables.map(
      (t) => sql`SELECT ${t}::text AS t, count(*)::text || ':' || md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) AS h FROM ${sql.table(t)} x WHERE x.team_id = ${teamId}`,
    );
    const rows = await this.store.run((db) => sql<{ t: string; h: string }>`${sql.join(parts, sql` UNION ALL `)}`.execute(db));
    return new Map(rows.rows.map((r) => [r.t, r.h]));
  }

  /** The tables whose rows differ between two snapshots. */
  static changed(before: TeamState, after: TeamState): string[] {
    return [...after.keys()].filter((t) => before.get(t) !== after.get(t));
  }
}
