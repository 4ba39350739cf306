/** What a payment attempt came to. Expected outcomes are values; only bugs and outages throw. */
export type ChargeOutcome =
  | { kind: 'approved'; providerRef: string; cardToken?: string; gatewayId: string; responseCode?: string; responseText?: string }
  | { kind: 'declined'; reason: string; code?: string; retryable: boolean; gatewayId: string | null }
  | { kind: 'pending'; providerRef: string; gatewayId: string | null }
  | { kind: 'redirect'; providerRef: string; url: string; gatewayId: string | null };

/** What a 3-D Secure gateway answers about a payment, normalised. */
export type ThreeDsOutcome =
  | { kind: 'approved'; paymentId: string; paymentMethod: string | null }
  | { kind: 'declined'; paymentId: string | null; code: string; message: string }
  | { kind: 'redirect'; paymentId: string; url: string }
  | { kind: 'pending'; paymentId: string }
  | { kind: 'error'; paymentId: string | null; code: string; message: string };

export interface ThreeDsAccount {
  baseUrl: string;
  credentials: Record<string, string>;
  testMode: boolean;
}

/** The port the payment core needs from a card gateway that demands 3-D Secure. */
export interface ThreeDsGatewayPort {
  createPayment(
    account: ThreeDsAccount,
    req: {
      amount: number;
      currency: string;
      reference: string;
      card?: { number: string; exp: string; cvv: string };
      paymentMethod?: string;
      originalPaymentId?: string;
      merchantInitiated: boolean;
      savePaymentMethod: boolean;
      customer: { email: string | null; first_name: string | null; last_name: string | null };
      riskSessionId?: string | undefined;
      returnUrl?: string | undefined;
      cancelUrl?: string | undefined;
    },
  ): Promise<ThreeDsOutcome>;
  retrievePayment(account: ThreeDsAccount, paymentId: string): Promise<ThreeDsOutcome>;
  refund(account: ThreeDsAccount, req: { paymentId: string; amount: number; reference: string }): Promise<{ ok: boolean; id: string | null; message: string }>;
  cancel(account: ThreeDsAccount, req: { paymentId: string; reference: string }): Promise<{ ok: boolean; id: string | null; message: string }>;
}
