import type { Row } from '../../db/schema.ts';
import type { AttachmentType } from './media.ts';
import type { TicketStatus } from './states.ts';
import './tables.ts';

export function ticketView(t: Row<'tickets'>) {
  return {
    object: 'ticket' as const,
    id: t.id,
    customer_number: t.customer_id,
    order_number: t.order_id,
    subject: t.subject,
    status: t.status as TicketStatus,
    assignee: t.assignee_id,
    created_by: t.created_by,
    created_at: t.created_at.toISOString(),
    updated_at: t.updated_at.toISOString(),
  };
}
export type TicketView = ReturnType<typeof ticketView>;

export function attachmentView(a: Row<'ticket_attachments'>) {
  return {
    object: 'attachment' as const,
    id: a.id,
    ticket_id: a.ticket_id,
    message_id: a.message_id,
    filename: a.filename,
    content_type: a.content_type as AttachmentType,
    size: a.size,
    sha256: a.sha256,
    url: `/v1/attachments/${a.id}`,
    created_at: a.created_at.toISOString(),
  };
}
export type AttachmentView = ReturnType<typeof attachmentView>;

export function messageView(m: Row<'ticket_messages'>, attachments: Row<'ticket_attachments'>[]) {
  return {
    object: 'ticket_message' as const,
    id: m.id,
    ticket_id: m.ticket_id,
    author: { type: m.author_type, id: m.author_id },
    body: m.body,
    attachments: attachments.filter((a) => a.message_id === m.id).map(attachmentView),
    created_at: m.created_at.toISOString(),
  };
}
export type MessageView = ReturnType<typeof messageView>;
