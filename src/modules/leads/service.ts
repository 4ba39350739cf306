import type { Logger } from 'pino';
import type { Clock } from '../../app/clock.ts';
import type { Store } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import type { CatalogService } from '../catalog/service.ts';
import type { EventsService } from '../events/service.ts';
import { ABANDONMENT_KIND } from '../mail/abandonment.ts';
import type { MailService } from '../mail/service.ts';
import type { OrdersService } from '../orders/service.ts';
import { renderCheckoutUrl } from './checkout-link.ts';
import * as repo from './repo.ts';

export interface LeadFollowUpOptions {
  /** Leads one batch of a run claims, one transaction each. */
  batchSize?: number;
  /** Claims of a batch running at once (each its own short transaction). */
  concurrency?: number;
  /** How late a follow-up may still be sent: a lead idle longer than its delay plus this is left alone. */
  windowMs?: number;
}

export const DEFAULT_FOLLOW_UP_WINDOW_MS = 7 * 86_400_000;

/** What the claim of one lead came to. */
export type FollowUpResult =
  | { kind: 'abandoned'; eventId: string; mail: boolean; checkoutUrl: string | null }
  /** Not followed up now: paid or paying, already followed up, changed since the scan, follow-up switched off. */
  | { kind: 'skipped'; why: string };

export interface FollowUpTally {
  due: number;
  abandoned: number;
  mail: number;
  skipped: number;
  failed: number;
}

/**
 * Abandoned-lead follow-up (issue 15 item 8). A lead of a campaign with `abandonment.enabled` that
 * stays unpaid for the campaign's delay after its last change emits one `lead.abandoned` event
 * (webhooks) and, with `abandonment.mail.enabled`, one mail from the campaign's template with the
 * link back to its checkout.
 *
 * The claim of each lead is one transaction under the order's row lock, the lock every payment
 * takes to move a lead on: it re-checks that the order is still an unpaid lead, writes the
 * follow-up row (primary key: the order, so never twice, whatever workers race), the event and the
 * queued mail. A payment that commits first leaves nothing to claim; one that commits after finds
 * the lead abandoned, which it was. The queued mail is checked once more just before it is sent
 * (the lead may have been paid meanwhile), and cancelled if so.
 */
export class LeadFollowUpService {
  private readonly batchSize: number;
  private readonly concurrency: number;
  private readonly windowMs: number;

  constructor(
    private readonly store: Store,
    private readonly d: { orders: OrdersService; catalog: CatalogService; events: EventsService; mail: MailService; clock: Clock },
    opts: LeadFollowUpOptions = {},
  ) {
    this.batchSize = opts.batchSize ?? 100;
    this.concurrency = Math.max(1, opts.concurrency ?? 4);
    this.windowMs = opts.windowMs ?? DEFAULT_FOLLOW_UP_WINDOW_MS;
    d.mail.registerSendCheck(ABANDONMENT_KIND, (m) => this.stillUnpaid(m));
  }

  /** The worker's run: every due lead, in batches (each batch a keyset page after the last), until none is left. */
  async runDue(log?: Logger, opts: { maxBatches?: number } = {}): Promise<FollowUpTally> {
    const tally: FollowUpTally = { due: 0, abandoned: 0, mail: 0, skipped: 0, failed: 0 };
    let after: repo.ScanCursor | null = null;
    for (let batch = 1; batch <= (opts.maxBatches ?? Number.POSITIVE_INFINITY); batch++) {
      const due = await this.findDue(this.batchSize, after);
      if (due.length === 0) break;
      tally.due += due.length;
      const queue = [...due];
      const lane = async () => {
        for (let lead = queue.shift(); lead; lead = queue.shift()) {
          try {
            const r = await this.followUp(lead.team_id, lead.order_id);
            if (r.kind === 'abandoned') {
              tally.abandoned++;
              if (r.mail) tally.mail++;
            } else tally.skipped++;
          } catch (err) {
            // One lead's failure never stops the run; it is still due at the next one.
            tally.failed++;
            log?.error({ err, order_number: lead.order_id }, 'lead follow-up failed');
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(this.concurrency, due.length) }, lane));
      const last = due[due.length - 1]!;
      after = { at: last.cursor, orderId: last.order_id };
      if (due.length < this.batchSize) break;
    }
    return tally;
  }

  /** One page of leads due now (a read; `followUp` decides). */
  findDue(limit: number, after: repo.ScanCursor | null = null): Promise<repo.DueLead[]> {
    return this.store.run((db) => repo.findDueLeads(db, { now: this.d.clock.now(), windowSecs: this.windowMs / 1000, after, limit }));
  }

  /** The claim of one lead: everything re-checked under the order's row lock, and the follow-up written with it. */
  async followUp(teamId: string, orderId: string): Promise<FollowUpResult> {
    const r = await this.store.transaction(async (trx): Promise<FollowUpResult> => {
      const order = await this.d.orders.rows.findOrder(trx, teamId, orderId, { forUpdate: true });
      if (!order) return { kind: 'skipped', why: 'no such order' };
      if (order.status !== 'lead') return { kind: 'skipped', why: `the order is ${order.status}, no longer an unpaid lead` };
      if (await repo.findFollowUp(trx, order.id)) return { kind: 'skipped', why: 'already followed up' };
      const campaign = await this.d.catalog.findCampaign(trx, teamId, order.campaign_id);
      if (!campaign?.abandonment_enabled || !campaign.abandonment_enabled_at) return { kind: 'skipped', why: 'the follow-up is off for its campaign' };
      const now = this.d.clock.now();
      if (order.updated_at.getTime() > now.getTime() - campaign.abandonment_delay_minutes * 60_000) return { kind: 'skipped', why: 'changed within the delay' };
      if (order.updated_at < campaign.abandonment_enabled_at) return { kind: 'skipped', why: 'idle since before the follow-up was switched on' };

      const view = await this.d.orders.view(trx, teamId, order);
      const checkoutUrl = campaign.abandonment_checkout_url
        ? renderCheckoutUrl(campaign.abandonment_checkout_url, {
            order_number: view.order_number,
            email: view.customer.email,
            campaign_id: view.campaign_id,
            customer_number: view.customer.customer_number,
            first_name: view.customer.first_name,
            last_name: view.customer.last_name,
          })
        : null;
      // The mail sink queues the campaign's abandonment mail in this transaction when it is enabled.
      const event = await this.d.events.emit(trx, teamId, 'lead.abandoned', { orderId: order.id, object: { ...view, abandoned_at: now.toISOString(), checkout_url: checkoutUrl } });
      await repo.insertFollowUp(trx, {
        order_id: order.id,
        team_id: teamId,
        campaign_id: campaign.id,
        event_id: event.id,
        idle_since: order.updated_at,
        delay_minutes: campaign.abandonment_delay_minutes,
        mail_enabled: campaign.abandonment_mail_enabled,
        checkout_url: checkoutUrl,
        abandoned_at: now,
      });
      return { kind: 'abandoned', eventId: event.id, mail: campaign.abandonment_mail_enabled, checkoutUrl };
    });
    if (r.kind === 'abandoned') this.d.events.nudge();
    return r;
  }

  /** Asked by the mail drainer just before an abandonment mail goes out: a lead paid (or paying) since is not mailed. */
  private async stillUnpaid(m: Row<'mail_messages'>): Promise<string | null> {
    if (!m.order_id) return null;
    const order = await this.store.run((db) => this.d.orders.rows.findOrder(db, m.team_id, m.order_id!));
    if (!order) return 'the order no longer exists';
    return order.status === 'lead' ? null : `the order became ${order.status} before the mail was sent`;
  }
}
