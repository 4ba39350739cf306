import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../app/context.ts';
import { Envelope, ok } from '../../app/envelope.ts';
import { type Http, teamOf } from '../../app/http.ts';
import { reportCsv } from './csv.ts';
import {
  ApprovalRow,
  ApprovalsQuery,
  ApprovalsReport,
  DeclineRow,
  DeclinesReport,
  PeriodQuery,
  RebillRow,
  RebillsReport,
  RevenueQuery,
  RevenueReport,
  RevenueRow,
  UpsellRow,
  UpsellsReport,
} from './schemas.ts';
import { ReportsService } from './service.ts';

const tags = ['reports'];

const COMMON =
  "Days are calendar days in the team's time zone (`GET /v1/team`): an order at 23:30 UTC is on the next day for a team in UTC+1. " +
  '`from` and `to` are inclusive (`YYYY-MM-DD`, at most 366 days, default the last 30 days); a bad day, `from` after `to` or a longer period is 422. ' +
  'Amounts are integers in minor units of their `currency`; rates are percents with two decimals. `rows` and `totals` come from one SQL statement. ' +
  'CSV: `?format=csv`, or `Accept: text/csv` without `format`, answers `text/csv` as an attachment: a header of the row fields, the rows, then each total as a line whose first column is `total` — the same numbers as the JSON. ' +
  'Needs `revenue:view`; a caller scoped to affiliate ids is refused (403): these reports cover every order.';

const CsvBody = z.string().describe('CSV (RFC 4180, CRLF line ends): a header, the rows, then the totals with `total` in the first column');

/** JSON in the envelope, or CSV: both documented, so the contract check and the SDK know them. */
const answers = <T extends z.ZodType>(report: T) => ({
  200: {
    description: 'The report',
    content: { 'application/json': { schema: Envelope(report) }, 'text/csv': { schema: CsvBody } },
  },
});

/** `format` decides; without it, an Accept header naming text/csv does. */
function wantsCsv(req: FastifyRequest): boolean {
  const format = (req.query as { format?: 'json' | 'csv' }).format;
  if (format) return format === 'csv';
  return /\btext\/csv\b/i.test(req.headers.accept ?? '');
}

interface Answer {
  report: string;
  from: string;
  to: string;
  rows: Record<string, unknown>[];
  totals: Record<string, unknown>[];
}

function send(req: FastifyRequest, reply: FastifyReply, columns: z.ZodObject, data: Answer) {
  if (!wantsCsv(req)) return reply.send(ok(data));
  return reply
    .type('text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="${data.report}-${data.from}-to-${data.to}.csv"`)
    .send(reportCsv(Object.keys(columns.shape), data.rows, data.totals));
}

export function registerReportRoutes(app: Http, ctx: AppContext): void {
  const reports = new ReportsService(ctx.store, { timeZoneOf: (db, teamId) => ctx.services.teams.timeZoneOf(db, teamId), clock: ctx.clock });
  const config = { permission: 'revenue:view' } as const;

  app.get(
    '/v1/reports/revenue',
    {
      config,
      schema: {
        tags,
        operationId: 'getRevenueReport',
        summary: 'Revenue and orders per day',
        description:
          'Per day (or ISO week, or month) and currency, every day of the period listed for each currency with activity: `orders` paid, `gross` (approved sales: first payments, upsells, rebills, asynchronous payments captured later — dated by their attempt), ' +
          '`refunds` (approved refunds and voids, on their day), `chargebacks` and `chargeback_amount` (chargebacks the ledger recorded — a dispute past its early warning, on the day it was recorded — unless the dispute was won since; early warnings alone are not counted), ' +
          '`net` = gross − refunds − chargeback_amount; `totals` per currency. ' +
          COMMON,
        querystring: RevenueQuery,
        response: answers(RevenueReport),
      },
    },
    async (req, reply) => send(req, reply, RevenueRow, await reports.revenue(teamOf(req), req.query)),
  );

  app.get(
    '/v1/reports/approvals',
    {
      config,
      schema: {
        tags,
        operationId: 'getApprovalsReport',
        summary: 'Approval rate by gateway, BIN or card brand',
        description:
          'Card payment attempts with an answer (sales and $0 verifications of first payments, upsells and rebills; router retries are attempts of their own; pending attempts are left out): `attempts`, `approved`, `declined`, `approval_rate`, ' +
          'most attempts first; `totals` has one row. ' +
          COMMON,
        querystring: ApprovalsQuery,
        response: answers(ApprovalsReport),
      },
    },
    async (req, reply) => send(req, reply, ApprovalRow, await reports.approvals(teamOf(req), req.query)),
  );

  app.get(
    '/v1/reports/declines',
    {
      config,
      schema: {
        tags,
        operationId: 'getDeclinesReport',
        summary: 'Decline reasons',
        description: "Declined card attempts by the gateway's response code and text (ours for refusals without a gateway call), most frequent first, with each one's share of all declines. " + COMMON,
        querystring: PeriodQuery,
        response: answers(DeclinesReport),
      },
    },
    async (req, reply) => send(req, reply, DeclineRow, await reports.declines(teamOf(req), req.query)),
  );

  app.get(
    '/v1/reports/upsells',
    {
      config,
      schema: {
        tags,
        operationId: 'getUpsellsReport',
        summary: 'Upsell take rate per funnel step',
        description:
          "Per upsell (funnel step) and currency: `offered` — orders that reached the step, i.e. the upsell's campaign's orders created in the period (rebills aside) whose first payment was approved; " +
          '`taken` — of those, orders with an approved payment for the upsell (whenever it was paid); `take_rate`; `revenue` of those payments. An inactive upsell is listed only when taken. ' +
          '`totals` per currency sum every step (offers made and taken). ' +
          COMMON,
        querystring: PeriodQuery,
        response: answers(UpsellsReport),
      },
    },
    async (req, reply) => send(req, reply, UpsellRow, await reports.upsells(teamOf(req), req.query)),
  );

  app.get(
    '/v1/reports/rebills',
    {
      config,
      schema: {
        tags,
        operationId: 'getRebillsReport',
        summary: 'Rebill recovery rate',
        description:
          "Rebill cycles (one rebill order each) by the day of their first charge attempt, and currency: `cycles`, `attempts` (retries included, whenever made), cycles `approved`, `declined` attempts, `approved_first_attempt`, " +
          '`dunning` (cycles with a declined attempt), `recovered` (of those, paid by a later dunning retry or Rebill Now), `recovery_rate` = recovered / dunning, `revenue`; `totals` per currency. ' +
          'A cycle that failed without a charge attempt (no saved card) is not counted. ' +
          COMMON,
        querystring: PeriodQuery,
        response: answers(RebillsReport),
      },
    },
    async (req, reply) => send(req, reply, RebillRow, await reports.rebills(teamOf(req), req.query)),
  );
}
