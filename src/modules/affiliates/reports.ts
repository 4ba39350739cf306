import { sql } from 'kysely';
import { notFound } from '../../app/errors.ts';
import type { Executor, Store } from '../../db/database.ts';
import { listPage } from '../../db/pagination.ts';
import * as repo from './repo.ts';
import type { CommissionsQuery, PostbacksQuery, ReportQuery } from './schemas.ts';
import type { AffiliateScope, OrderReader } from './service.ts';
import { commissionView, postbackAttemptView, postbackView } from './views.ts';

type Key = { affiliate_id: string; sub: string | null; currency: string };
const keyOf = (k: Key) => `${k.affiliate_id}\u0000${k.sub ?? ''}\u0000${k.currency}`;

export interface ReportRow {
  affiliate_id: string;
  sub_id: string | null;
  currency: string;
  leads: number;
  conversions: number;
  conversion_rate: number;
  revenue: number;
  upsell_revenue: number;
  rebill_revenue: number;
  refunds: number;
  chargebacks: number;
  chargeback_amount: number;
  commission: number;
  epc: number;
  throttled?: { conversions: number; revenue: number };
}

const num = (v: unknown) => Number(v ?? 0);

/** The affiliates' ledgers as the API lists them, and the affiliate report. An affiliate-scoped caller sees only its ids. */
export class AffiliateReads {
  constructor(
    private readonly store: Store,
    private readonly orders: () => OrderReader,
  ) {}

  async commissions(teamId: string, q: CommissionsQuery, scope: AffiliateScope) {
    return this.store.run(async (db) => {
      await repo.promotePayable(db, teamId);
      const f = { ids: scope, affiliateId: q.affiliate_id, orderId: q.order_number, status: q.status, createdGte: q.created_gte, createdLte: q.created_lte };
      return listPage(db, 'affiliate_commissions', teamId, q, (afterSeq) => repo.listCommissions(db, teamId, { ...f, afterSeq, limit: q.limit }), commissionView);
    });
  }

  async postbacks(teamId: string, q: PostbacksQuery, scope: AffiliateScope) {
    return this.store.run(async (db) => {
      const f = { ids: scope, affiliateId: q.affiliate_id, orderId: q.order_number, status: q.status, createdGte: q.created_gte, createdLte: q.created_lte };
      return listPage(db, 'affiliate_postbacks', teamId, q, (afterSeq) => repo.listPostbacks(db, teamId, { ...f, afterSeq, limit: q.limit }), postbackView);
    });
  }

  async postback(teamId: string, id: string, scope: AffiliateScope) {
    return this.store.run(async (db) => {
      const p = await repo.findPostback(db, teamId, id);
      if (!p || (scope && !scope.includes(p.affiliate_id))) throw notFound('Postback');
      return { ...postbackView(p), attempts: (await repo.attemptsOf(db, teamId, id)).map(postbackAttemptView) };
    });
  }

