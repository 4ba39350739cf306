/**
 * The bench's correctness checks (bench/checks.ts) as pure functions: a correct run passes, and
 * each kind of wrong side effect the bench exists to catch fails its check — a charge without a
 * record, a double charge, an order completed twice, a webhook lost or forged, a mail missing, a
 * server that did not stop cleanly — while an unanswered call widens the range by one, not more.
 */
import { describe, expect, it } from 'vitest';
import { checkSideEffects, type SideEffects } from '../bench/checks.ts';
import { ENDPOINTS, type Endpoint, type StepTotals } from '../bench/stats.ts';

function totals(over: Partial<Record<Endpoint, Partial<StepTotals>>>): Record<Endpoint, StepTotals> {
  return Object.fromEntries(ENDPOINTS.map((e) => [e, { ok: 0, ambiguous: 0, refused: 0, outcomes: {}, ...over[e] }])) as Record<Endpoint, StepTotals>;
}

/** A card run of 100 funnels where every effect is accounted for. */
function cardRun(over: Partial<SideEffects> = {}): SideEffects {
  return {
    scenario: 'card',
    totals: totals({
      'POST /checkout/leads': { ok: 100 },
      'POST /checkout/orders/payment': { ok: 100 },
      'POST /checkout/orders/upsell': { ok: 100 },
      'POST /checkout/orders/complete': { ok: 100 },
    }),
    providerLabel: 'NMI gateway (sandbox)',
    ledger: { approved: 200, chargedMinor: 200 * 4900, entries: 200, unsettled: 0, events: null },
    db: { approved_sales: 200, unsettled: 0, completed_events: 100, completed_event_orders: 100, completed_orders: 100 },
    settleWaitedS: 0,
    webhooks: { outbox: 200, byStatus: { delivered: 200 }, received: { unique: 200, badSignatures: 0, malformed: 0, firstBad: [] }, waitS: 30 },
    mailByStatus: { sent: 100 },
    ...over,
  };
}

const failing = (s: SideEffects) =>
  checkSideEffects(s)
    .checks.filter((c) => !c.ok)
    .map((c) => c.name);

