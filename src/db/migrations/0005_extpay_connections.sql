-- External checkout provider (extpay) connections: team-level, several per team, created Active.

CREATE TABLE extpay_connections (
  seq             bigserial UNIQUE,
  id              text PRIMARY KEY,
  team_id         text NOT NULL REFERENCES teams(id),
  name            text NOT NULL,
  environment     text NOT NULL CHECK (environment IN ('sandbox', 'production')),
  company_id      text NOT NULL CHECK (company_id LIKE 'biz\_%'),
  base_url        text NOT NULL,
  -- AES-256-GCM sealed; never returned by the API
  api_key         text NOT NULL,
  webhook_secret  text,
  is_active       boolean NOT NULL DEFAULT true,
  deleted_at      timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX extpay_connections_team_seq ON extpay_connections (team_id, seq DESC);
-- Inbound webhooks name the connection by company and environment.
CREATE INDEX extpay_connections_company ON extpay_connections (company_id, environment) WHERE deleted_at IS NULL;
