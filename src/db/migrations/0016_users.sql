-- Two-factor codes are single-use (RFC 6238 §5.2): the time step of the last accepted code; a code
-- of that step or an earlier one is refused, so an observed code cannot be replayed within its window.
ALTER TABLE users ADD COLUMN totp_last_step bigint;
