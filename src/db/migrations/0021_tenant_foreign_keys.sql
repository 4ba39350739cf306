-- Issue 13: a row that belongs to an order (or a customer, an event, a delivery) names its parent
-- together with its team, in one foreign key to the parent's (team_id, id), where it had two: one to
-- the parent's id and one to teams. The team is still checked (the parent's own team_id references
-- teams), and now a row can no longer name a parent of another team. What it saves: every insert
-- checked its team_id by locking the team's row (SELECT … FOR KEY SHARE), and with one team's funnels
-- running side by side those locks on one row are shared locks of many transactions (MultiXacts):
-- about seventeen per card funnel, gone. A parent's (team_id, id) is unique by its primary key; the
-- constraint below is the index a foreign key needs.
ALTER TABLE orders ADD CONSTRAINT orders_team_id_id_key UNIQUE (team_id, id);
ALTER TABLE customers ADD CONSTRAINT customers_team_id_id_key UNIQUE (team_id, id);
ALTER TABLE events ADD CONSTRAINT events_team_id_id_key UNIQUE (team_id, id);
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_team_id_id_key UNIQUE (team_id, id);

ALTER TABLE order_lines
  DROP CONSTRAINT order_lines_team_id_fkey,
  DROP CONSTRAINT order_lines_order_id_fkey,
  ADD CONSTRAINT order_lines_order_fkey FOREIGN KEY (team_id, order_id) REFERENCES orders (team_id, id);
ALTER TABLE order_events
  DROP CONSTRAINT order_events_team_id_fkey,
  DROP CONSTRAINT order_events_order_id_fkey,
  ADD CONSTRAINT order_events_order_fkey FOREIGN KEY (team_id, order_id) REFERENCES orders (team_id, id);
ALTER TABLE transactions
  DROP CONSTRAINT transactions_team_id_fkey,
  DROP CONSTRAINT transactions_order_id_fkey,
  ADD CONSTRAINT transactions_order_fkey FOREIGN KEY (team_id, order_id) REFERENCES orders (team_id, id);
ALTER TABLE fulfillments
  DROP CONSTRAINT fulfillments_team_id_fkey,
  DROP CONSTRAINT fulfillments_order_id_fkey,
  ADD CONSTRAINT fulfillments_order_fkey FOREIGN KEY (team_id, order_id) REFERENCES orders (team_id, id);
ALTER TABLE order_upsells
  DROP CONSTRAINT order_upsells_team_id_fkey,
  DROP CONSTRAINT order_upsells_order_id_fkey,
  ADD CONSTRAINT order_upsells_order_fkey FOREIGN KEY (team_id, order_id) REFERENCES orders (team_id, id);
ALTER TABLE payment_methods
  DROP CONSTRAINT payment_methods_team_id_fkey,
  DROP CONSTRAINT payment_methods_customer_id_fkey,
  ADD CONSTRAINT payment_methods_customer_fkey FOREIGN KEY (team_id, customer_id) REFERENCES customers (team_id, id);
ALTER TABLE webhook_deliveries
  DROP CONSTRAINT webhook_deliveries_team_id_fkey,
  DROP CONSTRAINT webhook_deliveries_event_id_fkey,
  ADD CONSTRAINT webhook_deliveries_event_fkey FOREIGN KEY (team_id, event_id) REFERENCES events (team_id, id);
-- A mail's order may be null (mail that is not about an order); its event never is.
ALTER TABLE mail_messages
  DROP CONSTRAINT mail_messages_team_id_fkey,
  DROP CONSTRAINT mail_messages_event_id_fkey,
  ADD CONSTRAINT mail_messages_event_fkey FOREIGN KEY (team_id, event_id) REFERENCES events (team_id, id);
ALTER TABLE webhook_attempts
  DROP CONSTRAINT webhook_attempts_team_id_fkey,
  DROP CONSTRAINT webhook_attempts_delivery_id_fkey,
  ADD CONSTRAINT webhook_attempts_delivery_fkey FOREIGN KEY (team_id, delivery_id) REFERENCES webhook_deliveries (team_id, id);
