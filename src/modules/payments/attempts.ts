import { newId } from '../../app/ids.ts';
import type { Address, NewRow, Row } from '../../db/schema.ts';
import type { Payer } from '../../providers/provider.ts';
import type { CardInput, CardSummary } from '../../providers/card.ts';

/**
 * The code the recovery run records on an attempt its provider never saw (nothing charged,
 * nothing declined): first payments, fraud counters and rebills all tell it from a real decline.
 */
export const NOT_RECEIVED = 'not_received';

/** Where a payment goes: an explicit request wins, else the campaign's router, else its gateway. */
export interface RouteRequest {
  gatewayId?: string | undefined;
  paymentOrchestratorId?: string | undefined;
  campaign: Row<'campaigns'>;
  /** The gateway the route names directly, when preflight has read it already. */
  gateway?: Row<'gateways'> | undefined;
}

/**
 * Routing precedence (spec 2.1), in one place: an explicit gateway or router on the request wins;
 * else the campaign's router; else the campaign's gateway. Exactly one of the two is set, or neither.
 */
export function routeTarget(route: RouteRequest): { routerId: string | null; gatewayId: string | null } {
  if (route.gatewayId) return { routerId: null, gatewayId: route.gatewayId };
  const routerId = route.paymentOrchestratorId ?? route.campaign.payment_orchestrator_id;
  return routerId ? { routerId, gatewayId: null } : { routerId: null, gatewayId: route.campaign.gateway_id };
}

export interface PaymentPlan {
  routerId: string | null;
  /** How many gateways may be tried; more than one only through a router (decline salvage). */
  maxAttempts: number;
  candidates: Array<{ gateway: Row<'gateways'>; memberCap: number | null }>;
  skipped: Array<{ gateway_id: string; reason: 'inactive' | 'monthly_cap_reached' }>;
}

export interface FirstChargeRequest {
  teamId: string;
  orderId: string;
  customerId: string;
  amount: number;
  currency: string;
  card: CardInput;
  route: RouteRequest;
  payer: Payer;
  /** The shopper's IP as the merchant's server sent it (customer.ip_address), for the velocity rules. */
  ipAddress: string | null;
  billing: Address | null;
  /** For a 3-D Secure gateway: where the customer returns, and the risk SDK's session. */
  redirect: { returnUrl?: string | undefined; cancelUrl?: string | undefined; riskSessionId?: string | undefined };
}

/** A sale row of an order's payment: an attempt in flight, or one decided without a provider call. */
export function attemptRow(
  req: { teamId: string; orderId: string; amount: number; currency: string },
  card: CardSummary | null,
  row: { id?: string; type?: 'sale' | 'verification'; status: 'approved' | 'declined' | 'pending'; gatewayId: string | null; routerId?: string | null; attempt?: number; code: string; text: string },
): NewRow<'transactions'> {
  return {
    id: row.id ?? newId('transaction'),
    team_id: req.teamId,
    order_id: req.orderId,
    type: row.type ?? 'sale',
    status: row.status,
    amount: req.amount,
    currency: req.currency,
    gateway_id: row.gatewayId,
    router_id: row.routerId ?? null,
    attempt: row.attempt ?? 1,
    response_code: row.code,
    response_text: row.text,
    card_brand: card?.brand ?? null,
    card_bin: card?.bin ?? null,
    card_last4: card?.last4 ?? null,
    card_exp: card?.exp ?? null,
  };
}
