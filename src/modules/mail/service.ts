import type { Logger } from 'pino';
import { DEFAULT_MAIL_RETRY_SCHEDULE_MS } from '../../app/config.ts';
import { z } from 'zod';
import { invalid, notFound } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import { iso, type ListQuery } from '../../app/schemas.ts';
import type { Store, Tx } from '../../db/database.ts';
import { cursorSeq, type Page, toPage } from '../../db/pagination.ts';
import type { Row } from '../../db/schema.ts';
import type { Drainer } from '../../worker/worker.ts';
import type { CatalogService } from '../catalog/service.ts';
import type { EmittedEvent, EventSink } from '../events/service.ts';
import { ABANDONMENT_KIND, ABANDONMENT_VARIABLES, abandonmentTemplateOf, renderAbandonmentMail, unknownAbandonmentVariables } from './abandonment.ts';
import * as repo from './repo.ts';
import {
  DEFAULT_PURCHASE_TEMPLATE,
  type MailOrder,
  type MailTemplate,
  renderPurchaseMail,
  type RenderedMail,
  sampleOrder,
  TEMPLATE_VARIABLES,
  unknownVariables,
} from './template.ts';
import type { MailTransport, SentMail } from './transport.ts';

export const MAIL_KINDS = ['purchase_confirmation', ABANDONMENT_KIND] as const;
/** `cancelled`: a check of its kind said before sending that it must not go out (a lead paid meanwhile). */
export const MAIL_STATUSES = ['pending', 'sent', 'failed', 'cancelled'] as const;

/**
 * Asked just before a mail of its kind is handed to the transport: a reason not to send it any more
 * (the mail is cancelled with it), or null to send. The module that queued the kind registers it.
 */
export type MailSendCheck = (mail: Row<'mail_messages'>) => Promise<string | null>;

export interface MailOptions {
  from: string;
  /** After the 1st, 2nd, … failed attempt; when the list runs out the mail is failed. */
  retryDelaysMs?: readonly number[];
  /** Mails one drain claims (and sends concurrently). */
  batchSize?: number;
  /** How long a claim holds; longer than the transport's own timeouts. */
  leaseMs?: number;
}

/** The fields of the event's order view a purchase mail needs; anything else is ignored. */
const OrderObject = z.object({
  order_number: z.string(),
  campaign_id: z.string(),
  currency: z.string(),
  customer: z.object({ email: z.string(), first_name: z.string().nullish(), last_name: z.string().nullish() }),
  lines: z.array(z.object({ name: z.string(), quantity: z.number(), line_total: z.number() })),
  subtotal: z.number(),
  shipping_total: z.number(),
  discount_total: z.number().default(0),
  total: z.number(),
  created_at: z.string().nullish(),
});

/** A `lead.abandoned` object: the order view and the lead's checkout link. */
const LeadObject = OrderObject.extend({ checkout_url: z.string().nullable() });

function orderOf(event: EmittedEvent): MailOrder & { campaign_id: string } {
  return mailOrderOf(OrderObject.parse((event.payload as { object?: unknown }).object));
}

function mailOrderOf(o: z.infer<typeof OrderObject>): MailOrder & { campaign_id: string } {
  return {
    ...o,
    customer: { email: o.customer.email, first_name: o.customer.first_name ?? null, last_name: o.customer.last_name ?? null },
    created_at: o.created_at ?? null,
  };
}

export function mailView(m: Row<'mail_messages'>) {
  return {
    object: 'mail' as const,
    id: m.id,
    order_number: m.order_id,
    event_id: m.event_id,
    kind: m.kind,
    to: m.to_address,
    subject: m.subject,
    status: m.status,
    attempts: m.attempt_count,
    next_attempt_at: m.status === 'pending' ? iso(m.next_attempt_at) : null,
    last_error: m.last_error,
    transport: m.transport,
    sent_at: iso(m.sent_at),
    created_at: iso(m.created_at),
  };
}
export type MailView = ReturnType<typeof mailView>;

export type MailDetailView = MailView & { text_body: string; html_body: string | null; transport_ref: string | null; eml_path: string | null };

export interface PurchaseEmailView {
  object: 'purchase_email';
  campaign_id: string;
  subject: string;
  body: string;
  is_default: boolean;
  unknown_variables: string[];
  variables: Array<{ name: string; description: string }>;
}

function templateOf(c: Row<'campaigns'>): MailTemplate | null {
  return c.purchase_email_subject !== null && c.purchase_email_body !== null ? { subject: c.purchase_email_subject, body: c.purchase_email_body } : null;
}

function purchaseEmailView(c: Row<'campaigns'>): PurchaseEmailView {
  const own = templateOf(c);
  const t = own ?? DEFAULT_PURCHASE_TEMPLATE;
  return {
    object: 'purchase_email',
    campaign_id: c.id,
    subject: t.subject,
    body: t.body,
    is_default: own === null,
    unknown_variables: unknownVariables(t),
    variables: Object.entries(TEMPLATE_VARIABLES).map(([name, description]) => ({ name, description })),
  };
}

