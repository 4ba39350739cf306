import { ApiError } from '../../app/errors.ts';
import type { Clock } from '../../app/clock.ts';
import type { Executor, Store } from '../../db/database.ts';
import * as repo from './repo.ts';
import {
  type ApprovalsQuery,
  type ApprovalsReport,
  daysBetween,
  type DeclinesReport,
  MAX_REPORT_DAYS,
  type PeriodQuery,
  type RebillsReport,
  type RevenueQuery,
  type RevenueReport,
  type UpsellsReport,
} from './schemas.ts';

type Raw = Record<string, unknown>;

/** bigint and numeric columns arrive as strings from pg: every measure is a number on the wire. */
const num = (v: unknown) => Number(v ?? 0);
const str = (v: unknown) => (v === null || v === undefined ? null : String(v));
const isTotal = (r: Raw) => num(r.is_total) === 1;

function measures<K extends string>(r: Raw, keys: readonly K[]): Record<K, number> {
  return Object.fromEntries(keys.map((k) => [k, num(r[k])])) as Record<K, number>;
}

const REVENUE = ['orders', 'gross', 'refunds', 'chargebacks', 'chargeback_amount', 'net'] as const;
const APPROVAL = ['attempts', 'approved', 'declined', 'approval_rate'] as const;
const DECLINE = ['count', 'share'] as const;
const UPSELL = ['offered', 'taken', 'take_rate', 'revenue'] as const;
const REBILL = ['cycles', 'attempts', 'approved', 'declined', 'approved_first_attempt', 'dunning', 'recovered', 'recovery_rate', 'revenue'] as const;

/** The services a report needs from elsewhere: the team's time zone. */
export interface ReportDeps {
  timeZoneOf(db: Executor, teamId: string): Promise<string>;
  clock: Clock;
}

/**
 * The reports under /v1/reports: read-only SQL over orders, transactions, upsells and disputes,
 * in the team's time zone. Each answers its rows and, from the same statement, its totals.
 */
export class ReportsService {
  constructor(
    private readonly store: Store,
    private readonly deps: ReportDeps,
  ) {}

  async revenue(teamId: string, q: RevenueQuery): Promise<RevenueReport> {
    return this.store.run(async (db) => {
      const s = await this.scope(db, teamId, q);
      const raw = await repo.revenue(db, s, q.interval);
      return {
        ...this.head(s),
        report: 'revenue',
        interval: q.interval,
        rows: raw.filter((r) => !isTotal(r)).map((r) => ({ period: String(r.period), currency: String(r.currency).trim(), ...measures(r, REVENUE) })),
        totals: raw.filter(isTotal).map((r) => ({ currency: String(r.currency).trim(), ...measures(r, REVENUE) })),
      };
    });
  }

  async approvals(teamId: string, q: ApprovalsQuery): Promise<ApprovalsReport> {
    return this.store.run(async (db) => {
      const s = await this.scope(db, teamId, q);
      const raw = await repo.approvals(db, s, q.by);
      return {
        ...this.head(s),
        report: 'approvals',
        by: q.by,
        rows: raw.filter((r) => !isTotal(r)).map((r) => ({ key: str(r.key), label: str(r.label), ...measures(r, APPROVAL) })),
        totals: raw.filter(isTotal).map((r) => measures(r, APPROVAL)),
      };
    });
  }

  async declines(teamId: string, q: PeriodQuery): Promise<DeclinesReport> {
    return this.store.run(async (db) => {
      const s = await this.scope(db, teamId, q);
      const raw = await repo.declines(db, s);
      return {
        ...this.head(s),
        report: 'declines',
        rows: raw.filter((r) => !isTotal(r)).map((r) => ({ code: str(r.code), reason: str(r.reason), ...measures(r, DECLINE) })),
        totals: raw.filter(isTotal).map((r) => measures(r, DECLINE)),
      };
    });
  }

  async upsells(teamId: string, q: PeriodQuery): Promise<UpsellsReport> {
    return this.store.run(async (db) => {
      const s = await this.scope(db, teamId, q);
      const raw = await repo.upsells(db, s);
      return {
        ...this.head(s),
        report: 'upsells',
        rows: raw
          .filter((r) => !isTotal(r))
          .map((r) => ({ upsell_id: String(r.upsell_id), name: String(r.name), campaign_id: String(r.campaign_id), step: num(r.step), currency: String(r.currency).trim(), ...measures(r, UPSELL) })),
        totals: raw.filter(isTotal).map((r) => ({ currency: String(r.currency).trim(), ...measures(r, UPSELL) })),
      };
    });
  }

  async rebills(teamId: string, q: PeriodQuery): Promise<RebillsReport> {
    return this.store.run(async (db) => {
      const s = await this.scope(db, teamId, q);
      const raw = await repo.rebills(db, s);
      return {
        ...this.head(s),
        report: 'rebills',
        rows: raw.filter((r) => !isTotal(r)).map((r) => ({ period: String(r.period), currency: String(r.currency).trim(), ...measures(r, REBILL) })),
        totals: raw.filter(isTotal).map((r) => ({ currency: String(r.currency).trim(), ...measures(r, REBILL) })),
      };
    });
  }

  private head(s: repo.ReportScope) {
    return { object: 'report' as const, time_zone: s.timeZone, from: s.from, to: s.to };
  }

  /**
   * The period in the team's time zone: `to` defaults to today there, `from` to 29 days before
   * `to`. The schema already refused a bad pair; a default can still make one (a `from` after today).
   */
  private async scope(db: Executor, teamId: string, q: PeriodQuery): Promise<repo.ReportScope> {
    const timeZone = await this.deps.timeZoneOf(db, teamId);
    const to = q.to ?? localDay(this.deps.clock.now(), timeZone);
    const from = q.from ?? shiftDay(to, -29);
    const days = daysBetween(from, to);
    if (days < 1) throw new ApiError('validation_failed', `from: must be on or before to (${to})`, { fields: [{ path: 'query.from', message: `must be on or before \`to\` (${to})` }] });
    if (days > MAX_REPORT_DAYS) throw new ApiError('validation_failed', `The period is at most ${MAX_REPORT_DAYS} days.`, { fields: [{ path: 'query.from', message: `the period is at most ${MAX_REPORT_DAYS} days` }] });
    return { teamId, timeZone, from, to, isTest: q.is_test };
  }
}

/** The calendar day `at` falls on in `timeZone`, YYYY-MM-DD. */
export function localDay(at: Date, timeZone: string): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(at);
}

function shiftDay(day: string, days: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
}
