import type { Executor } from '../../db/database.ts';
import type { NewRow, Row } from '../../db/schema.ts';
import './tables.ts';

export async function insertTicket(db: Executor, row: NewRow<'tickets'>): Promise<Row<'tickets'>> {
  return db.insertInto('tickets').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function findTicket(db: Executor, teamId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<Row<'tickets'> | undefined> {
  const q = db.selectFrom('tickets').selectAll().where('team_id', '=', teamId).where('id', '=', id);
  return (opts.forUpdate ? q.forUpdate() : q).executeTakeFirst();
}

export async function updateTicket(
  db: Executor,
  teamId: string,
  id: string,
  patch: { status?: string; assignee_id?: string | null; subject?: string },
): Promise<Row<'tickets'>> {
  return db.updateTable('tickets').set({ ...patch, updated_at: new Date() }).where('team_id', '=', teamId).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

export interface TicketFilter {
  limit: number;
  afterSeq: number | null;
  status?: string | undefined;
  customerId?: string | undefined;
  orderId?: string | undefined;
  assigneeId?: string | undefined;
  createdGte?: Date | undefined;
  createdLte?: Date | undefined;
}

export async function listTickets(db: Executor, teamId: string, f: TicketFilter): Promise<Row<'tickets'>[]> {
  let q = db.selectFrom('tickets').selectAll().where('team_id', '=', teamId);
  if (f.afterSeq !== null) q = q.where('seq', '<', f.afterSeq);
  if (f.status) q = q.where('status', '=', f.status);
  if (f.customerId) q = q.where('customer_id', '=', f.customerId);
  if (f.orderId) q = q.where('order_id', '=', f.orderId);
  if (f.assigneeId) q = q.where('assignee_id', '=', f.assigneeId);
  if (f.createdGte) q = q.where('created_at', '>=', f.createdGte);
  if (f.createdLte) q = q.where('created_at', '<=', f.createdLte);
  return q.orderBy('seq', 'desc').limit(f.limit + 1).execute();
}

export async function insertMessage(db: Executor, row: NewRow<'ticket_messages'>): Promise<Row<'ticket_messages'>> {
  return db.insertInto('ticket_messages').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function listMessages(db: Executor, teamId: string, ticketId: string, f: { limit: number; afterSeq: number | null }): Promise<Row<'ticket_messages'>[]> {
  let q = db.selectFrom('ticket_messages').selectAll().where('team_id', '=', teamId).where('ticket_id', '=', ticketId);
  if (f.afterSeq !== null) q = q.where('seq', '<', f.afterSeq);
  return q.orderBy('seq', 'desc').limit(f.limit + 1).execute();
}

export async function insertAttachment(db: Executor, row: NewRow<'ticket_attachments'>): Promise<Row<'ticket_attachments'>> {
  return db.insertInto('ticket_attachments').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function findAttachment(db: Executor, teamId: string, id: string): Promise<Row<'ticket_attachments'> | undefined> {
  return db.selectFrom('ticket_attachments').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}

/** Links uploads of this ticket that no message holds yet to `messageId`; answers the ones it linked. */
export async function claimAttachments(db: Executor, teamId: string, ticketId: string, ids: readonly string[], messageId: string): Promise<Row<'ticket_attachments'>[]> {
  if (ids.length === 0) return [];
  return db
    .updateTable('ticket_attachments')
    .set({ message_id: messageId })
    .where('team_id', '=', teamId)
    .where('ticket_id', '=', ticketId)
    .where('id', 'in', ids)
    .where('message_id', 'is', null)
    .returningAll()
    .execute();
}

export async function attachmentsOfMessages(db: Executor, teamId: string, messageIds: readonly string[]): Promise<Row<'ticket_attachments'>[]> {
  if (messageIds.length === 0) return [];
  return db.selectFrom('ticket_attachments').selectAll().where('team_id', '=', teamId).where('message_id', 'in', messageIds).orderBy('seq').execute();
}
