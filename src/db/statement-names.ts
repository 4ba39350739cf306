import type pg from 'pg';
import { sendFlushed, sendPlain } from './protocol-transactions.ts';

/**
 * Named (prepared) statements. node-postgres sends a statement without a name as Parse, Bind and
 * Execute every time, so PostgreSQL parses, analyses and plans it on every call; a statement with
 * a name is parsed once per connection and then only bound and executed, and PostgreSQL keeps its
 * plan. The card funnel's statements are short lookups and writes by key, where that planning is a
 * large part of the database's work (issue 13: ≈1.3× the funnels/s on PostgreSQL, ≈1.25× embedded).
 *
 * Which statements get a name: a parameterised statement (a Kysely query with at least one value;
 * never a script such as a migration, which has none) the second time this process sends its text,
 * while fewer than `max` texts have one. One-off texts (a list filter seen once) stay unnamed; the
 * cap bounds what each server connection holds. Names are never reused for another text.
 *
 * A name is per connection (`ConnectionStatements`): its prefix is renewed after a "cached plan
 * must not change result type" error, which PostgreSQL raises when a table a prepared
 * `select *` / `returning *` reads changed columns since (a migration run by another process while
 * this one serves): the connection then prepares its statements again under new names, and the
 * statement that hit it fails once (`isStalePlan`, answered 503 with Retry-After). The embedded
 * database is one server session whatever client object speaks to it, so every new client object
 * gets a prefix of its own too, and never meets a name an earlier one prepared.
 */
export class StatementNames {
  private readonly numbers = new Map<string, number>();
  private readonly seenOnce = new Set<string>();
  private nextPrefix = 0;

  /** `max`: how many distinct texts may get a name in this process (0: none, every statement unnamed). */
  constructor(readonly max: number) {}

  /** The text's number when it is worth a name (its second sighting on), else undefined. */
  numberOf(text: string): number | undefined {
    const known = this.numbers.get(text);
    if (known !== undefined || this.numbers.size >= this.max) return known;
    if (!this.seenOnce.has(text)) {
      // Bounded: texts that never come back (literal values, long IN lists) are forgotten in bulk.
      if (this.seenOnce.size >= SEEN_ONCE_MAX) this.seenOnce.clear();
      this.seenOnce.add(text);
      return undefined;
    }
    this.seenOnce.delete(text);
    const n = this.numbers.size;
    this.numbers.set(text, n);
    return n;
  }

  /** How many texts have a name (the tests read it). */
  get named(): number {
    return this.numbers.size;
  }

  prefix(): string {
    return `cs${(this.nextPrefix++).toString(36)}_`;
  }
}

const SEEN_ONCE_MAX = 10_000;

/** DATABASE_PREPARED_STATEMENTS's default: the whole API's hot statements with room to spare. */
export const DEFAULT_PREPARED_STATEMENTS = 300;

/** The names one client object (one server connection, or one embedded client) uses. */
export class ConnectionStatements {
  private prefix: string;

  constructor(private readonly names: StatementNames) {
    this.prefix = names.prefix();
  }

  /**
   * Sends a statement on this connection's client, under a name when its text has one; inside a
   * protocol transaction (protocol-transactions.ts: `inProtocolTransaction` is told when it fails)
   * without Sync, its Flush left to the caller (which writes one after the statements it sends together). Its answer
   * rejects as before on failure; a stale plan also makes the connection prepare everything again
   * under new names.
   */
  query(client: pg.ClientBase, text: string, values: unknown[], inProtocolTransaction?: (err: unknown) => void): Promise<pg.QueryResult> {
    const n = values.length > 0 ? this.names.numberOf(text) : undefined;
    const config = n === undefined ? { text, values } : { name: this.prefix + n.toString(36), text, values };
    const answer = inProtocolTransaction ? sendFlushed(client, config, inProtocolTransaction, false) : sendPlain(client, config);
    answer.catch((err: unknown) => {
      if (isStalePlan(err)) this.prefix = this.names.prefix();
    });
    return answer;
  }
}

/**
 * PostgreSQL refusing a prepared statement whose result columns changed since it was prepared
 * (SQLSTATE 0A000). Nothing of the statement (or of its transaction) happened; the same request
 * sent again succeeds, the connection having prepared it again.
 */
export function isStalePlan(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return !!e && e.code === '0A000' && typeof e.message === 'string' && e.message.includes('cached plan must not change result type');
}
