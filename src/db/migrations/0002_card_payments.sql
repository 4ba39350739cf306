-- Card payments: gateways and payment routers, BIN blacklist, test cards, saved payment
-- methods (gateway vault tokens), upsell charges, and the columns the payment core needs.

CREATE TABLE gateways (
  seq           bigserial UNIQUE,
  id            text PRIMARY KEY,
  team_id       text NOT NULL REFERENCES teams(id),
  name          text NOT NULL,
  kind          text NOT NULL CHECK (kind IN ('nmi')),
  base_url      text NOT NULL,
  -- AES-256-GCM sealed JSON of the provider credentials (never returned by the API)
  credentials   text NOT NULL,
  test_mode     boolean NOT NULL DEFAULT false,
  is_active     boolean NOT NULL DEFAULT true,
  monthly_cap   bigint CHECK (monthly_cap > 0),
  descriptor    text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX gateways_team_seq ON gateways (team_id, seq DESC);

CREATE TABLE payment_routers (
  seq           bigserial UNIQUE,
  id            text PRIMARY KEY,
  team_id       text NOT NULL REFERENCES teams(id),
  name          text NOT NULL,
  strategy      text NOT NULL CHECK (strategy IN ('priority', 'weighted')),
  max_attempts  integer NOT NULL DEFAULT 3 CHECK (max_attempts BETWEEN 1 AND 10),
  is_active     boolean NOT NULL DEFAULT true,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payment_routers_team_seq ON payment_routers (team_id, seq DESC);

CREATE TABLE payment_router_members (
  id           text PRIMARY KEY,
  team_id      text NOT NULL REFERENCES teams(id),
  router_id    text NOT NULL REFERENCES payment_routers(id) ON DELETE CASCADE,
  gateway_id   text NOT NULL REFERENCES gateways(id),
  priority     integer NOT NULL DEFAULT 1 CHECK (priority > 0),
  weight       integer NOT NULL DEFAULT 1 CHECK (weight > 0),
  monthly_cap  bigint CHECK (monthly_cap > 0),
  UNIQUE (router_id, gateway_id)
);

CREATE TABLE bin_blacklist (
  seq         bigserial UNIQUE,
  id          text PRIMARY KEY,
  team_id     text NOT NULL REFERENCES teams(id),
  prefix      text NOT NULL CHECK (prefix ~ '^[0-9]{6,8}$'),
  reason      text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (team_id, prefix)
);

CREATE TABLE test_cards (
  seq         bigserial UNIQUE,
  id          text PRIMARY KEY,
  team_id     text NOT NULL REFERENCES teams(id),
  -- keyed hash (HMAC under the service key) of the card number; the number itself is never stored
  card_hash   text NOT NULL,
  last4       text NOT NULL,
  label       text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (team_id, card_hash)
);

CREATE TABLE payment_methods (
  seq           bigserial UNIQUE,
  id            text PRIMARY KEY,
  team_id       text NOT NULL REFERENCES teams(id),
  customer_id   text NOT NULL REFERENCES customers(id),
  gateway_id    text REFERENCES gateways(id),
  -- the gateway's token for the saved card (NMI customer_vault_id); null for test cards
  vault_ref     text,
  -- the provider reference of the first (customer-initiated) payment, for merchant-initiated follow-ups
  original_ref  text,
  brand         text NOT NULL,
  bin           text NOT NULL,
  last4         text NOT NULL,
  exp           text NOT NULL,
  is_test       boolean NOT NULL DEFAULT false,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payment_methods_customer ON payment_methods (team_id, customer_id);

ALTER TABLE orders ADD COLUMN payment_method_id text REFERENCES payment_methods(id);
-- Set while a payment attempt is in flight: a second concurrent attempt is refused.
ALTER TABLE orders ADD COLUMN payment_started_at timestamptz;
ALTER TABLE orders ADD COLUMN refunded_total bigint NOT NULL DEFAULT 0;

ALTER TABLE transactions ADD COLUMN router_id text;
ALTER TABLE transactions ADD COLUMN attempt integer NOT NULL DEFAULT 1;
ALTER TABLE transactions ADD COLUMN parent_id text REFERENCES transactions(id);
ALTER TABLE transactions ADD COLUMN payment_method_id text REFERENCES payment_methods(id);
ALTER TABLE transactions ADD COLUMN auth_code text;
ALTER TABLE transactions ADD COLUMN upsell_id text;
CREATE INDEX transactions_gateway_month ON transactions (gateway_id, created_at) WHERE status = 'approved';
CREATE INDEX transactions_parent ON transactions (parent_id) WHERE parent_id IS NOT NULL;

CREATE TABLE order_upsells (
  id               text PRIMARY KEY,
  team_id          text NOT NULL REFERENCES teams(id),
  order_id         text NOT NULL REFERENCES orders(id),
  upsell_id        text NOT NULL REFERENCES upsells(id),
  quantity         integer NOT NULL,
  status           text NOT NULL CHECK (status IN ('in_flight', 'approved', 'declined', 'pending')),
  transaction_id   text REFERENCES transactions(id),
  response_status  integer,
  response_body    text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  -- each upsell is charged at most once per order
  UNIQUE (order_id, upsell_id)
);
