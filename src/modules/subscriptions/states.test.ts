import { describe, expect, it } from 'vitest';
import { walkMachine } from '../../app/state-machine.walk.ts';
import { EXTPAY_MEMBERSHIP_STATES } from '../../providers/extpay/status.ts';
import { CARD_SUBSCRIPTION_MOVES, SUBSCRIPTION, SUBSCRIPTION_STATUSES } from './states.ts';

describe('subscription state machine', () => {
  it('is walked pair by pair', () => {
    expect(SUBSCRIPTION.states).toEqual(SUBSCRIPTION_STATUSES);
    expect(SUBSCRIPTION.terminal).toEqual(['completed', 'expired']);
    walkMachine(SUBSCRIPTION);
  });

  it('allows every move a card action makes', () => {
    for (const { from, to } of Object.values(CARD_SUBSCRIPTION_MOVES)) {
      for (const f of from) expect(SUBSCRIPTION.canMove(f, to), `${f} → ${to}`).toBe(true);
    }
  });

  it('names every state a membership mirrors to', () => {
    for (const s of Object.values(EXTPAY_MEMBERSHIP_STATES)) expect(SUBSCRIPTION.isState(s)).toBe(true);
    expect(SUBSCRIPTION.isState('paused')).toBe(true);
    expect(SUBSCRIPTION.isState('cancel_at_period_end')).toBe(true);
  });

  it('mirrors the provider between live states; an ended subscription stays ended, a cancelled card one may be reactivated', () => {
    expect(SUBSCRIPTION.canMove('paused', 'trialing')).toBe(true);
    expect(SUBSCRIPTION.canMove('active', 'past_due')).toBe(true);
    expect(SUBSCRIPTION.canMove('cancelled', 'active')).toBe(true);
    expect(SUBSCRIPTION.canMove('active', 'pending')).toBe(false);
    expect(() => SUBSCRIPTION.assertMove('expired', 'active')).toThrow('A subscription in status expired cannot move to active.');
    expect(() => SUBSCRIPTION.assertMove('cancelled', 'paused')).toThrow(/cannot move/);
  });
});
