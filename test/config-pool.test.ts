/**
 * DATABASE_POOL_MAX: its default follows the machine's cores (2 × cores + 1, at most 10), a value
 * given wins, and a bad one is refused at start.
 */
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { defaultPoolMax, loadConfig } from '../src/app/config.ts';

describe('the PostgreSQL pool size', () => {
  it('defaults to twice the cores and one, at most 10', () => {
    expect(defaultPoolMax(1)).toBe(3);
    expect(defaultPoolMax(2)).toBe(5);
    expect(defaultPoolMax(4)).toBe(9);
    expect(defaultPoolMax(5)).toBe(10);
    expect(defaultPoolMax(64)).toBe(10);
  });

  it("is this machine's default when DATABASE_POOL_MAX is unset or empty", () => {
    const expected = Math.min(10, 2 * os.availableParallelism() + 1);
    expect(loadConfig({}).dbPoolMax).toBe(expected);
    expect(loadConfig({ DATABASE_POOL_MAX: '' }).dbPoolMax).toBe(expected);
  });

  it('takes DATABASE_POOL_MAX when given, above the default too, and refuses what is not a count', () => {
    expect(loadConfig({ DATABASE_POOL_MAX: '16' }).dbPoolMax).toBe(16);
    expect(loadConfig({ DATABASE_POOL_MAX: '2' }).dbPoolMax).toBe(2);
    for (const bad of ['ten', '2.5', '-1']) expect(() => loadConfig({ DATABASE_POOL_MAX: bad })).toThrow(/DATABASE_POOL_MAX must be a non-negative integer/);
    // No connection at all: every request would wait for one.
    expect(() => loadConfig({ DATABASE_POOL_MAX: '0' })).toThrow('DATABASE_POOL_MAX must be at least 1, got "0"');
  });
});
