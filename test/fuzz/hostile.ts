import fc from 'fast-check';

/** A value nested `depth` levels deep, built without recursion. */
function deepValue(depth: number, asArray: boolean): unknown {
  let v: unknown = 'x';
  for (let i = 0; i < depth; i++) v = asArray ? [v] : { a: v };
  return v;
}

/** JSON text nested `depth` levels deep, written by hand: JSON.stringify would recurse over it. */
export function deepJsonText(depth: number): string {
  return '['.repeat(depth) + '1' + ']'.repeat(depth);
}

/** Values no schema here accepts where a field expects something else, plus the ones that broke PostgreSQL. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  // wrong types
  fc.constantFrom(null, true, false, 0, -1, '', ' ', [], {}, [null], { '': '' }),
  // numbers at and past every boundary PostgreSQL and JavaScript have
  fc.constantFrom(2 ** 31, -(2 ** 31) - 1, 2 ** 53, -(2 ** 53), 2 ** 63, 1e308, -1e308, 5e-324, 0.5, 99.999, 1e21, 10_000_000_001),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map((n) => Number(n)),
  // text PostgreSQL cannot store, and text it can but that often breaks parsers
  fc.constantFrom('a\u0000b', '\u0000', 'x\ud800', '\udc00y', '\ud83d', '\u{1F9F4}', '\u202e', '\ufeff', 'ß'.repeat(300), "'; DROP TABLE orders; --", '{{lines}}'.repeat(50), '%00', '../../etc/passwd'),
  fc.string({ unit: 'binary', maxLength: 30 }),
  // sizes: past every maxLength, up to the body limit (256 KB) and past it
  fc.constantFrom(10, 1_000, 30_000, 200_000, 300_000).map((n) => 'A'.repeat(n)),
  fc.integer({ min: 0, max: 200 }).map((n) => Array.from({ length: n }, (_, i) => i)),
  // depth: within the parser's bound, and past it
  fc.tuple(fc.integer({ min: 2, max: 40 }), fc.boolean()).map(([d, arr]) => deepValue(d, arr)),
  // timestamps and ids that look right and are not
  fc.constantFrom('2026-02-30T00:00:00Z', '0000-01-01T00:00:00Z', '9999-12-31T23:59:59Z', '275760-09-13T00:00:00Z', 'ord_', 'cus_x'.padEnd(300, 'x'), 'cmp_\u0000'),
);

type Json = unknown;

/** Every path of a JSON value, leaves and containers (the root is []). */
function pathsOf(value: Json): (string | number)[][] {
  const out: (string | number)[][] = [];
  const stack: { v: Json; p: (string | number)[] }[] = [{ v: value, p: [] }];
  while (stack.length > 0) {
    const { v, p } = stack.pop()!;
    out.push(p);
    if (Array.isArray(v)) v.forEach((c, i) => stack.push({ v: c, p: [...p, i] }));
    else if (v && typeof v === 'object') for (const [k, c] of Object.entries(v)) stack.push({ v: c, p: [...p, k] });
  }
  return out;
}

function setAt(root: Json, path: (string | number)[], value: unknown, remove: boolean): Json {
  if (path.length === 0) return remove ? undefined : value;
  const copy = structuredClone(root) as any;
  let cur = copy;
  for (const k of path.slice(0, -1)) cur = cur[k];
  const last = path[path.length - 1]!;
  if (remove && Array.isArray(cur)) cur.splice(Number(last), 1);
  else if (remove) delete cur[last];
  else cur[last] = value;
  return copy;
}

export type Mutation =
  | { kind: 'none' }
  | { kind: 'replace'; at: number; value: unknown }
  | { kind: 'remove'; at: number }
  | { kind: 'add'; at: number; key: string; value: unknown }
  | { kind: 'taint'; at: number; bad: string };

export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  // a string of an otherwise valid body with a code point PostgreSQL refuses in the middle
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('taint' as const), at: fc.nat(), bad: fc.constantFrom('\u0000', '\ud800', '\udfff') }) },
  { weight: 8, arbitrary: fc.constant({ kind: 'none' as const }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), value: hostileValue }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('remove' as const), at: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('add' as const), at: fc.nat(), key: fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('id', 'team_id', 'status', 'a\u0000', '\ud800', '')), value: hostileValue }),
  },
);

/** `body` with one field replaced, removed, or added, chosen by index among its paths. */
export function mutate(body: Json, m: Mutation): Json {
  if (m.kind === 'none') return body;
  const paths = pathsOf(body);
  const path = paths[m.at % paths.length]!;
  if (m.kind === 'replace') return setAt(body, path, m.value, false);
  if (m.kind === 'remove') return setAt(body, path, undefined, true);
  if (m.kind === 'taint') {
    const strings = paths.filter((p) => typeof p.reduce<any>((cur, k) => cur?.[k], body) === 'string');
    if (strings.length === 0) return body;
    const at = strings[m.at % strings.length]!;
    const text = at.reduce<any>((cur, k) => cur[k], body) as string;
    const cut = text.length >> 1;
    return setAt(body, at, text.slice(0, cut) + m.bad + text.slice(cut), false);
  }
  const containers = paths.filter((p) => {
    const v = p.reduce<any>((cur, k) => cur?.[k], body);
    return v && typeof v === 'object' && !Array.isArray(v);
  });
  if (containers.length === 0) return body;
  return setAt(body, [...containers[m.at % containers.length]!, m.key], m.value, false);
}

/** How the body travels: as JSON of the (mutated) value, or as raw text a parser must survive. */
export type Transport =
  | { kind: 'json'; contentType: string }
  | { kind: 'raw'; contentType: string | undefined; text: string }
  | { kind: 'none' };

export const transport: fc.Arbitrary<Transport> = fc.oneof(
  { weight: 12, arbitrary: fc.constant({ kind: 'json' as const, contentType: 'application/json' }) },
  { weight: 1, arbitrary: fc.constantFrom('application/json; charset=utf-8', 'Application/JSON', 'application/json; charset=latin1').map((contentType) => ({ kind: 'json' as const, contentType })) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('raw' as const),
      contentType: fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/vnd.api+json', '', undefined),
      text: fc.oneof(
        fc.constantFrom('', '{', '{"a":', '[1,]', 'null', 'true', '"x"', '1e999', '{"a":1}{"b":2}', '\u0000', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}', 'a=1&b=2'),
        fc.string({ maxLength: 40 }),
        fc.integer({ min: 20, max: 5_000 }).map(deepJsonText),
      ),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
);

/** Percent-encodes any string, an unpaired surrogate as the bytes UTF-8 would give it (which no decoder accepts). */
export function encodeAny(s: string): string {
  return Array.from(s, (ch) => {
    const c = ch.codePointAt(0)!;
    if (c >= 0xd800 && c <= 0xdfff) return Buffer.from([0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)]).toString('hex').replace(/../g, '%$&').toUpperCase();
    return encodeURIComponent(ch);
  }).join('');
}

/** A path parameter: a real id, a well-formed unknown one, or one that is not an id at all (already URL-encoded). */
export const hostileSegment: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('%00', 'x%00y', '%ED%A0%80', '%C0%AF', '%FF', '..', '%2e%2e', 'a'.repeat(2_000), '%F0%9F%A7%B4', 'null', '0', '-1', '%20'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }).map(encodeAny),
);
