-- Issue 13: the worker wakes on NOTIFY instead of polling. A row that becomes claimable now (inserted
-- pending, or set back to pending and due without a lease: a manual replay) notifies the channel
-- `checkstand_work` with the name of the worker's drainer for that queue. A NOTIFY inside a
-- transaction is delivered when it commits (never for a rollback), and identical ones in one
-- transaction are delivered once. No extra round trip: the trigger runs inside the INSERT/UPDATE.
CREATE FUNCTION checkstand_notify_work() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('checkstand_work', TG_ARGV[0]);
  RETURN NULL;
END
$$;

-- An update notifies only when the row is due within a second: a retry recorded for later is found
-- by the worker's poll (WORKER_POLL_MS), not announced now to be claimed for nothing.
CREATE TRIGGER webhook_deliveries_notify_insert
  AFTER INSERT ON webhook_deliveries
  FOR EACH ROW WHEN (NEW.status = 'pending' AND NEW.locked_until IS NULL)
  EXECUTE FUNCTION checkstand_notify_work('webhook-deliveries');
CREATE TRIGGER webhook_deliveries_notify_update
  AFTER UPDATE OF status, locked_until, next_attempt_at ON webhook_deliveries
  FOR EACH ROW WHEN (NEW.status = 'pending' AND NEW.locked_until IS NULL AND NEW.next_attempt_at <= now() + interval '1 second')
  EXECUTE FUNCTION checkstand_notify_work('webhook-deliveries');

CREATE TRIGGER mail_messages_notify_insert
  AFTER INSERT ON mail_messages
  FOR EACH ROW WHEN (NEW.status = 'pending' AND NEW.locked_until IS NULL)
  EXECUTE FUNCTION checkstand_notify_work('autoresponder-mail');
CREATE TRIGGER mail_messages_notify_update
  AFTER UPDATE OF status, locked_until, next_attempt_at ON mail_messages
  FOR EACH ROW WHEN (NEW.status = 'pending' AND NEW.locked_until IS NULL AND NEW.next_attempt_at <= now() + interval '1 second')
  EXECUTE FUNCTION checkstand_notify_work('autoresponder-mail');

CREATE TRIGGER affiliate_postbacks_notify_insert
  AFTER INSERT ON affiliate_postbacks
  FOR EACH ROW WHEN (NEW.status = 'pending' AND NEW.locked_until IS NULL)
  EXECUTE FUNCTION checkstand_notify_work('affiliate-postbacks');
CREATE TRIGGER affiliate_postbacks_notify_update
  AFTER UPDATE OF status, locked_until, next_attempt_at ON affiliate_postbacks
  FOR EACH ROW WHEN (NEW.status = 'pending' AND NEW.locked_until IS NULL AND NEW.next_attempt_at <= now() + interval '1 second')
  EXECUTE FUNCTION checkstand_notify_work('affiliate-postbacks');
