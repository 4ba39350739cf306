import { ApiError, invalid, notFound } from '../../app/errors.ts';
import { randomToken } from '../../app/ids.ts';
import type { Executor, Store, Tx } from '../../db/database.ts';
import { listPage, type Page } from '../../db/pagination.ts';
import type { AffiliateActivityKind, Row, RowPatch } from '../../db/schema.ts';
import { affiliateOrderView, visibleToAffiliates } from '../orders/affiliate-view.ts';
import type { ListOrdersQuery, OrderView } from '../orders/service.ts';
import { targetRefusal } from '../webhooks/service.ts';
import { DEFAULT_HOLD_DAYS, earnCommission, reverseCommissionsOf } from './commissions.ts';
import { AffiliatePostbacks, type PostbackOptions } from './postbacks.ts';
import { decimalAmount, renderTemplate, type TemplateValues } from './render.ts';
import { AffiliateReads } from './reports.ts';
import * as repo from './repo.ts';
import type { AffiliateBlock, AffiliateOrdersQuery, AffiliateSettings, CreateAffiliate, SimulateBody, ThrottleLedgerQuery, UpdateAffiliate } from './schemas.ts';
import { decideThrottle, replay, scopeOf, type Simulation, type ThrottleReason, toBp } from './throttle.ts';
import { affiliateView, conversionView, settingsView } from './views.ts';

export { AffiliateBlock, OrderAffiliate } from './schemas.ts';

/** Who may see what: null is the merchant's own staff; a list is an affiliate-scoped caller (never a throttled order). */
export type AffiliateScope = readonly string[] | null;

/** What the affiliates module needs of orders (the orders service, attached after both are built). */
export interface OrderReader {
  findOrder(db: Executor, teamId: string, id: string): Promise<Row<'orders'> | undefined>;
  list(teamId: string, q: ListOrdersQuery, scope: AffiliateScope): Promise<Page<OrderView>>;
  get(teamId: string, orderNumber: string, scope: AffiliateScope): Promise<OrderView>;
  countAttributedLeads(db: Executor, teamId: string, f: { affiliateIds: readonly string[] | null; groupBy: string; createdGte?: Date | undefined; createdLte?: Date | undefined }): Promise<Array<{ affiliate_id: string; sub: string | null; currency: string; leads: number }>>;
}

/** The order's affiliate columns a block sets. */
export type AttributionPatch = Pick<RowPatch<'orders'>, 'affiliate_id' | 'affiliate_click_id' | 'affiliate_sub1' | 'affiliate_sub2' | 'affiliate_sub3' | 'affiliate_sub4' | 'affiliate_sub5'>;

export function templateValues(order: Row<'orders'>, o: { transactionId: string | null; amount: number; commission?: number | null }): TemplateValues {
  return {
    affiliate_id: order.affiliate_id,
    click_id: order.affiliate_click_id,
    sub1: order.affiliate_sub1,
    sub2: order.affiliate_sub2,
    sub3: order.affiliate_sub3,
    sub4: order.affiliate_sub4,
    sub5: order.affiliate_sub5,
    order_number: order.id,
    transaction_id: o.transactionId,
    amount: decimalAmount(o.amount, order.currency),
    amount_minor: o.amount,
    currency: order.currency,
    commission: o.commission != null ? decimalAmount(o.commission, order.currency) : null,
    campaign_id: order.campaign_id,
  };
}

/**
 * Affiliates: their settings (CRUD), attribution on orders, the throttle decision at the
 * conversion (spec 2.3, under the affiliate's row lock) with its ledger, commissions, postbacks
 * and pixels. The checkout calls `recordConversion` and `recordActivity` in its own transactions.
 */
export class AffiliatesService {
  readonly postbacks: AffiliatePostbacks;
  /** The ledgers as the API lists them and the affiliate report (reports.ts). */
  readonly reads: AffiliateReads;
  private orderReader: OrderReader | null = null;

  constructor(
    private readonly store: Store,
    private readonly opts: PostbackOptions,
    nudge: () => void,
  ) {
    this.postbacks = new AffiliatePostbacks(store, opts, nudge);
    this.reads = new AffiliateReads(store, () => this.orders);
  }

  attachOrders(orders: OrderReader): void {
    this.orderReader = orders;
  }

