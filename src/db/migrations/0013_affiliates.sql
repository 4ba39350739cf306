-- Affiliates (issue 15): attribution on orders, the throttle decision at the conversion (spec 2.3),
-- its ledger, commissions, postbacks and the facts the affiliate report sums.

-- The affiliate block of Create Lead / Create Order / Process Payment / Reprocess, kept on the order.
ALTER TABLE orders ADD COLUMN affiliate_id text;
ALTER TABLE orders ADD COLUMN affiliate_click_id text;
ALTER TABLE orders ADD COLUMN affiliate_sub1 text;
ALTER TABLE orders ADD COLUMN affiliate_sub2 text;
ALTER TABLE orders ADD COLUMN affiliate_sub3 text;
ALTER TABLE orders ADD COLUMN affiliate_sub4 text;
ALTER TABLE orders ADD COLUMN affiliate_sub5 text;
CREATE INDEX orders_team_affiliate ON orders (team_id, affiliate_id, seq DESC) WHERE affiliate_id IS NOT NULL;

-- The team's affiliate settings: attribution rule and the default commission hold.
CREATE TABLE affiliate_settings (
  team_id              text PRIMARY KEY REFERENCES teams(id),
  attribution          text NOT NULL DEFAULT 'first_touch' CHECK (attribution IN ('first_touch', 'last_touch')),
  commission_hold_days integer NOT NULL DEFAULT 30 CHECK (commission_hold_days BETWEEN 0 AND 365),
  updated_at           timestamptz NOT NULL DEFAULT now()
);

-- The merchant chooses the id (unique per team). Rates are basis points (30 % = 3000): integers, never floats.
CREATE TABLE affiliates (
  seq                    bigserial UNIQUE,
  team_id                text NOT NULL REFERENCES teams(id),
  id                     text NOT NULL,
  name                   text NOT NULL,
  status                 text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused')),
  throttle_rate_bp       integer CHECK (throttle_rate_bp BETWEEN 0 AND 10000),
  campaign_throttle_bp   jsonb NOT NULL DEFAULT '{}',
  automatic_throttling   boolean NOT NULL DEFAULT false,
  commission_type        text NOT NULL DEFAULT 'none' CHECK (commission_type IN ('none', 'fixed', 'percent')),
  commission_amount      bigint CHECK (commission_amount >= 0),
  commission_percent_bp  integer CHECK (commission_percent_bp BETWEEN 0 AND 10000),
  commission_on_upsells  boolean NOT NULL DEFAULT false,
  commission_on_rebills  boolean NOT NULL DEFAULT false,
  commission_hold_days   integer CHECK (commission_hold_days BETWEEN 0 AND 365),
  postback_url           text,
  postback_events        jsonb NOT NULL DEFAULT '["conversion"]',
  pixel_html             text,
  deleted_at             timestamptz,
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (team_id, id)
);

-- Conversions and throttled conversions per counting scope ('' the affiliate, or a campaign id
-- with its own rate), since that scope's rate was last set. Written only under the affiliate's
-- row lock, in the transaction that records the conversion.
CREATE TABLE affiliate_throttle_counters (
  team_id      text NOT NULL,
  affiliate_id text NOT NULL,
  scope        text NOT NULL,
  conversions  integer NOT NULL DEFAULT 0,
  throttled    integer NOT NULL DEFAULT 0,
  PRIMARY KEY (team_id, affiliate_id, scope),
  FOREIGN KEY (team_id, affiliate_id) REFERENCES affiliates (team_id, id)
);

-- One row per conversion (first payment approved) of an attributed order: the throttle decision.
CREATE TABLE affiliate_conversions (
  seq                bigserial UNIQUE,
  id                 text PRIMARY KEY,
  team_id            text NOT NULL REFERENCES teams(id),
  affiliate_id       text NOT NULL,
  order_id           text NOT NULL REFERENCES orders(id),
  campaign_id        text NOT NULL,
  transaction_id     text,
  scope              text NOT NULL,
  conversions_before integer NOT NULL,
  throttled_before   integer NOT NULL,
  rate_bp            integer,
  automatic          boolean NOT NULL,
  requested          boolean NOT NULL,
  throttled          boolean NOT NULL,
  reason             text NOT NULL CHECK (reason IN ('requested', 'automatic', 'none')),
  amount             bigint NOT NULL,
  currency           text NOT NULL,
  click_id           text,
  sub1 text, sub2 text, sub3 text, sub4 text, sub5 text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  UNIQUE (team_id, order_id),
  FOREIGN KEY (team_id, affiliate_id) REFERENCES affiliates (team_id, id)
);
CREATE INDEX affiliate_conversions_affiliate ON affiliate_conversions (team_id, affiliate_id, seq);

