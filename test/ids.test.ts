/**
 * Ids and tokens (src/app/ids.ts) come from a pool of CSPRNG bytes refilled 4 KiB at a time: every
 * token has its length and alphabet, none repeats across many refills, and every character of the
 * alphabet is about equally likely (rejection sampling, not `byte % 62`, which would favour 8 of them).
 */
import { describe, expect, it } from 'vitest';
import { newId, randomToken } from '../src/app/ids.ts';

describe('randomToken', () => {
  it('gives tokens of the asked length over [0-9A-Za-z], none repeated across pool refills', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 20_000; i++) {
      const t = randomToken(i % 7 === 0 ? 64 : 22);
      expect(t).toMatch(i % 7 === 0 ? /^[0-9A-Za-z]{64}$/ : /^[0-9A-Za-z]{22}$/);
      expect(seen.has(t)).toBe(false);
      seen.add(t);
    }
    expect(randomToken(1)).toMatch(/^[0-9A-Za-z]$/);
    expect(newId('order')).toMatch(/^ord_[0-9A-Za-z]{22}$/);
  });

  it('draws every character about equally often', () => {
    const counts = new Map<string, number>();
    const n = 30_000;
    for (let i = 0; i < n; i++) for (const c of randomToken()) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(62);
    const expected = (n * 22) / 62;
    // ≈ 10 650 each; a byte % 62 without rejection would give the first 8 characters ≈ 25% more.
    for (const v of counts.values()) expect(Math.abs(v - expected) / expected).toBeLessThan(0.06);
  });
});
