import pg from 'pg';

/**
 * A prepared statement's result columns described once per connection, not on every execution.
 *
 * node-postgres sends Parse (the first time), Bind, Describe, Execute and Sync for a named
 * statement, so PostgreSQL answers every execution with a RowDescription: each column's name and
 * type, ≈ 30 bytes a column (an order's `select *` is ≈ 1.3 kB), which the driver decodes into
 * field objects and type parsers again (`addFields`: 3% of the API thread in the bench's profile).
 * For a statement prepared under a name the description cannot change: PostgreSQL refuses to run
 * a prepared statement whose result columns would differ from the ones it was prepared with
 * ("cached plan must not change result type", statement-names.ts renews the names then). So once
 * a connection has seen a named statement's description (or its NoData: a write without
 * RETURNING), later executions on that connection leave Describe out, and their results take the
 * fields, parsers and empty row kept from that first answer.
 *
 * Only connections that opt in (`describeOnce(client)`, done by pg-driver.ts for every client when statements are named) and only
 * plain named statements (no `rows` paging, no binary results, no per-query type parsers) take
 * this path; every other query runs node-postgres's own code unchanged. The type parsers kept are
 * the ones registered when the statement was first described (database.ts registers its own at
 * startup, before any query). This reaches into node-postgres's Query and Result internals
 * (`prepare`, `handleRowDescription`, `handleDataRow`, `_result`, `_parsers`, `_prebuiltEmptyResultObject`,
 * `_accumulateRows`); `install()` checks they are there and otherwise leaves the driver alone
 * (and `test/row-shapes.test.ts` fails), so a node-postgres upgrade cannot silently misparse.
 */

interface Shape {
  fields: unknown[];
  parsers: unknown[] | undefined;
  empty: unknown;
}

/** A connection's kept descriptions, by statement name; null: the statement returns no rows (NoData). */
interface ConnectionShapes {
  shapes: Map<string, Shape | null>;
  /** Set by prepare() for the one describe() call it is about to make. */
  skipDescribe: boolean;
}

const STATE = Symbol('checkstand.rowShapes');
/** Queries sent with Describe whose answer is to be kept, and the connection it is kept for. */
const describing = new WeakMap<object, ConnectionShapes>();

type Connectionish = { [STATE]?: ConnectionShapes; describe: (msg: unknown) => void };
interface Queryish {
  name?: string;
  rows?: number;
  binary?: boolean;
  types?: unknown;
  callback?: unknown;
  _result: { fields: unknown[]; _parsers: unknown[] | undefined; _prebuiltEmptyResultObject: unknown };
  _accumulateRows?: unknown;
  _canceledDueToError?: unknown;
  listeners(event: string): unknown[];
}

let installed: boolean | undefined;

/** Patches node-postgres's Query once; false (and nothing patched) when its internals are not the expected ones. */
function install(): boolean {
  if (installed !== undefined) return installed;
  const proto = (pg as unknown as { Query?: { prototype: Record<string, unknown> } }).Query?.prototype;
  const probe = proto ? (new (pg as unknown as { Query: new (c: unknown) => Queryish }).Query({ text: 'select 1' }) as Queryish) : null;
  const result = probe?._result as Record<string, unknown> | undefined;
  installed =
    !!proto &&
    typeof proto.prepare === 'function' &&
    typeof proto.handleRowDescription === 'function' &&
    typeof proto.handleCommandComplete === 'function' &&
    typeof proto.handleDataRow === 'function' &&
    !!result &&
    '_parsers' in result &&
    '_prebuiltEmptyResultObject' in result &&
    Array.isArray(result.fields);
  if (!installed || !proto) return false;
  const prepare = proto.prepare as (this: Queryish, connection: Connectionish) => void;
  const handleRowDescription = proto.handleRowDescription as (this: Queryish, msg: unknown) => void;
  const handleCommandComplete = proto.handleCommandComplete as (this: Queryish, msg: unknown, connection: unknown) => void;

  proto.prepare = function (this: Queryish, connection: Connectionish) {
    const state = connection[STATE];
    if (!state || !this.name || this.rows || this.binary || this.types) return prepare.call(this, connection);
    const shape = state.shapes.get(this.name);
    if (shape === undefined) {
      describing.set(this, state);
      return prepare.call(this, connection);
    }
    if (shape) {
      const r = this._result;
      r.fields = shape.fields;
      r._parsers = shape.parsers;
      r._prebuiltEmptyResultObject = shape.empty;
      this._accumulateRows = this.callback || !this.listeners('row').length;
    }
    state.skipDescribe = true;
    try {
      prepare.call(this, connection);
    } finally {
      state.skipDescribe = false;
    }
  };
  proto.handleRowDescription = function (this: Queryish, msg: unknown) {
    handleRowDescription.call(this, msg);
    // Only named statements are in `describing` (prepare() above).
    const state = describing.get(this);
    if (!state) return;
    describing.delete(this);
    const r = this._result;
    state.shapes.set(this.name!, { fields: r.fields, parsers: r._parsers, empty: r._prebuiltEmptyResultObject });
  };
  // A row whose column count is not its description's: only possible when a kept description is
  // stale (a pooler prepared the name again after a migration, see README "Prepared statements").
  // It fails the statement as PostgreSQL's own refusal does, so the connection prepares again.
  const handleDataRow = proto.handleDataRow as (this: Queryish, msg: { fields: unknown[] }) => void;
  proto.handleDataRow = function (this: Queryish, msg: { fields: unknown[] }) {
    if (msg.fields.length !== this._result.fields.length && !this._canceledDueToError) {
      this._canceledDueToError = Object.assign(
        new Error(`cached plan must not change result type (a row of ${msg.fields.length} columns for a description of ${this._result.fields.length})`),
        { code: '0A000' },
      );
      return;
    }
    handleDataRow.call(this, msg);
  };
  proto.handleCommandComplete = function (this: Queryish, msg: unknown, connection: unknown) {
    const state = describing.get(this);
    if (state) {
      // Described, and no RowDescription came before its CommandComplete: PostgreSQL answered NoData.
      describing.delete(this);
      state.shapes.set(this.name!, null);
    }
    handleCommandComplete.call(this, msg, connection);
  };
  return true;
}

/**
 * Makes this client's named statements describe their result columns once (see above). Returns
 * whether it could (false: node-postgres's internals are not the ones this was written for).
 */
export function describeOnce(client: pg.ClientBase): boolean {
  const connection = (client as unknown as { connection?: Connectionish }).connection;
  if (!connection || typeof connection.describe !== 'function' || !install()) return false;
  if (connection[STATE]) return true;
  const state: ConnectionShapes = { shapes: new Map(), skipDescribe: false };
  const describe = connection.describe;
  connection.describe = function (this: unknown, msg: unknown) {
    if (state.skipDescribe) {
      state.skipDescribe = false;
      return;
    }
    describe.call(this, msg);
  };
  connection[STATE] = state;
  return true;
}
