-- Fraud velocity rules: per team, "at most <threshold> <metric> per <dimension> in <window_seconds>".
-- None exists until the merchant creates one. A card first payment is screened in the transaction
-- that opens its attempt, before any gateway call (see src/modules/fraud/velocity.ts).
CREATE TABLE fraud_rules (
  seq             bigserial UNIQUE,
  id              text PRIMARY KEY,
  team_id         text NOT NULL REFERENCES teams(id),
  name            text NOT NULL,
  metric          text NOT NULL CHECK (metric IN ('attempts', 'declines')),
  dimension       text NOT NULL CHECK (dimension IN ('card_fingerprint', 'bin', 'email', 'ip_address', 'order')),
  -- how many leading digits make the BIN (dimension bin only)
  bin_length      smallint CHECK (bin_length BETWEEN 6 AND 8),
  threshold       integer NOT NULL CHECK (threshold >= 1),
  window_seconds  integer NOT NULL CHECK (window_seconds >= 1),
  is_enabled      boolean NOT NULL DEFAULT true,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  CHECK ((dimension = 'bin') = (bin_length IS NOT NULL))
);
CREATE INDEX fraud_rules_team_seq ON fraud_rules (team_id, seq DESC);

-- One row per (rule, key) ever screened: every screening of that key locks it first, so the
-- count that follows sees every event an earlier screening committed (check and reserve under
-- one lock, never check-then-act). key_hash is a keyed hash: no PAN, e-mail or IP is stored here.
CREATE TABLE fraud_rule_keys (
  rule_id     text NOT NULL REFERENCES fraud_rules(id) ON DELETE CASCADE,
  key_hash    text NOT NULL,
  team_id     text NOT NULL REFERENCES teams(id),
  checked_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (rule_id, key_hash)
);

-- What a rule counts, as a sliding window over these rows:
--   attempt  a first payment the rules let through (metric attempts)
--   hold     a first payment in flight that may yet decline (metric declines); counted at any age
--   decline  the hold once a gateway declined the payment, stamped with the time of the decline
-- A payment that was approved, redirected, held for review or never reached a gateway drops its holds.
CREATE TABLE fraud_events (
  id          bigserial PRIMARY KEY,
  team_id     text NOT NULL REFERENCES teams(id),
  rule_id     text NOT NULL REFERENCES fraud_rules(id) ON DELETE CASCADE,
  key_hash    text NOT NULL,
  order_id    text NOT NULL REFERENCES orders(id),
  kind        text NOT NULL CHECK (kind IN ('attempt', 'hold', 'decline')),
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX fraud_events_key ON fraud_events (rule_id, key_hash, created_at);
CREATE INDEX fraud_events_holds ON fraud_events (team_id, order_id) WHERE kind = 'hold';

-- The shopper's IP address as the merchant's server reported it (customer.ip_address).
ALTER TABLE orders ADD COLUMN ip_address inet;
