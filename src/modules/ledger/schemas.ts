import { z } from 'zod';
import { Timestamp } from '../../app/schemas.ts';

/** What transactionView (views.ts) answers. */
export const Transaction = z
  .object({
    object: z.literal('transaction'),
    id: z.string().describe('`txn_…`'),
    order_number: z.string(),
    parent_id: z.string().nullable().describe('The charge a refund, void or capture belongs to'),
    type: z.string().describe('`sale`, `verification`, `auth`, `capture`, `refund`, `void` or `chargeback`'),
    status: z.string().describe('`approved`, `declined`, `pending`, `refunded` or `voided`'),
    amount: z.number().int().describe('Minor units'),
    currency: z.string(),
    gateway_id: z.string().nullable(),
    router_id: z.string().nullable(),
    attempt: z.number().int(),
    upsell_id: z.string().nullable(),
    provider_ref: z.string().nullable(),
    auth_code: z.string().nullable(),
    response_code: z.string().nullable().describe("The gateway's answer code (a decline's `decline_code`)"),
    response_text: z.string().nullable(),
    card: z.object({ brand: z.string().nullable(), bin: z.string().nullable(), last4: z.string(), exp: z.string().nullable() }).nullable(),
    connection_id: z.string().nullable().describe('The extpay connection that took it'),
    provisional: z.boolean().describe('An extpay refund the provider has not settled yet'),
    requested_amount: z.number().int().nullable(),
    is_test: z.boolean(),
    created_at: Timestamp.nullable(),
  })
  .meta({ id: 'Transaction' });

/** What disputeView (views.ts) answers. */
export const Dispute = z
  .object({
    object: z.literal('dispute'),
    id: z.string(),
    order_number: z.string(),
    transaction_id: z.string(),
    provider_ref: z.string(),
    status: z.string(),
    reason: z.string().nullable(),
    amount: z.number().int(),
    currency: z.string(),
    chargeback_transaction_id: z.string().nullable(),
    created_at: Timestamp.nullable(),
    updated_at: Timestamp.nullable(),
  })
  .meta({ id: 'Dispute' });
