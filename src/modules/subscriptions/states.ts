import { defineMachine } from '../../app/state-machine.ts';
import type { MirroredSubscriptionState } from '../../providers/extpay/status.ts';

/** Every status a subscription can have: ours for card subscriptions, mirrored ones for extpay (status.ts). */
export const SUBSCRIPTION_STATUSES = [
  'trialing',
  'active',
  'past_due',
  'paused',
  'cancel_at_period_end',
  'cancelled',
  'completed',
  'expired',
  'pending',
] as const satisfies readonly MirroredSubscriptionState[];
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

/** Nothing more is billed: a card subscription in one of these cannot be changed (only a cancelled one can be reactivated). */
export const ENDED_SUBSCRIPTION_STATUSES = ['cancelled', 'completed', 'expired'] as const satisfies readonly SubscriptionStatus[];

/** What a merchant can do to a subscription (spec 3.2): Cancel (now or at period end), Pause, Restart, Reactivate. */
export type SubscriptionAction = 'cancel' | 'cancel_at_period_end' | 'pause' | 'resume' | 'reactivate';

/**
 * Card subscriptions (billed here): the statuses each action may start from and where it leads.
 * Its refusal names the action (`subscription_not_actionable`); the move itself is then checked by
 * SUBSCRIPTION like any other. Externally managed subscriptions take the provider's answer instead.
 */
export const CARD_SUBSCRIPTION_MOVES = {
  cancel: { from: ['trialing', 'active', 'past_due', 'paused', 'cancel_at_period_end'], to: 'cancelled', done: 'cancelled' },
  cancel_at_period_end: { from: ['trialing', 'active'], to: 'cancel_at_period_end', done: 'cancelled at period end' },
  pause: { from: ['trialing', 'active'], to: 'paused', done: 'paused' },
  resume: { from: ['paused'], to: 'active', done: 'restarted' },
  reactivate: { from: ['cancelled', 'cancel_at_period_end'], to: 'active', done: 'reactivated' },
} as const satisfies Record<SubscriptionAction, { from: readonly SubscriptionStatus[]; to: SubscriptionStatus; done: string }>;

/**
 * A subscription's status: the card actions above, and the provider's membership as mirrored
 * (status.ts `membershipState`). The mirror sees snapshots (Sync, or the membership read at a
 * webhook), so between the live states — trialing, active, past_due, paused, cancel_at_period_end —
 * any move can show; `trialing` included, as a subscription created before its membership was read
 * takes the offer's status, not the plan's. Nothing moves back to `pending` (a drafted membership);
 * `completed` and `expired` end it; `cancelled` ends it unless Reactivate restarts a card subscription.
 */
export const SUBSCRIPTION_MOVES = {
  pending: ['trialing', 'active', 'past_due', 'paused', 'cancel_at_period_end', 'cancelled', 'completed', 'expired'],
  trialing: ['active', 'past_due', 'paused', 'cancel_at_period_end', 'cancelled', 'completed', 'expired'],
  active: ['trialing', 'past_due', 'paused', 'cancel_at_period_end', 'cancelled', 'completed', 'expired'],
  past_due: ['trialing', 'active', 'paused', 'cancel_at_period_end', 'cancelled', 'completed', 'expired'],
  paused: ['trialing', 'active', 'past_due', 'cancel_at_period_end', 'cancelled', 'completed', 'expired'],
  cancel_at_period_end: ['trialing', 'active', 'past_due', 'paused', 'cancelled', 'completed', 'expired'],
  cancelled: ['active'],
  completed: [],
  expired: [],
} as const satisfies Record<SubscriptionStatus, readonly SubscriptionStatus[]>;

/** Initial: any status — a card subscription starts trialing or active, an external one as its membership is. */
export const SUBSCRIPTION = defineMachine('subscription', SUBSCRIPTION_MOVES, { states: SUBSCRIPTION_STATUSES, initial: SUBSCRIPTION_STATUSES });
