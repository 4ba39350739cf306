import { createHash } from 'node:crypto';
import { ApiError, invalid, notFound } from '../../app/errors.ts';
import { randomToken } from '../../app/ids.ts';
import type { ListQuery } from '../../app/schemas.ts';
import type { Executor, Store, Tx } from '../../db/database.ts';
import { listPage, type Page } from '../../db/pagination.ts';
import type { Row } from '../../db/schema.ts';
import type { Principal } from '../access/principal.ts';
import { bytesMatch, cleanFilename, isAllowedType, MAX_ATTACHMENT_BYTES, mediaTypeOf, ATTACHMENT_TYPES } from './media.ts';
import * as repo from './repo.ts';
import type { AddMessageBody, CreateTicketBody, UpdateTicketBody } from './schemas.ts';
import { TICKET, type TicketStatus } from './states.ts';
import type { AttachmentStorage } from './storage.ts';
import { attachmentView, type AttachmentView, messageView, type MessageView, ticketView, type TicketView } from './views.ts';

/** What tickets read from other modules (their services). */
export interface TicketsDeps {
  store: Store;
  storage: AttachmentStorage;
  customers: { find(db: Executor, teamId: string, id: string): Promise<Row<'customers'> | undefined> };
  orders: { findOrder(db: Executor, teamId: string, id: string): Promise<Row<'orders'> | undefined> };
  users: { getMember(teamId: string, userId: string): Promise<unknown> };
}

export interface TicketsQuery extends ListQuery {
  status?: TicketStatus | undefined;
  customer_number?: string | undefined;
  order_number?: string | undefined;
  assignee?: string | undefined;
}

/** Ids of this module's rows (`tkt_`, `tmsg_`, `att_`), as unguessable as the others. */
const idOf = (prefix: 'tkt' | 'tmsg' | 'att') => `${prefix}_${randomToken()}`;

function actorOf(p: Principal): { type: 'user' | 'token'; id: string } {
  return p.userId ? { type: 'user', id: p.userId } : { type: 'token', id: p.tokenId ?? p.actorId };
}

export class TicketsService {
  constructor(private readonly d: TicketsDeps) {}

