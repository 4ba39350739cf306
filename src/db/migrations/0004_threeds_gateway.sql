-- The card gateway that requires 3-D Secure, and inbound provider webhooks deduplicated by event id.

ALTER TABLE gateways DROP CONSTRAINT gateways_kind_check;
ALTER TABLE gateways ADD CONSTRAINT gateways_kind_check CHECK (kind IN ('nmi', 'threeds'));

CREATE TABLE inbound_webhooks (
  id            text PRIMARY KEY,
  source        text NOT NULL,
  event_id      text NOT NULL,
  team_id       text REFERENCES teams(id),
  type          text NOT NULL,
  payload       jsonb NOT NULL,
  received_at   timestamptz NOT NULL DEFAULT now(),
  -- a redelivery of the same event is a no-op
  UNIQUE (source, event_id)
);
