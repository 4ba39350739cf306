import { type Compilable, type CompiledQuery, type Kysely, isOperationNodeSource, type RawBuilder } from 'kysely';
import { compileWith } from './pg-driver.ts';

/*
 * Hot statements built and compiled once (issue 13). Kysely builds a query as a tree of frozen
 * nodes, one copy per builder call, and compiles the tree to SQL on every execution: on the card
 * funnel that was ≈ 11% of the API thread, for statements whose SQL never changes from one call
 * to the next, only their values. A template builds its query once per shape with a placeholder
 * (a slot) where each value goes, compiles it, and remembers where each slot landed among the
 * statement's parameters; every later call only puts its values in those places. The statement
 * keeps its Kysely tree (the driver reads it: deferred-writes.ts) and its text is one string
 * object, which every memo keyed by text (statement names, renumbering) hashes once.
 */

/**
 * How a template takes each of its arguments:
 * - `value`: one value (a string, number, boolean, Date, null, or a JSON object or array written
 *   as one parameter): one slot. A Kysely expression (an OperationNodeSource such as sql``) is
 *   part of the SQL, not a value: a call given one is built the ordinary way, not from the template.
 * - `list`: an array whose elements are each a value (`where(col, 'in', list)`): one slot per
 *   element; the SQL depends on its length (part of the shape).
 * - `row`: an object whose defined properties are each a value (`values(row)`, `set(row)`): one slot
 *   per property; the SQL depends on which properties are defined (part of the shape). Properties
 *   that are undefined are left out, as Kysely leaves them out.
 * - `rows`: an array of such objects (`values(rows)`).
 */
export type ArgKind = 'value' | 'list' | 'row' | 'rows';

type Executor = Kysely<any>;

/** A compiled statement's text and tree, and where each of its parameters comes from. */
interface Compiled {
  sql: string;
  query: CompiledQuery['query'];
  queryId: CompiledQuery['queryId'];
  /** Per parameter: the slot it takes its value from, or the constant the query built in (a literal value of the builder). */
  sources: readonly (Slot | { constant: unknown })[];
}

/** A placeholder value: the `index`-th value of the call, in the order the arguments' values are listed (slotValues). */
class Slot {
  constructor(readonly index: number) {}
}

/** Under the tests, every call is also built the ordinary way and must compile the same (verify). */
const VERIFY = process.env.CHECKSTAND_VERIFY_TEMPLATES === '1' || (process.env.CHECKSTAND_VERIFY_TEMPLATES !== '0' && Boolean(process.env.VITEST));

/** How many calls built a template's statement, and how many reused one (the tests read it). */
export const templateCounts = { built: 0, reused: 0 };

/** Shapes each template keeps at most (a row's keys vary with the call site's optional columns; a list's length with its data). */
const SHAPES_MAX = 64;

/**
 * A query built and compiled once per shape. `build` is called as an ordinary query function
 * would be, but on a template's first call for a shape each value it is given is a placeholder:
 * it must only put its values into the query (as `where`, `values`, `set`, sql`` values …), never
 * compute with them or branch on them (a branch belongs in the shape: make two templates, or
 * build the query the ordinary way). Every parameter the compiled statement has must come from a
 * value or be a constant of the query; a value that reaches no parameter makes the template refuse
 * at its first call, and under the tests (CHECKSTAND_VERIFY_TEMPLATES, on under Vitest) every call
 * is also built the ordinary way and must compile to the same SQL and parameters.
 *
 * Returns a function taking the same arguments as `build`, answering a Compilable: anything that
 * takes a query takes it (db.executeQuery, deferWrite, sendWithNext, readTogether).
 */
export function template<A extends unknown[], O>(kinds: { [K in keyof A]: ArgKind }, build: (db: Executor, ...args: A) => Compilable<O> | RawBuilder<O>): (db: Executor, ...args: A) => Compilable<O> {
  const shapes = new Map<string, Compiled>();
  return (db: Executor, ...args: A): Compilable<O> => {
    const shape = shapeOf(kinds, args);
    if (shape === null) {
      // An expression among the values: built as it is.
      return new Bound(compileWith(db, build(db, ...args)));
    }
    let compiled = shapes.get(shape);
    if (compiled) templateCounts.reused++;
    else {
      templateCounts.built++;
      compiled = compileTemplate(kinds, args, compileWith(db, build(db, ...(slotted(kinds, args) as A))));
      if (shapes.size >= SHAPES_MAX) shapes.clear();
      shapes.set(shape, compiled);
    }
    const values = slotValues(kinds, args);
    const sources = compiled.sources;
    const parameters = new Array<unknown>(sources.length);
    for (let i = 0; i < sources.length; i++) {
      const source = sources[i]!;
      parameters[i] = source instanceof Slot ? values[source.index] : source.constant;
    }
    const query: CompiledQuery<O> = { sql: compiled.sql, query: compiled.query, queryId: compiled.queryId, parameters };
    if (VERIFY) verify(query, compileWith(db, build(db, ...args)));
    return new Bound(query);
  };
}

/**
 * Templates made per key: `make(key)` on a key's first call, kept while the key lives. For a
 * statement whose SQL includes a query another module hands in as a function (a customer's upsert,
 * an order's subquery of an id), so it is still built and compiled once per shape.
 */
