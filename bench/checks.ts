/**
 * The bench's correctness checks: every side effect of the whole run (warm-up and drain included)
 * against what the API answered. The provider's ledger and the database's approved sales, orders
 * completed once, the provider's webhooks to the API, the outbox's webhooks at the receiver, one
 * purchase mail per completed order, and a clean stop of the server processes.
 *
 * An answer that never came (network error, timeout) or a 5xx leaves its effect unknown, so it
 * widens the accepted range by one; a refused call (a 4xx) widens nothing.
 */
import { FIRST_CHARGE, type LedgerRead } from './provider.ts';
import { fmtCounts, type Check } from './report.ts';
import { type Endpoint, type ReceiverStats, type Scenario, STEP_NAMES, type StepTotals, total } from './stats.ts';

/** What the run left behind, read after the load (and the waits for the providers and the outbox). */
export interface SideEffects {
  scenario: Scenario;
  /** Every answer of the whole run, per step (the driver's totals). */
  totals: Record<Endpoint, StepTotals>;
  /** The scenario's provider on the sandbox, for the messages. */
  providerLabel: string;
  ledger: LedgerRead;
  /** The database, the bench team's rows. */
  db: {
    /** Approved sale transactions on the scenario's gateway or connection. */
    approved_sales: number;
    /** Transactions pending or in flight. */
    unsettled: number;
    completed_events: number;
    completed_event_orders: number;
    completed_orders: number;
  };
  /** How long the bench waited for the provider's payments to settle, s (0 for card). */
  settleWaitedS: number;
  webhooks: {
    /** Deliveries in the outbox for the bench's endpoint. */
    outbox: number;
    byStatus: Record<string, number>;
    received: Pick<ReceiverStats, 'unique' | 'badSignatures' | 'malformed' | 'firstBad'>;
    waitS: number;
  };
  /** mail_messages by status. */
  mailByStatus: Record<string, number>;
  /** `--processes`: how `serve` exited on SIGTERM. */
  serversStop?: { code: number | null; signal: NodeJS.Signals | null };
}

export interface CheckedSideEffects {
  checks: Check[];
  /** Charges that should have gone through: the first payments and the upsells answered as such. */
  expectedSales: number;
  /** Orders that should be completed: Complete Order's (card) or the first payments' (a redirected payment) successes. */
  expectedCompleted: number;
  /** extpay and threeds: the provider's webhooks to the API (null for card). */
  providerWebhooks: { events: number; delivered: number; by_type: Record<string, number> } | null;
  mailRows: number;
}

const within = (value: number, expected: number, slack: number) => value >= expected && value <= expected + slack;

