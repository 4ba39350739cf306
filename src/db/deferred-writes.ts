import type { CompiledQuery } from 'kysely';

/*
 * Deferred writes (pg-driver.ts's deferWrite()) into different tables, sent as one statement.
 */

/**
 * A deferred write that may share a statement with others: an INSERT … VALUES, or an UPDATE of
 * one table by its own columns (no FROM, no join, no subquery: nothing it reads but the row it
 * changes), with no WITH of its own and no RETURNING (whether its text renumbers safely is found
 * when it is merged: mergeDeferred). Writes into different tables only: the parts of one statement
 * run in one snapshot and do not see each other's rows, so two writes into one table stay two
 * statements, and an UPDATE never misses a row another part adds.
 */
export function mergeableWrite(compiled: CompiledQuery): boolean {
  const node = compiled.query as { kind: string; with?: unknown; returning?: unknown; values?: { kind: string }; from?: unknown; joins?: unknown };
  if (node.with || node.returning) return false;
  if (node.kind === 'InsertQueryNode') return node.values?.kind === 'ValuesNode';
  if (node.kind === 'UpdateQueryNode') return !node.from && !node.joins && !/\bselect\b/i.test(compiled.sql);
  return false;
}

/** The table a mergeable write changes. */
export function writeTable(compiled: CompiledQuery): string {
  const node = compiled.query as { kind: string; into?: TableRef; table?: TableRef };
  const table = node.kind === 'UpdateQueryNode' ? node.table : node.into;
  return table?.table?.identifier?.name ?? '';
}

type TableRef = { table?: { identifier?: { name?: string } } };

/**
 * The statement's text with each placeholder `$n` moved up by `offset`, outside quoted literals and
 * identifiers ('…', "…", doubled quotes inside); null when the text has anything that would make
 * that unsafe (a dollar-quoted string, a comment, an unterminated quote, a backslash-escaped string)
 * or placeholders that do not number its parameters 1…n.
 */
function renumbered(compiled: CompiledQuery, offset: number): string | null {
  // Remembered by text and offset: the hot path merges the same few texts at the same offsets.
  const byOffset = remembered(RENUMBERED, compiled.sql, () => new Map<number, string | null>());
  let text = byOffset.get(offset);
  if (text === undefined) byOffset.set(offset, (text = renumber(compiled, offset)));
  return text;
}

const RENUMBERED = new Map<string, Map<number, string | null>>();

/**
 * `compute()`'s answer for a statement text, remembered: a hot path asks of the same few texts
 * again and again. Bounded: texts that never come back (literal values, long IN lists) are
 * forgotten in bulk.
 */
function remembered<V>(memo: Map<string, V>, text: string, compute: () => V): V {
  if (memo.has(text)) return memo.get(text)!;
  const value = compute();
  if (memo.size >= MEMO_MAX) memo.clear();
  memo.set(text, value);
  return value;
}

const MEMO_MAX = 2_000;

function renumber(compiled: CompiledQuery, offset: number): string | null {
  const text = compiled.sql;
  let out = '';
  let highest = 0;
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    if (ch === "'" || ch === '"') {
      if (ch === "'" && /[eE]$/.test(out) && !/\w[eE]$/.test(out)) return null;
      let j = i + 1;
      for (;;) {
        j = text.indexOf(ch, j);
        if (j < 0) return null;
        if (text[j + 1] === ch) j += 2;
        else break;
      }
      out += text.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    if (ch === '$') {
      const m = /^\$(\d+)/.exec(text.slice(i, i + 12));
      if (!m) return null;
      const n = Number(m[1]);
      highest = Math.max(highest, n);
      out += `$${n + offset}`;
      i += m[0].length;
      continue;
    }
    if ((ch === '-' && text[i + 1] === '-') || (ch === '/' && text[i + 1] === '*')) return null;
    out += ch;
    i++;
  }
  return highest === compiled.parameters.length ? out : null;
}

/**
 * Deferred writes into different tables as one statement: each but the last in a data-modifying
 * CTE, the last as the statement itself; null when one of them cannot be renumbered safely (then
 * each goes on its own). PostgreSQL runs every CTE's write exactly once, in the same transaction
 * and snapshot; foreign keys are checked at the end of the statement, so an insert may name a row
 * another one of them adds (a webhook delivery its event). One statement where there were several:
 * less work for the server and for node-postgres, the same rows.
 *
 * With `into` (a statement absorbsDeferred() accepted), every deferred write is a CTE of that
 * statement instead, placed before its own CTEs: its rows, its row count and its failure are its
 * own, or the failure of one of the writes (which aborts the transaction as it would have anyway).
 */
export function mergeDeferred(held: readonly CompiledQuery[], into?: CompiledQuery): { sql: string; parameters: readonly unknown[] } | null {
  const sql = mergedText(held, into);
  if (sql === null) return null;
  const parameters: unknown[] = [];
  for (const c of held) parameters.push(...c.parameters);
  if (into) parameters.push(...into.parameters);
  return { sql, parameters };
}

