-- Issue 17: shipping a fulfillment (carrier, tracking number and URL, when it shipped) and support
-- tickets: a ticket of a customer (optionally about one of their orders), its messages, and the
-- files attached to them.
ALTER TABLE fulfillments ADD COLUMN tracking_url text;
ALTER TABLE fulfillments ADD COLUMN shipped_at timestamptz;
CREATE INDEX fulfillments_team_status ON fulfillments (team_id, status, seq DESC);

CREATE TABLE tickets (
  seq          bigserial UNIQUE,
  id           text PRIMARY KEY,
  team_id      text NOT NULL REFERENCES teams(id),
  customer_id  text NOT NULL REFERENCES customers(id),
  order_id     text REFERENCES orders(id),
  subject      text NOT NULL,
  status       text NOT NULL CHECK (status IN ('open', 'pending', 'solved', 'closed')),
  -- A member of the team (checked by the service when it is set).
  assignee_id  text REFERENCES users(id),
  created_by   text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tickets_team_seq ON tickets (team_id, seq DESC);
CREATE INDEX tickets_team_customer ON tickets (team_id, customer_id, seq DESC);
CREATE INDEX tickets_team_order ON tickets (team_id, order_id, seq DESC) WHERE order_id IS NOT NULL;
CREATE INDEX tickets_team_assignee ON tickets (team_id, assignee_id, seq DESC) WHERE assignee_id IS NOT NULL;

CREATE TABLE ticket_messages (
  seq          bigserial UNIQUE,
  id           text PRIMARY KEY,
  team_id      text NOT NULL REFERENCES teams(id),
  ticket_id    text NOT NULL REFERENCES tickets(id),
  -- user: a member in the dashboard; token: an API integration; customer: the customer's own words, recorded by either.
  author_type  text NOT NULL CHECK (author_type IN ('user', 'token', 'customer')),
  author_id    text NOT NULL,
  body         text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ticket_messages_ticket ON ticket_messages (team_id, ticket_id, seq DESC);

CREATE TABLE ticket_attachments (
  seq           bigserial UNIQUE,
  id            text PRIMARY KEY,
  team_id       text NOT NULL REFERENCES teams(id),
  ticket_id     text NOT NULL REFERENCES tickets(id),
  -- null until a message names it (POST /v1/tickets/{id}/messages with attachment_ids).
  message_id    text REFERENCES ticket_messages(id),
  filename      text NOT NULL,
  content_type  text NOT NULL,
  size          integer NOT NULL CHECK (size > 0 AND size <= 10485760),
  sha256        text NOT NULL,
  -- Where the bytes are: 'database' (attachment_blobs) or 'file' (<data dir>/attachments/<storage_key>).
  storage       text NOT NULL CHECK (storage IN ('database', 'file')),
  storage_key   text NOT NULL,
  uploaded_by   text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ticket_attachments_ticket ON ticket_attachments (team_id, ticket_id, seq);
CREATE INDEX ticket_attachments_message ON ticket_attachments (message_id) WHERE message_id IS NOT NULL;

-- The bytes of attachments stored in the database (PostgreSQL mode).
CREATE TABLE attachment_blobs (
  key         text PRIMARY KEY,
  team_id     text NOT NULL REFERENCES teams(id),
  data        bytea NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
