-- Payment core v2: atomic phases and hot counters.

-- Every provider call that can move money is first committed as an attempt: a transaction row
-- with in_flight = true (status pending), whose id is the provider's idempotency key / order id.
-- The provider's answer clears in_flight in the transaction that records it. A row still in
-- flight after a crash is an outcome nobody recorded: the worker asks the provider about it.
-- `step` names what the attempt pays for (first_payment, upsell:<upsell id>, refund:<sale id>,
-- void:<sale id>); while one attempt of a step is in flight no other may start.
ALTER TABLE transactions ADD COLUMN step text;
ALTER TABLE transactions ADD COLUMN in_flight boolean NOT NULL DEFAULT false;
CREATE UNIQUE INDEX transactions_one_in_flight_per_step ON transactions (order_id, step) WHERE in_flight;
CREATE INDEX transactions_in_flight ON transactions (created_at) WHERE in_flight;
-- The month-to-date volume an attempt reserved on its gateway (released when it declines).
ALTER TABLE transactions ADD COLUMN volume_month text;

-- Month-to-date volume per gateway: reserved by the statement that checks the cap, when an
-- attempt opens; released when it declines or fails. Seeded from the approved sales so far.
CREATE TABLE gateway_volume (
  gateway_id  text NOT NULL REFERENCES gateways(id),
  month       text NOT NULL, -- 'YYYY-MM', UTC
  team_id     text NOT NULL REFERENCES teams(id),
  amount      bigint NOT NULL DEFAULT 0 CHECK (amount >= 0),
  PRIMARY KEY (gateway_id, month)
);
INSERT INTO gateway_volume (gateway_id, month, team_id, amount)
  SELECT gateway_id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM'), team_id, sum(amount)
    FROM transactions
   WHERE type = 'sale' AND status = 'approved' AND gateway_id IS NOT NULL
   GROUP BY 1, 2, 3;