-- What happened after the conversion on an attributed order: upsells, rebills, refunds, voids, chargebacks.
CREATE TABLE affiliate_activity (
  seq            bigserial UNIQUE,
  id             text PRIMARY KEY,
  team_id        text NOT NULL REFERENCES teams(id),
  affiliate_id   text NOT NULL,
  order_id       text NOT NULL REFERENCES orders(id),
  kind           text NOT NULL CHECK (kind IN ('upsell', 'rebill', 'refund', 'void', 'chargeback')),
  transaction_id text NOT NULL,
  amount         bigint NOT NULL,
  currency       text NOT NULL,
  throttled      boolean NOT NULL,
  sub1 text, sub2 text, sub3 text, sub4 text, sub5 text,
  created_at     timestamptz NOT NULL DEFAULT now(),
  UNIQUE (team_id, kind, transaction_id)
);
CREATE INDEX affiliate_activity_affiliate ON affiliate_activity (team_id, affiliate_id, created_at);

-- The commission ledger: pending until payable_at (the hold), then payable; reversed by a refund,
-- void or chargeback of the charge it was earned on. Never written for a throttled order.
CREATE TABLE affiliate_commissions (
  seq            bigserial UNIQUE,
  id             text PRIMARY KEY,
  team_id        text NOT NULL REFERENCES teams(id),
  affiliate_id   text NOT NULL,
  order_id       text NOT NULL REFERENCES orders(id),
  kind           text NOT NULL CHECK (kind IN ('conversion', 'upsell', 'rebill')),
  transaction_id text NOT NULL,
  amount         bigint NOT NULL CHECK (amount >= 0),
  currency       text NOT NULL,
  status         text NOT NULL CHECK (status IN ('pending', 'payable', 'reversed')),
  payable_at     timestamptz NOT NULL,
  reversed_at    timestamptz,
  reversal_reason text,
  sub1 text, sub2 text, sub3 text, sub4 text, sub5 text,
  created_at     timestamptz NOT NULL DEFAULT now(),
  UNIQUE (team_id, kind, transaction_id),
  FOREIGN KEY (team_id, affiliate_id) REFERENCES affiliates (team_id, id)
);
CREATE INDEX affiliate_commissions_affiliate ON affiliate_commissions (team_id, affiliate_id, seq DESC);
CREATE INDEX affiliate_commissions_order ON affiliate_commissions (team_id, order_id);

-- Postbacks: server-to-server GETs of the affiliate's URL template, rendered when queued (in the
-- transaction of the conversion), delivered by the worker with the webhooks' retry schedule and SSRF guard.
CREATE TABLE affiliate_postbacks (
  seq              bigserial UNIQUE,
  id               text PRIMARY KEY,
  team_id          text NOT NULL REFERENCES teams(id),
  affiliate_id     text NOT NULL,
  order_id         text NOT NULL REFERENCES orders(id),
  event            text NOT NULL CHECK (event IN ('conversion', 'upsell', 'rebill', 'refund')),
  source_id        text NOT NULL,
  url              text NOT NULL,
  status           text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempt_count    integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz,
  locked_until     timestamptz,
  last_status_code integer,
  last_error       text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (team_id, event, source_id)
);
CREATE INDEX affiliate_postbacks_due ON affiliate_postbacks (next_attempt_at) WHERE status = 'pending';
CREATE INDEX affiliate_postbacks_affiliate ON affiliate_postbacks (team_id, affiliate_id, seq DESC);

CREATE TABLE affiliate_postback_attempts (
  seq           bigserial UNIQUE,
  id            text PRIMARY KEY,
  team_id       text NOT NULL REFERENCES teams(id),
  postback_id   text NOT NULL REFERENCES affiliate_postbacks(id),
  attempt       integer NOT NULL,
  status_code   integer,
  duration_ms   integer NOT NULL,
  response_body text,
  error         text,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX affiliate_postback_attempts_postback ON affiliate_postback_attempts (postback_id, attempt);
