/** The longest a delivery waits before its next attempt, whatever the receiver asks for. */
export const MAX_RETRY_DELAY_MS = 24 * 3_600_000;

/** ±20%: deliveries that failed together (an endpoint outage) do not all come back at once. */
export const RETRY_JITTER = 0.2;

/**
 * The delay before the next attempt after `attemptsMade` attempts have failed, or null when
 * the schedule is used up. `scheduleMs[i]` is the delay before retry i + 1, so a delivery is
 * attempted at most `scheduleMs.length + 1` times.
 */
export function retryDelayMs(scheduleMs: readonly number[], attemptsMade: number, random: () => number = Math.random, jitter = RETRY_JITTER): number | null {
  const base = scheduleMs[attemptsMade - 1];
  if (base === undefined) return null;
  const factor = 1 + (random() * 2 - 1) * jitter;
  return Math.min(MAX_RETRY_DELAY_MS, Math.max(0, Math.round(base * factor)));
}

/**
 * A Retry-After header as milliseconds from `now`: delta-seconds or an HTTP-date, capped at
 * 24 h; null when absent or unreadable (the schedule applies).
 */
export function retryAfterMs(header: string | undefined, now: number = Date.now()): number | null {
  if (header === undefined) return null;
  const value = header.trim();
  if (value === '') return null;
  if (/^\d+$/.test(value)) return Math.min(MAX_RETRY_DELAY_MS, Number(value) * 1000);
  // An HTTP-date names its weekday and month; Date.parse alone would read '-5' as a year.
  const at = /[A-Za-z]{3}/.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(at)) return null;
  return Math.min(MAX_RETRY_DELAY_MS, Math.max(0, at - now));
}
