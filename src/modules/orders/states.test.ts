import { describe, expect, it } from 'vitest';
import { ORDER_MOVES, ORDER_STATUSES, assertOrderMove, canMove } from './states.ts';

describe('order state machine', () => {
  it('names only known statuses as targets', () => {
    for (const targets of Object.values(ORDER_MOVES)) for (const t of targets) expect(ORDER_STATUSES).toContain(t);
  });
  it('allows paying a lead and refuses reopening a completed order', () => {
    expect(canMove('lead', 'processing')).toBe(true);
    expect(canMove('completed', 'pending')).toBe(false);
    expect(() => assertOrderMove('refunded', 'processing')).toThrow(/cannot move/);
  });
});
