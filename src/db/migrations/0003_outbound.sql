-- Completion and the outbound side: the event log (the outbox), merchant webhook endpoints with
-- one delivery per (endpoint, event) and one attempt row per try, autoresponder mail, coupons on
-- orders, purchase-mail templates on campaigns.

CREATE TABLE events (
  seq         bigserial UNIQUE,
  id          text PRIMARY KEY,
  team_id     text NOT NULL REFERENCES teams(id),
  type        text NOT NULL,
  order_id    text REFERENCES orders(id),
  payload     jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_team_seq ON events (team_id, seq DESC);
-- An order completes once: its completion event can exist only once.
CREATE UNIQUE INDEX events_order_completed_once ON events (order_id) WHERE type = 'order.completed';

CREATE TABLE webhook_endpoints (
  seq                         bigserial UNIQUE,
  id                          text PRIMARY KEY,
  team_id                     text NOT NULL REFERENCES teams(id),
  url                         text NOT NULL,
  description                 text,
  -- event types the endpoint receives; ['*'] for all
  event_types                 jsonb NOT NULL,
  secret                      text NOT NULL,
  previous_secret             text,
  previous_secret_expires_at  timestamptz,
  is_active                   boolean NOT NULL DEFAULT true,
  disabled_at                 timestamptz,
  disabled_reason             text,
  consecutive_failures        integer NOT NULL DEFAULT 0,
  created_at                  timestamptz NOT NULL DEFAULT now(),
  updated_at                  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_team ON webhook_endpoints (team_id, seq DESC);

CREATE TABLE webhook_deliveries (
  seq              bigserial UNIQUE,
  id               text PRIMARY KEY,
  team_id          text NOT NULL REFERENCES teams(id),
  endpoint_id      text NOT NULL REFERENCES webhook_endpoints(id),
  event_id         text NOT NULL REFERENCES events(id),
  status           text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'cancelled')),
  attempt_count    integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz,
  -- a worker's lease: while in the future, no other worker claims the delivery
  locked_until     timestamptz,
  last_status_code integer,
  last_error       text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, seq DESC);

CREATE TABLE webhook_attempts (
  seq            bigserial UNIQUE,
  id             text PRIMARY KEY,
  team_id        text NOT NULL REFERENCES teams(id),
  delivery_id    text NOT NULL REFERENCES webhook_deliveries(id),
  attempt        integer NOT NULL,
  status_code    integer,
  duration_ms    integer NOT NULL,
  response_body  text,
  error          text,
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, seq);

CREATE TABLE mail_messages (
  seq              bigserial UNIQUE,
  id               text PRIMARY KEY,
  team_id          text NOT NULL REFERENCES teams(id),
  event_id         text NOT NULL REFERENCES events(id),
  order_id         text REFERENCES orders(id),
  kind             text NOT NULL,
  to_address       text NOT NULL,
  subject          text NOT NULL,
  text_body        text NOT NULL,
  html_body        text,
  status           text NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
  attempt_count    integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz,
  locked_until     timestamptz,
  transport        text,
  transport_ref    text,
  last_error       text,
  sent_at          timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  -- one mail of a kind per event
  UNIQUE (event_id, kind)
);
CREATE INDEX mail_messages_due ON mail_messages (next_attempt_at) WHERE status = 'pending';
CREATE INDEX mail_messages_team_seq ON mail_messages (team_id, seq DESC);

ALTER TABLE campaigns ADD COLUMN purchase_email_subject text;
ALTER TABLE campaigns ADD COLUMN purchase_email_body text;

ALTER TABLE orders ADD COLUMN coupon_id text REFERENCES coupons(id);
ALTER TABLE orders ADD COLUMN completed_at timestamptz;

CREATE TABLE coupon_redemptions (
  id          text PRIMARY KEY,
  team_id     text NOT NULL REFERENCES teams(id),
  coupon_id   text NOT NULL REFERENCES coupons(id),
  order_id    text NOT NULL REFERENCES orders(id),
  amount      bigint NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (order_id)
);

-- Fulfillments are created once per order at completion.
CREATE UNIQUE INDEX fulfillments_one_per_order ON fulfillments (order_id);
