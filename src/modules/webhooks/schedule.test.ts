import { describe, expect, it } from 'vitest';
import { DEFAULT_WEBHOOK_RETRY_SCHEDULE_MS } from '../../app/config.ts';
import { MAX_RETRY_DELAY_MS, retryAfterMs, retryDelayMs } from './schedule.ts';

describe('retryDelayMs', () => {
  const schedule = DEFAULT_WEBHOOK_RETRY_SCHEDULE_MS;

  it('follows the schedule with no jitter at the midpoint draw, and ends after the last retry', () => {
    expect(schedule.map((_, i) => retryDelayMs(schedule, i + 1, () => 0.5))).toEqual(schedule);
    expect(retryDelayMs(schedule, schedule.length + 1, () => 0.5)).toBeNull();
    expect(retryDelayMs([], 1)).toBeNull();
  });

  it('jitters by at most ±20%', () => {
    expect(retryDelayMs(schedule, 2, () => 0)).toBe(240_000);
    expect(retryDelayMs(schedule, 2, () => 0.999999)).toBe(360_000);
    for (let i = 0; i < 200; i++) {
      const d = retryDelayMs(schedule, 1)!;
      expect(d).toBeGreaterThanOrEqual(4_000);
      expect(d).toBeLessThanOrEqual(6_000);
    }
  });

  it('spans about a day over 8 attempts', () => {
    const total = schedule.reduce((a, b) => a + b, 0);
    expect(schedule.length + 1).toBe(8);
    expect(total / 3_600_000).toBeGreaterThan(24);
    expect(total / 3_600_000).toBeLessThan(30);
  });
});

describe('retryAfterMs', () => {
  const now = Date.parse('2030-01-01T00:00:00Z');

  it('reads delta-seconds and HTTP-dates, capped at 24 h', () => {
    expect(retryAfterMs('1', now)).toBe(1000);
    expect(retryAfterMs(' 120 ', now)).toBe(120_000);
    expect(retryAfterMs('Tue, 01 Jan 2030 00:00:30 GMT', now)).toBe(30_000);
    expect(retryAfterMs('Mon, 31 Dec 2029 23:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs('999999', now)).toBe(MAX_RETRY_DELAY_MS);
    expect(retryAfterMs('Fri, 01 Jan 2100 00:00:00 GMT', now)).toBe(MAX_RETRY_DELAY_MS);
  });

  it('ignores an absent or unreadable header', () => {
    expect(retryAfterMs(undefined, now)).toBeNull();
    expect(retryAfterMs('', now)).toBeNull();
    expect(retryAfterMs('soon', now)).toBeNull();
    expect(retryAfterMs('-5', now)).toBeNull();
  });
});
