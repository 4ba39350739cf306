-- extpay after the checkout: payments learned from the provider, upsells on the saved payment
-- method, provisional refunds, renewals as rebill orders, externally managed subscriptions, disputes.

-- The checkout's plan (spec 4.1 rule 10: one per checkout). provider_ref becomes the provider's
-- payment id as soon as it is known; plan_ref keeps the plan the payment was made against.
ALTER TABLE transactions ADD COLUMN plan_ref text;
-- A refund the provider accepted but has not settled: `amount` is what was asked for until
-- refund.created carries the settled amount (spec 4.5); requested_amount keeps the request.
ALTER TABLE transactions ADD COLUMN provisional boolean NOT NULL DEFAULT false;
ALTER TABLE transactions ADD COLUMN requested_amount bigint;
CREATE INDEX transactions_provider_ref ON transactions (team_id, provider_ref) WHERE provider_ref IS NOT NULL;

-- A payment method saved at the provider by one checkout (setup_future_usage off_session): the
-- member it belongs to and, once known, the provider's payment method id (vault_ref). original_ref
-- is the checkout that saved it: an upsell charges only what its own order's checkout saved.
ALTER TABLE payment_methods ADD COLUMN connection_id text REFERENCES extpay_connections(id);
ALTER TABLE payment_methods ADD COLUMN member_ref text;
CREATE UNIQUE INDEX payment_methods_extpay_checkout ON payment_methods (team_id, connection_id, original_ref)
  WHERE connection_id IS NOT NULL;

-- Subscriptions billed by the provider name the connection that bills them.
ALTER TABLE subscriptions ADD COLUMN connection_id text REFERENCES extpay_connections(id);
CREATE INDEX subscriptions_membership ON subscriptions (team_id, membership_ref) WHERE membership_ref IS NOT NULL;

-- A renewal is recorded as a new order (spec 4.5): it names the subscription and the order that started it.
ALTER TABLE orders ADD COLUMN subscription_id text REFERENCES subscriptions(id);
ALTER TABLE orders ADD COLUMN rebill_of text REFERENCES orders(id);
-- Flagged for review by a dispute (spec 4.5).
ALTER TABLE orders ADD COLUMN needs_qa boolean NOT NULL DEFAULT false;
ALTER TABLE orders ADD COLUMN qa_reason text;
-- One provider payment is one sale (a renewal makes one rebill order, an upsell one charge).
CREATE UNIQUE INDEX transactions_extpay_payment ON transactions (team_id, connection_id, provider_ref)
  WHERE type = 'sale' AND connection_id IS NOT NULL AND provider_ref IS NOT NULL;

CREATE TABLE disputes (
  seq              bigserial UNIQUE,
  id               text PRIMARY KEY,
  team_id          text NOT NULL REFERENCES teams(id),
  order_id         text NOT NULL REFERENCES orders(id),
  transaction_id   text NOT NULL REFERENCES transactions(id),
  provider_ref     text NOT NULL,
  status           text NOT NULL,
  reason           text,
  amount           bigint NOT NULL,
  currency         char(3) NOT NULL,
  -- the chargeback transaction, once the dispute is past the early warning and not won
  chargeback_id    text REFERENCES transactions(id),
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (team_id, provider_ref)
);
CREATE INDEX disputes_team_seq ON disputes (team_id, seq DESC);
CREATE INDEX disputes_order ON disputes (order_id);
