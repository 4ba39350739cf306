/**
 * The tables of migration 0018 (tickets, their messages and attachments, and attachment bytes kept in
 * the database), merged into the database types (src/db/schema.ts) from this module.
 */
import type { ColumnType, Generated } from 'kysely';

type Defaulted<T> = ColumnType<T, T | undefined, T>;
type CreatedAt = ColumnType<Date, Date | string | undefined, Date | string>;

export interface TicketsTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  customer_id: string;
  order_id: string | null;
  subject: string;
  status: string;
  assignee_id: string | null;
  created_by: string;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface TicketMessagesTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  ticket_id: string;
  author_type: 'user' | 'token' | 'customer';
  author_id: string;
  body: string;
  created_at: CreatedAt;
}

export interface TicketAttachmentsTable {
  seq: Generated<number>;
  id: string;
  team_id: string;
  ticket_id: string;
  message_id: ColumnType<string | null, string | null | undefined, string | null>;
  filename: string;
  content_type: string;
  size: number;
  sha256: string;
  storage: 'database' | 'file';
  storage_key: string;
  uploaded_by: string;
  created_at: CreatedAt;
}

export interface AttachmentBlobsTable {
  key: string;
  team_id: string;
  data: Buffer;
  created_at: Defaulted<Date>;
}

declare module '../../db/schema.ts' {
  interface DB {
    tickets: TicketsTable;
    ticket_messages: TicketMessagesTable;
    ticket_attachments: TicketAttachmentsTable;
    attachment_blobs: AttachmentBlobsTable;
  }
}