/**
 * The merged statement's text, remembered by the texts it is made of (in a tree of maps keyed by
 * each text in turn, then by `into`'s: a hot path merges the same few texts, each the same string
 * every time, so no key is built and hashed anew). Remembering also hands out the same string for the
 * same statement, whose hash the statement names' map (statement-names.ts) then has already: a text
 * built afresh on every call was hashed there, whole, every time.
 */
function mergedText(held: readonly CompiledQuery[], into: CompiledQuery | undefined): string | null {
  let node = MERGED;
  for (const c of held) {
    let next = node.then.get(c.sql);
    if (!next) {
      if (mergedCount >= MEMO_MAX) {
        MERGED = node = { then: new Map(), done: new Map() };
        mergedCount = 0;
      }
      node.then.set(c.sql, (next = { then: new Map(), done: new Map() }));
      mergedCount++;
    }
    node = next;
  }
  const last = into?.sql ?? '';
  let text = node.done.get(last);
  if (text === undefined) {
    node.done.set(last, (text = composeMerged(held, into)));
    mergedCount++;
  }
  return text;
}

interface MergedNode {
  then: Map<string, MergedNode>;
  /** By `into`'s text ('' without one): the merged text, or null when it cannot be made. */
  done: Map<string, string | null>;
}

let MERGED: MergedNode = { then: new Map(), done: new Map() };
let mergedCount = 0;

function composeMerged(held: readonly CompiledQuery[], into: CompiledQuery | undefined): string | null {
  let offset = 0;
  const parts: string[] = [];
  for (const c of held) {
    const text = renumbered(c, offset);
    if (text === null) return null;
    offset += c.parameters.length;
    parts.push(text);
  }
  let last: string;
  if (into) {
    const text = renumbered(into, offset);
    if (text === null) return null;
    last = text;
  } else {
    last = parts.pop()!;
  }
  const ctes = parts.map((p, i) => `"deferred_${i}" as (${p})`).join(', ');
  // A statement with CTEs of its own keeps them, after the deferred writes' (absorbsDeferred: not recursive).
  if (into?.query && (into.query as { with?: unknown }).with) return `with ${ctes}, ${last.slice('with '.length)}`;
  return `with ${ctes} ${last}`;
}

/**
 * Whether `next`, the statement a transaction sends after deferred writes still held, may carry them
 * as CTEs of its own (mergeDeferred with `into`) instead of a statement of their own before it: one
 * statement fewer, and the same rows, because `next` names none of the tables they write. The
 * parts of one statement share one snapshot, so a statement that read or wrote one of those tables
 * would no longer see the deferred writes as it did when they ran before it: such a statement
 * (anywhere in it: its joins, subqueries, CTEs, RETURNING) is refused, as is SQL the query tree does
 * not describe (a raw sql`` statement, or a raw fragment that might name a table), a recursive
 * WITH, and a statement whose text already has a "deferred_" CTE.
 */
export function absorbsDeferred(held: readonly CompiledQuery[], next: CompiledQuery): boolean {
  const tables = absorbingTables(next);
  return tables !== null && namesNoneOf(tables, held);
}

/** Whether a statement naming `tables` names none of the tables the writes `held` change. */
export function namesNoneOf(tables: ReadonlySet<string>, held: readonly CompiledQuery[]): boolean {
  return held.every((h) => !tables.has(writeTable(h)));
}

/**
 * The tables `next` names, when it may carry deferred writes into any other table (absorbsDeferred);
 * null when it may carry none. Remembered by the statement's text, which names every table its
 * tree does (a hot path asks it of the same few texts again and again: walking the tree each time
 * was ≈ 1% of the server thread).
 */
export function absorbingTables(next: CompiledQuery): ReadonlySet<string> | null {
  return remembered(ABSORBING, next.sql, () => {
    const node = next.query as { kind: string; with?: { recursive?: boolean } };
    if (!ABSORBING_KINDS.has(node.kind)) return null;
    if (node.with && (node.with.recursive || !next.sql.startsWith('with '))) return null;
    if (next.sql.includes('"deferred_')) return null;
    return tablesNamed(node);
  });
}

const ABSORBING = new Map<string, ReadonlySet<string> | null>();

const ABSORBING_KINDS = new Set(['SelectQueryNode', 'InsertQueryNode', 'UpdateQueryNode', 'DeleteQueryNode']);

/** Words a raw fragment may hold only if it cannot read or write a table. */
const RAW_SQL_THAT_MAY_NAME_A_TABLE = /\b(select|from|join|into|update|delete|table|with|values)\b/i;

/** Every table a query tree names (Kysely's TableNodes, CTE names included); null when a raw fragment might name one. */
function tablesNamed(root: unknown): Set<string> | null {
  const tables = new Set<string>();
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== 'object') continue;
    if (Array.isArray(node)) {
      stack.push(...node);
      continue;
    }
    const n = node as { kind?: string; table?: TableRef['table']; sqlFragments?: readonly string[] };
    if (n.kind === 'TableNode') tables.add(n.table?.identifier?.name ?? '');
    if (n.kind === 'RawNode' && (n.sqlFragments ?? []).some((f) => RAW_SQL_THAT_MAY_NAME_A_TABLE.test(f))) return null;
    for (const value of Object.values(node)) if (value !== null && typeof value === 'object') stack.push(value);
  }
  return tables;
}
