-- Card subscriptions billed here (issue 14): the saved card each one charges, its billing
-- schedule, the cycle it is at, dunning, and exactly one rebill order per (subscription, cycle).

-- Cycle n (1 = the first rebill) is due at billing_anchor + (n - anchor_cycle) intervals, computed
-- on calendar dates in the team's time zone at the team's rebill hour (month ends clamped:
-- Jan 31 → Feb 28/29 → Mar 31). A trial anchors cycle 1 at its end; a plain recurring offer
-- anchors cycle 0 at the purchase. Changing the next billing date re-anchors.
ALTER TABLE subscriptions ADD COLUMN payment_method_id text REFERENCES payment_methods(id);
ALTER TABLE subscriptions ADD COLUMN quantity integer NOT NULL DEFAULT 1;
ALTER TABLE subscriptions ADD COLUMN cycle integer NOT NULL DEFAULT 0;
ALTER TABLE subscriptions ADD COLUMN billing_anchor timestamptz;
ALTER TABLE subscriptions ADD COLUMN anchor_cycle integer NOT NULL DEFAULT 0;
-- Dunning: failed attempts on the current cycle, and when the next one is due (past_due only).
ALTER TABLE subscriptions ADD COLUMN retry_count integer NOT NULL DEFAULT 0;
ALTER TABLE subscriptions ADD COLUMN retry_at timestamptz;
-- A billing run's lease: while in the future no other worker takes the subscription.
ALTER TABLE subscriptions ADD COLUMN billing_lease_until timestamptz;
ALTER TABLE subscriptions ADD COLUMN ended_at timestamptz;
ALTER TABLE subscriptions ADD COLUMN end_reason text;

CREATE INDEX subscriptions_card_due ON subscriptions (next_billing_at)
  WHERE externally_managed = false AND status IN ('trialing', 'active', 'cancel_at_period_end');
CREATE INDEX subscriptions_card_retry ON subscriptions (retry_at)
  WHERE externally_managed = false AND status = 'past_due';

-- One rebill order per cycle of a card subscription: the key that makes a cycle billed once.
ALTER TABLE orders ADD COLUMN rebill_cycle integer;
CREATE UNIQUE INDEX orders_one_rebill_per_cycle ON orders (subscription_id, rebill_cycle) WHERE rebill_cycle IS NOT NULL;

-- The nightly rebill queue runs at the team's hour, in its time zone (IANA name).
ALTER TABLE teams ADD COLUMN time_zone text NOT NULL DEFAULT 'UTC';
