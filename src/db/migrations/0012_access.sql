-- Team accounts (issue 16): users and their sessions, memberships with the spec's roles,
-- invitations and password resets, providers granted access to a team, API tokens bound to a
-- role or a permission set, and the append-only audit log.

-- A provider (Customer Service or Affiliate) is itself an organisation: a team of kind 'provider',
-- whose members act on the merchant teams that granted it access.
ALTER TABLE teams ADD COLUMN kind text NOT NULL DEFAULT 'merchant' CHECK (kind IN ('merchant', 'provider'));

CREATE TABLE users (
  seq             bigserial UNIQUE,
  id              text PRIMARY KEY,
  email           text NOT NULL,
  name            text NOT NULL DEFAULT '',
  password_hash   text NOT NULL,
  -- TOTP two-factor: the shared secret, encrypted like provider secrets; NULL while not enabled.
  totp_secret_enc text,
  totp_enabled_at timestamptz,
  -- Login throttling: failures since the last success, and the time before which logins are refused.
  failed_logins   integer NOT NULL DEFAULT 0,
  locked_until    timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);
-- E-mail addresses are unique whatever their case.
CREATE UNIQUE INDEX users_email ON users (lower(email));

-- A user's place in a team. One 'owner' per team (the partial unique index), transferable.
CREATE TABLE memberships (
  seq         bigserial UNIQUE,
  id          text PRIMARY KEY,
  team_id     text NOT NULL REFERENCES teams(id),
  user_id     text NOT NULL REFERENCES users(id),
  role        text NOT NULL CHECK (role IN ('owner', 'account_admin', 'account_manager', 'support_l1', 'support_l2', 'affiliate')),
  -- The Affiliate role sees these affiliate ids only.
  affiliate_ids text[] NOT NULL DEFAULT '{}',
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (team_id, user_id)
);
CREATE UNIQUE INDEX memberships_one_owner ON memberships (team_id) WHERE role = 'owner';
CREATE INDEX memberships_user ON memberships (user_id);

-- Browser sessions: the cookie carries a random secret, stored hashed. A session acts on one team
-- at a time (its own, or a merchant team that granted the user's provider access).
CREATE TABLE sessions (
  id            text PRIMARY KEY,
  user_id       text NOT NULL REFERENCES users(id),
  token_hash    text NOT NULL UNIQUE,
  team_id       text NOT NULL REFERENCES teams(id),
  ip_address    text,
  user_agent    text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_seen_at  timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL,
  revoked_at    timestamptz
);
CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE invitations (
  seq          bigserial UNIQUE,
  id           text PRIMARY KEY,
  team_id      text NOT NULL REFERENCES teams(id),
  email        text NOT NULL,
  role         text NOT NULL CHECK (role IN ('account_admin', 'account_manager', 'support_l1', 'support_l2', 'affiliate')),
  affiliate_ids text[] NOT NULL DEFAULT '{}',
  token_hash   text NOT NULL UNIQUE,
  invited_by   text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  accepted_at  timestamptz,
  revoked_at   timestamptz
);
CREATE INDEX invitations_team ON invitations (team_id, seq DESC);
-- One open invitation per address per team.
CREATE UNIQUE INDEX invitations_open ON invitations (team_id, lower(email)) WHERE accepted_at IS NULL AND revoked_at IS NULL;

CREATE TABLE password_resets (
  id          text PRIMARY KEY,
  user_id     text NOT NULL REFERENCES users(id),
  token_hash  text NOT NULL UNIQUE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz
);

-- A provider organisation's access to a merchant team, with what the merchant granted it.
CREATE TABLE provider_grants (
  seq           bigserial UNIQUE,
  id            text PRIMARY KEY,
  team_id       text NOT NULL REFERENCES teams(id),
  provider_id   text NOT NULL REFERENCES teams(id),
  kind          text NOT NULL CHECK (kind IN ('customer_service', 'affiliate')),
  permissions   text[] NOT NULL DEFAULT '{}',
  affiliate_ids text[] NOT NULL DEFAULT '{}',
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  revoked_at    timestamptz
);
CREATE UNIQUE INDEX provider_grants_live ON provider_grants (team_id, provider_id) WHERE revoked_at IS NULL;
CREATE INDEX provider_grants_provider ON provider_grants (provider_id) WHERE revoked_at IS NULL;

-- API tokens: bound to a role or an explicit permission set (both NULL: a full-access operator
-- token made by the CLI before roles existed, treated as the Team Owner's).
ALTER TABLE api_tokens ADD COLUMN seq bigserial UNIQUE;
ALTER TABLE api_tokens ADD COLUMN role text CHECK (role IN ('owner', 'account_admin', 'account_manager', 'support_l1', 'support_l2', 'affiliate'));
ALTER TABLE api_tokens ADD COLUMN permissions text[];
ALTER TABLE api_tokens ADD COLUMN affiliate_ids text[] NOT NULL DEFAULT '{}';
ALTER TABLE api_tokens ADD COLUMN created_by text;
-- A rotated token points at its replacement.
ALTER TABLE api_tokens ADD COLUMN replaced_by text;

-- Who did what, when, from where. Append-only: no route updates or deletes it, and the database
-- refuses UPDATE and DELETE on it.
CREATE TABLE audit_log (
  seq          bigserial UNIQUE,
  id           text PRIMARY KEY,
  team_id      text NOT NULL REFERENCES teams(id),
  actor_kind   text NOT NULL CHECK (actor_kind IN ('token', 'user', 'provider_user', 'system')),
  actor_id     text NOT NULL,
  actor_label  text NOT NULL,
  provider_id  text,
  action       text NOT NULL,
  target_type  text,
  target_id    text,
  data         jsonb NOT NULL DEFAULT '{}',
  ip_address   text,
  request_id   text,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_log_team ON audit_log (team_id, seq DESC);
CREATE INDEX audit_log_team_action ON audit_log (team_id, action, seq DESC);
CREATE INDEX audit_log_team_target ON audit_log (team_id, target_id, seq DESC);

CREATE FUNCTION audit_log_append_only() RETURNS trigger AS $$
BEGIN
  RAISE EXCEPTION 'audit_log is append-only';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
