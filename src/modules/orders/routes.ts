import { z } from 'zod';
import type { AppContext } from '../../app/context.ts';
import { envelope } from '../../app/envelope.ts';
import { type Http, teamOf } from '../../app/http.ts';
import { BoolQuery, Id, ListQuery } from '../../app/schemas.ts';
import type { PaymentResult } from './service.ts';
import { CreateLeadBody, CreateOrderBody, OrderParams, ProcessPaymentBody } from './schemas.ts';
import { ORDER_STATUSES, PAYMENT_STATUSES } from './states.ts';

const OrdersQuery = ListQuery.extend({
  status: z.enum(ORDER_STATUSES).optional(),
  payment_status: z.enum(PAYMENT_STATUSES).optional(),
  campaign_id: Id('cmp').optional(),
  customer_email: z.string().max(254).optional(),
  customer_number: Id('cus').optional(),
  is_test: BoolQuery,
}).strict();

function paymentBody(r: PaymentResult) {
  return { ...envelope(r.success, r.message, r.data), ...(r.error ? { error: r.error } : {}) };
}

export function registerOrderRoutes(app: Http, ctx: AppContext): void {
  const orders = ctx.services.orders;

  app.post(
    '/checkout/leads',
    {
      schema: {
        tags: ['checkout'],
        summary: 'Create Lead',
        description:
          'Records a lead as soon as the email is known. 201 with a new `order_number` for a new email + campaign; ' +
          '200 when the same `order_number`, or an open lead of the same email + campaign, is posted again (name, phone, ' +
          'shipping address and products are updated). `billing` is refused here.',
        body: CreateLeadBody,
      },
    },
    async (req, reply) => {
      const r = await orders.createLead(teamOf(req), req.body);
      return reply.code(r.created ? 201 : 200).send(envelope(true, r.created ? 'Lead created.' : 'Lead updated.', r.order));
    },
  );

  app.post(
    '/checkout/orders',
    {
      schema: {
        tags: ['checkout'],
        summary: 'Create Order',
        description:
          'Creates the order and takes its first payment, for funnels that did not create a lead. Totals are computed from ' +
          'the offers. 200 approved; 402 declined (`success` false, `error.code` `payment_declined`; the order stays payable).',
        body: CreateOrderBody,
      },
    },
    async (req, reply) => {
      const r = await orders.createOrder(teamOf(req), req.body);
      return reply.code(r.httpStatus).send(paymentBody(r));
    },
  );

  app.post(
    '/checkout/orders/payment',
    {
      schema: {
        tags: ['checkout'],
        summary: 'Process Payment',
        description: 'Pays an order created by Create Lead (or a declined order). Same answers as Create Order; 409 when the order is already paid.',
        body: ProcessPaymentBody,
      },
    },
    async (req, reply) => {
      const r = await orders.processPayment(teamOf(req), req.body);
      return reply.code(r.httpStatus).send(paymentBody(r));
    },
  );

  app.get('/v1/orders', { schema: { tags: ['records'], summary: 'List orders, newest first', querystring: OrdersQuery } }, async (req) => {
    const page = await orders.list(teamOf(req), req.query);
    return { success: true, message: 'OK', data: page.items, has_more: page.has_more };
  });

  app.get(
    '/v1/orders/:order_number',
    { schema: { tags: ['records'], summary: 'Retrieve an order with its lines, transactions and timeline', params: OrderParams } },
    async (req) => envelope(true, 'OK', await orders.get(teamOf(req), req.params.order_number)),
  );
}
