-- Issue 17, the order page: notes of an order (a customer note that names one of the customer's
-- orders), and the indexes of the order search (GET /v1/orders?q=), the disputes queue and the
-- deliveries of an order's events.
ALTER TABLE customer_notes ADD COLUMN order_id text REFERENCES orders(id);
CREATE INDEX customer_notes_order ON customer_notes (team_id, order_id, seq DESC) WHERE order_id IS NOT NULL;

-- Prefix searches (LIKE 'x%') use these whatever the database's collation.
CREATE INDEX orders_team_number_prefix ON orders (team_id, id text_pattern_ops);
CREATE INDEX customers_team_email_prefix ON customers (team_id, email text_pattern_ops);
CREATE INDEX customers_team_first_name ON customers (team_id, lower(first_name) text_pattern_ops);
CREATE INDEX customers_team_last_name ON customers (team_id, lower(last_name) text_pattern_ops);
CREATE INDEX transactions_team_last4 ON transactions (team_id, card_last4) WHERE card_last4 IS NOT NULL;
CREATE INDEX payment_methods_team_last4 ON payment_methods (team_id, last4);

CREATE INDEX orders_team_needs_qa ON orders (team_id, seq DESC) WHERE needs_qa;
CREATE INDEX events_team_order ON events (team_id, order_id) WHERE order_id IS NOT NULL;
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
