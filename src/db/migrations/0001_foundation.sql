-- Foundation: teams and tokens, catalog, customers, orders and their timeline,
-- transactions, fulfillments, subscriptions, idempotency keys.
-- Money is bigint minor units plus a currency code. Every row carries team_id.
-- seq gives every listable table a stable, gap-tolerant order for cursor pagination.

CREATE TABLE teams (
  id          text PRIMARY KEY,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_tokens (
  id            text PRIMARY KEY,
  team_id       text NOT NULL REFERENCES teams(id),
  name          text NOT NULL,
  token_hash    text NOT NULL UNIQUE,
  token_hint    text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_used_at  timestamptz,
  expires_at    timestamptz,
  revoked_at    timestamptz
);
CREATE INDEX api_tokens_team ON api_tokens (team_id);

CREATE TABLE campaigns (
  seq                      bigserial UNIQUE,
  id                       text PRIMARY KEY,
  team_id                  text NOT NULL REFERENCES teams(id),
  name                     text NOT NULL,
  currency                 char(3) NOT NULL,
  gateway_id               text,
  payment_orchestrator_id  text,
  is_active                boolean NOT NULL DEFAULT true,
  created_at               timestamptz NOT NULL DEFAULT now(),
  updated_at               timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX campaigns_team_seq ON campaigns (team_id, seq DESC);

CREATE TABLE products (
  seq          bigserial UNIQUE,
  id           text PRIMARY KEY,
  team_id      text NOT NULL REFERENCES teams(id),
  name         text NOT NULL,
  sku          text,
  description  text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX products_team_seq ON products (team_id, seq DESC);
CREATE UNIQUE INDEX products_team_sku ON products (team_id, sku) WHERE sku IS NOT NULL;

CREATE TABLE offers (
  seq                 bigserial UNIQUE,
  id                  text PRIMARY KEY,
  team_id             text NOT NULL REFERENCES teams(id),
  campaign_id         text NOT NULL REFERENCES campaigns(id),
  product_id          text NOT NULL REFERENCES products(id),
  name                text NOT NULL,
  price               bigint NOT NULL CHECK (price >= 0),
  shipping            bigint NOT NULL DEFAULT 0 CHECK (shipping >= 0),
  billing_type        text NOT NULL CHECK (billing_type IN ('one_time', 'recurring', 'trial')),
  interval_unit       text CHECK (interval_unit IN ('day', 'week', 'month', 'year')),
  interval_count      integer CHECK (interval_count > 0),
  trial_days          integer CHECK (trial_days > 0),
  recurring_price     bigint CHECK (recurring_price >= 0),
  recurring_shipping  bigint CHECK (recurring_shipping >= 0),
  fulfillment_type    text NOT NULL CHECK (fulfillment_type IN ('physical', 'digital')),
  is_active           boolean NOT NULL DEFAULT true,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  CHECK (billing_type = 'one_time' OR (interval_unit IS NOT NULL AND interval_count IS NOT NULL AND recurring_price IS NOT NULL)),
  CHECK (billing_type <> 'trial' OR trial_days IS NOT NULL)
);
CREATE INDEX offers_team_seq ON offers (team_id, seq DESC);
CREATE INDEX offers_campaign ON offers (campaign_id);

CREATE TABLE upsells (
  seq          bigserial UNIQUE,
  id           text PRIMARY KEY,
  team_id      text NOT NULL REFERENCES teams(id),
  campaign_id  text NOT NULL REFERENCES campaigns(id),
  offer_id     text NOT NULL REFERENCES offers(id),
  step         integer NOT NULL CHECK (step > 0),
  name         text NOT NULL,
  is_active    boolean NOT NULL DEFAULT true,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX upsells_team_seq ON upsells (team_id, seq DESC);

CREATE TABLE coupons (
  seq              bigserial UNIQUE,
  id               text PRIMARY KEY,
  team_id          text NOT NULL REFERENCES teams(id),
  code             text NOT NULL,
  campaign_id      text REFERENCES campaigns(id),
  percent_off      integer CHECK (percent_off BETWEEN 1 AND 100),
  amount_off       bigint CHECK (amount_off > 0),
  currency         char(3),
  max_redemptions  integer CHECK (max_redemptions > 0),
  times_redeemed   integer NOT NULL DEFAULT 0,
  expires_at       timestamptz,
  is_active        boolean NOT NULL DEFAULT true,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  CHECK ((percent_off IS NULL) <> (amount_off IS NULL)),
  CHECK (amount_off IS NULL OR currency IS NOT NULL)
);
CREATE UNIQUE INDEX coupons_team_code ON coupons (team_id, lower(code));
CREATE INDEX coupons_team_seq ON coupons (team_id, seq DESC);

CREATE TABLE customers (
  seq          bigserial UNIQUE,
  id           text PRIMARY KEY,
  team_id      text NOT NULL REFERENCES teams(id),
  email        text NOT NULL,
  first_name   text,
  last_name    text,
  phone        text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);
-- email is stored trimmed and lower-cased by the service.
CREATE UNIQUE INDEX customers_team_email ON customers (team_id, email);
CREATE INDEX customers_team_seq ON customers (team_id, seq DESC);

CREATE TABLE customer_notes (
  seq          bigserial UNIQUE,
  id           text PRIMARY KEY,
  team_id      text NOT NULL REFERENCES teams(id),
  customer_id  text NOT NULL REFERENCES customers(id),
  body         text NOT NULL,
  author       text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX customer_notes_customer ON customer_notes (team_id, customer_id, seq DESC);

CREATE TABLE orders (
  seq               bigserial UNIQUE,
  id                text PRIMARY KEY,
  team_id           text NOT NULL REFERENCES teams(id),
  campaign_id       text NOT NULL REFERENCES campaigns(id),
  customer_id       text NOT NULL REFERENCES customers(id),
  status            text NOT NULL,
  payment_status    text,
  currency          char(3) NOT NULL,
  subtotal          bigint NOT NULL DEFAULT 0,
  shipping_total    bigint NOT NULL DEFAULT 0,
  discount_total    bigint NOT NULL DEFAULT 0,
  total             bigint NOT NULL DEFAULT 0,
  is_test           boolean NOT NULL DEFAULT false,
  is_throttle       boolean NOT NULL DEFAULT false,
  phone             text,
  shipping_address  jsonb,
  billing_address   jsonb,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX orders_team_seq ON orders (team_id, seq DESC);
CREATE INDEX orders_team_status ON orders (team_id, status, seq DESC);
CREATE INDEX orders_team_customer ON orders (team_id, customer_id, seq DESC);
-- At most one open lead per customer and campaign: a repeated Create Lead updates it (spec 3.2).
CREATE UNIQUE INDEX orders_one_open_lead ON orders (team_id, campaign_id, customer_id) WHERE status = 'lead';

CREATE TABLE order_lines (
  seq                 bigserial UNIQUE,
  id                  text PRIMARY KEY,
  team_id             text NOT NULL REFERENCES teams(id),
  order_id            text NOT NULL REFERENCES orders(id),
  offer_id            text NOT NULL REFERENCES offers(id),
  product_id          text NOT NULL REFERENCES products(id),
  upsell_id           text REFERENCES upsells(id),
  name                text NOT NULL,
  quantity            integer NOT NULL CHECK (quantity > 0),
  unit_price          bigint NOT NULL,
  shipping            bigint NOT NULL,
  line_total          bigint NOT NULL,
  billing_type        text NOT NULL,
  fulfillment_type    text NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX order_lines_order ON order_lines (order_id, seq);

CREATE TABLE order_events (
  seq          bigserial UNIQUE,
  id           text PRIMARY KEY,
  team_id      text NOT NULL REFERENCES teams(id),
  order_id     text NOT NULL REFERENCES orders(id),
  type         text NOT NULL,
  data         jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX order_events_order ON order_events (order_id, seq);

CREATE TABLE transactions (
  seq            bigserial UNIQUE,
  id             text PRIMARY KEY,
  team_id        text NOT NULL REFERENCES teams(id),
  order_id       text NOT NULL REFERENCES orders(id),
  type           text NOT NULL,
  status         text NOT NULL,
  amount         bigint NOT NULL,
  currency       char(3) NOT NULL,
  gateway_id     text,
  provider_ref   text,
  response_code  text,
  response_text  text,
  card_brand     text,
  card_bin       text,
  card_last4     text,
  card_exp       text,
  is_test        boolean NOT NULL DEFAULT false,
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX transactions_team_seq ON transactions (team_id, seq DESC);
CREATE INDEX transactions_order ON transactions (order_id, seq);

CREATE TABLE fulfillments (
  seq          bigserial UNIQUE,
  id           text PRIMARY KEY,
  team_id      text NOT NULL REFERENCES teams(id),
  order_id     text NOT NULL REFERENCES orders(id),
  status       text NOT NULL,
  lines        jsonb NOT NULL DEFAULT '[]'::jsonb,
  tracking_number text,
  carrier      text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX fulfillments_team_seq ON fulfillments (team_id, seq DESC);
CREATE INDEX fulfillments_order ON fulfillments (order_id);

CREATE TABLE subscriptions (
  seq                  bigserial UNIQUE,
  id                   text PRIMARY KEY,
  team_id              text NOT NULL REFERENCES teams(id),
  order_id             text NOT NULL REFERENCES orders(id),
  customer_id          text NOT NULL REFERENCES customers(id),
  offer_id             text NOT NULL REFERENCES offers(id),
  status               text NOT NULL,
  interval_unit        text NOT NULL,
  interval_count       integer NOT NULL,
  recurring_price      bigint NOT NULL,
  currency             char(3) NOT NULL,
  next_billing_at      timestamptz,
  externally_managed   boolean NOT NULL DEFAULT false,
  membership_ref       text,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX subscriptions_team_seq ON subscriptions (team_id, seq DESC);

CREATE TABLE idempotency_keys (
  team_id          text NOT NULL REFERENCES teams(id),
  key              text NOT NULL,
  fingerprint      text NOT NULL,
  method           text NOT NULL,
  path             text NOT NULL,
  state            text NOT NULL CHECK (state IN ('in_flight', 'done')),
  response_status  integer,
  response_body    text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  expires_at       timestamptz NOT NULL,
  PRIMARY KEY (team_id, key)
);
CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);
