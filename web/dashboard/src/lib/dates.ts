import { useSession } from './session.tsx';

/** An ISO time as date and time in a time zone (the team's): `12 Mar 2026, 14:05`. */
export function formatDateTime(iso: string | null | undefined, timeZone: string): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return new Intl.DateTimeFormat(undefined, { timeZone, dateStyle: 'medium', timeStyle: 'short' }).format(d);
}

/** An ISO time as a date in a time zone: `12 Mar 2026`. */
export function formatDate(iso: string | null | undefined, timeZone: string): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return new Intl.DateTimeFormat(undefined, { timeZone, dateStyle: 'medium' }).format(d);
}

/** The offset of a time zone at an instant, in minutes east of UTC. */
function offsetMinutes(timeZone: string, at: Date): number {
  const parts = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' }).formatToParts(at);
  const get = (t: string) => Number(parts.find((p) => p.type === t)?.value);
  const asUtc = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'));
  return Math.round((asUtc - at.getTime()) / 60_000);
}

/**
 * A calendar day (`2026-03-12`) at the start (or the end) in a time zone, as an ISO instant: what a
 * date-range filter sends as `created_gte` / `created_lte` so "12 March" is the team's 12 March.
 */
export function dayBoundary(day: string, timeZone: string, end = false): string {
  const [y, m, d] = day.split('-').map(Number) as [number, number, number];
  const localMs = end ? Date.UTC(y, m - 1, d, 23, 59, 59, 999) : Date.UTC(y, m - 1, d);
  // Two passes: the offset at the guessed instant, then at the corrected one (DST edges).
  let utc = localMs - offsetMinutes(timeZone, new Date(localMs)) * 60_000;
  utc = localMs - offsetMinutes(timeZone, new Date(utc)) * 60_000;
  return new Date(utc).toISOString();
}

/** Formatters bound to the active team's time zone. */
export function useDates() {
  const { timeZone } = useSession();
  return {
    timeZone,
    dateTime: (iso: string | null | undefined) => formatDateTime(iso, timeZone),
    date: (iso: string | null | undefined) => formatDate(iso, timeZone),
  };
}
