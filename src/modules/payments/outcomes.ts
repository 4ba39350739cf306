/** What a payment attempt came to. Expected outcomes are values; only bugs and outages throw. */
export type ChargeOutcome =
  | { kind: 'approved'; providerRef: string; cardToken?: string; gatewayId: string; responseCode?: string; responseText?: string }
  | { kind: 'declined'; reason: string; code?: string; retryable: boolean; gatewayId: string | null }
  | { kind: 'pending'; providerRef: string; gatewayId: string | null }
  | { kind: 'redirect'; providerRef: string; url: string; gatewayId: string | null };