  /** 422 on `assignee` unless the user is a member of the team. */
  private async requireMember(teamId: string, userId: string | null | undefined): Promise<void> {
    if (!userId) return;
    try {
      await this.d.users.getMember(teamId, userId);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'not_found') throw invalid('assignee', 'is not a member of this team');
      throw err;
    }
  }

  private async ticketOr404(db: Executor, teamId: string, id: string, forUpdate = false): Promise<Row<'tickets'>> {
    const t = await repo.findTicket(db, teamId, id, { forUpdate });
    if (!t) throw notFound('Ticket');
    return t;
  }

  async create(principal: Principal, body: CreateTicketBody): Promise<TicketView> {
    const teamId = principal.teamId;
    await this.requireMember(teamId, body.assignee);
    const actor = actorOf(principal);
    return this.d.store.transaction(async (trx) => {
      const order = body.order_number ? await this.d.orders.findOrder(trx, teamId, body.order_number) : undefined;
      if (body.order_number && !order) throw invalid('order_number', 'no such order');
      const customerId = body.customer_number ?? order!.customer_id;
      const customer = await this.d.customers.find(trx, teamId, customerId);
      if (!customer) throw invalid('customer_number', 'no such customer');
      if (order && order.customer_id !== customer.id) throw invalid('order_number', 'is an order of another customer');
      const ticket = await repo.insertTicket(trx, {
        id: idOf('tkt'),
        team_id: teamId,
        customer_id: customer.id,
        order_id: order?.id ?? null,
        subject: body.subject,
        status: 'open',
        assignee_id: body.assignee ?? null,
        created_by: `${actor.type}:${actor.id}`,
      });
      if (!body.message) return ticketView(ticket);
      return ticketView((await this.insertMessage(trx, principal, ticket, body.message.body, body.message.author)).ticket);
    });
  }

  async get(teamId: string, id: string): Promise<TicketView> {
    return ticketView(await this.d.store.run((db) => this.ticketOr404(db, teamId, id)));
  }

  async list(teamId: string, q: TicketsQuery): Promise<Page<TicketView>> {
    return this.d.store.run((db) => {
      const filter = { status: q.status, customerId: q.customer_number, orderId: q.order_number, assigneeId: q.assignee, createdGte: q.created_gte, createdLte: q.created_lte };
      return listPage(db, 'tickets', teamId, q, (afterSeq) => repo.listTickets(db, teamId, { limit: q.limit, afterSeq, ...filter }), ticketView);
    });
  }

  /** Status (through the TICKET table, under the row lock), assignee, subject. */
  async update(teamId: string, id: string, body: UpdateTicketBody): Promise<TicketView> {
    await this.requireMember(teamId, body.assignee);
    return this.d.store.transaction(async (trx) => {
      const t = await this.ticketOr404(trx, teamId, id, true);
      if (body.status && body.status !== t.status) TICKET.assertMove(t.status, body.status);
      const patch = {
        ...(body.status ? { status: body.status } : {}),
        ...(body.assignee !== undefined ? { assignee_id: body.assignee } : {}),
        ...(body.subject ? { subject: body.subject } : {}),
      };
      return ticketView(await repo.updateTicket(trx, teamId, id, patch));
    });
  }

  /**
   * A message from the caller (or the customer's words, recorded by the caller). A closed ticket takes
   * none (409); the customer writing on a pending or solved ticket reopens it.
   */
  private async insertMessage(trx: Tx, principal: Principal, ticket: Row<'tickets'>, body: string, author: 'member' | 'customer') {
    if (ticket.status === 'closed') throw new ApiError('conflict', 'This ticket is closed: open a new ticket for a follow-up.');
    const by = author === 'customer' ? { type: 'customer' as const, id: ticket.customer_id } : actorOf(principal);
    const message = await repo.insertMessage(trx, { id: idOf('tmsg'), team_id: ticket.team_id, ticket_id: ticket.id, author_type: by.type, author_id: by.id, body });
    const reopen = author === 'customer' && (ticket.status === 'pending' || ticket.status === 'solved');
    if (reopen) TICKET.assertMove(ticket.status, 'open');
    return { message, ticket: await repo.updateTicket(trx, ticket.team_id, ticket.id, reopen ? { status: 'open' } : {}) };
  }

  async addMessage(principal: Principal, ticketId: string, body: AddMessageBody): Promise<MessageView> {
    const teamId = principal.teamId;
    const ids = [...new Set(body.attachment_ids ?? [])];
    return this.d.store.transaction(async (trx) => {
      const ticket = await this.ticketOr404(trx, teamId, ticketId, true);
      const { message } = await this.insertMessage(trx, principal, ticket, body.body, body.author);
      const claimed = await repo.claimAttachments(trx, teamId, ticket.id, ids, message.id);
      if (claimed.length !== ids.length) {
        const missing = ids.filter((id) => !claimed.some((a) => a.id === id));
        throw invalid('attachment_ids', `not uploads of this ticket waiting for a message: ${missing.join(', ')}`);
      }
      return messageView(message, claimed);
    });
  }

  async listMessages(teamId: string, ticketId: string, q: ListQuery): Promise<Page<MessageView>> {
    return this.d.store.run(async (db) => {
      const ticket = await this.ticketOr404(db, teamId, ticketId);
      const page = await listPage(db, 'ticket_messages', teamId, q, (afterSeq) => repo.listMessages(db, teamId, ticket.id, { limit: q.limit, afterSeq }), (m) => m);
      const files = await repo.attachmentsOfMessages(db, teamId, page.items.map((m) => m.id));
      return { items: page.items.map((m) => messageView(m, files)), has_more: page.has_more };
    });
  }

  /**
   * Stores an upload of this ticket. The declared media type must be on the allow-list and the bytes
   * must be what it says (415 otherwise); the size limit is enforced by the route's body limit (413)
   * and again here. The bytes and the row are written together: a failed insert leaves no file.
   */
  async upload(principal: Principal, ticketId: string, file: { bytes: Buffer | undefined; sha256?: string | undefined; contentType: string | undefined; filename: string | undefined }): Promise<AttachmentView> {
    const teamId = principal.teamId;
    const bytes = file.bytes ?? Buffer.alloc(0);
    const type = mediaTypeOf(file.contentType);
    if (!isAllowedType(type)) {
      throw new ApiError('unsupported_media_type', `Attachments may be ${ATTACHMENT_TYPES.join(', ')}; send the file's own type as Content-Type (got ${type || 'none'}).`);
    }
    if (bytes.length === 0) throw invalid('body', 'the file is empty');
    if (bytes.length > MAX_ATTACHMENT_BYTES) throw new ApiError('body_too_large', `An attachment is at most ${MAX_ATTACHMENT_BYTES} bytes (10 MB).`);
    if (!bytesMatch(type, bytes)) throw new ApiError('unsupported_media_type', `The file's content is not ${type}: its bytes do not match the type it was sent as.`);
    const id = idOf('att');
    const actor = actorOf(principal);
    const storage = this.d.storage;
    try {
      return await this.d.store.transaction(async (trx) => {
        const ticket = await this.ticketOr404(trx, teamId, ticketId);
        if (ticket.status === 'closed') throw new ApiError('conflict', 'This ticket is closed: open a new ticket for a follow-up.');
        await storage.put(trx, teamId, id, bytes);
        const row = await repo.insertAttachment(trx, {
          id,
          team_id: teamId,
          ticket_id: ticket.id,
          filename: cleanFilename(file.filename, type),
          content_type: type,
          size: bytes.length,
          sha256: file.sha256 ?? createHash('sha256').update(bytes).digest('hex'),
          storage: storage.kind,
          storage_key: id,
          uploaded_by: `${actor.type}:${actor.id}`,
        });
        return attachmentView(row);
      });
    } catch (err) {
      await storage.discard(teamId, id);
      throw err;
    }
  }

  /** The attachment's row and bytes; another team's id is a 404 like an unknown one. */
  async download(teamId: string, id: string): Promise<{ attachment: AttachmentView; bytes: Buffer }> {
    return this.d.store.run(async (db) => {
      const a = await repo.findAttachment(db, teamId, id);
      if (!a) throw notFound('Attachment');
      const bytes = await this.d.storage.get(db, teamId, a.storage_key);
      if (!bytes) throw new Error(`attachment ${a.id}: its bytes are missing from the ${a.storage} store`);
      return { attachment: attachmentView(a), bytes };
    });
  }
}