  get orders(): OrderReader {
    if (!this.orderReader) throw new Error('the orders service is not attached to the affiliates service');
    return this.orderReader;
  }

  // ---- settings and CRUD

  async settingsOf(db: Executor, teamId: string) {
    return (await repo.findSettings(db, teamId)) ?? { attribution: 'first_touch' as const, commission_hold_days: DEFAULT_HOLD_DAYS };
  }

  async getSettings(teamId: string) {
    return settingsView(await this.store.run((db) => this.settingsOf(db, teamId)));
  }

  async updateSettings(teamId: string, body: AffiliateSettings) {
    return settingsView(await this.store.run((db) => repo.upsertSettings(db, teamId, body)));
  }

  private async checkPostbackUrl(url: string | null | undefined): Promise<void> {
    if (!url || this.opts.allowPrivateTargets) return;
    const why = await targetRefusal(new URL(url.replace(/\{[a-z0-9_]+\}/g, 'x')));
    if (why) throw invalid('postback_url', `not a public address: ${why}`);
  }

  private commissionColumns(c: CreateAffiliate['commission']) {
    return {
      commission_type: c.type,
      commission_amount: c.type === 'fixed' ? (c.amount ?? 0) : null,
      commission_percent_bp: c.type === 'percent' ? toBp(c.percent ?? 0) : null,
      commission_on_upsells: c.on_upsells ?? false,
      commission_on_rebills: c.on_rebills ?? false,
      commission_hold_days: c.hold_days ?? null,
    };
  }

  async create(teamId: string, body: CreateAffiliate) {
    await this.checkPostbackUrl(body.postback_url);
    const row = await this.store.transaction(async (trx) => {
      if (await repo.affiliateIdTaken(trx, teamId, body.id)) throw new ApiError('conflict', `An affiliate with id ${body.id} already exists (ids are never reused).`);
      return repo.insertAffiliate(trx, {
        team_id: teamId,
        id: body.id,
        name: body.name,
        status: body.status,
        throttle_rate_bp: body.throttle_rate === null ? null : toBp(body.throttle_rate),
        campaign_throttle_bp: JSON.stringify(Object.fromEntries(Object.entries(body.campaign_throttle_rates).map(([k, v]) => [k, toBp(v)]))),
        automatic_throttling: body.automatic_throttling,
        ...this.commissionColumns(body.commission),
        postback_url: body.postback_url,
        postback_events: JSON.stringify(body.postback_events),
        pixel_html: body.pixel_html,
      });
    });
    return affiliateView(row, { scoped: false });
  }

  /**
   * Changing a rate (or switching automatic throttling) starts that scope's count over: the new rate
   * holds for the conversions from now on. Under the affiliate's row lock, so no conversion counts
   * half under the old rate.
   */
  async update(teamId: string, id: string, body: UpdateAffiliate) {
    await this.checkPostbackUrl(body.postback_url);
    const row = await this.store.transaction(async (trx) => {
      const a = await repo.findAffiliate(trx, teamId, id, { forUpdate: true });
      if (!a) throw notFound('Affiliate');
      const patch: RowPatch<'affiliates'> = {};
      if (body.name !== undefined) patch.name = body.name;
      if (body.status !== undefined) patch.status = body.status;
      if (body.pixel_html !== undefined) patch.pixel_html = body.pixel_html;
      if (body.postback_url !== undefined) patch.postback_url = body.postback_url;
      if (body.postback_events !== undefined) patch.postback_events = JSON.stringify(body.postback_events);
      if (body.commission !== undefined) Object.assign(patch, this.commissionColumns(body.commission));
      const reset: string[] = [];
      if (body.throttle_rate !== undefined) {
        const bp = body.throttle_rate === null ? null : toBp(body.throttle_rate);
        if (bp !== a.throttle_rate_bp) reset.push('');
        patch.throttle_rate_bp = bp;
      }
      if (body.campaign_throttle_rates !== undefined) {
        const next = Object.fromEntries(Object.entries(body.campaign_throttle_rates).map(([k, v]) => [k, toBp(v)]));
        for (const k of new Set([...Object.keys(next), ...Object.keys(a.campaign_throttle_bp)])) if (next[k] !== a.campaign_throttle_bp[k]) reset.push(k);
        patch.campaign_throttle_bp = JSON.stringify(next);
      }
      const toggled = body.automatic_throttling !== undefined && body.automatic_throttling !== a.automatic_throttling;
      if (body.automatic_throttling !== undefined) patch.automatic_throttling = body.automatic_throttling;
      await repo.resetCounters(trx, teamId, id, toggled ? null : reset);
      return Object.keys(patch).length ? repo.updateAffiliate(trx, teamId, id, patch) : a;
    });
    return affiliateView(row, { scoped: false });
  }

