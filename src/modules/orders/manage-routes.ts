import { z } from 'zod';
import type { AppContext } from '../../app/context.ts';
import { Envelope, ListEnvelope, listed, ok } from '../../app/envelope.ts';
import { type Http, principalOf, teamOf } from '../../app/http.ts';
import { ListQuery } from '../../app/schemas.ts';
import { Note } from '../customers/schemas.ts';
import { OrderDesk } from './manage.ts';
import { Order } from './responses.ts';
import { OrderParams } from './schemas.ts';

const NoteBody = z.object({ body: z.string().trim().min(1).max(10_000) }).strict().meta({ id: 'OrderNote' });

const QaBody = z
  .object({
    needs_qa: z.boolean().describe('true flags the order for review; false clears the flag (and its reason)'),
    qa_reason: z.string().trim().min(1).max(500).optional().describe('Why it needs review; only with `needs_qa` true (kept when omitted)'),
  })
  .strict()
  .meta({ id: 'OrderQaUpdate' });

const CancelBody = z
  .object({ reason: z.string().trim().min(1).max(500).optional() })
  .strict()
  .meta({ id: 'CancelOrder' });

const actorOf = (req: Parameters<typeof principalOf>[0]) => {
  const p = principalOf(req);
  return `${p.kind}:${p.actorId}`;
};

/** The order page's notes, QA flag and cancel (manage.ts). */
export function registerOrderDeskRoutes(app: Http, ctx: AppContext): void {
  const desk = new OrderDesk(ctx.store, ctx.services.orders, ctx.services.customers, ctx.services.ledger);

  app.get(
    '/v1/orders/:order_number/notes',
    {
      config: { permission: 'orders:view' },
      schema: {
        tags: ['records'],
        summary: "List an order's notes, newest first",
        description: "Notes written about this order (and dispute notes of it). They are notes of the order's customer too: `GET /v1/customers/{customer_number}/notes` lists them with the customer's other notes.",
        params: OrderParams,
        querystring: ListQuery.strict(),
        response: { 200: ListEnvelope(Note) },
      },
    },
    async (req) => listed(await desk.listNotes(teamOf(req), req.params.order_number, req.query)),
  );

  app.post(
    '/v1/orders/:order_number/notes',
    {
      config: { permission: 'orders:annotate', audit: 'order.note_added' },
      schema: {
        tags: ['records'],
        summary: 'Add a note to an order',
        description: "The note is also a note of the order's customer (with `order_number` set).",
        params: OrderParams,
        body: NoteBody,
        response: { 201: Envelope(Note) },
      },
    },
    async (req, reply) => reply.code(201).send(ok(await desk.addNote(teamOf(req), req.params.order_number, req.body.body, actorOf(req)), 'Note added')),
  );

  app.patch(
    '/v1/orders/:order_number',
    {
      config: { permission: 'orders:annotate', audit: 'order.qa_updated' },
      schema: {
        tags: ['records'],
        summary: "Set or clear an order's QA flag",
        description:
          'The disputes queue is `GET /v1/orders?needs_qa=true`. A change is recorded on the timeline (`qa.flagged` with the reason, `qa.cleared`) ' +
          'with who made it; sending the flag the order already has changes nothing. A dispute flags the order by itself.',
        params: OrderParams,
        body: QaBody,
        response: { 200: Envelope(Order) },
      },
    },
    async (req) => ok(await desk.setQa(teamOf(req), req.params.order_number, req.body, actorOf(req))),
  );

  app.post(
    '/v1/orders/:order_number/cancel',
    {
      config: { permission: 'orders:void', audit: 'order.cancelled' },
      schema: {
        tags: ['records'],
        summary: 'Cancel an order no money moved for',
        description:
          'For a lead, an unpaid or declined order, or one waiting for the external provider with nothing captured: the order becomes `cancelled` ' +
          '(an `order.cancelled` row on its timeline; no webhook, as nothing was charged). Cancelling a cancelled order answers it as it is. ' +
          '409 `conflict` for an order with an approved charge (refund or void it instead); 409 `payment_in_progress` while a payment of the order awaits its outcome. ' +
          'Needs `orders:void` (cancelling is the void of an order nothing was charged for).',
        params: OrderParams,
        body: CancelBody,
        errors: ['conflict', 'payment_in_progress'],
        response: { 200: Envelope(Order) },
      },
    },
    async (req) => ok(await desk.cancel(teamOf(req), req.params.order_number, req.body.reason, actorOf(req)), 'Order cancelled.'),
  );
}