describe('the bench checks side effects against the answers', () => {
  it('a correct card run passes every check and says what it expected', () => {
    const r = checkSideEffects(cardRun());
    expect(r.checks.map((c) => [c.name, c.ok])).toEqual([
      ['sandbox ledger', true],
      ['orders completed once', true],
      ['webhooks', true],
      ['mail', true],
    ]);
    expect(r).toMatchObject({ expectedSales: 200, expectedCompleted: 100, mailRows: 100, providerWebhooks: null });
  });

  it('a charge at the gateway without an approved sale in the database fails the ledger', () => {
    const s = cardRun({ ledger: { approved: 201, chargedMinor: 0, entries: 201, unsettled: 0, events: null }, db: { ...cardRun().db, approved_sales: 200 } });
    expect(failing(s)).toEqual(['sandbox ledger']);
    expect(checkSideEffects(s).checks[0]!.detail).toContain('holds 201 charges that went through and the database 200');
  });

  it('a customer charged twice (both recorded) fails the ledger: more charges than answers', () => {
    expect(failing(cardRun({ ledger: { approved: 201, chargedMinor: 0, entries: 201, unsettled: 0, events: null }, db: { ...cardRun().db, approved_sales: 201 } }))).toEqual([
      'sandbox ledger',
    ]);
  });

  it('an unanswered payment may or may not have charged: one more charge is accepted, two are not', () => {
    const unanswered = totals({ 'POST /checkout/orders/payment': { ok: 99, ambiguous: 1 }, 'POST /checkout/orders/upsell': { ok: 100 }, 'POST /checkout/orders/complete': { ok: 100 } });
    const db = { ...cardRun().db, approved_sales: 200 };
    expect(failing(cardRun({ totals: unanswered, db }))).toEqual([]);
    expect(failing(cardRun({ totals: unanswered, db: { ...db, approved_sales: 199 }, ledger: { approved: 199, chargedMinor: 0, entries: 199, unsettled: 0, events: null } }))).toEqual([]);
    expect(failing(cardRun({ totals: unanswered, db: { ...db, approved_sales: 201 }, ledger: { approved: 201, chargedMinor: 0, entries: 201, unsettled: 0, events: null } }))).toEqual([
      'sandbox ledger',
    ]);
  });

  it('an attempt left in flight fails the ledger', () => {
    expect(failing(cardRun({ db: { ...cardRun().db, unsettled: 1 } }))).toEqual(['sandbox ledger']);
  });

  it('an order completed twice fails "orders completed once"', () => {
    const s = cardRun({ db: { ...cardRun().db, completed_events: 101 } });
    expect(failing(s)).toEqual(['orders completed once']);
    expect(checkSideEffects(s).checks[1]!.detail).toContain('some order completed twice');
  });

  it('a webhook the receiver never got, or one with a bad signature, fails the webhooks', () => {
    const base = cardRun();
    expect(failing(cardRun({ webhooks: { ...base.webhooks, byStatus: { delivered: 199, pending: 1 }, received: { ...base.webhooks.received, unique: 199 } } }))).toEqual(['webhooks']);
    expect(failing(cardRun({ webhooks: { ...base.webhooks, received: { ...base.webhooks.received, badSignatures: 1, firstBad: ['bad'] } } }))).toEqual(['webhooks']);
    // The outbox holds fewer deliveries than the answers made events: an event was lost before the outbox.
    expect(failing(cardRun({ webhooks: { ...base.webhooks, outbox: 199, received: { ...base.webhooks.received, unique: 199 } } }))).toEqual(['webhooks']);
  });

  it('a completed order without its purchase mail, or a mail that failed, fails the mail check', () => {
    expect(failing(cardRun({ mailByStatus: { sent: 99 } }))).toEqual(['mail']);
    expect(failing(cardRun({ mailByStatus: { sent: 99, failed: 1 } }))).toEqual(['mail']);
  });

  it('serve --processes that did not exit 0 on SIGTERM fails "server stop"', () => {
    expect(failing(cardRun({ serversStop: { code: 0, signal: null } }))).toEqual([]);
    expect(failing(cardRun({ serversStop: { code: 1, signal: null } }))).toEqual(['server stop']);
    expect(failing(cardRun({ serversStop: { code: null, signal: 'SIGKILL' } }))).toEqual(['server stop']);
  });

  it('a redirected payment (threeds): orders complete by the challenge page\'s successes, and every provider webhook must be taken', () => {
    const s: SideEffects = {
      ...cardRun(),
      scenario: 'threeds',
      totals: totals({
        'POST /checkout/leads': { ok: 10 },
        'POST /checkout/orders/payment': { ok: 10 },
        'sandbox: 3DS challenge': { ok: 10 },
        'POST /checkout/orders/capture': { ok: 10 },
        'POST /checkout/orders/upsell': { ok: 10 },
        'POST /checkout/orders/complete': { ok: 10 },
      }),
      ledger: { approved: 20, chargedMinor: 0, entries: 20, unsettled: 0, events: [{ type: 'PAYMENT_SUCCEEDED', delivered: true }, { type: 'PAYMENT_SUCCEEDED', delivered: true }] },
      db: { approved_sales: 20, unsettled: 0, completed_events: 10, completed_event_orders: 10, completed_orders: 10 },
      webhooks: { outbox: 20, byStatus: { delivered: 20 }, received: { unique: 20, badSignatures: 0, malformed: 0, firstBad: [] }, waitS: 30 },
      mailByStatus: { sent: 10 },
    };
    const r = checkSideEffects(s);
    expect(r.checks.every((c) => c.ok)).toBe(true);
    expect(r.providerWebhooks).toEqual({ events: 2, delivered: 2, by_type: { PAYMENT_SUCCEEDED: 2 } });
    expect(failing({ ...s, ledger: { ...s.ledger, events: [{ type: 'PAYMENT_SUCCEEDED', delivered: true }, { type: 'PAYMENT_SUCCEEDED', delivered: false }] } })).toEqual(['provider webhooks']);
  });
});
