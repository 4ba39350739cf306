import { z } from 'zod';
import type { AppContext } from '../../app/context.ts';
import { Envelope, ListEnvelope, listed, ok } from '../../app/envelope.ts';
import { type Http, teamOf } from '../../app/http.ts';
import { Id, ListQuery } from '../../app/schemas.ts';
import { Customer, Note } from './schemas.ts';

const CustomerParams = z.object({ customer_number: Id('cus') }).strict();
const CustomersQuery = ListQuery.extend({
  email: z.string().trim().min(1).max(254).optional().describe('Customers whose e-mail contains this, case-insensitively (a prefix such as `amy@` works)'),
  name: z.string().trim().min(1).max(200).optional().describe('Customers whose first, last or full name contains this, case-insensitively'),
  phone: z
    .string()
    .trim()
    .max(40)
    .regex(/\d/, 'must contain a digit')
    .optional()
    .describe('Customers whose phone contains these digits (spaces, dashes, brackets and `+` are ignored on both sides)'),
}).strict();

const NoteBody = z.object({ body: z.string().trim().min(1).max(10_000) }).strict();

export function registerCustomerRoutes(app: Http, ctx: AppContext): void {
  const customers = ctx.services.customers;

  app.get(
    '/v1/customers',
    {
      config: { permission: 'orders:view' },
      schema: {
        tags: ['records'],
        summary: 'List and search customers, newest first',
        description:
          'Filters combine (AND). A customer\'s orders are `GET /v1/orders?customer_number=`, their subscriptions `GET /v1/subscriptions?customer_number=`, ' +
          'their tickets `GET /v1/tickets?customer_number=`.',
        querystring: CustomersQuery,
        response: { 200: ListEnvelope(Customer) },
      },
    },
    async (req) => listed(await customers.list(teamOf(req), req.query)),
  );

  app.get('/v1/customers/:customer_number', { config: { permission: 'orders:view' }, schema: { tags: ['records'], summary: 'Retrieve a customer', params: CustomerParams, response: { 200: Envelope(Customer) } } }, async (req) =>
    ok(await customers.get(teamOf(req), req.params.customer_number)),
  );

  app.get(
    '/v1/customers/:customer_number/notes',
    { config: { permission: 'orders:view' }, schema: { tags: ['records'], summary: "List a customer's notes, newest first", params: CustomerParams, querystring: ListQuery, response: { 200: ListEnvelope(Note) } } },
    async (req) => {
      const page = await customers.listNotes(teamOf(req), req.params.customer_number, req.query);
      return { success: true as const, message: 'OK', data: page.items, has_more: page.has_more };
    },
  );

  app.post(
    '/v1/customers/:customer_number/notes',
    { config: { permission: 'orders:annotate' }, schema: { tags: ['records'], summary: 'Add a note to a customer', params: CustomerParams, body: NoteBody, response: { 201: Envelope(Note) } } },
    async (req, reply) => reply.code(201).send(ok(await customers.addNote(teamOf(req), req.params.customer_number, req.body.body, `${req.team!.kind}:${req.team!.actorId}`), 'Note added')),
  );
}