function errorText(err: unknown): string {
  const e = err as { message?: unknown; code?: unknown } | null;
  const message = typeof e?.message === 'string' ? e.message : String(err);
  return (typeof e?.code === 'string' && !message.includes(e.code) ? `${e.code}: ${message}` : message).slice(0, 1000);
}

/**
 * Autoresponder mail. As an event sink it writes one purchase confirmation per completed order
 * in the completing transaction (UNIQUE(event_id, kind) makes a repeat a no-op), rendered then
 * from the campaign's template; its drainer sends due mail after commit, outside any
 * transaction, retrying with backoff.
 */
export class MailService implements EventSink {
  readonly drainer: Drainer;
  private readonly sendChecks = new Map<string, MailSendCheck>();
  private readonly retryDelaysMs: readonly number[];
  private readonly batchSize: number;
  private readonly leaseMs: number;

  constructor(
    private readonly store: Store,
    private readonly catalog: CatalogService,
    private readonly transport: MailTransport,
    private readonly opts: MailOptions,
  ) {
    this.retryDelaysMs = opts.retryDelaysMs ?? DEFAULT_MAIL_RETRY_SCHEDULE_MS;
    this.batchSize = opts.batchSize ?? 10;
    this.leaseMs = opts.leaseMs ?? 10 * 60_000;
    this.drainer = { name: 'autoresponder-mail', drain: (_ctx, log) => this.sendDueMail(log), drainsToTheEnd: true };
  }

  registerSendCheck(kind: (typeof MAIL_KINDS)[number], check: MailSendCheck): void {
    this.sendChecks.set(kind, check);
  }

  async onEvent(trx: Tx, event: EmittedEvent): Promise<void> {
    if (event.type === 'lead.abandoned') return this.queueAbandonmentMail(trx, event);
    if (event.type !== 'order.completed') return;
    const order = orderOf(event);
    const campaign = await this.catalog.findCampaign(trx, event.team_id, order.campaign_id);
    const rendered = renderPurchaseMail((campaign && templateOf(campaign)) ?? DEFAULT_PURCHASE_TEMPLATE, order, campaign?.name ?? '');
    await repo.insertMailOnce(trx, {
      id: newId('mail'),
      team_id: event.team_id,
      event_id: event.id,
      order_id: event.order_id ?? order.order_number,
      kind: 'purchase_confirmation',
      to_address: order.customer.email,
      subject: rendered.subject,
      text_body: rendered.text,
      html_body: rendered.html,
      status: 'pending',
      next_attempt_at: new Date(),
    });
  }

  /**
   * The abandoned-lead mail, queued in the transaction that claimed the lead (so never for a lead
   * paid before the claim), when the campaign enables it and the customer has an address.
   */
  private async queueAbandonmentMail(trx: Tx, event: EmittedEvent): Promise<void> {
    const object = LeadObject.parse((event.payload as { object?: unknown }).object);
    const campaign = await this.catalog.findCampaign(trx, event.team_id, object.campaign_id);
    if (!campaign?.abandonment_mail_enabled || !object.customer.email) return;
    const order = mailOrderOf(object);
    const rendered = renderAbandonmentMail(abandonmentTemplateOf(campaign), order, campaign.name, object.checkout_url);
    await repo.insertMailOnce(trx, {
      id: newId('mail'),
      team_id: event.team_id,
      event_id: event.id,
      order_id: event.order_id ?? order.order_number,
      kind: ABANDONMENT_KIND,
      to_address: order.customer.email,
      subject: rendered.subject,
      text_body: rendered.text,
      html_body: rendered.html,
      status: 'pending',
      next_attempt_at: new Date(),
    });
  }

  /**
   * One drain: claim due mail (one statement), send it, record the ones that went out (one
   * statement for all of them) and each failure or cancellation (one each); again while a claim
   * comes back full, so nothing due is left behind. Returns how many were attempted.
   */
  async sendDueMail(log?: Logger): Promise<number> {
    let total = 0;
    for (;;) {
      const claimed = await this.store.run((db) => repo.claimDueMail(db, this.batchSize, this.leaseMs));
      total += claimed.length;
      const results = await Promise.allSettled(claimed.map((m) => this.sendOne(m, log)));
      const sent = results.flatMap((r) => (r.status === 'fulfilled' && r.value ? [r.value] : []));
      // Only a transport error counts as a failed attempt: if recording the successes fails, the
      // lease keeps these mails from being sent again until it runs out.
      await this.store.run((db) => repo.markMailsSent(db, this.transport.kind, sent.map((s) => ({ id: s.mail.id, ref: s.ref }))));
      for (const s of sent) log?.info({ mail: s.mail.id, transport: this.transport.kind, attempt: s.mail.attempt_count + 1 }, 'mail sent');
      const broken = results.find((r) => r.status === 'rejected');
      if (broken) throw broken.reason;
      if (claimed.length < this.batchSize) return total;
    }
  }