  /** A soft delete: the id stays taken, its ledgers stay readable, and new orders can no longer name it. */
  async remove(teamId: string, id: string) {
    const row = await this.store.transaction(async (trx) => {
      if (!(await repo.findAffiliate(trx, teamId, id, { forUpdate: true }))) throw notFound('Affiliate');
      return repo.updateAffiliate(trx, teamId, id, { deleted_at: new Date() });
    });
    return { ...affiliateView(row, { scoped: false }), deleted: true };
  }

  async get(teamId: string, id: string, scope: AffiliateScope) {
    if (scope && !scope.includes(id)) throw notFound('Affiliate');
    const a = await this.store.run((db) => repo.findAffiliate(db, teamId, id));
    if (!a) throw notFound('Affiliate');
    return affiliateView(a, { scoped: scope !== null });
  }

  async list(teamId: string, q: { limit: number; starting_after?: string | undefined; status?: string | undefined }, scope: AffiliateScope) {
    return this.store.run((db) =>
      listPage(db, 'affiliates', teamId, q, (afterSeq) => repo.listAffiliates(db, teamId, { ids: scope, status: q.status, limit: q.limit, afterSeq }), (a) => affiliateView(a, { scoped: scope !== null })),
    );
  }

  // ---- attribution (called by the orders service in its transaction)

  /**
   * The order columns an affiliate block sets: all of them on an order without an affiliate, none
   * on one that has one (first touch) unless the team's attribution is `last_touch`. An unknown
   * (or deleted) affiliate id is a 422 on `affiliate.affiliate_id`.
   */
  async attribution(db: Executor, teamId: string, current: Row<'orders'> | null, block: AffiliateBlock | undefined): Promise<AttributionPatch> {
    if (!block) return {};
    if (!(await repo.findAffiliate(db, teamId, block.affiliate_id))) throw invalid('affiliate.affiliate_id', 'no such affiliate');
    if (current?.affiliate_id && (await this.settingsOf(db, teamId)).attribution === 'first_touch') return {};
    return {
      affiliate_id: block.affiliate_id,
      affiliate_click_id: block.click_id ?? null,
      affiliate_sub1: block.sub1 ?? null,
      affiliate_sub2: block.sub2 ?? null,
      affiliate_sub3: block.sub3 ?? null,
      affiliate_sub4: block.sub4 ?? null,
      affiliate_sub5: block.sub5 ?? null,
    };
  }

  // ---- the conversion and what follows it (called by the checkout, under the order's row lock)

