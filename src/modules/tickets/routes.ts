import { createHash } from 'node:crypto';
import type { FastifySchemaCompiler } from 'fastify';
import { validatorCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../../app/context.ts';
import { Envelope, ListEnvelope, listed, ok } from '../../app/envelope.ts';
import { type Http, principalOf, teamOf } from '../../app/http.ts';
import { ListQuery } from '../../app/schemas.ts';
import { ATTACHMENT_TYPES, contentDisposition, MAX_ATTACHMENT_BYTES } from './media.ts';
import { AddMessageBody, Attachment, AttachmentParams, CreateTicketBody, Ticket, TicketMessage, TicketParams, TicketsQuery, UpdateTicketBody, UploadQuery } from './schemas.ts';

const tags = ['tickets'];

/** The raw file, as the OpenAPI document shows it; the route's own validator takes the bytes as parsed. */
const FileBody = z.string().meta({ format: 'binary', description: 'The file itself, as the request body (not multipart)' });

/** Params and query through zod as everywhere; the body is the Buffer the route's parser read. */
const uploadValidator: FastifySchemaCompiler<z.ZodType> = (route) =>
  route.httpPart === 'body' ? (data: unknown) => ({ value: data }) : validatorCompiler(route);

const Download = z.string().meta({ format: 'binary' });

/**
 * The parsed upload. Only its digest and size are enumerable: what the idempotency fingerprint and
 * the input guards walk, instead of ten million array indexes of a Buffer. The bytes stay private.
 */
class UploadedFile {
  readonly sha256: string;
  readonly size: number;
  readonly #bytes: Buffer;
  constructor(bytes: Buffer) {
    this.#bytes = bytes;
    this.size = bytes.length;
    this.sha256 = createHash('sha256').update(bytes).digest('hex');
  }
  get bytes(): Buffer {
    return this.#bytes;
  }
}

export function registerTicketRoutes(app: Http, ctx: AppContext): void {
  const tickets = ctx.services.tickets;

  app.post(
    '/v1/tickets',
    {
      config: { permission: 'orders:annotate' },
      schema: {
        tags,
        summary: 'Open a support ticket for a customer, optionally about one of their orders',
        description: 'Starts `open`. `customer_number` or `order_number` (then the order\'s customer); an order of another customer is 422. `assignee` must be a member of the team.',
        body: CreateTicketBody,
        response: { 201: Envelope(Ticket) },
      },
    },
    async (req, reply) => reply.code(201).send(ok(await tickets.create(principalOf(req), req.body), 'Ticket opened.')),
  );

  app.get(
    '/v1/tickets',
    { config: { permission: 'orders:view' }, schema: { tags, summary: 'List support tickets, newest first', querystring: TicketsQuery, response: { 200: ListEnvelope(Ticket) } } },
    async (req) => listed(await tickets.list(teamOf(req), req.query)),
  );

  app.get('/v1/tickets/:id', { config: { permission: 'orders:view' }, schema: { tags, summary: 'Retrieve a support ticket', params: TicketParams, response: { 200: Envelope(Ticket) } } }, async (req) =>
    ok(await tickets.get(teamOf(req), req.params.id)),
  );

  app.patch(
    '/v1/tickets/:id',
    {
      config: { permission: 'orders:annotate' },
      schema: {
        tags,
        summary: "Change a ticket's status, assignee or subject",
        description: 'Status moves: open → pending, solved, closed; pending → open, solved, closed; solved → open, closed; closed is final (409 `conflict`).',
        params: TicketParams,
        body: UpdateTicketBody,
        response: { 200: Envelope(Ticket) },
      },
    },
    async (req) => ok(await tickets.update(teamOf(req), req.params.id, req.body), 'Ticket updated.'),
  );

  app.post(
    '/v1/tickets/:id/messages',
    {
      config: { permission: 'orders:annotate' },
      schema: {
        tags,
        summary: 'Add a message to a ticket, with attachments uploaded before',
        description:
          'A closed ticket takes no message (409). A message with `author` `customer` on a pending or solved ticket reopens it. ' +
          '`attachment_ids` must be uploads of this ticket that no message holds yet (422 otherwise; nothing is written).',
        params: TicketParams,
        body: AddMessageBody,
        response: { 201: Envelope(TicketMessage) },
      },
    },
    async (req, reply) => reply.code(201).send(ok(await tickets.addMessage(principalOf(req), req.params.id, req.body), 'Message added.')),
  );

  app.get(
    '/v1/tickets/:id/messages',
    {
      config: { permission: 'orders:view' },
      schema: { tags, summary: "List a ticket's messages with their attachments, newest first", params: TicketParams, querystring: ListQuery.strict(), response: { 200: ListEnvelope(TicketMessage) } },
    },
    async (req) => listed(await tickets.listMessages(teamOf(req), req.params.id, req.query)),
  );

  // Its own scope: the only route that takes a body other than JSON, and up to 10 MB of it.
  void app.register(async (uploads: Http) => {
    uploads.removeAllContentTypeParsers();
    uploads.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_ATTACHMENT_BYTES }, (_req, body, done) => done(null, new UploadedFile(body as Buffer)));
    uploads.post(
      '/v1/tickets/:id/attachments',
      {
        bodyLimit: MAX_ATTACHMENT_BYTES,
        validatorCompiler: uploadValidator as never,
        config: { permission: 'orders:annotate' },
        schema: {
          tags,
          operationId: 'uploadTicketAttachment',
          summary: 'Upload a file to a ticket',
          description:
            `The request body is the file (not multipart), its media type as \`Content-Type\`, its name as \`?filename=\`. At most ${MAX_ATTACHMENT_BYTES} bytes (10 MB, spec §8): ` +
            `a larger body answers 413 \`body_too_large\` and nothing is stored. Allowed: ${ATTACHMENT_TYPES.join(', ')}; the bytes must be that type ` +
            '(PNG, JPEG, GIF, WebP and PDF by their signature, text as UTF-8 without control characters), else 415 `unsupported_media_type`. ' +
            'Answers the attachment; name it in `attachment_ids` of the next message (POST /v1/tickets/{id}/messages).',
          consumes: [...ATTACHMENT_TYPES],
          params: TicketParams,
          querystring: UploadQuery,
          body: FileBody,
          response: { 201: Envelope(Attachment) },
        },
      },
      async (req, reply) => {
        const body = req.body as unknown;
        const upload = body instanceof UploadedFile ? body : undefined;
        const file = { bytes: upload?.bytes, sha256: upload?.sha256, contentType: req.headers['content-type'], filename: req.query.filename };
        return reply.code(201).send(ok(await tickets.upload(principalOf(req), req.params.id, file), 'Attachment uploaded.'));
      },
    );
  });

  app.get(
    '/v1/attachments/:id',
    {
      config: { permission: 'orders:view' },
      schema: {
        tags,
        operationId: 'downloadAttachment',
        summary: 'Download an attachment',
        description: 'The file with its media type, `Content-Disposition: attachment`, `X-Content-Type-Options: nosniff` and a sandboxing `Content-Security-Policy`.',
        params: AttachmentParams,
        response: { 200: { description: 'The file', content: Object.fromEntries(ATTACHMENT_TYPES.map((t) => [t, { schema: Download }])) } },
      },
    },
    async (req, reply) => {
      const { attachment, bytes } = await tickets.download(teamOf(req), req.params.id);
      const type = attachment.content_type.startsWith('text/') ? `${attachment.content_type}; charset=utf-8` : attachment.content_type;
      return reply
        .type(type)
        .header('content-disposition', contentDisposition(attachment.filename))
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "default-src 'none'; sandbox")
        .header('cache-control', 'private, no-store')
        .send(bytes as never);
    },
  );
}
