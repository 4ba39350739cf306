-- Issue 13: what PostgreSQL writes for every card funnel, besides the rows themselves. Counted in the
-- WAL of `npm run bench` (pg_walinspect, over the measured window): per funnel about 160 index
-- entries, 32 row locks and 3 MultiXacts. Two kinds of that work bought nothing.
--
-- 1. A unique index on `seq` alone in the funnel's tables. `seq` comes only from its table's
--    sequence (no statement writes it), so it is unique without one, and every list reads it
--    under its team or parent ((team_id, seq), (order_id, seq), … indexes, which stay). Every
--    insert and every update that is not HOT wrote an entry there too: about 29 per funnel. Other
--    tables keep theirs (they are not written per funnel). fulfillments had two identical indexes
--    on order_id (one of them the unique one); the plain one goes.
ALTER TABLE orders DROP CONSTRAINT orders_seq_key;
ALTER TABLE order_lines DROP CONSTRAINT order_lines_seq_key;
ALTER TABLE order_events DROP CONSTRAINT order_events_seq_key;
ALTER TABLE transactions DROP CONSTRAINT transactions_seq_key;
ALTER TABLE customers DROP CONSTRAINT customers_seq_key;
ALTER TABLE payment_methods DROP CONSTRAINT payment_methods_seq_key;
ALTER TABLE fulfillments DROP CONSTRAINT fulfillments_seq_key;
ALTER TABLE events DROP CONSTRAINT events_seq_key;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_seq_key;
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_seq_key;
ALTER TABLE mail_messages DROP CONSTRAINT mail_messages_seq_key;
DROP INDEX fulfillments_order;

-- 2. Foreign keys from the funnel's rows to configuration rows: an order's team and campaign, a
--    customer's and an event's team, a line's offer, product and upsell, an upsell claim's upsell,
--    a saved card's gateway, a delivery's endpoint. PostgreSQL checks each insert by locking the
--    referenced row (SELECT … FOR KEY SHARE); the funnels of a team all name the same few rows,
--    so those are shared locks of many transactions on one row (MultiXacts), twelve per funnel,
--    each a WAL record and a change to the configuration row's page. The application never names
--    a configuration row it has not read within the team (the campaign, offers, upsells, gateway
--    and endpoints come from the team's configuration), and never deletes one (they are archived).
--    What the keys did besides, refusing to delete (or re-key) a configuration row that rows still
--    name, a trigger on the configuration table now does, only when such a row is deleted, with
--    the same SQLSTATE (23503). Unlike a key it takes no lock on the rows it finds: a delete racing
--    an insert that names the row can let both commit (nothing in the application deletes them).
ALTER TABLE orders DROP CONSTRAINT orders_team_id_fkey, DROP CONSTRAINT orders_campaign_id_fkey;
ALTER TABLE customers DROP CONSTRAINT customers_team_id_fkey;
ALTER TABLE events DROP CONSTRAINT events_team_id_fkey;
ALTER TABLE order_lines
  DROP CONSTRAINT order_lines_offer_id_fkey,
  DROP CONSTRAINT order_lines_product_id_fkey,
  DROP CONSTRAINT order_lines_upsell_id_fkey;
ALTER TABLE order_upsells DROP CONSTRAINT order_upsells_upsell_id_fkey;
ALTER TABLE payment_methods DROP CONSTRAINT payment_methods_gateway_id_fkey;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_endpoint_id_fkey;

-- The arguments name the referencing tables and columns in pairs: (table, column, table, column, …).
CREATE FUNCTION checkstand_refuse_referenced_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  i int := 0;
  referenced boolean;
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.id IS NOT DISTINCT FROM OLD.id THEN
    RETURN NEW;
  END IF;
  WHILE i < TG_NARGS LOOP
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE %I = $1)', TG_ARGV[i], TG_ARGV[i + 1]) INTO referenced USING OLD.id;
    IF referenced THEN
      RAISE EXCEPTION USING
        ERRCODE = 'foreign_key_violation',
        MESSAGE = format('%s on table "%s" refused: rows of table "%s" name it', lower(TG_OP), TG_TABLE_NAME, TG_ARGV[i]),
        DETAIL = format('Key (id)=(%s) is still referenced from table "%s" (column %s).', OLD.id, TG_ARGV[i], TG_ARGV[i + 1]);
    END IF;
    i := i + 2;
  END LOOP;
  IF TG_OP = 'DELETE' THEN
    RETURN OLD;
  END IF;
  RETURN NEW;
END
$$;

CREATE TRIGGER teams_referenced BEFORE DELETE OR UPDATE OF id ON teams FOR EACH ROW
  EXECUTE FUNCTION checkstand_refuse_referenced_delete('orders', 'team_id', 'customers', 'team_id', 'events', 'team_id');
CREATE TRIGGER campaigns_referenced BEFORE DELETE OR UPDATE OF id ON campaigns FOR EACH ROW
  EXECUTE FUNCTION checkstand_refuse_referenced_delete('orders', 'campaign_id');
CREATE TRIGGER offers_referenced BEFORE DELETE OR UPDATE OF id ON offers FOR EACH ROW
  EXECUTE FUNCTION checkstand_refuse_referenced_delete('order_lines', 'offer_id');
CREATE TRIGGER products_referenced BEFORE DELETE OR UPDATE OF id ON products FOR EACH ROW
  EXECUTE FUNCTION checkstand_refuse_referenced_delete('order_lines', 'product_id');
CREATE TRIGGER upsells_referenced BEFORE DELETE OR UPDATE OF id ON upsells FOR EACH ROW
  EXECUTE FUNCTION checkstand_refuse_referenced_delete('order_lines', 'upsell_id', 'order_upsells', 'upsell_id');
CREATE TRIGGER gateways_referenced BEFORE DELETE OR UPDATE OF id ON gateways FOR EACH ROW
  EXECUTE FUNCTION checkstand_refuse_referenced_delete('payment_methods', 'gateway_id');
CREATE TRIGGER webhook_endpoints_referenced BEFORE DELETE OR UPDATE OF id ON webhook_endpoints FOR EACH ROW
  EXECUTE FUNCTION checkstand_refuse_referenced_delete('webhook_deliveries', 'endpoint_id');
