import { z } from 'zod';
import { Id, ListQuery, Timestamp } from '../../app/schemas.ts';
import { ATTACHMENT_TYPES } from './media.ts';
import { TICKET_STATUSES } from './states.ts';

export const TicketParams = z.object({ id: Id('tkt') }).strict();
export const AttachmentParams = z.object({ id: Id('att') }).strict();

const Author = z.enum(['member', 'customer']).default('member').describe("`member` (default): the caller wrote it; `customer`: the customer's own words, recorded by the caller");

const MessageInput = z
  .object({
    body: z.string().trim().min(1).max(20_000),
    author: Author,
    attachment_ids: z
      .array(Id('att'))
      .max(10)
      .optional()
      .describe('Files uploaded to this ticket (POST /v1/tickets/{id}/attachments) that no message holds yet'),
  })
  .strict();

export const CreateTicketBody = z
  .object({
    customer_number: Id('cus').optional().describe('Required unless `order_number` is given (the ticket is then for its customer)'),
    order_number: Id('ord').optional().describe("One of the customer's orders, when the ticket is about it"),
    subject: z.string().trim().min(1).max(300),
    assignee: Id('usr').optional().describe('A member of the team (user id)'),
    message: MessageInput.omit({ attachment_ids: true }).optional().describe('The first message'),
  })
  .strict()
  .superRefine((b, ctx) => {
    if (!b.customer_number && !b.order_number) ctx.addIssue({ code: 'custom', path: ['customer_number'], message: 'send customer_number or order_number' });
  })
  .meta({ id: 'CreateTicket' });
export type CreateTicketBody = z.infer<typeof CreateTicketBody>;

export const UpdateTicketBody = z
  .object({
    status: z.enum(TICKET_STATUSES).optional(),
    assignee: Id('usr').nullable().optional().describe('A member of the team; null unassigns'),
    subject: z.string().trim().min(1).max(300).optional(),
  })
  .strict()
  .refine((b) => b.status !== undefined || b.assignee !== undefined || b.subject !== undefined, 'send status, assignee or subject')
  .meta({ id: 'UpdateTicket' });
export type UpdateTicketBody = z.infer<typeof UpdateTicketBody>;

export const AddMessageBody = MessageInput.meta({ id: 'AddTicketMessage' });
export type AddMessageBody = z.infer<typeof AddMessageBody>;

export const TicketsQuery = ListQuery.extend({
  status: z.enum(TICKET_STATUSES).optional(),
  customer_number: Id('cus').optional(),
  order_number: Id('ord').optional(),
  assignee: Id('usr').optional(),
}).strict();

export const UploadQuery = z
  .object({ filename: z.string().trim().min(1).max(255).optional().describe('The name the download offers; paths are stripped. Default `attachment.<ext>`') })
  .strict();

export const Ticket = z
  .object({
    object: z.literal('ticket'),
    id: z.string().describe('`tkt_…`'),
    customer_number: z.string(),
    order_number: z.string().nullable(),
    subject: z.string(),
    status: z.enum(TICKET_STATUSES).describe('`open` (waits on the team), `pending` (waits on the customer), `solved` (can reopen), `closed` (final)'),
    assignee: z.string().nullable().describe('The member (user id) it is assigned to'),
    created_by: z.string().describe('`user:<id>` or `token:<id>`'),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Ticket' });

export const Attachment = z
  .object({
    object: z.literal('attachment'),
    id: z.string().describe('`att_…`'),
    ticket_id: z.string(),
    message_id: z.string().nullable().describe('The message holding it; null until a message names it'),
    filename: z.string(),
    content_type: z.enum(ATTACHMENT_TYPES),
    size: z.number().int().describe('Bytes'),
    sha256: z.string().describe('Hex SHA-256 of the bytes'),
    url: z.string().describe('Where to download it: `/v1/attachments/{id}`'),
    created_at: Timestamp,
  })
  .meta({ id: 'Attachment' });

export const TicketMessage = z
  .object({
    object: z.literal('ticket_message'),
    id: z.string().describe('`tmsg_…`'),
    ticket_id: z.string(),
    author: z.object({
      type: z.enum(['user', 'token', 'customer']),
      id: z.string().describe('A user id (`usr_…`), an API token id (`tok_…`) or the customer number'),
    }),
    body: z.string(),
    attachments: z.array(Attachment),
    created_at: Timestamp,
  })
  .meta({ id: 'TicketMessage' });

