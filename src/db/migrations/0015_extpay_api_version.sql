-- The Whop API version (Api-Version-Date) an extpay connection is pinned to. NULL: the adapter's
-- default (EXTPAY_API_VERSION_DATE), so a connection follows the release it runs on until pinned.
ALTER TABLE extpay_connections ADD COLUMN api_version_date text CHECK (api_version_date ~ '^\d{4}-\d{2}-\d{2}$');
