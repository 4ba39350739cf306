import { z } from 'zod';
import type { AppContext } from '../../app/context.ts';
import { Envelope, ListEnvelope, ok } from '../../app/envelope.ts';
import { type Http, teamOf } from '../../app/http.ts';
import { BoolQuery, Id, ListQuery } from '../../app/schemas.ts';
import { Transaction } from './schemas.ts';

const TransactionsQuery = ListQuery.extend({
  order_number: Id('ord').optional(),
  status: z.enum(['approved', 'declined', 'pending', 'refunded', 'voided']).optional(),
  type: z
    .enum(['sale', 'verification', 'auth', 'capture', 'refund', 'void', 'chargeback'])
    .optional()
    .describe('`verification`: a $0 first payment (free trial, fully discounted cart) or a card replacement that checked and saved a card, amount 0, nothing charged'),
  is_test: BoolQuery,
}).strict();

export function registerPaymentRoutes(app: Http, ctx: AppContext): void {
  const payments = ctx.services.ledger;

  app.get('/v1/transactions', { config: { permission: 'revenue:view' }, schema: { tags: ['records'], summary: 'List transactions, newest first', querystring: TransactionsQuery, response: { 200: ListEnvelope(Transaction) } } }, async (req) => {
    const page = await payments.list(teamOf(req), req.query);
    return { success: true as const, message: 'OK', data: page.items, has_more: page.has_more };
  });

  app.get(
    '/v1/transactions/:id',
    { config: { permission: 'revenue:view' }, schema: { tags: ['records'], summary: 'Retrieve a transaction', params: z.object({ id: Id('txn') }).strict(), response: { 200: Envelope(Transaction) } } },
    async (req) => ok(await payments.get(teamOf(req), req.params.id)),
  );
}
