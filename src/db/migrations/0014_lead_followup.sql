-- Abandoned-lead follow-up (issue 15 item 8): per-campaign settings, one follow-up per lead,
-- and a mail status for an abandonment mail dropped because the lead was paid before it went out.

ALTER TABLE campaigns ADD COLUMN abandonment_enabled boolean NOT NULL DEFAULT false;
-- When the follow-up was last switched on: leads idle since before then are never followed up.
ALTER TABLE campaigns ADD COLUMN abandonment_enabled_at timestamptz;
ALTER TABLE campaigns ADD COLUMN abandonment_delay_minutes integer NOT NULL DEFAULT 60
  CHECK (abandonment_delay_minutes BETWEEN 1 AND 43200);
ALTER TABLE campaigns ADD COLUMN abandonment_checkout_url text;
ALTER TABLE campaigns ADD COLUMN abandonment_mail_enabled boolean NOT NULL DEFAULT false;
ALTER TABLE campaigns ADD COLUMN abandonment_email_subject text;
ALTER TABLE campaigns ADD COLUMN abandonment_email_body text;

-- At most one follow-up per lead: the primary key is the claim.
CREATE TABLE lead_followups (
  seq            bigserial UNIQUE,
  order_id       text PRIMARY KEY REFERENCES orders(id),
  team_id        text NOT NULL REFERENCES teams(id),
  campaign_id    text NOT NULL REFERENCES campaigns(id),
  event_id       text NOT NULL REFERENCES events(id),
  -- the lead's last change, which the delay was counted from
  idle_since     timestamptz NOT NULL,
  delay_minutes  integer NOT NULL,
  mail_enabled   boolean NOT NULL,
  checkout_url   text,
  abandoned_at   timestamptz NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX lead_followups_team_seq ON lead_followups (team_id, seq DESC);

-- The scan walks a campaign's open leads by last change.
CREATE INDEX orders_open_leads ON orders (campaign_id, updated_at, id) WHERE status = 'lead';

ALTER TABLE mail_messages DROP CONSTRAINT mail_messages_status_check;
ALTER TABLE mail_messages ADD CONSTRAINT mail_messages_status_check CHECK (status IN ('pending', 'sent', 'failed', 'cancelled'));
