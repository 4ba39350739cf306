import { iso } from '../../app/schemas.ts';
import type { Row } from '../../db/schema.ts';
import { toPercent } from './throttle.ts';

/** The API's view of an affiliate. An affiliate-scoped caller never sees the throttling settings. */
export function affiliateView(a: Row<'affiliates'>, opts: { scoped: boolean }) {
  const base = {
    object: 'affiliate' as const,
    id: a.id,
    name: a.name,
    status: a.status,
    commission: {
      type: a.commission_type,
      amount: a.commission_amount,
      percent: toPercent(a.commission_percent_bp),
      on_upsells: a.commission_on_upsells,
      on_rebills: a.commission_on_rebills,
      hold_days: a.commission_hold_days,
    },
    postback_url: a.postback_url,
    postback_events: a.postback_events,
    pixel_html: a.pixel_html,
    created_at: a.created_at.toISOString(),
    updated_at: a.updated_at.toISOString(),
  };
  if (opts.scoped) return base;
  return {
    ...base,
    throttle_rate: toPercent(a.throttle_rate_bp),
    campaign_throttle_rates: Object.fromEntries(Object.entries(a.campaign_throttle_bp).map(([k, v]) => [k, v / 100])),
    automatic_throttling: a.automatic_throttling,
  };
}

export function settingsView(s: Pick<Row<'affiliate_settings'>, 'attribution' | 'commission_hold_days'>) {
  return { object: 'affiliate_settings' as const, attribution: s.attribution, commission_hold_days: s.commission_hold_days };
}

export function conversionView(c: Row<'affiliate_conversions'>) {
  return {
    object: 'throttle_decision' as const,
    id: c.id,
    order_number: c.order_id,
    affiliate_id: c.affiliate_id,
    campaign_id: c.campaign_id,
    transaction_id: c.transaction_id,
    counted_in: c.scope === '' ? ('affiliate' as const) : ('campaign' as const),
    conversions_before: c.conversions_before,
    throttled_before: c.throttled_before,
    rate: toPercent(c.rate_bp),
    automatic_throttling: c.automatic,
    requested: c.requested,
    throttled: c.throttled,
    reason: c.reason,
    amount: c.amount,
    currency: c.currency,
    created_at: c.created_at.toISOString(),
  };
}

const subs = (r: { sub1: string | null; sub2: string | null; sub3: string | null; sub4: string | null; sub5: string | null }) => ({ sub1: r.sub1, sub2: r.sub2, sub3: r.sub3, sub4: r.sub4, sub5: r.sub5 });

export function commissionView(c: Row<'affiliate_commissions'>) {
  return {
    object: 'affiliate_commission' as const,
    id: c.id,
    affiliate_id: c.affiliate_id,
    order_number: c.order_id,
    kind: c.kind,
    transaction_id: c.transaction_id,
    amount: c.amount,
    currency: c.currency,
    status: c.status,
    payable_at: c.payable_at.toISOString(),
    reversed_at: iso(c.reversed_at),
    reversal_reason: c.reversal_reason,
    ...subs(c),
    created_at: c.created_at.toISOString(),
  };
}

export function postbackView(p: Row<'affiliate_postbacks'>) {
  return {
    object: 'affiliate_postback' as const,
    id: p.id,
    affiliate_id: p.affiliate_id,
    order_number: p.order_id,
    event: p.event,
    url: p.url,
    status: p.status,
    attempt_count: p.attempt_count,
    next_attempt_at: iso(p.next_attempt_at),
    last_status_code: p.last_status_code,
    last_error: p.last_error,
    created_at: p.created_at.toISOString(),
    updated_at: p.updated_at.toISOString(),
  };
}

export function postbackAttemptView(a: Row<'affiliate_postback_attempts'>) {
  return {
    object: 'affiliate_postback_attempt' as const,
    id: a.id,
    attempt: a.attempt,
    status_code: a.status_code,
    duration_ms: a.duration_ms,
    response_body: a.response_body,
    error: a.error,
    created_at: a.created_at.toISOString(),
  };
}
