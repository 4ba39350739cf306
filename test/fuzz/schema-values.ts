import fc from 'fast-check';

/** The slice of JSON Schema (as zod 4 writes it into /openapi.json) the generator understands. */
export interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  const?: unknown;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  format?: string;
}

/**
 * Real ids of the fuzzed team's objects, by prefix (`cmp`, `offer`, `ord`…) and by collection
 * path (`/v1/products`), refreshed while the run goes on. Values are picked when a case is
 * generated, so a case made later sees objects created earlier.
 */
export class IdPool {
  readonly byPrefix = new Map<string, string[]>();
  readonly byCollection = new Map<string, string[]>();

  /** `ids`: the items of the list at `collection`; `seen`: every id anywhere in them. */
  add(collection: string, ids: string[], seen: string[] = ids): void {
    this.byCollection.set(collection, ids);
    for (const id of [...ids, ...seen]) {
      const prefix = id.slice(0, id.indexOf('_'));
      const list = this.byPrefix.get(prefix) ?? [];
      if (!list.includes(id)) list.push(id);
      this.byPrefix.set(prefix, list.slice(-50));
    }
  }

  /** Forgets every id: the next lists say what still exists. */
  clear(): void {
    this.byPrefix.clear();
    this.byCollection.clear();
  }

  any(): string[] {
    return [...this.byPrefix.values()].flat();
  }
}

/** `^cmp_[0-9A-Za-z]{1,64}$` → `cmp`: the prefix of an id pattern, if it is one. */
export function idPrefixOf(pattern: string | undefined): string | undefined {
  return pattern?.match(/^\^([a-z]+)_\[0-9A-Za-z\]/)?.[1];
}

export function randomId(prefix: string): fc.Arbitrary<string> {
  return fc.stringMatching(/^[0-9A-Za-z]{1,24}$/).map((s) => `${prefix}_${s}`);
}

/** Four times in five one of `list` (read when the value is generated), else `fallback`. */
export function pick(list: () => string[], fallback: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc.tuple(fc.nat(), fallback, fc.nat(4)).map(([n, other, dice]) => {
    const ids = list();
    return dice > 0 && ids.length > 0 ? ids[n % ids.length]! : other;
  });
}

const MAX_DEPTH = 8;

export class ValueGenerator {
  constructor(
    private readonly components: Record<string, JsonSchema>,
    private readonly pool: IdPool,
    /** A reachable http(s) URL (the provider sandbox), so URLs in bodies lead somewhere that answers. */
    private readonly baseUrl: string,
    /** Likely-valid values by field name (a card number the sandbox approves, the team's currency), offered beside generated ones. */
    private readonly hints: Record<string, fc.Arbitrary<unknown>> = {},
  ) {}

  resolve(schema: JsonSchema): JsonSchema {
    let s = schema;
    for (let i = 0; s.$ref && i < 10; i++) s = this.components[s.$ref.replace('#/components/schemas/', '')] ?? {};
    return s;
  }

  /** A value that mostly satisfies `schema`: right types, bounds, patterns and real ids. */
  valid(schema: JsonSchema, name = '', depth = 0): fc.Arbitrary<unknown> {
    const s = this.resolve(schema);
    if (depth > MAX_DEPTH) return fc.constant(null);
    const hint = this.hints[name];
    if (hint) return fc.oneof({ arbitrary: hint, weight: 6 }, { arbitrary: this.unhinted(s, name, depth), weight: 1 });
    return this.unhinted(s, name, depth);
  }

  private unhinted(s: JsonSchema, name: string, depth: number): fc.Arbitrary<unknown> {
    if (s.const !== undefined) return fc.constant(s.const);
    if (s.enum) return fc.constantFrom(...s.enum);
    const alternatives = s.anyOf ?? s.oneOf;
    if (alternatives) return fc.oneof(...alternatives.map((a) => this.valid(a, name, depth + 1)));
    if (s.allOf) return this.valid(Object.assign({}, ...s.allOf.map((a) => this.resolve(a))), name, depth + 1);
    const type = Array.isArray(s.type) ? s.type : s.type ? [s.type] : s.properties ? ['object'] : ['string'];
    return fc.oneof(...type.map((t) => this.ofType(t, s, name, depth)));
  }

  private ofType(type: string, s: JsonSchema, name: string, depth: number): fc.Arbitrary<unknown> {
    switch (type) {
      case 'null':
        return fc.constant(null);
      case 'boolean':
        return fc.boolean();
      case 'integer':
        return fc.integer({ min: Math.max(s.minimum ?? -1000, Number.MIN_SAFE_INTEGER), max: Math.min(s.maximum ?? 100_000, Number.MAX_SAFE_INTEGER) });
      case 'number':
        return fc.double({ min: s.minimum ?? -1000, max: s.maximum ?? 100_000, noNaN: true });
      case 'array': {
        const max = Math.min(s.maxItems ?? 3, 3);
        return fc.array(this.valid(s.items ?? {}, name, depth + 1), { minLength: Math.min(s.minItems ?? 0, max), maxLength: max });
      }
      case 'object':
        return this.object(s, depth);
      default:
        return this.string(s, name);
    }
  }

  private object(s: JsonSchema, depth: number): fc.Arbitrary<unknown> {
    const props = s.properties ?? {};
    const model: Record<string, fc.Arbitrary<unknown>> = {};
    for (const [key, sub] of Object.entries(props)) model[key] = this.valid(sub, key, depth + 1);
    // Fields with a likely value are always sent. Optional fields often exclude one another (a
    // gateway or a router, percent or amount off): most objects carry no other optional field.
    const sure = Object.keys(props).filter((k) => (s.required ?? []).includes(k) || k in this.hints);
    const lean = Object.fromEntries(sure.map((k) => [k, model[k]!]));
    return fc.oneof({ weight: 1, arbitrary: fc.record(model, { requiredKeys: sure }) }, { weight: 2, arbitrary: fc.record(lean) });
  }

  private string(s: JsonSchema, name: string): fc.Arbitrary<string> {
    const prefix = idPrefixOf(s.pattern);
    if (prefix) return pick(() => this.pool.byPrefix.get(prefix) ?? [], randomId(prefix));
    if (/(_id|_number)$/.test(name)) return pick(() => this.pool.any(), fc.string({ minLength: 1, maxLength: 30 }));
    if (s.format === 'email') return fc.nat().map((n) => `fuzz.${n}@example.com`);
    if (s.format === 'uri') return fc.constantFrom(this.baseUrl, `${this.baseUrl}/3ds`, `${this.baseUrl}/hook`);
    if (s.format === 'date-time') return fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString());
    if (s.pattern) return this.matching(s.pattern, s.maxLength);
    const min = s.minLength ?? 0;
    const max = Math.max(min, Math.min(s.maxLength ?? 40, 40));
    return fc.oneof(fc.string({ minLength: min, maxLength: max }), fc.constantFrom('USD', 'Serum', 'biz_1', 'sk_test_1').filter((v) => v.length >= min && v.length <= max));
  }

  private matching(pattern: string, maxLength: number | undefined): fc.Arbitrary<string> {
    try {
      const re = new RegExp(pattern);
      return fc.stringMatching(re).filter((v) => maxLength === undefined || v.length <= maxLength);
    } catch {
      return fc.string({ maxLength: 20 });
    }
  }
}