export function templatesBy<K extends object, T>(make: (key: K) => T): (key: K) => T {
  const made = new WeakMap<K, T>();
  return (key) => {
    let t = made.get(key);
    if (t === undefined) made.set(key, (t = make(key)));
    return t;
  };
}

/** A template's statement with its values: what every helper taking a query takes (a Compilable). */
class Bound<O> implements Compilable<O> {
  constructor(private readonly compiled: CompiledQuery<O>) {}

  compile(): CompiledQuery<O> {
    return this.compiled;
  }
}

/** The call's shape (what its SQL depends on), or null when a value is an expression. */
function shapeOf(kinds: readonly ArgKind[], args: readonly unknown[]): string | null {
  let shape = '';
  for (let i = 0; i < kinds.length; i++) {
    const arg = args[i];
    switch (kinds[i]) {
      case 'value':
        if (isExpression(arg)) return null;
        shape += '.';
        break;
      case 'list':
        if ((arg as unknown[]).some(isExpression)) return null;
        shape += `[${(arg as unknown[]).length}]`;
        break;
      case 'row': {
        const keys = rowShape(arg as Record<string, unknown>);
        if (keys === null) return null;
        shape += `{${keys}}`;
        break;
      }
      case 'rows':
        shape += '[';
        for (const row of arg as Record<string, unknown>[]) {
          const keys = rowShape(row);
          if (keys === null) return null;
          shape += `{${keys}}`;
        }
        shape += ']';
        break;
    }
  }
  return shape;
}

function rowShape(row: Record<string, unknown>): string | null {
  let keys = '';
  for (const key in row) {
    const value = row[key];
    if (value === undefined) continue;
    if (isExpression(value)) return null;
    keys += `${key},`;
  }
  return keys;
}

/** A Kysely expression or a callback building one: SQL, not a value. */
function isExpression(value: unknown): boolean {
  return typeof value === 'function' || (typeof value === 'object' && value !== null && isOperationNodeSource(value));
}

/** The call's values, in slot order: each `value`, each element of a `list`, each defined property of a `row` (and of each of `rows`). */
function slotValues(kinds: readonly ArgKind[], args: readonly unknown[]): unknown[] {
  // Plain loops: this runs on every call of every template.
  const values: unknown[] = [];
  for (let i = 0; i < kinds.length; i++) {
    const arg = args[i];
    const kind = kinds[i];
    if (kind === 'value') values.push(arg);
    else if (kind === 'list') for (const v of arg as unknown[]) values.push(v);
    else if (kind === 'row') pushRow(values, arg as Record<string, unknown>);
    else for (const row of arg as Record<string, unknown>[]) pushRow(values, row);
  }
  return values;
}

function pushRow(values: unknown[], row: Record<string, unknown>): void {
  for (const key in row) if (row[key] !== undefined) values.push(row[key]);
}

/** The arguments with a Slot in place of each value, numbered as slotValues() lists them. */
function slotted(kinds: readonly ArgKind[], args: readonly unknown[]): unknown[] {
  let n = 0;
  const slotRow = (row: Record<string, unknown>) => {
    const out: Record<string, unknown> = {};
    for (const key in row) if (row[key] !== undefined) out[key] = new Slot(n++);
    return out;
  };
  return kinds.map((kind, i) => {
    const arg = args[i];
    if (kind === 'value') return new Slot(n++);
    if (kind === 'list') return (arg as unknown[]).map(() => new Slot(n++));
    if (kind === 'row') return slotRow(arg as Record<string, unknown>);
    return (arg as Record<string, unknown>[]).map(slotRow);
  });
}

function compileTemplate(kinds: readonly ArgKind[], args: readonly unknown[], compiled: CompiledQuery): Compiled {
  const count = slotValues(kinds, args).length;
  const seen = new Set<number>();
  const sources = compiled.parameters.map((p) => {
    if (p instanceof Slot) {
      seen.add(p.index);
      return p;
    }
    return { constant: p };
  });
  if (seen.size !== count) throw new Error(`template: ${count - seen.size} of ${count} values reach no parameter of ${compiled.sql}`);
  return { sql: compiled.sql, query: compiled.query, queryId: compiled.queryId, sources };
}

/** The tests' check that a template compiles as the ordinary build would. */
function verify(fromTemplate: CompiledQuery, built: CompiledQuery): void {
  const same =
    fromTemplate.sql === built.sql &&
    fromTemplate.parameters.length === built.parameters.length &&
    fromTemplate.parameters.every((p, i) => Object.is(p, built.parameters[i]) || JSON.stringify(p) === JSON.stringify(built.parameters[i]));
  if (!same) {
    throw new Error(
      `template: compiled differently from the ordinary build\n  template: ${fromTemplate.sql} ${JSON.stringify(fromTemplate.parameters)}\n  built:    ${built.sql} ${JSON.stringify(built.parameters)}`,
    );
  }
}

/** The first row of a template's statement (an insert or a read by key), or undefined. */
export async function firstRow<O>(db: Executor, query: Compilable<O>): Promise<O | undefined> {
  return (await db.executeQuery(query)).rows[0];
}

/** Every row of a template's statement. */
export async function allRows<O>(db: Executor, query: Compilable<O>): Promise<O[]> {
  return (await db.executeQuery(query)).rows;
}
