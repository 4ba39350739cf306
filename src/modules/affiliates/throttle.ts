import type { Row } from '../../db/schema.ts';

/** Why a conversion was (or was not) throttled. */
export type ThrottleReason = 'requested' | 'automatic' | 'none';

export interface ThrottleInput {
  /** The order arrived with `is_throttle: true` (on any of its requests before the conversion). */
  requested: boolean;
  automatic: boolean;
  /** Basis points (30 % = 3000); null: no throttling configured. */
  rateBp: number | null;
  conversionsBefore: number;
  throttledBefore: number;
}

/**
 * Spec 2.3, decided once per conversion under the affiliate's row lock:
 * - requested (`is_throttle: true`): throttled, and it counts toward the rate;
 * - otherwise, with automatic throttling on and a rate set, throttled automatically only while the
 *   throttled count, this one included, stays within the rate of the conversions, this one included:
 *   (throttled_before + 1) ≤ ⌊rate × (conversions_before + 1)⌋ — so the total equals the rate as
 *   closely as whole orders allow and automatic throttling never takes it above;
 * - otherwise not throttled (`false` or omitted never un-throttles: a requested order is throttled).
 * Integer arithmetic only: ⌊bp × n / 10000⌋.
 */
export function decideThrottle(i: ThrottleInput): { throttled: boolean; reason: ThrottleReason } {
  if (i.requested) return { throttled: true, reason: 'requested' };
  if (i.automatic && i.rateBp !== null && (i.throttledBefore + 1) * 10_000 <= i.rateBp * (i.conversionsBefore + 1)) {
    return { throttled: true, reason: 'automatic' };
  }
  return { throttled: false, reason: 'none' };
}

/** The counting scope of a conversion: a campaign with its own rate is counted on its own, else the affiliate as a whole (''). */
export function scopeOf(affiliate: Row<'affiliates'>, campaignId: string): { scope: string; rateBp: number | null } {
  const perCampaign = affiliate.campaign_throttle_bp[campaignId];
  if (perCampaign !== undefined) return { scope: campaignId, rateBp: perCampaign };
  return { scope: '', rateBp: affiliate.throttle_rate_bp };
}

export interface SimulatedDecision {
  order_number: string;
  requested: boolean;
  throttled: boolean;
  reason: ThrottleReason;
  conversions_before: number;
  throttled_before: number;
}

export interface Simulation {
  conversions: number;
  requested: number;
  automatic: number;
  throttled: number;
  /** throttled ÷ conversions, as a percentage with two decimals. */
  throttled_share: number;
  decisions?: SimulatedDecision[];
}

export const MAX_SIMULATED_DECISIONS = 10_000;

/** Replays conversions in order with another rate, counting from zero at the first one: what decideThrottle would have answered. */
export function replay(conversions: Array<{ order_id: string; requested: boolean }>, rateBp: number | null, automatic: boolean, withDecisions: boolean): Simulation {
  let throttled = 0;
  let requested = 0;
  let auto = 0;
  const decisions: SimulatedDecision[] = [];
  conversions.forEach((c, n) => {
    const d = decideThrottle({ requested: c.requested, automatic, rateBp, conversionsBefore: n, throttledBefore: throttled });
    if (withDecisions && decisions.length < MAX_SIMULATED_DECISIONS) {
      decisions.push({ order_number: c.order_id, requested: c.requested, throttled: d.throttled, reason: d.reason, conversions_before: n, throttled_before: throttled });
    }
    if (d.throttled) throttled++;
    if (d.reason === 'requested') requested++;
    if (d.reason === 'automatic') auto++;
  });
  const share = conversions.length ? Math.round((throttled / conversions.length) * 10_000) / 100 : 0;
  return { conversions: conversions.length, requested, automatic: auto, throttled, throttled_share: share, ...(withDecisions ? { decisions } : {}) };
}

/** Basis points ↔ the API's percentage. */
export const toBp = (percent: number): number => Math.round(percent * 100);
export const toPercent = (bp: number | null): number | null => (bp === null ? null : bp / 100);
