-- Issue 13: index entries the card funnel wrote twice. Every insert and every update that is not
-- HOT writes one entry in each of the table's indexes (an order's row is written five times per
-- funnel: its insert and four updates, none HOT, as its status is indexed); the bench counted
-- about 129 index entries per funnel in the WAL (bench/wal.ts).
--
-- 1. orders had two indexes on (team_id, id): the unique one foreign keys name (0021) and the
--    order desk's prefix search on the order number (0019, text_pattern_ops). One unique index
--    with text_pattern_ops serves both: that operator class's equality is text's own `=`, so the
--    foreign keys' checks and every lookup by (team_id, id) use it, and `id LIKE 'ord_abc%'`
--    under a team as before. Five entries fewer per funnel. The foreign keys are made again on
--    it (a foreign key is bound to the index it was made with).
-- 2. customers: the same for (team_id, email): the unique index a second customer with the same
--    e-mail runs into (ON CONFLICT (team_id, email) infers it: the equality is the same) and the
--    prefix search on e-mails. One entry fewer per funnel.
-- 3. transactions had two partial indexes over the attempts in flight: one unique per (order,
--    step), and one on created_at for the recovery of attempts a crash left in flight. Attempts
--    are in flight only between the two commits around a provider's call, so the recovery's scan
--    of the unique one (and a sort of what it finds) reads as few rows. Two entries fewer per
--    funnel (each attempt's insert).
--
-- On a large database: the new unique indexes are built, and the five foreign keys re-checked (each
-- reads its table once), under locks that hold writes to those tables until the migration ends.
CREATE UNIQUE INDEX orders_team_id_id_prefix ON orders (team_id, id text_pattern_ops);
ALTER TABLE order_lines DROP CONSTRAINT order_lines_order_fkey;
ALTER TABLE order_events DROP CONSTRAINT order_events_order_fkey;
ALTER TABLE transactions DROP CONSTRAINT transactions_order_fkey;
ALTER TABLE fulfillments DROP CONSTRAINT fulfillments_order_fkey;
ALTER TABLE order_upsells DROP CONSTRAINT order_upsells_order_fkey;
ALTER TABLE orders DROP CONSTRAINT orders_team_id_id_key;
DROP INDEX orders_team_number_prefix;
ALTER TABLE order_lines ADD CONSTRAINT order_lines_order_fkey FOREIGN KEY (team_id, order_id) REFERENCES orders (team_id, id);
ALTER TABLE order_events ADD CONSTRAINT order_events_order_fkey FOREIGN KEY (team_id, order_id) REFERENCES orders (team_id, id);
ALTER TABLE transactions ADD CONSTRAINT transactions_order_fkey FOREIGN KEY (team_id, order_id) REFERENCES orders (team_id, id);
ALTER TABLE fulfillments ADD CONSTRAINT fulfillments_order_fkey FOREIGN KEY (team_id, order_id) REFERENCES orders (team_id, id);
ALTER TABLE order_upsells ADD CONSTRAINT order_upsells_order_fkey FOREIGN KEY (team_id, order_id) REFERENCES orders (team_id, id);

CREATE UNIQUE INDEX customers_team_email_unique ON customers (team_id, email text_pattern_ops);
DROP INDEX customers_team_email;
DROP INDEX customers_team_email_prefix;
ALTER INDEX customers_team_email_unique RENAME TO customers_team_email;

DROP INDEX transactions_in_flight;
