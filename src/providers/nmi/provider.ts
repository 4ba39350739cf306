import type { CardGatewayAdapter, GatewayAccount, GatewayResult } from '../card-gateway.ts';
import type { CardProvider, ChargeOutcome, ReversalOutcome } from '../provider.ts';
import { diagnoseNmi } from './doctor.ts';
import { classifyNmi } from './status.ts';

/** Transport failures: NMI may have processed the request, so the outcome is unknown, never a decline. */
const UNKNOWN_CODES: ReadonlySet<string> = new Set(['network_error', 'timeout', 'bad_response']);

export function nmiChargeOutcome(r: GatewayResult): ChargeOutcome {
  const text = r.responseText || (r.kind === 'approved' ? 'Approved' : 'Declined');
  if (r.kind === 'approved') return { kind: 'approved', providerRef: r.transactionId, authCode: r.authCode, code: r.responseCode, text, vaultRef: r.vaultRef };
  if (r.kind === 'error' && UNKNOWN_CODES.has(r.responseCode)) return { kind: 'unknown', providerRef: r.transactionId, code: r.responseCode, text };
  return { kind: 'declined', providerRef: r.transactionId, code: r.responseCode, text, retryable: r.retryable, hard: r.kind === 'declined' && r.hard };
}

function reversalOutcome(r: GatewayResult): ReversalOutcome {
  const c = nmiChargeOutcome(r);
  if (c.kind === 'approved') return { kind: 'approved', providerRef: c.providerRef, code: c.code, text: c.text };
  if (c.kind === 'unknown') return c;
  return { kind: 'declined', providerRef: c.providerRef, code: c.code, text: c.text };
}

/** NMI's Direct Post gateway: synchronous card charges; lost answers are found again with the Query API by our order id. */
export function nmiProvider(adapter: CardGatewayAdapter): CardProvider {
  const find = async (account: GatewayAccount, attemptId: string, types: readonly string[]) => {
    const r = await adapter.query(account, { orderId: attemptId });
    if (r.kind === 'error') return { kind: 'unknown' as const, providerRef: null, code: 'query_failed', text: r.message };
    if (r.kind === 'not_found') return { kind: 'not_found' as const };
    const mine = r.transactions.filter((t) => types.includes(t.type));
    // An approved one wins: a retried request may have left a declined twin beside it.
    const t = mine.find((x) => x.status === 'approved') ?? mine.at(-1);
    return t ?? { kind: 'not_found' as const };
  };
  return {
    kind: 'nmi',
    capabilities: { syncCard: true, redirect: false, externalCheckout: false },
    diagnose: (account, ctx) => diagnoseNmi(account, ctx),
    async charge(account, req) {
      const r = await adapter.sale(account, {
        amount: req.amount,
        currency: req.currency,
        orderId: req.orderId,
        attemptId: req.attemptId,
        ...(req.card ? { card: req.card } : { vaultRef: req.saved!.vaultRef }),
        saveCard: req.saveCard,
        customer: req.payer,
        billing: req.billing ?? null,
      });
      return nmiChargeOutcome(r);
    },
    async verify(account, req) {
      const r = await adapter.validate(account, { currency: req.currency, orderId: req.orderId, attemptId: req.attemptId, card: req.card, customer: req.payer, billing: req.billing ?? null });
      return nmiChargeOutcome(r);
    },
    async retrieve() {
      return { kind: 'unknown', providerRef: null, code: 'not_capturable', text: 'An NMI sale is settled when it is answered; there is nothing to re-check.' };
    },
    async confirm() {
      return { kind: 'unknown', text: 'An NMI sale is settled when it is answered; there is nothing to capture.' };
    },
    async findCharge(account, attempt) {
      const attemptId = attempt.id;
      // Our attempt ids are unique: an attempt made a sale, or (a $0 first payment) a validate.
      const t = await find(account, attemptId, ['sale', 'validate']);
      if (!('status' in t)) return t;
      if (t.status === 'approved') return { kind: 'approved', providerRef: t.transactionId, authCode: t.authCode, code: t.responseCode, text: t.responseText || 'Approved', vaultRef: t.vaultRef };
      return { kind: 'declined', providerRef: t.transactionId, code: t.responseCode, text: t.responseText || 'Declined', retryable: false, hard: classifyNmi(t.responseCode).outcome === 'hard_decline' };
    },
    async refund(account, req) {
      return reversalOutcome(await adapter.refund(account, { transactionId: req.chargeRef, amount: req.amount, currency: req.currency, attemptId: req.attemptId }));
    },
    async void(account, req) {
      return reversalOutcome(await adapter.void(account, { transactionId: req.chargeRef, attemptId: req.attemptId }));
    },
    async findReversal(account, req) {
      if (req.type === 'void') {
        // A void is an action on the sale itself (it carries no order id of its own).
        const r = await adapter.query(account, { transactionId: req.chargeRef });
        if (r.kind === 'error') return { kind: 'unknown', providerRef: null, code: 'query_failed', text: r.message };
        const sale = r.kind === 'found' ? r.transactions.find((t) => t.transactionId === req.chargeRef) : undefined;
        return sale?.voided ? { kind: 'approved', providerRef: sale.transactionId, code: '100', text: 'Voided' } : { kind: 'not_found' };
      }
      const t = await find(account, req.attemptId, [req.type]);
      if (!('status' in t)) return t;
      return t.status === 'approved'
        ? { kind: 'approved', providerRef: t.transactionId, code: t.responseCode, text: t.responseText || 'Approved' }
        : { kind: 'declined', providerRef: t.transactionId, code: t.responseCode, text: t.responseText || 'Declined' };
    },
  };
}
