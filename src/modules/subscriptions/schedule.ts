import { TZDate } from '@date-fns/tz';
import { addDays, addMonths, addWeeks, addYears } from 'date-fns';

/**
 * When each cycle of a card subscription is due. Cycle n (1 = the first rebill) is due on the
 * calendar day `billing_anchor + (n - anchor_cycle)` intervals in the team's time zone, at the
 * rebill hour of that day there. Counting every cycle from the one anchor (never from the previous
 * due date) clamps month ends without drifting: Jan 31 → Feb 28 (29) → Mar 31 → Apr 30. A trial
 * anchors cycle 1 at its end; a recurring offer anchors cycle 0 at the purchase.
 */
export interface BillingSchedule {
  interval_unit: string;
  interval_count: number;
  billing_anchor: Date | null;
  anchor_cycle: number;
}

export type IntervalUnit = 'day' | 'week' | 'month' | 'year';

function addIntervals(d: TZDate, unit: string, n: number): TZDate {
  switch (unit) {
    case 'day':
      return addDays(d, n);
    case 'week':
      return addWeeks(d, n);
    case 'month':
      return addMonths(d, n);
    default:
      return addYears(d, n);
  }
}

/** `at` moved to `hour`:00 of its calendar day in `timeZone` (DST-safe: the wall-clock hour there). */
export function atLocalHour(at: Date, timeZone: string, hour: number): Date {
  const local = new TZDate(at.getTime(), timeZone);
  local.setHours(hour, 0, 0, 0);
  return new Date(local.getTime());
}

/** The day cycle `cycle` is due, at the rebill hour in the team's time zone. */
export function dueAt(s: BillingSchedule, cycle: number, timeZone: string, hour: number): Date {
  if (!s.billing_anchor) throw new Error('a card subscription without a billing anchor');
  const anchor = new TZDate(s.billing_anchor.getTime(), timeZone);
  const day = addIntervals(anchor, s.interval_unit, s.interval_count * (cycle - s.anchor_cycle));
  day.setHours(hour, 0, 0, 0);
  return new Date(day.getTime());
}

/**
 * The schedule a new card subscription starts with: a trial's first rebill after its trial days
 * (cycle 1 anchored at the trial's end), a recurring offer's one interval after the purchase
 * (cycle 0 anchored at the purchase).
 */
export function initialSchedule(purchasedAt: Date, trialDays: number | null): { billing_anchor: Date; anchor_cycle: number } {
  return trialDays ? { billing_anchor: addDays(purchasedAt, trialDays), anchor_cycle: 1 } : { billing_anchor: purchasedAt, anchor_cycle: 0 };
}

/** A new next billing date chosen by the merchant: cycle `nextCycle` is due on that day, later cycles count from it. */
export function reanchor(nextBillingDay: Date, nextCycle: number): { billing_anchor: Date; anchor_cycle: number } {
  return { billing_anchor: nextBillingDay, anchor_cycle: nextCycle };
}

/** Whether `timeZone` is an IANA zone this runtime knows. */
export function isTimeZone(timeZone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone }).format(0);
    return true;
  } catch {
    return false;
  }
}
