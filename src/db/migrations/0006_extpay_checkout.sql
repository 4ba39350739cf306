-- extpay first payments: the transaction names its connection and the provider's checkout session.
ALTER TABLE transactions ADD COLUMN connection_id text REFERENCES extpay_connections(id);
ALTER TABLE transactions ADD COLUMN checkout_ref text;
