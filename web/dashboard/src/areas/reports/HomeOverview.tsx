import { Anchor, Card, Group, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { api, type Schemas, unwrap } from '../../lib/api.ts';
import { ApiErrorAlert } from '../../lib/errors.tsx';
import { formatMoney } from '../../lib/money.ts';
import { type ReportRange, useReport } from './reportsApi.ts';

const LAST_30: ReportRange = { from: '', to: '', is_test: '' };

type RevenueRow = Schemas['RevenueReportRow'];
type ApprovalTotals = Schemas['ApprovalsReport']['totals'][number];

interface Figures {
  gross: number;
  orders: number;
  refunds: number;
  chargebacks: number;
  chargeback_amount: number;
}

function sum(rows: readonly RevenueRow[]): Figures {
  return rows.reduce((t, r) => ({ gross: t.gross + r.gross, orders: t.orders + r.orders, refunds: t.refunds + r.refunds, chargebacks: t.chargebacks + r.chargebacks, chargeback_amount: t.chargeback_amount + r.chargeback_amount }), {
    gross: 0,
    orders: 0,
    refunds: 0,
    chargebacks: 0,
    chargeback_amount: 0,
  });
}

function Stat({ period, label, value, hint }: { period: string; label: string; value: string; hint?: string }) {
  return (
    <Card withBorder padding="sm" role="group" aria-label={`${period}: ${label}`} data-stat={label}>
      <Text size="xs" c="dimmed" tt="uppercase" fw={600}>
        {label}
      </Text>
      <Text fz="xl" fw={700}>
        {value}
      </Text>
      {hint && (
        <Text size="xs" c="dimmed">
          {hint}
        </Text>
      )}
    </Card>
  );
}

function Figures({ period, figures, approvals, currency }: { period: string; figures: Figures | null; approvals: ApprovalTotals | undefined; currency: string | null }) {
  const money = (n: number | undefined) => (figures && currency && n !== undefined ? formatMoney(n, currency) : '—');
  return (
    <SimpleGrid cols={{ base: 2, md: 5 }} role="region" aria-label={period}>
      <Stat period={period} label="Revenue" value={money(figures?.gross)} hint="Gross approved sales" />
      <Stat period={period} label="Orders" value={figures ? figures.orders.toLocaleString() : '—'} hint="Orders paid" />
      <Stat period={period} label="Approval rate" value={approvals ? `${approvals.approval_rate.toFixed(2)} %` : '—'} hint={approvals ? `${approvals.approved} of ${approvals.attempts} attempts` : undefined} />
      <Stat period={period} label="Refunds" value={money(figures?.refunds)} />
      <Stat period={period} label="Chargebacks" value={figures ? String(figures.chargebacks) : '—'} hint={figures && currency ? formatMoney(figures.chargeback_amount, currency) : undefined} />
    </SimpleGrid>
  );
}

/** Gross per day as small bars (inline SVG: no chart library on the landing page). */
function RevenueBars({ rows, currency }: { rows: readonly RevenueRow[]; currency: string }) {
  const max = Math.max(1, ...rows.map((r) => r.gross));
  const w = 600;
  const h = 90;
  const bar = w / Math.max(1, rows.length);
  const total = rows.reduce((s, r) => s + r.gross, 0);
  const best = rows.reduce<RevenueRow | null>((b, r) => (!b || r.gross > b.gross ? r : b), null);
  const label = `Gross revenue per day over the last ${rows.length} days in ${currency}: ${formatMoney(total, currency)} in all${best ? `, highest ${formatMoney(best.gross, currency)} on ${best.period}` : ''}`;
  return (
    <svg viewBox={`0 0 ${w} ${h}`} width="100%" height={h} role="img" aria-label={label} preserveAspectRatio="none">
      {rows.map((r, i) => {
        const bh = Math.round((r.gross / max) * (h - 4));
        return (
          <rect key={r.period} x={i * bar + 1} y={h - bh} width={Math.max(1, bar - 2)} height={bh} fill="var(--mantine-color-blue-6)">
            <title>{`${r.period}: ${formatMoney(r.gross, currency)}`}</title>
          </rect>
        );
      })}
    </svg>
  );
}

/**
 * The landing page's numbers for a user with revenue:view: today's and the last 30 days' revenue,
 * orders, approval rate, refunds and chargebacks, from /v1/reports in the team's time zone (the
 * API's default range ends today there), and gross per day as a small chart.
 */
export function HomeOverview() {
  const revenue = useReport('revenue', LAST_30, { interval: 'day' });
  const approvals = useReport('approvals', LAST_30, { by: 'gateway' });
  const today = revenue.data?.to;
  const approvalsToday = useQuery({
    queryKey: ['report', 'approvals', { from: today, to: today, by: 'gateway' }],
    enabled: !!today,
    queryFn: async () => {
      const body = unwrap(await api.GET('/v1/reports/approvals', { params: { query: { from: today!, to: today!, by: 'gateway', format: 'json' } } }));
      if (typeof body === 'string') throw new Error('The report answered CSV where JSON was asked for');
      return body.data;
    },
  });

  const main = revenue.data?.totals[0];
  const currency = main?.currency ?? null;
  const rows = (revenue.data?.rows ?? []).filter((r) => r.currency === currency);
  const last30: Figures | null = revenue.data ? (main ?? sum([])) : null;
  const todays = revenue.data ? sum(rows.filter((r) => r.period === today)) : null;
  const others = (revenue.data?.totals.length ?? 1) - 1;
  return (
    <Stack>
      <ApiErrorAlert error={revenue.error ?? approvals.error ?? approvalsToday.error} title="Could not load today’s numbers" />
      <Group justify="space-between" align="flex-end">
        <Title order={2} size="h4">
          Today
        </Title>
        {revenue.data && (
          <Text size="sm" c="dimmed">
            {today} · {revenue.data.time_zone}
            {currency ? ` · ${currency}` : ''}
          </Text>
        )}
      </Group>
      <Figures period="Today" figures={todays} approvals={approvalsToday.data?.totals[0]} currency={currency} />
      <Group justify="space-between" align="flex-end">
        <Title order={2} size="h4">
          Last 30 days
        </Title>
        {revenue.data && (
          <Text size="sm" c="dimmed">
            {revenue.data.from} to {revenue.data.to}, live and test orders{others > 0 ? ` · ${others} more currencies in the Revenue report` : ''}
          </Text>
        )}
      </Group>
      <Figures period="Last 30 days" figures={last30} approvals={approvals.data?.totals[0]} currency={currency} />
      {revenue.data &&
        (currency && rows.length > 0 ? (
          <Card withBorder padding="sm">
            <Group justify="space-between">
              <Text fw={600} size="sm">
                Revenue per day ({currency})
              </Text>
              <Anchor component={Link} to="/reports/revenue" size="sm">
                Revenue report
              </Anchor>
            </Group>
            <RevenueBars rows={rows} currency={currency} />
          </Card>
        ) : (
          <Text c="dimmed">No paid orders in the last 30 days.</Text>
        ))}
    </Stack>
  );
}