  /**
   * Per affiliate (and sub id, with `group_by`) and currency over the period, test orders left out
   * (they record no conversion or activity), throttled orders excluded from every column but leads:
   * leads (attributed orders created, throttled ones included: a lead that vanished when throttled
   * would tell the affiliate which conversions were throttled), conversions (first payments
   * approved), conversion rate, revenue (first payments), upsell and rebill revenue, refunds (and
   * voids), chargebacks, commission (not reversed) and EPC. The merchant's own view adds
   * `throttled` (conversions and revenue) separately.
   */
  async report(teamId: string, q: ReportQuery, scope: AffiliateScope): Promise<ReportRow[]> {
    const ids = scope ? (q.affiliate_id ? scope.filter((s) => s === q.affiliate_id) : scope) : q.affiliate_id ? [q.affiliate_id] : null;
    if (ids && ids.length === 0) return [];
    return this.store.run(async (db) => {
      const rows = new Map<string, ReportRow>();
      const row = (k: Key): ReportRow => {
        const key = keyOf(k);
        let r = rows.get(key);
        if (!r) {
          r = { affiliate_id: k.affiliate_id, sub_id: k.sub, currency: k.currency, leads: 0, conversions: 0, conversion_rate: 0, revenue: 0, upsell_revenue: 0, rebill_revenue: 0, refunds: 0, chargebacks: 0, chargeback_amount: 0, commission: 0, epc: 0, ...(scope ? {} : { throttled: { conversions: 0, revenue: 0 } }) };
          rows.set(key, r);
        }
        return r;
      };
      const period = { createdGte: q.created_gte, createdLte: q.created_lte };
      for (const l of await this.orders().countAttributedLeads(db, teamId, { affiliateIds: ids, groupBy: q.group_by, ...period })) row(l).leads += l.leads;
      for (const c of await this.sums(db, teamId, 'affiliate_conversions', ids, q)) {
        const r = row(c);
        r.conversions += num(c.conversions);
        r.revenue += num(c.revenue);
        if (r.throttled) {
          r.throttled.conversions += num(c.throttled_conversions);
          r.throttled.revenue += num(c.throttled_revenue);
        }
      }
      for (const a of await this.sums(db, teamId, 'affiliate_activity', ids, q)) {
        const r = row(a);
        r.upsell_revenue += num(a.upsell_revenue);
        r.rebill_revenue += num(a.rebill_revenue);
        r.refunds += num(a.refunds);
        r.chargebacks += num(a.chargebacks);
        r.chargeback_amount += num(a.chargeback_amount);
      }
      for (const c of await this.sums(db, teamId, 'affiliate_commissions', ids, q)) row(c).commission += num(c.commission);
      for (const r of rows.values()) {
        r.conversion_rate = r.leads ? Math.round((r.conversions / r.leads) * 10_000) / 100 : 0;
        r.epc = r.leads ? Math.round(r.commission / r.leads) : 0;
      }
      // A throttled-only group is no row for an affiliate-scoped caller (it would reveal the throttled order).
      return [...rows.values()]
        .filter((r) => !scope || r.leads + r.conversions + r.upsell_revenue + r.rebill_revenue + r.refunds + r.chargebacks + r.commission > 0)
        .sort((x, y) => x.affiliate_id.localeCompare(y.affiliate_id) || (x.sub_id ?? '').localeCompare(y.sub_id ?? '') || x.currency.localeCompare(y.currency));
    });
  }

  private async sums(db: Executor, teamId: string, table: 'affiliate_conversions' | 'affiliate_activity' | 'affiliate_commissions', ids: readonly string[] | null, q: ReportQuery) {
    const sub = q.group_by === 'affiliate' ? sql<string | null>`null::text` : sql<string | null>`${sql.ref(q.group_by)}`;
    const measures = {
      affiliate_conversions: sql`count(*) filter (where not throttled) as conversions, coalesce(sum(amount) filter (where not throttled), 0) as revenue,
        count(*) filter (where throttled) as throttled_conversions, coalesce(sum(amount) filter (where throttled), 0) as throttled_revenue`,
      affiliate_activity: sql`coalesce(sum(amount) filter (where kind = 'upsell' and not throttled), 0) as upsell_revenue,
        coalesce(sum(amount) filter (where kind = 'rebill' and not throttled), 0) as rebill_revenue,
        coalesce(sum(amount) filter (where kind in ('refund', 'void') and not throttled), 0) as refunds,
        count(*) filter (where kind = 'chargeback' and not throttled) as chargebacks,
        coalesce(sum(amount) filter (where kind = 'chargeback' and not throttled), 0) as chargeback_amount`,
      affiliate_commissions: sql`coalesce(sum(amount) filter (where status <> 'reversed'), 0) as commission`,
    }[table];
    const where = [sql`team_id = ${teamId}`];
    if (ids) where.push(sql`affiliate_id in (${sql.join(ids.map((i) => sql`${i}`))})`);
    if (q.created_gte) where.push(sql`created_at >= ${q.created_gte}`);
    if (q.created_lte) where.push(sql`created_at <= ${q.created_lte}`);
    const r = await sql<Key & Record<string, unknown>>`
      select affiliate_id, ${sub} as sub, currency, ${measures}
      from ${sql.table(table)} where ${sql.join(where, sql` and `)}
      group by 1, 2, 3`.execute(db);
    return r.rows;
  }
}
