import { describe, expect, it } from 'vitest';
import { orderMembers, utcMonth } from './service.ts';

const m = (id: string, priority: number, weight = 1) => ({ id, priority, weight });

/** Replays the given draws in order. */
function draws(...values: number[]): () => number {
  let i = 0;
  return () => {
    if (i >= values.length) throw new Error('more draws than expected');
    return values[i++]!;
  };
}

describe('orderMembers: priority', () => {
  it('orders by ascending priority, ties by descending weight, then input order', () => {
    const members = [m('c', 3), m('a1', 1, 1), m('b', 2), m('a2', 1, 5), m('a3', 1, 1)];
    expect(orderMembers('priority', members).map((x) => x.id)).toEqual(['a2', 'a1', 'a3', 'b', 'c']);
  });

  it('never draws a random number and leaves its input untouched', () => {
    const members = [m('b', 2), m('a', 1)];
    const ordered = orderMembers('priority', members, () => {
      throw new Error('no draw expected');
    });
    expect(ordered.map((x) => x.id)).toEqual(['a', 'b']);
    expect(members.map((x) => x.id)).toEqual(['b', 'a']);
  });

  it('handles no members and one member', () => {
    expect(orderMembers('priority', [])).toEqual([]);
    expect(orderMembers('weighted', [m('only', 1)], draws(0.99))).toEqual([m('only', 1)]);
  });
});

describe('orderMembers: weighted', () => {
  // weights 1, 3, 6 over a total of 10: draws in [0, 0.1) pick a, [0.1, 0.4) b, [0.4, 1) c
  const members = [m('a', 1, 1), m('b', 1, 3), m('c', 1, 6)];

  it('draws each next member in proportion to its weight among those left', () => {
    // first draw 0.05 → a; then b (3) and c (6) over 9: 0.2 × 9 = 1.8 < 3 → b; then c
    expect(orderMembers('weighted', members, draws(0.05, 0.2, 0)).map((x) => x.id)).toEqual(['a', 'b', 'c']);
    // first 0.5 → c; then a (1) and b (3) over 4: 0.1 × 4 = 0.4 < 1 → a; then b
    expect(orderMembers('weighted', members, draws(0.5, 0.1, 0.7)).map((x) => x.id)).toEqual(['c', 'a', 'b']);
    // boundaries: exactly 0.1 × 10 = 1 is past a's share → b; the highest draw falls in the last member
    expect(orderMembers('weighted', members, draws(0.1, 0.999999, 0)).map((x) => x.id)).toEqual(['b', 'c', 'a']);
  });

  it('is a permutation without repeats, and ignores priority', () => {
    const withPriorities = [m('a', 9, 1), m('b', 1, 1), m('c', 5, 1)];
    const ordered = orderMembers('weighted', withPriorities, draws(0.99, 0.99, 0));
    expect(ordered.map((x) => x.id)).toEqual(['c', 'b', 'a']);
    expect(new Set(ordered).size).toBe(3);
  });

  it('picks first in proportion to weight over many draws', () => {
    let seed = 42;
    const lcg = () => {
      seed = (seed * 1664525 + 1013904223) % 2 ** 32;
      return seed / 2 ** 32;
    };
    const firsts: Record<string, number> = { a: 0, b: 0, c: 0 };
    for (let i = 0; i < 10_000; i++) firsts[orderMembers('weighted', members, lcg)[0]!.id]!++;
    expect(firsts.a! / 10_000).toBeCloseTo(0.1, 1);
    expect(firsts.b! / 10_000).toBeCloseTo(0.3, 1);
    expect(firsts.c! / 10_000).toBeCloseTo(0.6, 1);
  });
});

describe('utcMonth', () => {
  it('spans the calendar month in UTC, across a year end', () => {
    expect(utcMonth(new Date('2030-03-15T12:00:00Z'))).toEqual({ from: new Date('2030-03-01T00:00:00Z'), to: new Date('2030-04-01T00:00:00Z') });
    expect(utcMonth(new Date('2030-12-31T23:59:59.999Z'))).toEqual({ from: new Date('2030-12-01T00:00:00Z'), to: new Date('2031-01-01T00:00:00Z') });
    expect(utcMonth(new Date('2030-04-01T00:00:00Z')).from).toEqual(new Date('2030-04-01T00:00:00Z'));
  });
});
