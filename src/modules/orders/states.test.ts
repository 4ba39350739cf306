import { describe, expect, it } from 'vitest';
import { walkMachine } from '../../app/state-machine.walk.ts';
import { ORDER, ORDER_MOVES, ORDER_STATUSES, ORDER_UPSELL, PAYABLE, PAYMENT_STATUSES, UPSELLABLE, assertOrderMove, canMove } from './states.ts';

describe('order state machine', () => {
  it('names only known statuses as targets', () => {
    for (const targets of Object.values(ORDER_MOVES)) for (const t of targets) expect(ORDER_STATUSES).toContain(t);
  });
  it('allows paying a lead and refuses reopening a completed order', () => {
    expect(canMove('lead', 'processing')).toBe(true);
    expect(canMove('completed', 'pending')).toBe(false);
    expect(() => assertOrderMove('refunded', 'processing')).toThrow(/cannot move/);
    expect(() => assertOrderMove('refunded', 'processing')).toThrow('An order in status refunded cannot move to processing.');
  });
  it('is the ORDER machine, walked pair by pair', () => {
    expect(ORDER.states).toEqual(ORDER_STATUSES);
    expect(ORDER.terminal).toEqual(['cancelled', 'refunded']);
    walkMachine(ORDER);
  });
  it('pays and upsells only from states the table can move on from', () => {
    for (const s of PAYABLE) expect(canMove(s, 'pending') || s === 'pending').toBe(true);
    for (const s of UPSELLABLE) expect(ORDER.terminal).not.toContain(s);
    expect(PAYMENT_STATUSES).toEqual(['pending_redirect', 'pending_external_confirmation', 'completed', 'declined', 'voided']);
  });
  it('an upsell claim is answered once; an external one may wait for the provider first', () => {
    walkMachine(ORDER_UPSELL);
    expect(ORDER_UPSELL.canMove('pending', 'approved')).toBe(true);
    expect(() => ORDER_UPSELL.assertMove('approved', 'pending')).toThrow('An upsell in status approved cannot move to pending.');
  });
});
