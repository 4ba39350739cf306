import { type RawBuilder, sql } from 'kysely';
import type { Executor } from '../../db/database.ts';
import type { ApprovalDimension } from './schemas.ts';

/**
 * The reports' SQL. Every query is scoped by team, bounded by the period's instants (local
 * midnight of `from` to local midnight after `to`, in the team's time zone) and groups by
 * grouping sets so the totals come from the same statement as the rows (`grouping(...) = 1` marks
 * a total). Days are `created_at AT TIME ZONE tz`, so an order at 23:30 UTC is the next day in UTC+1.
 */
export interface ReportScope {
  teamId: string;
  timeZone: string;
  /** YYYY-MM-DD, inclusive, in `timeZone`. */
  from: string;
  to: string;
  isTest: boolean | undefined;
}

type Raw = Record<string, unknown>;

const start = (s: ReportScope) => sql`(${s.from}::date::timestamp at time zone ${s.timeZone})`;
const end = (s: ReportScope) => sql`((${s.to}::date + 1)::timestamp at time zone ${s.timeZone})`;
const localDay = (s: ReportScope, at: RawBuilder<unknown>) => sql`to_char(${at} at time zone ${s.timeZone}, 'YYYY-MM-DD')`;
const testFilter = (s: ReportScope) => (s.isTest === undefined ? sql`` : sql`and o.is_test = ${s.isTest}`);

/** Transactions of the team in the period, with their order (`o`) for the test filter. */
const txnsInPeriod = (s: ReportScope, joins = sql``) => sql`
  from transactions t
  join orders o on o.id = t.order_id and o.team_id = t.team_id
  ${joins}
  where t.team_id = ${s.teamId} and t.created_at >= ${start(s)} and t.created_at < ${end(s)} ${testFilter(s)}`;

/** Per period and currency, gap-filled over the period for every currency that has activity. */
export async function revenue(db: Executor, s: ReportScope, interval: 'day' | 'week' | 'month'): Promise<Raw[]> {
  const unit = sql.lit(interval);
  const r = await sql<Raw>`
    with facts as (
      select to_char(date_trunc(${unit}, t.created_at at time zone ${s.timeZone}), 'YYYY-MM-DD') as period, t.currency,
        case when t.type in ('sale', 'verification') and t.upsell_id is null then 1 else 0 end as orders,
        case when t.type = 'sale' then t.amount else 0 end as gross,
        case when t.type in ('refund', 'void') then t.amount else 0 end as refunds,
        case when t.type = 'chargeback' then 1 else 0 end as chargebacks,
        case when t.type = 'chargeback' then t.amount else 0 end as chargeback_amount
      ${txnsInPeriod(s)}
        and t.status = 'approved' and t.type in ('sale', 'verification', 'refund', 'void', 'chargeback')
        and not exists (select 1 from disputes d where d.team_id = t.team_id and d.chargeback_id = t.id and d.status = 'won')
    ), periods as (
      select to_char(g, 'YYYY-MM-DD') as period
      from generate_series(date_trunc(${unit}, ${s.from}::date::timestamp), ${s.to}::date::timestamp, ${sql.lit(`1 ${interval}`)}::interval) g
    ), filled as (
      select * from facts
      union all
      select p.period, c.currency, 0, 0, 0, 0, 0 from periods p cross join (select distinct currency from facts) c
    )
    select period, currency, grouping(period) as is_total,
      sum(orders) as orders, sum(gross) as gross, sum(refunds) as refunds, sum(chargebacks) as chargebacks,
      sum(chargeback_amount) as chargeback_amount, sum(gross) - sum(refunds) - sum(chargeback_amount) as net
    from filled
    group by grouping sets ((period, currency), (currency))
    order by grouping(period), period, currency`.execute(db);
  return r.rows;
}

const DIMENSION: Record<ApprovalDimension, { key: RawBuilder<unknown>; label: RawBuilder<unknown> }> = {
  gateway: { key: sql`coalesce(t.gateway_id, t.connection_id)`, label: sql`coalesce(g.name, x.name)` },
  bin: { key: sql`nullif(t.card_bin, '')`, label: sql`null::text` },
  card_brand: { key: sql`nullif(t.card_brand, '')`, label: sql`null::text` },
};

/** Card payment attempts with an answer (sales and verifications), per gateway, BIN or brand. */
export async function approvals(db: Executor, s: ReportScope, by: ApprovalDimension): Promise<Raw[]> {
  const d = DIMENSION[by];
  const r = await sql<Raw>`
    with a as (
      select ${d.key} as key, ${d.label} as label, t.status
      ${txnsInPeriod(s, sql`left join gateways g on g.id = t.gateway_id and g.team_id = t.team_id left join extpay_connections x on x.id = t.connection_id and x.team_id = t.team_id`)}
        and t.type in ('sale', 'verification') and t.status in ('approved', 'declined')
    )
    select key, label, grouping(key) as is_total, count(*) as attempts,
      count(*) filter (where status = 'approved') as approved, count(*) filter (where status = 'declined') as declined,
      coalesce(round(100.0 * count(*) filter (where status = 'approved') / nullif(count(*), 0), 2), 0) as approval_rate
    from a
    group by grouping sets ((key, label), ())
    order by grouping(key), count(*) desc, key nulls last`.execute(db);
  return r.rows;
}

