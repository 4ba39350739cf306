import { z } from 'zod';
import { BoolQuery } from '../../app/schemas.ts';

/** The longest period a report covers, in calendar days (a leap year). */
export const MAX_REPORT_DAYS = 366;

/** A calendar day, `YYYY-MM-DD`, that exists (2025-02-30 does not). */
const Day = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a calendar day, YYYY-MM-DD')
  .refine((d) => {
    const at = new Date(`${d}T00:00:00Z`);
    return !Number.isNaN(at.getTime()) && at.toISOString().slice(0, 10) === d;
  }, 'is not a calendar day');

/** Days from `from` to `to`, both counted (calendar arithmetic, no time zone involved). */
export function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000) + 1;
}

const PeriodFields = {
  from: Day.optional().describe("First day of the period (inclusive) in the team's time zone; default: 29 days before `to`"),
  to: Day.optional().describe("Last day of the period (inclusive) in the team's time zone; default: today there"),
  is_test: BoolQuery.describe('Only test orders (`true`) or only live ones (`false`); default: both'),
  format: z.enum(['json', 'csv']).optional().describe('`csv` answers text/csv (as does `Accept: text/csv` without `format`); default JSON'),
};

/** from ≤ to and at most MAX_REPORT_DAYS, when both are given (the service checks again after defaults). */
function periodCheck(q: { from?: string | undefined; to?: string | undefined }, ctx: z.RefinementCtx) {
  if (!q.from || !q.to) return;
  const days = daysBetween(q.from, q.to);
  if (days < 1) ctx.addIssue({ code: 'custom', path: ['from'], message: 'must be on or before `to`' });
  else if (days > MAX_REPORT_DAYS) ctx.addIssue({ code: 'custom', path: ['to'], message: `the period is at most ${MAX_REPORT_DAYS} days` });
}

export const PeriodQuery = z.object(PeriodFields).strict().superRefine(periodCheck);
export type PeriodQuery = z.infer<typeof PeriodQuery>;

export const RevenueQuery = z
  .object({ ...PeriodFields, interval: z.enum(['day', 'week', 'month']).default('day').describe('One row per day (default), ISO week (from Monday) or month, per currency') })
  .strict()
  .superRefine(periodCheck);
export type RevenueQuery = z.infer<typeof RevenueQuery>;

export const APPROVAL_DIMENSIONS = ['gateway', 'bin', 'card_brand'] as const;
export type ApprovalDimension = (typeof APPROVAL_DIMENSIONS)[number];

export const ApprovalsQuery = z
  .object({ ...PeriodFields, by: z.enum(APPROVAL_DIMENSIONS).default('gateway').describe('One row per gateway (default; an extpay connection counts as one), card BIN or card brand') })
  .strict()
  .superRefine(periodCheck);
export type ApprovalsQuery = z.infer<typeof ApprovalsQuery>;

// ---- answers

const Rate = z.number().describe('Percent, two decimals (0 when nothing to divide by)');
const Amount = z.number().int().describe('Minor units of `currency`');
const Period = {
  object: z.literal('report'),
  time_zone: z.string().describe("The team's IANA time zone the days are counted in"),
  from: z.string().describe('First day (inclusive), YYYY-MM-DD'),
  to: z.string().describe('Last day (inclusive), YYYY-MM-DD'),
};

const RevenueMeasures = {
  currency: z.string(),
  orders: z.number().int().describe("Orders paid: approved first payments (and $0 card verifications) and approved rebill cycles, on the day of the payment"),
  gross: Amount.describe('Approved sales: first payments, upsells, rebills, and asynchronous payments captured later (dated by their attempt)'),
  refunds: Amount.describe('Approved refunds and voids, on their day'),
  chargebacks: z.number().int().describe('Chargebacks recorded (a dispute past the early warning) whose dispute was not won'),
  chargeback_amount: Amount,
  net: Amount.describe('gross − refunds − chargeback_amount'),
};
export const RevenueRow = z.object({ period: z.string().describe('First day of the day, week or month, YYYY-MM-DD'), ...RevenueMeasures }).meta({ id: 'RevenueReportRow' });
export const RevenueReport = z
  .object({ ...Period, report: z.literal('revenue'), interval: z.enum(['day', 'week', 'month']), rows: z.array(RevenueRow), totals: z.array(z.object(RevenueMeasures)).describe('One per currency') })
  .meta({ id: 'RevenueReport' });

