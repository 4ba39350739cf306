import { z } from 'zod';
import type { AppContext } from '../../app/context.ts';
import { Envelope, ListEnvelope, ok } from '../../app/envelope.ts';
import { type Http, teamOf } from '../../app/http.ts';
import { Id, ListQuery } from '../../app/schemas.ts';
import { Fulfillment } from './schemas.ts';
import { FULFILLMENT_STATUSES } from './states.ts';

const FulfillmentsQuery = ListQuery.extend({
  order_number: Id('ord').optional(),
  status: z.enum(FULFILLMENT_STATUSES).optional(),
}).strict();

const ExportQuery = z
  .object({
    status: z.enum(FULFILLMENT_STATUSES).default('pending').describe('Default `pending`: what the warehouse still has to ship'),
    created_gte: ListQuery.shape.created_gte,
    created_lte: ListQuery.shape.created_lte,
  })
  .strict();

const FulfillmentParams = z.object({ id: Id('ful') }).strict();

const ShipBody = z
  .object({
    carrier: z.string().trim().min(1).max(100).describe('e.g. `USPS`, `UPS`, `DHL Express`'),
    tracking_number: z.string().trim().min(1).max(100),
    tracking_url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2000).optional(),
    shipped_at: z.coerce
      .date()
      .refine((d) => d.getTime() <= Date.now() + 24 * 3600_000, 'cannot be more than a day in the future')
      .optional()
      .describe('ISO 8601; defaults to now'),
  })
  .strict()
  .meta({ id: 'ShipFulfillment' });

const CsvExport = z.string().describe(
  'RFC 4180 CSV (UTF-8, CRLF, every field quoted), one row per line to ship, oldest fulfillment first. Columns: fulfillment_id, order_number, created_at, customer_name, email, phone, ' +
    'ship_to_name, address_line1, address_line2, city, state, postal_code, country, product_id, offer_id, item_name, quantity. ' +
    "A cell starting with = + - @ or a tab is prefixed with an apostrophe (no formulas from shoppers' input).",
);

export function registerFulfillmentRoutes(app: Http, ctx: AppContext): void {
  const fulfillments = ctx.services.fulfillments;

  app.get('/v1/fulfillments', { config: { permission: 'orders:view' }, schema: { tags: ['records'], summary: 'List fulfillments, newest first', querystring: FulfillmentsQuery, response: { 200: ListEnvelope(Fulfillment) } } }, async (req) => {
    const page = await fulfillments.list(teamOf(req), req.query);
    return { success: true as const, message: 'OK', data: page.items as never, has_more: page.has_more };
  });

  app.get(
    '/v1/fulfillments/export',
    {
      config: { permission: 'orders:fulfill' },
      schema: {
        tags: ['records'],
        operationId: 'exportFulfillments',
        summary: 'Export fulfillments as CSV for a warehouse',
        description:
          'The pending fulfillments (or another `status`) of the team as a CSV download (`Content-Disposition: attachment`), every one of them, not a page. ' +
          'Needs `orders:fulfill` (a bulk export of shipping addresses belongs to whoever records the shipments).',
        querystring: ExportQuery,
        response: { 200: { description: 'The CSV file', content: { 'text/csv': { schema: CsvExport } } } },
      },
    },
    async (req, reply) => {
      const { csv, rows } = await fulfillments.exportCsv(teamOf(req), req.query);
      const day = new Date().toISOString().slice(0, 10).replace(/-/g, '');
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="fulfillments-${req.query.status}-${day}.csv"`)
        .header('x-row-count', String(rows))
        .send(csv);
    },
  );

  app.get(
    '/v1/fulfillments/:id',
    { config: { permission: 'orders:view' }, schema: { tags: ['records'], summary: 'Retrieve a fulfillment', params: FulfillmentParams, response: { 200: Envelope(Fulfillment) } } },
    // `lines` is stored as JSON (unknown[] to the database types); the schema names its fields.
    async (req) => ok((await fulfillments.get(teamOf(req), req.params.id)) as never),
  );

  app.post(
    '/v1/fulfillments/:id/ship',
    {
      config: { permission: 'orders:fulfill', audit: 'fulfillment.shipped' },
      schema: {
        tags: ['records'],
        operationId: 'shipFulfillment',
        summary: 'Mark a fulfillment shipped, with carrier and tracking number',
        description:
          'Moves a `pending` fulfillment to `shipped`; the order\'s timeline gets a `fulfillment.shipped` row and the `fulfillment.shipped` event ' +
          '(webhooks) is written in the same transaction. 200 with the fulfillment. Shipping it again with the same carrier and tracking number ' +
          'changes nothing and answers 200 again (safe to retry, no second event); other tracking on a shipped fulfillment, or a `cancelled` or ' +
          '`delivered` one, answers 409 `conflict`.',
        params: FulfillmentParams,
        body: ShipBody,
        response: { 200: Envelope(Fulfillment) },
      },
    },
    async (req) => {
      const r = await fulfillments.ship(teamOf(req), req.params.id, req.body);
      return ok(r.fulfillment as never, r.changed ? 'Fulfillment shipped.' : 'Fulfillment already shipped with this tracking.');
    },
  );
}