/** Declined card attempts by response code and text, most frequent first. */
export async function declines(db: Executor, s: ReportScope): Promise<Raw[]> {
  const r = await sql<Raw>`
    with d as (
      select t.response_code as code, t.response_text as reason
      ${txnsInPeriod(s)}
        and t.type in ('sale', 'verification') and t.status = 'declined'
    )
    select code, reason, grouping(code) as is_total, count(*) as count,
      coalesce(round(100.0 * count(*) / nullif((select count(*) from d), 0), 2), 0) as share
    from d
    group by grouping sets ((code, reason), ())
    order by grouping(code), count(*) desc, code nulls last, reason nulls last`.execute(db);
  return r.rows;
}

/**
 * Per upsell (funnel step) and currency: offered = the campaign's orders created in the period
 * (not rebills) whose first payment was approved; taken = those with an approved sale for the
 * upsell. An inactive upsell is listed only when taken.
 */
export async function upsells(db: Executor, s: ReportScope): Promise<Raw[]> {
  const r = await sql<Raw>`
    with offered as (
      select o.id, o.campaign_id, o.currency
      from orders o
      where o.team_id = ${s.teamId} and o.created_at >= ${start(s)} and o.created_at < ${end(s)} and o.rebill_of is null ${testFilter(s)}
        and exists (select 1 from transactions t where t.team_id = o.team_id and t.order_id = o.id
                    and t.type in ('sale', 'verification') and t.status = 'approved' and t.upsell_id is null)
    ), per as (
      select u.id as upsell_id, u.name, u.campaign_id, u.step, f.currency, coalesce(p.taken, false) as taken, coalesce(p.revenue, 0) as revenue
      from upsells u
      join offered f on f.campaign_id = u.campaign_id
      left join lateral (
        select true as taken, sum(t.amount) as revenue from transactions t
        where t.team_id = u.team_id and t.order_id = f.id and t.upsell_id = u.id and t.type = 'sale' and t.status = 'approved'
        having count(*) > 0
      ) p on true
      where u.team_id = ${s.teamId} and (u.is_active or p.taken)
    )
    select upsell_id, name, campaign_id, step, currency, grouping(upsell_id) as is_total,
      count(*) as offered, count(*) filter (where taken) as taken,
      coalesce(round(100.0 * count(*) filter (where taken) / nullif(count(*), 0), 2), 0) as take_rate, sum(revenue) as revenue
    from per
    group by grouping sets ((upsell_id, name, campaign_id, step, currency), (currency))
    order by grouping(upsell_id), campaign_id, step, upsell_id, currency`.execute(db);
  return r.rows;
}

/**
 * Rebill cycles (one rebill order each) whose first answered attempt fell in the period, with
 * every attempt they made since: the first one's outcome, the declines, and whether a later
 * attempt paid the cycle (recovered by dunning or Rebill Now).
 */
export async function rebills(db: Executor, s: ReportScope): Promise<Raw[]> {
  const r = await sql<Raw>`
    with attempts as (
      select t.order_id, t.currency, t.status, t.amount, t.created_at, t.seq
      from transactions t
      join orders o on o.id = t.order_id and o.team_id = t.team_id
      where t.team_id = ${s.teamId} and o.rebill_of is not null ${testFilter(s)}
        and t.type = 'sale' and t.upsell_id is null and t.status in ('approved', 'declined')
    ), cycles as (
      select order_id, min(currency) as currency, min(created_at) as first_at, count(*) as attempts,
        count(*) filter (where status = 'approved') as approved, count(*) filter (where status = 'declined') as declined,
        (array_agg(status order by seq))[1] = 'approved' as first_approved,
        coalesce(sum(amount) filter (where status = 'approved'), 0) as revenue
      from attempts group by order_id
    ), dated as (
      select *, ${localDay(s, sql`first_at`)} as period from cycles where first_at >= ${start(s)} and first_at < ${end(s)}
    )
    select period, currency, grouping(period) as is_total,
      count(*) as cycles, sum(attempts) as attempts, count(*) filter (where approved > 0) as approved, sum(declined) as declined,
      count(*) filter (where first_approved) as approved_first_attempt,
      count(*) filter (where declined > 0) as dunning,
      count(*) filter (where declined > 0 and approved > 0) as recovered,
      coalesce(round(100.0 * count(*) filter (where declined > 0 and approved > 0) / nullif(count(*) filter (where declined > 0), 0), 2), 0) as recovery_rate,
      sum(revenue) as revenue
    from dated
    group by grouping sets ((period, currency), (currency))
    order by grouping(period), period, currency`.execute(db);
  return r.rows;
}
