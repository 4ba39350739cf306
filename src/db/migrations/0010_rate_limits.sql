-- Request budgets shared by every `serve` process (RATE_LIMIT_STORE=postgres): one row per
-- bucket key (`<bucket>:<client address or token-hash prefix>`, never a token), a fixed window
-- counted by one upsert per request. UNLOGGED: a crash may empty it, which only resets budgets,
-- and it writes no WAL. Rows whose window ended long ago are deleted by the store now and then.
CREATE UNLOGGED TABLE rate_limits (
  key         text PRIMARY KEY,
  count       integer NOT NULL,
  expires_at  timestamptz NOT NULL
);
CREATE INDEX rate_limits_expires_at ON rate_limits (expires_at);
