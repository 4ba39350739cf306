import { useQuery } from '@tanstack/react-query';
import { api, type Schemas, unwrap } from '../../lib/api.ts';

export const REPORTS = ['revenue', 'approvals', 'declines', 'upsells', 'rebills'] as const;
export type ReportName = (typeof REPORTS)[number];

export const REPORT_LABELS: Record<ReportName, string> = {
  revenue: 'Revenue',
  approvals: 'Approvals',
  declines: 'Declines',
  upsells: 'Upsell take rate',
  rebills: 'Rebill recovery',
};

/** The range and filters every report takes; empty from/to lets the API choose (the last 30 days ending today in the team's time zone). */
export interface ReportRange {
  from: string;
  to: string;
  is_test: '' | 'true' | 'false';
}

export interface ReportAnswers {
  revenue: Schemas['RevenueReport'];
  approvals: Schemas['ApprovalsReport'];
  declines: Schemas['DeclinesReport'];
  upsells: Schemas['UpsellsReport'];
  rebills: Schemas['RebillsReport'];
}

/** The query string of a report: the range, is_test and the report's own parameters (interval, by). */
export function reportQuery(range: ReportRange, extra: Record<string, string> = {}): Record<string, string> {
  const q: Record<string, string> = {};
  if (range.from) q.from = range.from;
  if (range.to) q.to = range.to;
  if (range.is_test) q.is_test = range.is_test;
  return { ...q, ...extra };
}

/** The URL of the API's CSV of a report for exactly the range an answer covered (a link the browser downloads with the session cookie). */
export function csvUrl(report: ReportName, answer: { from: string; to: string }, range: ReportRange, extra: Record<string, string> = {}): string {
  const q = new URLSearchParams({ ...reportQuery({ ...range, from: answer.from, to: answer.to }, extra), format: 'csv' });
  return `/v1/reports/${report}?${q.toString()}`;
}

/** The JSON body's data (the paths also document their text/csv answer, which a JSON call never gets). */
function dataOf<T>(body: string | { data: T }): T {
  if (typeof body === 'string') throw new Error('The report answered CSV where JSON was asked for');
  return body.data;
}

async function fetchReport<R extends ReportName>(report: R, query: Record<string, string>): Promise<ReportAnswers[R]> {
  // The five paths share their query shape; the SDK types each one, so go through a switch.
  const params = { query: { ...query, format: 'json' } as never };
  switch (report) {
    case 'revenue':
      return dataOf(unwrap(await api.GET('/v1/reports/revenue', { params }))) as ReportAnswers[R];
    case 'approvals':
      return dataOf(unwrap(await api.GET('/v1/reports/approvals', { params }))) as ReportAnswers[R];
    case 'declines':
      return dataOf(unwrap(await api.GET('/v1/reports/declines', { params }))) as ReportAnswers[R];
    case 'upsells':
      return dataOf(unwrap(await api.GET('/v1/reports/upsells', { params }))) as ReportAnswers[R];
    default:
      return dataOf(unwrap(await api.GET('/v1/reports/rebills', { params }))) as ReportAnswers[R];
  }
}

export function useReport<R extends ReportName>(report: R, range: ReportRange, extra: Record<string, string> = {}) {
  const query = reportQuery(range, extra);
  return useQuery({ queryKey: ['report', report, query], queryFn: () => fetchReport(report, query) });
}
