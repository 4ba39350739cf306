import { ApiError, invalid, notFound } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import { iso } from '../../app/schemas.ts';
import type { Executor, Store, Tx } from '../../db/database.ts';
import { cursorSeq, type Page, toPage } from '../../db/pagination.ts';
import type { Row } from '../../db/schema.ts';
import type { PaymentInput } from '../orders/schemas.ts';
import { type CardInput, summarizeCard } from './card.ts';
import type { ChargeOutcome } from './outcomes.ts';
import * as repo from './repo.ts';

export function transactionView(t: Row<'transactions'>) {
  return {
    object: 'transaction' as const,
    id: t.id,
    order_number: t.order_id,
    type: t.type,
    status: t.status,
    amount: t.amount,
    currency: t.currency,
    gateway_id: t.gateway_id,
    provider_ref: t.provider_ref,
    response_code: t.response_code,
    response_text: t.response_text,
    card: t.card_last4 ? { brand: t.card_brand, bin: t.card_bin, last4: t.card_last4, exp: t.card_exp } : null,
    is_test: t.is_test,
    created_at: iso(t.created_at),
  };
}
export type TransactionView = ReturnType<typeof transactionView>;

/** Where an explicit request routes a payment; the campaign's own router or gateway otherwise. */
export interface RouteRequest {
  gatewayId?: string | undefined;
  paymentOrchestratorId?: string | undefined;
  campaign: Row<'campaigns'>;
}

export interface ChargeRequest {
  teamId: string;
  orderId: string;
  amount: number;
  currency: string;
  payment: PaymentInput;
  route: RouteRequest;
}

export interface ListTransactionsQuery {
  limit: number;
  starting_after?: string | undefined;
  created_gte?: Date | undefined;
  created_lte?: Date | undefined;
  order_number?: string | undefined;
  status?: string | undefined;
  type?: string | undefined;
  is_test?: boolean | undefined;
}

export function cardOf(payment: PaymentInput): CardInput | null {
  if (payment.method !== 'card' || !payment.card_number || !payment.card_exp || !payment.card_cvv) return null;
  return { number: payment.card_number, exp: payment.card_exp, cvv: payment.card_cvv };
}

/**
 * The payment core's entry points. This foundation has no gateway, router or external
 * connection records yet, so every card payment is unroutable (a recorded decline, never a
 * 500) and every extpay payment fails its configuration check. The card-payments work
 * replaces `resolveRoute` and `charge` with the gateway adapters.
 */
export class PaymentsService {
  constructor(private readonly store: Store) {}

  /**
   * Checks made before anything is written or any provider is called: a request that fails
   * here leaves no trace (spec 4.1 rules 2 and 8 live here).
   */
  async preflight(_db: Executor, _teamId: string, payment: PaymentInput, route: RouteRequest): Promise<void> {
    if (payment.method === 'extpay') throw new ApiError('provider_not_configured');
    if (route.gatewayId) throw invalid('gateway_id', 'no such gateway');
    if (route.paymentOrchestratorId) throw invalid('payment_orchestrator_id', 'no such payment router');
  }

  /** Calls the provider. Runs outside any transaction: no lock is held across the network. */
  async charge(req: ChargeRequest): Promise<ChargeOutcome> {
    const gatewayId = req.route.campaign.gateway_id ?? req.route.campaign.payment_orchestrator_id;
    return {
      kind: 'declined',
      reason: gatewayId ? `The campaign's gateway ${gatewayId} is not available.` : 'No payment gateway is configured for this campaign.',
      code: 'no_route',
      retryable: false,
      gatewayId: null,
    };
  }

  /** Every attempt, approved or not, becomes a transaction row in the caller's transaction. */
  async recordAttempt(trx: Tx, req: ChargeRequest, outcome: ChargeOutcome): Promise<Row<'transactions'>> {
    const card = cardOf(req.payment);
    const summary = card ? summarizeCard(card) : null;
    const status = outcome.kind === 'approved' ? 'approved' : outcome.kind === 'declined' ? 'declined' : 'pending';
    return repo.insertTransaction(trx, {
      id: newId('transaction'),
      team_id: req.teamId,
      order_id: req.orderId,
      type: 'sale',
      status,
      amount: req.amount,
      currency: req.currency,
      gateway_id: outcome.gatewayId,
      provider_ref: 'providerRef' in outcome ? outcome.providerRef : null,
      response_code: outcome.kind === 'declined' ? (outcome.code ?? null) : outcome.kind === 'approved' ? (outcome.responseCode ?? null) : null,
      response_text: outcome.kind === 'declined' ? outcome.reason : outcome.kind === 'approved' ? (outcome.responseText ?? 'Approved') : null,
      card_brand: summary?.brand ?? null,
      card_bin: summary?.bin ?? null,
      card_last4: summary?.last4 ?? null,
      card_exp: summary?.exp ?? null,
    });
  }

  orderTransactions(db: Executor, teamId: string, orderId: string) {
    return repo.listOrderTransactions(db, teamId, orderId);
  }

  async get(teamId: string, id: string): Promise<TransactionView> {
    const t = await this.store.run((db) => repo.findTransaction(db, teamId, id));
    if (!t) throw notFound('Transaction');
    return transactionView(t);
  }

  async list(teamId: string, q: ListTransactionsQuery): Promise<Page<TransactionView>> {
    return this.store.run(async (db) => {
      const afterSeq = await cursorSeq(db, 'transactions', teamId, q.starting_after);
      if (afterSeq === undefined) throw invalid('starting_after', 'no such object');
      const rows = await repo.listTransactions(db, teamId, {
        limit: q.limit,
        afterSeq,
        orderId: q.order_number,
        status: q.status,
        type: q.type,
        isTest: q.is_test,
        createdGte: q.created_gte,
        createdLte: q.created_lte,
      });
      const page = toPage(rows, q.limit);
      return { items: page.items.map(transactionView), has_more: page.has_more };
    });
  }
}
