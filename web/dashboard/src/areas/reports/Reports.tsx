import { BarChart, LineChart } from '@mantine/charts';
import { Select } from '@mantine/core';
import { useState } from 'react';
import { ReportFrame } from './ReportsPage.tsx';
import { type Column, formatMajor, major, ReportTable } from './ReportTable.tsx';
import { csvUrl, type ReportRange, useReport } from './reportsApi.ts';

/** The currencies a report's totals list; a chart shows one at a time. */
function CurrencyPicker({ currencies, value, onChange }: { currencies: string[]; value: string | null; onChange: (c: string) => void }) {
  if (currencies.length < 2) return null;
  return <Select label="Chart currency" data={currencies} value={value} onChange={(v) => v && onChange(v)} w={130} allowDeselect={false} />;
}

const REVENUE_COLUMNS: Column[] = [
  { key: 'period', label: 'Period', kind: 'text' },
  { key: 'currency', label: 'Currency', kind: 'text' },
  { key: 'orders', label: 'Orders', kind: 'int' },
  { key: 'gross', label: 'Gross', kind: 'money' },
  { key: 'refunds', label: 'Refunds', kind: 'money' },
  { key: 'chargebacks', label: 'Chargebacks', kind: 'int' },
  { key: 'chargeback_amount', label: 'Chargeback amount', kind: 'money' },
  { key: 'net', label: 'Net', kind: 'money' },
];

export function RevenueReport({ range }: { range: ReportRange }) {
  const [interval, setInterval] = useState<'day' | 'week' | 'month'>('day');
  const q = useReport('revenue', range, { interval });
  const currencies = q.data?.totals.map((t) => t.currency) ?? [];
  const [picked, setPicked] = useState<string | null>(null);
  const currency = picked && currencies.includes(picked) ? picked : (currencies[0] ?? null);
  const chart = (q.data?.rows ?? [])
    .filter((r) => r.currency === currency)
    .map((r) => ({ period: r.period, Gross: major(r.gross, r.currency), Refunds: major(r.refunds, r.currency), Chargebacks: major(r.chargeback_amount, r.currency), Net: major(r.net, r.currency) }));
  return (
    <ReportFrame
      title="Revenue"
      answer={q.data}
      csv={q.data ? csvUrl('revenue', q.data, range, { interval }) : null}
      error={q.error}
      loading={q.isFetching}
      controls={
        <>
          <Select
            label="Interval"
            data={[
              { value: 'day', label: 'Day' },
              { value: 'week', label: 'Week' },
              { value: 'month', label: 'Month' },
            ]}
            value={interval}
            onChange={(v) => v && setInterval(v as typeof interval)}
            allowDeselect={false}
            w={120}
          />
          <CurrencyPicker currencies={currencies} value={currency} onChange={setPicked} />
        </>
      }
    >
      {chart.length > 0 && currency && (
        <div role="img" aria-label={`Revenue per ${interval} in ${currency}: gross, refunds, chargebacks and net`}>
          <BarChart
            h={280}
            data={chart}
            dataKey="period"
            series={[
              { name: 'Gross', color: 'blue.6' },
              { name: 'Refunds', color: 'orange.6' },
              { name: 'Chargebacks', color: 'red.6' },
              { name: 'Net', color: 'teal.6' },
            ]}
            valueFormatter={(v) => formatMajor(v, currency)}
            withLegend
          />
        </div>
      )}
      {q.data && <ReportTable label="Revenue report" columns={REVENUE_COLUMNS} rows={q.data.rows} totals={q.data.totals} />}
    </ReportFrame>
  );
}

export function ApprovalsReport({ range }: { range: ReportRange }) {
  const [by, setBy] = useState<'gateway' | 'bin' | 'card_brand'>('gateway');
  const q = useReport('approvals', range, { by });
  const keyLabel = by === 'gateway' ? 'Gateway' : by === 'bin' ? 'BIN' : 'Card brand';
  const columns: Column[] = [
    { key: 'key', label: keyLabel, kind: 'text', render: (r) => (r.label ? `${String(r.label)} (${String(r.key)})` : r.key === null ? 'None' : String(r.key)) },
    { key: 'attempts', label: 'Attempts', kind: 'int' },
    { key: 'approved', label: 'Approved', kind: 'int' },
    { key: 'declined', label: 'Declined', kind: 'int' },
    { key: 'approval_rate', label: 'Approval rate', kind: 'pct' },
  ];
  const chart = (q.data?.rows ?? []).map((r) => ({ key: r.label ?? r.key ?? 'None', Approved: r.approved, Declined: r.declined }));
  return (
    <ReportFrame
      title="Approvals"
      answer={q.data}
      csv={q.data ? csvUrl('approvals', q.data, range, { by }) : null}
      error={q.error}
      loading={q.isFetching}
      controls={
        <Select
          label="By"
          data={[
            { value: 'gateway', label: 'Gateway' },
            { value: 'bin', label: 'BIN' },
            { value: 'card_brand', label: 'Card brand' },
          ]}
          value={by}
          onChange={(v) => v && setBy(v as typeof by)}
          allowDeselect={false}
          w={140}
        />
      }
    >
      {chart.length > 0 && (
        <div role="img" aria-label={`Approved and declined attempts by ${keyLabel.toLowerCase()}`}>
          <BarChart h={240} data={chart} dataKey="key" type="stacked" series={[{ name: 'Approved', color: 'teal.6' }, { name: 'Declined', color: 'red.6' }]} withLegend />
        </div>
      )}
      {q.data && <ReportTable label="Approvals report" columns={columns} rows={q.data.rows} totals={q.data.totals} />}
    </ReportFrame>
  );
}