  /**
   * The first payment of an attributed order was approved: the throttle decision (spec 2.3) is taken
   * here, once, under the affiliate's row lock (SELECT … FOR UPDATE), counted and written to the
   * throttle ledger; a conversion that is not throttled earns its commission and queues its postback.
   * Null when the order has no (live) affiliate or is a test order: an `is_throttle: true` order then is just throttled.
   */
  async recordConversion(trx: Tx, order: Row<'orders'>, charge: { transactionId: string | null; amount: number }): Promise<{ throttled: boolean; reason: ThrottleReason } | null> {
    // A test order (a listed test card, a gateway in test mode, a Sandbox extpay connection) moved no
    // real money: no conversion, no throttle decision, no commission, no postback (README, Affiliates).
    if (!order.affiliate_id || order.is_test) return null;
    const a = await repo.findAffiliate(trx, order.team_id, order.affiliate_id, { forUpdate: true });
    if (!a) return null;
    const seen = await repo.findConversion(trx, order.team_id, order.id);
    if (seen) return { throttled: seen.throttled, reason: seen.reason };
    const { scope, rateBp } = scopeOf(a, order.campaign_id);
    const before = await repo.counterOf(trx, order.team_id, a.id, scope);
    const d = decideThrottle({ requested: order.is_throttle, automatic: a.automatic_throttling, rateBp, conversionsBefore: before.conversions, throttledBefore: before.throttled });
    await repo.countConversion(trx, order.team_id, a.id, scope, d.throttled);
    await repo.insertConversion(trx, {
      id: `thr_${randomToken()}`,
      team_id: order.team_id,
      affiliate_id: a.id,
      order_id: order.id,
      campaign_id: order.campaign_id,
      transaction_id: charge.transactionId,
      scope,
      conversions_before: before.conversions,
      throttled_before: before.throttled,
      rate_bp: rateBp,
      automatic: a.automatic_throttling,
      requested: order.is_throttle,
      throttled: d.throttled,
      reason: d.reason,
      amount: charge.amount,
      currency: order.currency,
      click_id: order.affiliate_click_id,
      sub1: order.affiliate_sub1,
      sub2: order.affiliate_sub2,
      sub3: order.affiliate_sub3,
      sub4: order.affiliate_sub4,
      sub5: order.affiliate_sub5,
    });
    if (!d.throttled && a.status === 'active' && charge.transactionId) {
      const settings = await this.settingsOf(trx, order.team_id);
      const c = await earnCommission(trx, { affiliate: a, order, kind: 'conversion', transactionId: charge.transactionId, chargeAmount: charge.amount, holdDays: settings.commission_hold_days });
      await this.postbacks.queue(trx, a, order.id, 'conversion', charge.transactionId, templateValues(order, { transactionId: charge.transactionId, amount: charge.amount, commission: c?.amount ?? null }));
    }
    return d;
  }

  /**
   * A charge or a reversal on an attributed order after its conversion: recorded for the report;
   * an upsell or rebill of an order that is not throttled may earn a commission and call the
   * postback; a refund, void or chargeback reverses the commission of the charge it reverses.
   */
  async recordActivity(trx: Tx, order: Row<'orders'>, kind: AffiliateActivityKind, t: { transactionId: string; amount: number; chargeId?: string | null }): Promise<void> {
    if (!order.affiliate_id || order.is_test) return;
    const a = await repo.findAffiliate(trx, order.team_id, order.affiliate_id);
    if (!a) return;
    const fresh = await repo.insertActivity(trx, {
      id: `aact_${randomToken()}`,
      team_id: order.team_id,
      affiliate_id: a.id,
      order_id: order.id,
      kind,
      transaction_id: t.transactionId,
      amount: t.amount,
      currency: order.currency,
      throttled: order.is_throttle,
      sub1: order.affiliate_sub1,
      sub2: order.affiliate_sub2,
      sub3: order.affiliate_sub3,
      sub4: order.affiliate_sub4,
      sub5: order.affiliate_sub5,
    });
    if (!fresh) return;
    if (kind === 'refund' || kind === 'void' || kind === 'chargeback') {
      const reversed = await reverseCommissionsOf(trx, order.team_id, order.id, t.chargeId ?? null, kind);
      if (!order.is_throttle) await this.postbacks.queue(trx, a, order.id, 'refund', t.transactionId, templateValues(order, { transactionId: t.transactionId, amount: t.amount, commission: reversed.reduce((s, c) => s + c.amount, 0) }));
      return;
    }
    if (order.is_throttle || a.status !== 'active') return;
    const settings = await this.settingsOf(trx, order.team_id);
    const c = await earnCommission(trx, { affiliate: a, order, kind, transactionId: t.transactionId, chargeAmount: t.amount, holdDays: settings.commission_hold_days });
    await this.postbacks.queue(trx, a, order.id, kind, t.transactionId, templateValues(order, { transactionId: t.transactionId, amount: t.amount, commission: c?.amount ?? null }));
  }

  // ---- the throttle ledger and the simulation (the merchant's own view only)

  private async affiliateFor(db: Executor, teamId: string, id: string, scope: AffiliateScope): Promise<Row<'affiliates'>> {
    // Throttling does not exist for an affiliate-scoped caller: not found, as a throttled order is.
    if (scope) throw notFound('Throttle ledger');
    const a = await repo.findAffiliate(db, teamId, id);
    if (!a) throw notFound('Affiliate');
    return a;
  }

