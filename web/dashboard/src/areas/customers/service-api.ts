import { api, CheckstandError } from '../../lib/api.ts';

/**
 * Calls the SDK does not type yet: GET /v1/customers, GET /v1/tickets…, POST /v1/fulfillments/{id}/ship,
 * GET /v1/fulfillments/export and the attachment upload exist on the API (src/modules/customers,
 * tickets, fulfillments) but packages/client/openapi.json was generated before them. They go through
 * the same openapi-fetch client (session cookie, CSRF header), untyped, with the shapes below copied
 * from the route schemas. Once `npm run sdk:generate` has run, these can move to `api.GET(…)`.
 */

interface RawResult {
  data?: unknown;
  error?: unknown;
  response: Response;
}
interface RawInit {
  params?: { path?: Record<string, string>; query?: Record<string, unknown> };
  body?: unknown;
  headers?: Record<string, string>;
  parseAs?: 'json' | 'text' | 'blob';
  bodySerializer?: (body: unknown) => unknown;
}
interface RawClient {
  GET(path: string, init?: RawInit): Promise<RawResult>;
  POST(path: string, init?: RawInit): Promise<RawResult>;
  PATCH(path: string, init?: RawInit): Promise<RawResult>;
}
const raw = api as unknown as RawClient;

function ok<T>(r: RawResult): T {
  if (r.response.ok && r.data !== undefined) return r.data as T;
  throw new CheckstandError(r.response.status, r.error ?? r.data, r.response.headers);
}

/** Drops empty filters (openapi-fetch would send `?email=`). */
function clean(q: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(q).filter(([, v]) => v !== undefined && v !== null && v !== ''));
}

export interface ListPage<T> {
  data: T[];
  has_more: boolean;
}

export interface CustomerRecord {
  object: 'customer';
  customer_number: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  phone: string | null;
  created_at: string;
  updated_at: string;
}

export const TICKET_STATUSES = ['open', 'pending', 'solved', 'closed'] as const;
export type TicketStatus = (typeof TICKET_STATUSES)[number];
/** The status moves the API allows (src/modules/tickets/states.ts). */
export const TICKET_MOVES: Record<TicketStatus, readonly TicketStatus[]> = {
  open: ['pending', 'solved', 'closed'],
  pending: ['open', 'solved', 'closed'],
  solved: ['open', 'closed'],
  closed: [],
};

export interface Ticket {
  object: 'ticket';
  id: string;
  customer_number: string;
  order_number: string | null;
  subject: string;
  status: TicketStatus;
  assignee: string | null;
  created_by: string;
  created_at: string;
  updated_at: string;
}

export interface Attachment {
  object: 'attachment';
  id: string;
  ticket_id: string;
  message_id: string | null;
  filename: string;
  content_type: string;
  size: number;
  sha256: string;
  url: string;
  created_at: string;
}

export interface TicketMessage {
  object: 'ticket_message';
  id: string;
  ticket_id: string;
  author: { type: 'user' | 'token' | 'customer'; id: string };
  body: string;
  attachments: Attachment[];
  created_at: string;
}

export interface Fulfillment {
  object: 'fulfillment';
  id: string;
  order_number: string;
  status: string;
  lines: { line_id: string; offer_id: string; product_id: string; name: string; quantity: number }[];
  tracking_number: string | null;
  carrier: string | null;
  tracking_url: string | null;
  shipped_at: string | null;
  created_at: string | null;
  updated_at: string | null;
}

export const FULFILLMENT_STATUSES = ['pending', 'shipped', 'delivered', 'cancelled'] as const;

/** The file types the API takes (src/modules/tickets/media.ts), for the file picker's `accept`. */
export const ATTACHMENT_ACCEPT = 'image/png,image/jpeg,image/gif,image/webp,application/pdf,text/plain,text/csv';
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;

export const serviceApi = {
  async listCustomers(query: { email?: string; name?: string; phone?: string; created_gte?: string; created_lte?: string; limit?: number; starting_after?: string }): Promise<ListPage<CustomerRecord>> {
    return ok(await raw.GET('/v1/customers', { params: { query: clean(query) } }));
  },
  async listTickets(query: { status?: string | null; assignee?: string | null; customer_number?: string; order_number?: string; limit?: number; starting_after?: string }): Promise<ListPage<Ticket>> {
    return ok(await raw.GET('/v1/tickets', { params: { query: clean(query) } }));
  },
  async getTicket(id: string): Promise<Ticket> {
    return ok<{ data: Ticket }>(await raw.GET('/v1/tickets/{id}', { params: { path: { id } } })).data;
  },
  async createTicket(body: { customer_number?: string; order_number?: string; subject: string; assignee?: string; message?: { body: string } }): Promise<Ticket> {
    return ok<{ data: Ticket }>(await raw.POST('/v1/tickets', { body })).data;
  },
  async updateTicket(id: string, body: { status?: TicketStatus; assignee?: string | null; subject?: string }): Promise<Ticket> {
    return ok<{ data: Ticket }>(await raw.PATCH('/v1/tickets/{id}', { params: { path: { id } }, body })).data;
  },
  async listMessages(id: string): Promise<ListPage<TicketMessage>> {
    return ok(await raw.GET('/v1/tickets/{id}/messages', { params: { path: { id }, query: { limit: 100 } } }));
  },
  async addMessage(id: string, body: { body: string; author?: 'member' | 'customer'; attachment_ids?: string[] }): Promise<TicketMessage> {
    return ok<{ data: TicketMessage }>(await raw.POST('/v1/tickets/{id}/messages', { params: { path: { id } }, body })).data;
  },
  /** The raw file as the body, its type as Content-Type, its name as ?filename= (not multipart). */
  async uploadAttachment(id: string, file: File): Promise<Attachment> {
    const r = await raw.POST('/v1/tickets/{id}/attachments', {
      params: { path: { id }, query: { filename: file.name } },
      body: file,
      bodySerializer: (b) => b,
      headers: { 'Content-Type': file.type || 'application/octet-stream' },
    });
    return ok<{ data: Attachment }>(r).data;
  },
  async listFulfillments(query: { status?: string | null; order_number?: string; created_gte?: string; created_lte?: string; limit?: number; starting_after?: string }): Promise<ListPage<Fulfillment>> {
    return ok(await raw.GET('/v1/fulfillments', { params: { query: clean(query) } }));
  },
  async shipFulfillment(id: string, body: { carrier: string; tracking_number: string; tracking_url?: string }): Promise<{ message: string; data: Fulfillment }> {
    return ok(await raw.POST('/v1/fulfillments/{id}/ship', { params: { path: { id } }, body }));
  },
  /** The CSV file and the name the API gives it (Content-Disposition). */
  async exportFulfillments(status: string): Promise<{ blob: Blob; filename: string; rows: number | null }> {
    const r = await raw.GET('/v1/fulfillments/export', { params: { query: { status } }, parseAs: 'blob', headers: { accept: 'text/csv' } });
    // openapi-fetch parses an error answer as JSON whatever parseAs says: the envelope.
    if (!r.response.ok) throw new CheckstandError(r.response.status, r.error, r.response.headers);
    const disposition = r.response.headers.get('content-disposition') ?? '';
    const filename = /filename="([^"]+)"/.exec(disposition)?.[1] ?? `fulfillments-${status}.csv`;
    const rows = Number(r.response.headers.get('x-row-count'));
    return { blob: r.data as Blob, filename, rows: Number.isFinite(rows) ? rows : null };
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
