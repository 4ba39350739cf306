import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isStorableText, jsonNestingExceeds, unstorablePaths } from './input-guard.ts';

function depthOf(v: unknown): number {
  if (v === null || typeof v !== 'object') return 0;
  const children = Array.isArray(v) ? v : Object.values(v);
  return 1 + Math.max(0, ...children.map(depthOf));
}

describe('input guard', () => {
  it('measures JSON nesting as the parser would, strings and escapes included', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 9 }), (v, limit) => {
        expect(jsonNestingExceeds(JSON.stringify(v), limit)).toBe(depthOf(v) > limit);
      }),
      { seed: 11, numRuns: 2_000 },
    );
    expect(jsonNestingExceeds('{"a":"[[[[\\"[[[["}', 1)).toBe(false);
    expect(jsonNestingExceeds('['.repeat(1_000_000), 32)).toBe(true);
  });

  it('tells text PostgreSQL stores from text it refuses', () => {
    for (const ok of ['', 'plain', 'Serum \u{1F9F4}', '\uD83D\uDE00', 'ü']) expect(isStorableText(ok), ok).toBe(true);
    for (const bad of ['\u0000', 'a\u0000', '\uD800', 'x\uDBFFy', '\uDC00', '\uDE00\uD83D']) expect(isStorableText(bad), JSON.stringify(bad)).toBe(false);
  });

  it('names the path of each bad string or key, never walking raw bytes', () => {
    const body = { name: 'a\u0000', products: [{ offer_id: 'ok' }, { offer_id: '\uD800' }], 'k\u0000': 1, raw: Buffer.from([0]) };
    expect(unstorablePaths(body, '').map((f) => f.path)).toEqual(['name', 'products.1.offer_id', 'k\\u0000']);
    expect(unstorablePaths({ id: 'x\u0000' }, 'params').map((f) => f.path)).toEqual(['params.id']);
    expect(unstorablePaths(Buffer.from([0, 0]), '')).toEqual([]);
  });
});
