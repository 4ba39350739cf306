import { api, CheckstandError, type Query, type Schemas, unwrap } from './api.ts';

/**
 * The customer-service calls the Customers, Support tickets and Fulfillment areas share, through the
 * typed SDK (`api`): customers, tickets and their messages and attachments, fulfillments and their
 * CSV export. Shapes are the OpenAPI document's (`Schemas[…]`); nothing here is hand-copied.
 */

export type CustomerRecord = Schemas['CustomerRecord'];
export type Ticket = Schemas['Ticket'];
export type TicketStatus = Ticket['status'];
export type TicketMessage = Schemas['TicketMessage'];
export type Attachment = Schemas['Attachment'];
export type Fulfillment = Schemas['Fulfillment'];

export interface ListPage<T> {
  data: T[];
  has_more: boolean;
}

export const TICKET_STATUSES = ['open', 'pending', 'solved', 'closed'] as const satisfies readonly TicketStatus[];
/** The status moves the API allows (src/modules/tickets/states.ts). */
export const TICKET_MOVES: Record<TicketStatus, readonly TicketStatus[]> = {
  open: ['pending', 'solved', 'closed'],
  pending: ['open', 'solved', 'closed'],
  solved: ['open', 'closed'],
  closed: [],
};

export const FULFILLMENT_STATUSES = ['pending', 'shipped', 'delivered', 'cancelled'] as const satisfies readonly NonNullable<Query<'/v1/fulfillments'>['status']>[];
type FulfillmentStatus = (typeof FULFILLMENT_STATUSES)[number];

/** The file types the API takes (src/modules/tickets/media.ts), for the file picker's `accept`. */
export const ATTACHMENT_ACCEPT = 'image/png,image/jpeg,image/gif,image/webp,application/pdf,text/plain,text/csv';
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;

/** Drops empty filters (the client would send `?email=`) and a null status. */
function clean<T extends object>(q: T): T {
  return Object.fromEntries(Object.entries(q).filter(([, v]) => v !== undefined && v !== null && v !== '')) as T;
}

/** A list's filters as the areas' selects hold them: any filter may be null (not sent), a status any string (the API answers 422 to an unknown one). */
type Loose<Q> = { [K in keyof Q]?: (K extends 'status' ? string : Q[K]) | null };

export const serviceApi = {
  async listCustomers(query: Query<'/v1/customers'>): Promise<ListPage<CustomerRecord>> {
    return unwrap(await api.GET('/v1/customers', { params: { query: clean(query) } }));
  },
  async listTickets(query: Loose<Query<'/v1/tickets'>>): Promise<ListPage<Ticket>> {
    return unwrap(await api.GET('/v1/tickets', { params: { query: clean(query) as Query<'/v1/tickets'> } }));
  },
  async getTicket(id: string): Promise<Ticket> {
    return unwrap(await api.GET('/v1/tickets/{id}', { params: { path: { id } } })).data;
  },
  async createTicket(body: Schemas['CreateTicket']): Promise<Ticket> {
    return unwrap(await api.POST('/v1/tickets', { body })).data;
  },
  async updateTicket(id: string, body: Schemas['UpdateTicket']): Promise<Ticket> {
    return unwrap(await api.PATCH('/v1/tickets/{id}', { params: { path: { id } }, body })).data;
  },
  async listMessages(id: string): Promise<ListPage<TicketMessage>> {
    return unwrap(await api.GET('/v1/tickets/{id}/messages', { params: { path: { id }, query: { limit: 100 } } }));
  },
  async addMessage(id: string, body: Schemas['AddTicketMessage']): Promise<TicketMessage> {
    return unwrap(await api.POST('/v1/tickets/{id}/messages', { params: { path: { id } }, body })).data;
  },
  /** The raw file as the body, its type as Content-Type, its name as ?filename= (not multipart). */
  async uploadAttachment(id: string, file: File): Promise<Attachment> {
    const r = await api.POST('/v1/tickets/{id}/attachments', {
      params: { path: { id }, query: { filename: file.name } },
      body: file as never,
      bodySerializer: (b: unknown) => b as BodyInit,
      headers: { 'Content-Type': file.type || 'application/octet-stream' },
    });
    return unwrap(r).data;
  },
  async listFulfillments(query: Loose<Query<'/v1/fulfillments'>>): Promise<ListPage<Fulfillment>> {
    return unwrap(await api.GET('/v1/fulfillments', { params: { query: clean(query) as Query<'/v1/fulfillments'> } }));
  },
  async shipFulfillment(id: string, body: Schemas['ShipFulfillment']): Promise<{ message: string; data: Fulfillment }> {
    return unwrap(await api.POST('/v1/fulfillments/{id}/ship', { params: { path: { id } }, body }));
  },
  /** The CSV file and the name the API gives it (Content-Disposition). */
  async exportFulfillments(status: string): Promise<{ blob: Blob; filename: string; rows: number | null }> {
    const r = await api.GET('/v1/fulfillments/export', { params: { query: { status: status as FulfillmentStatus } }, parseAs: 'blob', headers: { accept: 'text/csv' } });
    // openapi-fetch parses an error answer as JSON whatever parseAs says: the envelope.
    if (!r.response.ok) throw new CheckstandError(r.response.status, r.error, r.response.headers);
    const disposition = r.response.headers.get('content-disposition') ?? '';
    const filename = /filename="([^"]+)"/.exec(disposition)?.[1] ?? `fulfillments-${status}.csv`;
    const rows = Number(r.response.headers.get('x-row-count'));
    return { blob: r.data as unknown as Blob, filename, rows: Number.isFinite(rows) ? rows : null };
  },
};

/** Saves a Blob as a file through a temporary link. */
export function saveBlob(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function fullName(c: { first_name: string | null; last_name: string | null }): string {
  return [c.first_name, c.last_name].filter(Boolean).join(' ');
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}
