import { describe, expect, it } from 'vitest';
import { decideThrottle, replay } from './throttle.ts';

describe('decideThrottle (spec 2.3)', () => {
  it('automatic throttling keeps the throttled count at ⌊rate × conversions⌋ after every conversion, for every whole-percent rate', () => {
    for (let percent = 0; percent <= 100; percent++) {
      let throttled = 0;
      for (let n = 0; n < 400; n++) {
        if (decideThrottle({ requested: false, automatic: true, rateBp: percent * 100, conversionsBefore: n, throttledBefore: throttled }).throttled) throttled++;
        expect(throttled).toBe(Math.floor((percent * (n + 1)) / 100));
      }
    }
  });

  it('requested throttles count toward the rate and leave fewer automatic ones; never un-throttled', () => {
    const sim = replay(Array.from({ length: 1000 }, (_, i) => ({ order_id: `o${i}`, requested: i % 10 === 9 })), 3000, true, false);
    expect(sim).toMatchObject({ conversions: 1000, requested: 100, automatic: 200, throttled: 300 });
    const over = replay(Array.from({ length: 1000 }, (_, i) => ({ order_id: `o${i}`, requested: i % 5 < 2 })), 3000, true, false);
    expect(over).toMatchObject({ requested: 400, automatic: 0, throttled: 400 });
  });

  it('no rate or automatic throttling off: only requested ones', () => {
    expect(decideThrottle({ requested: true, automatic: false, rateBp: null, conversionsBefore: 0, throttledBefore: 0 })).toEqual({ throttled: true, reason: 'requested' });
    expect(decideThrottle({ requested: false, automatic: true, rateBp: null, conversionsBefore: 9, throttledBefore: 0 })).toEqual({ throttled: false, reason: 'none' });
    expect(decideThrottle({ requested: false, automatic: false, rateBp: 10_000, conversionsBefore: 9, throttledBefore: 0 })).toEqual({ throttled: false, reason: 'none' });
  });
});
