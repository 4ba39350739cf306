/**
 * Card fields and credentials masked by name in what a log call is given, at any depth, in one
 * walk (logger.ts runs it as pino's `formatters.log`, before pino's serializers).
 *
 * Why not pino's `redact` with wildcard paths (`*.card_cvv`, `*.*.card_cvv`, …): pino runs a
 * wildcard-first redactor over every top-level value of every line and every child logger's
 * bindings, strings and numbers included, and @pinojs/redact walks all its paths on each call.
 * With this module's keys that was ≈ 70 µs a line and 15 µs for each request's child logger
 * (Fastify makes one per request), against ≈ 4 µs a line for pino without it (bench/README.md,
 * "What a log line cost"). This walk looks at each key once and copies only what it masks.
 *
 * What it walks: plain objects, arrays and errors (an error's own enumerable fields, its `cause`
 * and an AggregateError's `errors`; a masked error stays an error of its class, so pino's error
 * serializer still writes its type, message and stack). Not other class instances: a Fastify
 * request or reply, a Date, a Buffer, a URL are written by their serializers or `toJSON`, which
 * write no body and no headers. Past `MAX_DEPTH` levels or `MAX_NODES` values in one call it stops
 * walking; the line's JSON text is scrubbed again in any case (logger.ts, `streamWrite`: secrets
 * named in JSON or a query string, card numbers anywhere).
 */

export const CENSOR = '[REDACTED]';

/** How deep one log call is walked, and how many values at most. */
const MAX_DEPTH = 12;
const MAX_NODES = 2000;

type Walk = { nodes: number };

export interface LogCensor {
  /** The object unchanged when it holds nothing to mask (the same reference), else a masked copy. */
  (obj: Record<string, unknown>): Record<string, unknown>;
}

/** Keys are compared lower-cased: `Authorization`, `CARD_NUMBER` and `card_number` are all masked. */
export function logCensor(keys: readonly string[]): LogCensor {
  const secret = new Set(keys.map((k) => k.toLowerCase()));
  const isSecret = (key: string) => secret.has(key) || secret.has(key.toLowerCase());

  function value(v: unknown, depth: number, walk: Walk): unknown {
    if (v === null || typeof v !== 'object') return v;
    if (depth >= MAX_DEPTH || ++walk.nodes > MAX_NODES) return v;
    if (Array.isArray(v)) return array(v, depth, walk);
    if (v instanceof Error) return error(v, depth, walk);
    const proto = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) return v;
    return record(v as Record<string, unknown>, depth, walk);
  }

  function array(a: unknown[], depth: number, walk: Walk): unknown[] {
    let out: unknown[] | null = null;
    for (let i = 0; i < a.length; i++) {
      const v = value(a[i], depth + 1, walk);
      if (v !== a[i]) (out ??= a.slice())[i] = v;
    }
    return out ?? a;
  }

  function record(o: Record<string, unknown>, depth: number, walk: Walk): Record<string, unknown> {
    let out: Record<string, unknown> | null = null;
    for (const key in o) {
      if (!Object.hasOwn(o, key)) continue;
      const v = o[key];
      const masked = v !== undefined && isSecret(key) ? CENSOR : value(v, depth + 1, walk);
      if (masked !== v) (out ??= { ...o })[key] = masked;
    }
    return out ?? o;
  }

  function error(e: Error, depth: number, walk: Walk): Error {
    const fields = record(e as unknown as Record<string, unknown>, depth, walk);
    const cause = 'cause' in e ? value(e.cause, depth + 1, walk) : undefined;
    const errors = e instanceof AggregateError && Array.isArray(e.errors) ? array(e.errors, depth, walk) : undefined;
    if (fields === (e as unknown) && cause === e.cause && (errors === undefined || errors === (e as AggregateError).errors)) return e;
    // Same class (pino writes its name as `type`), message and stack; enumerable fields masked.
    const copy = Object.create(Object.getPrototypeOf(e) as object) as Error;
    Object.defineProperty(copy, 'message', { value: e.message, writable: true, configurable: true });
    Object.defineProperty(copy, 'stack', { value: e.stack, writable: true, configurable: true });
    Object.assign(copy, fields);
    if ('cause' in e) Object.defineProperty(copy, 'cause', { value: cause, writable: true, configurable: true });
    if (errors !== undefined) Object.defineProperty(copy, 'errors', { value: errors, writable: true, configurable: true });
    return copy;
  }

  return (obj) => record(obj, 0, { nodes: 0 });
}
