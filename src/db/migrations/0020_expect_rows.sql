-- Issue 13: a guard a write can carry into its own statement. A write sent with its transaction's
-- next statement or its COMMIT, unanswered until then (deferWrite), cannot have its row count
-- checked by the code before the COMMIT goes: a write that must change exactly the rows it names
-- (an upsell claim moved only from the statuses its table allows) checks them itself, and fails,
-- aborting its transaction, when it did not. SQLSTATE CS409 (a class of our own, not PostgreSQL's)
-- marks that refusal; the caller maps it to its own error (409 conflict).
CREATE FUNCTION checkstand_expect_rows(changed bigint, expected bigint, message text) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
  IF changed IS DISTINCT FROM expected THEN
    RAISE EXCEPTION USING ERRCODE = 'CS409', MESSAGE = message;
  END IF;
  RETURN changed;
END
$$;