export function DeclinesReport({ range }: { range: ReportRange }) {
  const q = useReport('declines', range);
  const columns: Column[] = [
    { key: 'code', label: 'Code', kind: 'text' },
    { key: 'reason', label: 'Reason', kind: 'text' },
    { key: 'count', label: 'Declines', kind: 'int' },
    { key: 'share', label: 'Share', kind: 'pct' },
  ];
  const chart = (q.data?.rows ?? []).slice(0, 10).map((r) => ({ code: r.code ?? 'none', Declines: r.count }));
  return (
    <ReportFrame title="Decline reasons" answer={q.data} csv={q.data ? csvUrl('declines', q.data, range) : null} error={q.error} loading={q.isFetching}>
      {chart.length > 0 && (
        <div role="img" aria-label="The ten most frequent decline codes">
          <BarChart h={220} data={chart} dataKey="code" orientation="vertical" yAxisProps={{ width: 140 }} series={[{ name: 'Declines', color: 'red.6' }]} />
        </div>
      )}
      {q.data && <ReportTable label="Declines report" columns={columns} rows={q.data.rows} totals={q.data.totals} />}
    </ReportFrame>
  );
}

export function UpsellsReport({ range }: { range: ReportRange }) {
  const q = useReport('upsells', range);
  const columns: Column[] = [
    { key: 'campaign_id', label: 'Campaign', kind: 'text' },
    { key: 'step', label: 'Step', kind: 'int' },
    { key: 'name', label: 'Upsell', kind: 'text' },
    { key: 'offered', label: 'Offered', kind: 'int' },
    { key: 'taken', label: 'Taken', kind: 'int' },
    { key: 'take_rate', label: 'Take rate', kind: 'pct' },
    { key: 'revenue', label: 'Revenue', kind: 'money' },
  ];
  const rows = [...(q.data?.rows ?? [])].sort((a, b) => a.campaign_id.localeCompare(b.campaign_id) || a.step - b.step);
  return (
    <ReportFrame title="Upsell take rate per funnel step" answer={q.data} csv={q.data ? csvUrl('upsells', q.data, range) : null} error={q.error} loading={q.isFetching}>
      {q.data && <ReportTable label="Upsells report" columns={columns} rows={rows} totals={q.data.totals} />}
    </ReportFrame>
  );
}

export function RebillsReport({ range }: { range: ReportRange }) {
  const q = useReport('rebills', range);
  const columns: Column[] = [
    { key: 'period', label: 'Day', kind: 'text' },
    { key: 'currency', label: 'Currency', kind: 'text' },
    { key: 'cycles', label: 'Cycles', kind: 'int' },
    { key: 'attempts', label: 'Attempts', kind: 'int' },
    { key: 'approved', label: 'Paid', kind: 'int' },
    { key: 'declined', label: 'Declined attempts', kind: 'int' },
    { key: 'approved_first_attempt', label: 'Paid first time', kind: 'int' },
    { key: 'dunning', label: 'In dunning', kind: 'int' },
    { key: 'recovered', label: 'Recovered', kind: 'int' },
    { key: 'recovery_rate', label: 'Recovery rate', kind: 'pct' },
    { key: 'revenue', label: 'Revenue', kind: 'money' },
  ];
  const chart = (q.data?.rows ?? []).map((r) => ({ period: r.period, 'Recovery rate': r.recovery_rate }));
  return (
    <ReportFrame title="Rebill recovery" answer={q.data} csv={q.data ? csvUrl('rebills', q.data, range) : null} error={q.error} loading={q.isFetching}>
      {chart.length > 1 && (
        <div role="img" aria-label="Rebill recovery rate per day">
          <LineChart h={220} data={chart} dataKey="period" unit=" %" series={[{ name: 'Recovery rate', color: 'teal.6' }]} />
        </div>
      )}
      {q.data && <ReportTable label="Rebills report" columns={columns} rows={q.data.rows} totals={q.data.totals} />}
    </ReportFrame>
  );
}