const ApprovalMeasures = {
  attempts: z.number().int().describe('Card payment attempts with an answer (sales and verifications: approved + declined; pending ones are not counted)'),
  approved: z.number().int(),
  declined: z.number().int(),
  approval_rate: Rate,
};
export const ApprovalRow = z
  .object({
    key: z.string().nullable().describe('The gateway or extpay connection id, the BIN (first 6) or the brand; null when the attempt had none (e.g. no gateway could take it)'),
    label: z.string().nullable().describe("The gateway's or connection's name (`by=gateway`), else null"),
    ...ApprovalMeasures,
  })
  .meta({ id: 'ApprovalReportRow' });
export const ApprovalsReport = z
  .object({ ...Period, report: z.literal('approvals'), by: z.enum(APPROVAL_DIMENSIONS), rows: z.array(ApprovalRow), totals: z.array(z.object(ApprovalMeasures)).describe('One row') })
  .meta({ id: 'ApprovalsReport' });

const DeclineMeasures = { count: z.number().int(), share: Rate.describe('Percent of all declines in the period') };
export const DeclineRow = z
  .object({ code: z.string().nullable().describe("The gateway's response code (or ours: `bin_blocked`, `no_route`, …)"), reason: z.string().nullable().describe("The response text"), ...DeclineMeasures })
  .meta({ id: 'DeclineReportRow' });
export const DeclinesReport = z
  .object({ ...Period, report: z.literal('declines'), rows: z.array(DeclineRow), totals: z.array(z.object(DeclineMeasures)).describe('One row') })
  .meta({ id: 'DeclinesReport' });

const UpsellMeasures = {
  currency: z.string(),
  offered: z.number().int().describe("Orders that reached the step: the campaign's orders created in the period whose first payment was approved"),
  taken: z.number().int().describe('Of those, orders with an approved payment for this upsell'),
  take_rate: Rate,
  revenue: Amount.describe('Approved payments for this upsell on those orders'),
};
export const UpsellRow = z
  .object({ upsell_id: z.string(), name: z.string(), campaign_id: z.string(), step: z.number().int(), ...UpsellMeasures })
  .meta({ id: 'UpsellReportRow' });
export const UpsellsReport = z
  .object({ ...Period, report: z.literal('upsells'), rows: z.array(UpsellRow), totals: z.array(z.object(UpsellMeasures)).describe('One per currency: offers made and taken over every step') })
  .meta({ id: 'UpsellsReport' });

const RebillMeasures = {
  currency: z.string(),
  cycles: z.number().int().describe('Rebill cycles (one rebill order each) whose first attempt fell in the period'),
  attempts: z.number().int().describe('Their charge attempts with an answer, retries included'),
  approved: z.number().int().describe('Cycles paid'),
  declined: z.number().int().describe('Declined attempts'),
  approved_first_attempt: z.number().int(),
  dunning: z.number().int().describe('Cycles with at least one declined attempt'),
  recovered: z.number().int().describe('Of those, cycles paid by a later attempt (dunning retry or Rebill Now)'),
  recovery_rate: Rate.describe('recovered / dunning, percent'),
  revenue: Amount,
};
export const RebillRow = z.object({ period: z.string().describe("Day of the cycle's first attempt, YYYY-MM-DD"), ...RebillMeasures }).meta({ id: 'RebillReportRow' });
export const RebillsReport = z
  .object({ ...Period, report: z.literal('rebills'), rows: z.array(RebillRow), totals: z.array(z.object(RebillMeasures)).describe('One per currency') })
  .meta({ id: 'RebillsReport' });

export type RevenueReport = z.infer<typeof RevenueReport>;
export type ApprovalsReport = z.infer<typeof ApprovalsReport>;
export type DeclinesReport = z.infer<typeof DeclinesReport>;
export type UpsellsReport = z.infer<typeof UpsellsReport>;
export type RebillsReport = z.infer<typeof RebillsReport>;
