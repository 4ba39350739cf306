import fc from 'fast-check';
import { encodeAny, hostileSegment, hostileValue, mutate, mutation, type Transport, transport } from './hostile.ts';
import { type IdPool, idPrefixOf, type JsonSchema, randomId, type ValueGenerator } from './schema-values.ts';

export interface Operation {
  method: string;
  /** The OpenAPI path, `{param}` placeholders included. */
  path: string;
  params: { name: string; pattern?: string }[];
  body?: JsonSchema;
}

/** One request to send. `body` is the value to send as JSON (undefined: none) unless the transport is raw. */
export interface FuzzCase {
  op: Operation;
  url: string;
  body: unknown;
  transport: Transport;
  idempotencyKey?: string;
}

const MUTATING = new Set(['post', 'put', 'patch', 'delete']);

/** Every POST/PUT/PATCH/DELETE of the API (`/checkout`, `/v1`) in the spec the server serves. */
export function operationsOf(spec: any): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries<any>(spec.paths ?? {})) {
    if (!path.startsWith('/v1/') && !path.startsWith('/checkout/')) continue;
    for (const [method, op] of Object.entries<any>(item)) {
      if (!MUTATING.has(method)) continue;
      const params = (op.parameters ?? []).filter((p: any) => p.in === 'path').map((p: any) => ({ name: p.name, pattern: p.schema?.pattern }));
      ops.push({ method: method.toUpperCase(), path, params, body: op.requestBody?.content?.['application/json']?.schema });
    }
  }
  return ops;
}

/** The list a path parameter names an item of: `/v1/products/{id}/x` → `/v1/products`. */
export function collectionOf(path: string, param: string): string {
  return path.slice(0, path.indexOf(`/{${param}}`));
}

function segment(op: Operation, param: { name: string; pattern?: string }, pool: IdPool): fc.Arbitrary<string> {
  const prefix = idPrefixOf(param.pattern);
  const real = () => (prefix ? pool.byPrefix.get(prefix) : pool.byCollection.get(collectionOf(op.path, param.name))) ?? [];
  return fc.oneof(
    { weight: 8, arbitrary: fc.nat().map((n) => real()[n % Math.max(real().length, 1)] ?? 'missing') },
    { weight: 1, arbitrary: randomId(prefix ?? real()[0]?.split('_')[0] ?? 'x') },
    { weight: 2, arbitrary: hostileSegment },
  );
}

/** Sometimes a query string too: hostile values under names the list routes read. */
const query: fc.Arbitrary<string> = fc.oneof(
  { weight: 9, arbitrary: fc.constant('') },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('limit', 'starting_after', 'created_gte', 'status', 'x'), fc.oneof(hostileSegment, hostileValue.map((v) => encodeAny(String(v)).slice(0, 2_000))))
      .map(([k, v]) => `?${k}=${v}`),
  },
);

const KEYS = ['fuzz-key-1', 'fuzz-key-2', 'fuzz-key-3'];
/** No key, a fresh one, one of a few reused ones (a replay, or the same key with another body), or a malformed one. */
const idempotencyKey: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 6, arbitrary: fc.constant(undefined) },
  { weight: 2, arbitrary: fc.uuid() },
  { weight: 2, arbitrary: fc.constantFrom(...KEYS) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', 'k'.repeat(300), 'clé-ü') },
);

export function caseFor(op: Operation, values: ValueGenerator, pool: IdPool): fc.Arbitrary<FuzzCase> {
  const url = fc.tuple(...op.params.map((p) => segment(op, p, pool)), query).map((parts) => {
    let path = op.path;
    op.params.forEach((p, i) => (path = path.replace(`{${p.name}}`, parts[i]!)));
    return path + parts[parts.length - 1];
  });
  const valid = op.body ? values.valid(op.body) : fc.constantFrom(undefined, {});
  const body = fc.tuple(valid, mutation).map(([v, m]) => (v === undefined && m.kind !== 'replace' ? v : mutate(v ?? {}, m)));
  return fc.record({ op: fc.constant(op), url, body, transport, idempotencyKey: op.method === 'POST' ? idempotencyKey : fc.constant(undefined) });
}