  /** Sends one claimed mail: what went out, to record with the rest of its claim; null when it was cancelled or failed (recorded here). */
  private async sendOne(m: Row<'mail_messages'>, log?: Logger): Promise<{ mail: Row<'mail_messages'>; ref: string } | null> {
    const attempt = m.attempt_count + 1;
    const check = this.sendChecks.get(m.kind);
    const stop = check ? await check(m) : null;
    if (stop !== null) {
      await this.store.run((db) => repo.markMailCancelled(db, m.id, stop));
      log?.info({ mail: m.id, kind: m.kind, reason: stop }, 'mail cancelled before sending');
      return null;
    }
    let sent: SentMail;
    try {
      sent = await this.transport.send({ id: m.id, from: this.opts.from, to: m.to_address, subject: m.subject, text: m.text_body, html: m.html_body });
    } catch (err) {
      const retryInMs = this.retryDelaysMs[attempt - 1] ?? null;
      const error = errorText(err);
      await this.store.run((db) => repo.markMailAttemptFailed(db, m.id, { transport: this.transport.kind, error, retryInMs }));
      log?.warn({ mail: m.id, attempt, error, retry_in_ms: retryInMs }, retryInMs === null ? 'mail failed for good' : 'mail attempt failed; will retry');
      return null;
    }
    return { mail: m, ref: sent.ref };
  }

  close(): void {
    this.transport.close();
  }

  // ---- the API

  async get(teamId: string, id: string): Promise<MailDetailView> {
    const m = await this.store.run((db) => repo.findMail(db, teamId, id));
    if (!m) throw notFound('Mail');
    return {
      ...mailView(m),
      text_body: m.text_body,
      html_body: m.html_body,
      transport_ref: m.transport_ref,
      eml_path: m.transport === 'file' ? this.transport.emlPath(m.id) : null,
    };
  }

  async list(teamId: string, q: ListQuery & { status?: string | undefined; order_number?: string | undefined }): Promise<Page<MailView>> {
    return this.store.run(async (db) => {
      const afterSeq = await cursorSeq(db, 'mail_messages', teamId, q.starting_after);
      if (afterSeq === undefined) throw invalid('starting_after', 'no such object');
      const rows = await repo.listMail(db, teamId, { limit: q.limit, afterSeq, status: q.status, orderId: q.order_number, createdGte: q.created_gte, createdLte: q.created_lte });
      const page = toPage(rows, q.limit);
      return { items: page.items.map(mailView), has_more: page.has_more };
    });
  }

  async getPurchaseEmail(teamId: string, campaignId: string): Promise<PurchaseEmailView> {
    return purchaseEmailView(await this.campaign(teamId, campaignId));
  }

  /** `null` resets the campaign to the default template. */
  async setPurchaseEmail(teamId: string, campaignId: string, template: MailTemplate | null): Promise<PurchaseEmailView> {
    const c = await this.store.run((db) => this.catalog.setCampaignPurchaseEmail(db, teamId, campaignId, template));
    if (!c) throw notFound('Campaign');
    return purchaseEmailView(c);
  }

  /** Renders a template (the given draft, else the campaign's own, else the default) with a sample order. */
  async previewPurchaseEmail(teamId: string, campaignId: string, draft: Partial<MailTemplate>): Promise<RenderedMail & { unknown_variables: string[] }> {
    const c = await this.campaign(teamId, campaignId);
    const stored = templateOf(c) ?? DEFAULT_PURCHASE_TEMPLATE;
    const t = { subject: draft.subject ?? stored.subject, body: draft.body ?? stored.body };
    return { ...renderPurchaseMail(t, sampleOrder(c.currency), c.name), unknown_variables: unknownVariables(t) };
  }

  /**
   * Renders the abandonment mail with a sample lead: the draft's `subject`, `body` and
   * `checkout_url` when given, else the campaign's, else the defaults.
   */
  async previewAbandonmentEmail(
    teamId: string,
    campaignId: string,
    draft: Partial<MailTemplate> & { checkout_url?: string | undefined },
    fillCheckoutUrl: (template: string) => string,
  ): Promise<RenderedMail & { checkout_url: string | null; unknown_variables: string[]; variables: Array<{ name: string; description: string }> }> {
    const c = await this.campaign(teamId, campaignId);
    const stored = abandonmentTemplateOf(c);
    const t = { subject: draft.subject ?? stored.subject, body: draft.body ?? stored.body };
    const urlTemplate = draft.checkout_url ?? c.abandonment_checkout_url;
    const checkoutUrl = urlTemplate ? fillCheckoutUrl(urlTemplate) : null;
    return {
      ...renderAbandonmentMail(t, sampleOrder(c.currency), c.name, checkoutUrl),
      checkout_url: checkoutUrl,
      unknown_variables: unknownAbandonmentVariables(t),
      variables: Object.entries({ ...TEMPLATE_VARIABLES, ...ABANDONMENT_VARIABLES }).map(([name, description]) => ({ name, description })),
    };
  }

  private async campaign(teamId: string, id: string): Promise<Row<'campaigns'>> {
    const c = await this.store.run((db) => this.catalog.findCampaign(db, teamId, id));
    if (!c) throw notFound('Campaign');
    return c;
  }
}
