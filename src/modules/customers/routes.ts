import { z } from 'zod';
import type { AppContext } from '../../app/context.ts';
import { ok } from '../../app/envelope.ts';
import { type Http, teamOf } from '../../app/http.ts';
import { Id, ListQuery } from '../../app/schemas.ts';

const CustomerParams = z.object({ customer_number: Id('cus') }).strict();
const NoteBody = z.object({ body: z.string().trim().min(1).max(10_000) }).strict();

export function registerCustomerRoutes(app: Http, ctx: AppContext): void {
  const customers = ctx.services.customers;

  app.get('/v1/customers/:customer_number', { schema: { tags: ['records'], summary: 'Retrieve a customer', params: CustomerParams } }, async (req) =>
    ok(await customers.get(teamOf(req), req.params.customer_number)),
  );

  app.get(
    '/v1/customers/:customer_number/notes',
    { schema: { tags: ['records'], summary: "List a customer's notes, newest first", params: CustomerParams, querystring: ListQuery } },
    async (req) => {
      const page = await customers.listNotes(teamOf(req), req.params.customer_number, req.query);
      return { success: true, message: 'OK', data: page.items, has_more: page.has_more };
    },
  );

  app.post(
    '/v1/customers/:customer_number/notes',
    { schema: { tags: ['records'], summary: 'Add a note to a customer', params: CustomerParams, body: NoteBody } },
    async (req, reply) => reply.code(201).send(ok(await customers.addNote(teamOf(req), req.params.customer_number, req.body.body, `token:${req.team!.tokenId}`), 'Note added')),
  );
}