  async throttleLedger(teamId: string, id: string, q: ThrottleLedgerQuery, scope: AffiliateScope): Promise<Page<ReturnType<typeof conversionView>>> {
    return this.store.run(async (db) => {
      await this.affiliateFor(db, teamId, id, scope);
      const filter = { affiliateId: id, campaignId: q.campaign_id, reason: q.reason, createdGte: q.created_gte, createdLte: q.created_lte };
      return listPage(db, 'affiliate_conversions', teamId, q, (afterSeq) => repo.listConversions(db, teamId, { ...filter, afterSeq, limit: q.limit + 1 }), conversionView);
    });
  }

  /**
   * A dry run: the affiliate's conversions of the period (one campaign's, or all), in the order they
   * were decided, replayed from a zero count with another rate. Nothing is written.
   */
  async simulate(teamId: string, id: string, body: SimulateBody, scope: AffiliateScope): Promise<Simulation & { throttle_rate: number | null; automatic_throttling: boolean; actual: { throttled: number; requested: number; automatic: number } }> {
    return this.store.run(async (db) => {
      await this.affiliateFor(db, teamId, id, scope);
      const rows = await repo.listConversions(db, teamId, { affiliateId: id, order: 'asc', campaignId: body.campaign_id, createdGte: body.created_gte, createdLte: body.created_lte });
      const sim = replay(rows.map((r) => ({ order_id: r.order_id, requested: r.requested })), body.throttle_rate === null ? null : toBp(body.throttle_rate), body.automatic_throttling, body.include_decisions);
      const actual = { throttled: rows.filter((r) => r.throttled).length, requested: rows.filter((r) => r.reason === 'requested').length, automatic: rows.filter((r) => r.reason === 'automatic').length };
      return { throttle_rate: body.throttle_rate, automatic_throttling: body.automatic_throttling, ...sim, actual };
    });
  }

  // ---- the affiliates' view of orders (orders/affiliate-view.ts)

  /**
   * The affiliate ids whose orders a caller sees here: its own (narrowed by `affiliate_id`); for the
   * merchant, one affiliate's or every affiliate's, so the merchant sees exactly what they see.
   */
  private async orderScope(teamId: string, affiliateId: string | undefined, scope: AffiliateScope): Promise<readonly string[]> {
    if (scope) return affiliateId ? scope.filter((s) => s === affiliateId) : scope;
    return affiliateId ? [affiliateId] : this.store.run((db) => repo.affiliateIds(db, teamId));
  }

  /** Converted orders that are neither throttled nor test orders, without the customer (no leads: see affiliate-view.ts). */
  async affiliateOrders(teamId: string, q: AffiliateOrdersQuery, scope: AffiliateScope) {
    const ids = await this.orderScope(teamId, q.affiliate_id, scope);
    const page = await this.orders.list(teamId, { limit: q.limit, starting_after: q.starting_after, created_gte: q.created_gte, created_lte: q.created_lte, status: q.status, campaign_id: q.campaign_id }, ids);
    return { items: page.items.map(affiliateOrderView), has_more: page.has_more };
  }

  async affiliateOrder(teamId: string, orderNumber: string, scope: AffiliateScope) {
    return affiliateOrderView(await this.orders.get(teamId, orderNumber, await this.orderScope(teamId, undefined, scope)));
  }

  // ---- pixels

  /** The thank-you page's pixel HTML: only for a converted order that is not throttled, of an active affiliate. */
  async pixels(teamId: string, orderNumber: string, scope: AffiliateScope) {
    return this.store.run(async (db) => {
      const order = await this.orders.findOrder(db, teamId, orderNumber);
      if (!order || (scope && !visibleToAffiliates(order, scope))) throw notFound('Order');
      const conversion = order.affiliate_id ? await repo.findConversion(db, teamId, order.id) : undefined;
      const a = order.affiliate_id ? await repo.findAffiliate(db, teamId, order.affiliate_id) : undefined;
      const fire = !!conversion && !conversion.throttled && !order.is_throttle && !!a?.pixel_html && a.status === 'active';
      const html = fire ? renderTemplate(a!.pixel_html!, templateValues(order, { transactionId: conversion!.transaction_id, amount: conversion!.amount })) : null;
      return {
        object: 'order_pixels' as const,
        order_number: order.id,
        affiliate_id: order.affiliate_id,
        fire,
        pixels: fire ? [{ affiliate_id: a!.id, html: html! }] : [],
      };
    });
  }
}