export function checkSideEffects(s: SideEffects): CheckedSideEffects {
  const T = (e: Endpoint) => s.totals[e];
  // The step whose success means the customer's first payment went through: approved at once
  // (card), paid on the provider's page (extpay), authenticated on the challenge page (threeds).
  const firstCharge = T(FIRST_CHARGE[s.scenario]);
  const upsell = T('POST /checkout/orders/upsell');
  const complete = T('POST /checkout/orders/complete');
  const { ledger, db } = s;
  const checks: Check[] = [];
  const firstName = STEP_NAMES[FIRST_CHARGE[s.scenario]];

  const expectedSales = firstCharge.ok + upsell.ok;
  const salesSlack = firstCharge.ambiguous + upsell.ambiguous;
  const ledgerProblems: string[] = [];
  if (!within(ledger.approved, expectedSales, salesSlack) || ledger.approved !== db.approved_sales)
    ledgerProblems.push(
      `the sandbox's ${s.providerLabel} holds ${ledger.approved} charges that went through and the database ${db.approved_sales} approved sales on it, ` +
        `for ${expectedSales} answers (${firstName} ${firstCharge.ok} + upsell ${upsell.ok}${salesSlack ? `, +${salesSlack} unanswered` : ''})`,
    );
  if (ledger.unsettled + db.unsettled > salesSlack)
    ledgerProblems.push(`${ledger.unsettled} payments still unsettled at the provider and ${db.unsettled} transactions here after waiting ${s.settleWaitedS.toFixed(1)} s`);
  checks.push({ name: 'sandbox ledger', ok: ledgerProblems.length === 0, detail: ledgerProblems.join('; ') || 'every charge recorded once, none unsettled' });

  // Completed orders: card orders complete on Complete Order; a redirected payment that went
  // through completes by Capture or by the provider's webhook, whichever comes first, once.
  const expectedCompleted = s.scenario === 'card' ? complete.ok : firstCharge.ok;
  const completedSlack = s.scenario === 'card' ? complete.ambiguous : firstCharge.ambiguous;
  const completedProblems: string[] = [];
  if (db.completed_events !== db.completed_event_orders) completedProblems.push(`${db.completed_events} order.completed events for ${db.completed_event_orders} orders: some order completed twice`);
  if (db.completed_orders !== db.completed_event_orders) completedProblems.push(`${db.completed_orders} completed orders but order.completed events for ${db.completed_event_orders}`);
  if (!within(db.completed_orders, expectedCompleted, completedSlack))
    completedProblems.push(`${db.completed_orders} completed orders for ${expectedCompleted} ${s.scenario === 'card' ? 'Complete Order answers' : `${firstName} successes`}`);
  checks.push({ name: 'orders completed once', ok: completedProblems.length === 0, detail: completedProblems.join('; ') || 'each paid order completed exactly once' });

  let providerWebhooks: CheckedSideEffects['providerWebhooks'] = null;
  if (ledger.events) {
    const byType: Record<string, number> = {};
    for (const e of ledger.events) byType[e.type] = (byType[e.type] ?? 0) + 1;
    const delivered = ledger.events.filter((e) => e.delivered).length;
    providerWebhooks = { events: ledger.events.length, delivered, by_type: byType };
    checks.push({
      name: 'provider webhooks',
      ok: delivered === ledger.events.length,
      detail: delivered === ledger.events.length ? 'the API took every webhook the provider sent' : `the API took ${delivered} of the ${ledger.events.length} webhooks the provider sent`,
    });
  }

  const expectedEvents = upsell.ok + expectedCompleted;
  const eventSlack = upsell.ambiguous + completedSlack;
  const { outbox, byStatus, received: rcv } = s.webhooks;
  const webhookProblems: string[] = [];
  if (!within(outbox, expectedEvents, eventSlack))
    webhookProblems.push(`the outbox holds ${outbox} deliveries for ${expectedEvents} that should emit one (upsell ${upsell.ok} + completed ${expectedCompleted})`);
  if (rcv.unique !== outbox)
    webhookProblems.push(
      `the receiver got ${rcv.unique} of ${outbox} after waiting ${s.webhooks.waitS} s (outbox: ${fmtCounts(byStatus)}` +
        `${(byStatus.pending ?? 0) > 0 ? '; pending ones mean the worker is behind: try a longer --webhook-wait' : ''})`,
    );
  if (rcv.badSignatures > 0 || rcv.malformed > 0) webhookProblems.push(`${rcv.badSignatures} bad signatures, ${rcv.malformed} malformed deliveries: ${rcv.firstBad.slice(0, 3).join(' | ')}`);
  checks.push({ name: 'webhooks', ok: webhookProblems.length === 0, detail: webhookProblems.join('; ') || 'every delivery arrived, signed' });

  const mailRows = total(s.mailByStatus);
  const mailProblems: string[] = [];
  if (!within(mailRows, expectedCompleted, completedSlack)) mailProblems.push(`${mailRows} mail rows for ${expectedCompleted} completed orders`);
  if ((s.mailByStatus.failed ?? 0) > 0) mailProblems.push(`${s.mailByStatus.failed} mails failed to send`);
  checks.push({ name: 'mail', ok: mailProblems.length === 0, detail: mailProblems.join('; ') || 'one purchase mail per completed order' });

  if (s.serversStop) {
    const clean = s.serversStop.code === 0 && s.serversStop.signal === null;
    checks.push({ name: 'server stop', ok: clean, detail: clean ? 'serve --processes exited 0 on SIGTERM' : `serve --processes exited ${s.serversStop.signal ?? s.serversStop.code} on SIGTERM` });
  }
  return { checks, expectedSales, expectedCompleted, providerWebhooks, mailRows };
}
