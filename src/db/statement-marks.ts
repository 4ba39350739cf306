import type { CompiledQuery } from 'kysely';
import type pg from 'pg';

/*
 * The marks pg-driver.ts's helpers put on compiled statements, read by the connection that sends
 * them (pipelined-connection.ts).
 */

/** Compiled writes marked by deferWrite(): sent without waiting for their answer; each with the translation of its own failure, if any. */
export const DEFERRED = new WeakMap<CompiledQuery, ((err: unknown) => unknown) | null>();

/** Statements marked by sendWithNext(): each takes the promise of its answer. */
export const EARLY = new WeakMap<CompiledQuery, (answer: Promise<pg.QueryResult>) => void>();
