import { BarChart } from '@mantine/charts';
import { Button, Group, NativeSelect, Paper, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, type Query, type Schemas, unwrap } from '../../lib/api.ts';
import { dayBoundary } from '../../lib/dates.ts';
import { ApiErrorAlert } from '../../lib/errors.tsx';
import { formatMoney, minorDigits } from '../../lib/money.ts';
import { useSession } from '../../lib/session.tsx';
import { AffiliatesPage, pct } from './common.tsx';

type Row = Schemas['AffiliateReportRow'];
type ReportQuery = Query<'/v1/reports/affiliates'>;
interface Filters {
  from: string;
  to: string;
  affiliate_id: string;
  group_by: NonNullable<ReportQuery['group_by']>;
}

export function AffiliateReport() {
  const { timeZone } = useSession();
  const [draft, setDraft] = useState<Filters>({ from: '', to: '', affiliate_id: '', group_by: 'affiliate' });
  const [filters, setFilters] = useState<Filters>(draft);
  const query: ReportQuery = {
    group_by: filters.group_by,
    ...(filters.from ? { created_gte: dayBoundary(filters.from, timeZone) } : {}),
    ...(filters.to ? { created_lte: dayBoundary(filters.to, timeZone, true) } : {}),
    ...(filters.affiliate_id.trim() ? { affiliate_id: filters.affiliate_id.trim() } : {}),
  };
  const q = useQuery({ queryKey: ['report', 'affiliates', query], queryFn: async () => unwrap(await api.GET('/v1/reports/affiliates', { params: { query } })).data });
  const rows = q.data ?? [];
  const currencies = [...new Set(rows.map((r) => r.currency))];
  const label = (r: Row) => (r.sub_id !== null ? `${r.affiliate_id} / ${r.sub_id}` : r.affiliate_id);
  const apply = (e: FormEvent) => {
    e.preventDefault();
    setFilters(draft);
  };
  return (
    <AffiliatesPage title="Affiliate report">
      <Paper withBorder p="sm" component="form" onSubmit={apply} aria-label="Report filters">
        <Group align="flex-end" wrap="wrap">
          <TextInput label="From" type="date" value={draft.from} onChange={(e) => setDraft({ ...draft, from: e.currentTarget.value })} w={150} />
          <TextInput label="To" type="date" value={draft.to} onChange={(e) => setDraft({ ...draft, to: e.currentTarget.value })} w={150} />
          <TextInput label="Affiliate id" value={draft.affiliate_id} onChange={(e) => setDraft({ ...draft, affiliate_id: e.currentTarget.value })} w={180} />
          <NativeSelect label="Group by" data={['affiliate', 'sub1', 'sub2', 'sub3', 'sub4', 'sub5']} value={draft.group_by} onChange={(e) => setDraft({ ...draft, group_by: e.currentTarget.value as Filters['group_by'] })} w={140} />
          <Button type="submit">Show</Button>
          <Text size="xs" c="dimmed">
            Orders created in the period (team time zone, {timeZone}); throttled orders are left out of every column.
          </Text>
        </Group>
      </Paper>
      <ApiErrorAlert error={q.error} title="Could not load the report" />
      {currencies.map((cur) => {
        const scale = 10 ** minorDigits(cur);
        const data = rows
          .filter((r) => r.currency === cur)
          .map((r) => ({ affiliate: label(r), Revenue: r.revenue / scale, 'Upsell revenue': r.upsell_revenue / scale, Commission: r.commission / scale, Refunds: r.refunds / scale }));
        return (
          <Paper withBorder p="sm" key={cur} component="figure" m={0} aria-label={`Affiliate revenue chart (${cur})`}>
            <Title order={2} size="h5" mb="xs">
              Revenue and commission per affiliate ({cur})
            </Title>
            <BarChart
              h={260}
              data={data}
              dataKey="affiliate"
              withLegend
              valueFormatter={(v) => formatMoney(Math.round(v * scale), cur)}
              series={[
                { name: 'Revenue', color: 'blue.6' },
                { name: 'Upsell revenue', color: 'teal.6' },
                { name: 'Commission', color: 'orange.6' },
                { name: 'Refunds', color: 'red.6' },
              ]}
            />
          </Paper>
        );
      })}
      <Stack gap={4}>
        <Table.ScrollContainer minWidth={1100}>
          <Table striped aria-label="Affiliate report" aria-busy={q.isPending}>
            <Table.Thead>
              <Table.Tr>
                <Table.Th scope="col">{filters.group_by === 'affiliate' ? 'Affiliate' : `Affiliate / ${filters.group_by}`}</Table.Th>
                <Table.Th scope="col">Currency</Table.Th>
                <Table.Th scope="col">Leads</Table.Th>
                <Table.Th scope="col">Conversions</Table.Th>
                <Table.Th scope="col">Conv. rate</Table.Th>
                <Table.Th scope="col">Revenue</Table.Th>
                <Table.Th scope="col">Upsells</Table.Th>
                <Table.Th scope="col">Rebills</Table.Th>
                <Table.Th scope="col">Refunds</Table.Th>
                <Table.Th scope="col">Chargebacks</Table.Th>
                <Table.Th scope="col">Commission</Table.Th>
                <Table.Th scope="col">EPC</Table.Th>
                <Table.Th scope="col">Throttled</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((r) => (
                <Table.Tr key={`${r.affiliate_id}|${r.sub_id}|${r.currency}`} data-affiliate={r.affiliate_id}>
                  <Table.Td>{label(r)}</Table.Td>
                  <Table.Td>{r.currency}</Table.Td>
                  <Table.Td>{r.leads}</Table.Td>
                  <Table.Td>{r.conversions}</Table.Td>
                  <Table.Td>{pct(r.conversion_rate)}</Table.Td>
                  <Table.Td data-col="revenue">{formatMoney(r.revenue, r.currency)}</Table.Td>
                  <Table.Td>{formatMoney(r.upsell_revenue, r.currency)}</Table.Td>
                  <Table.Td>{formatMoney(r.rebill_revenue, r.currency)}</Table.Td>
                  <Table.Td>{formatMoney(r.refunds, r.currency)}</Table.Td>
                  <Table.Td>
                    {r.chargebacks} ({formatMoney(r.chargeback_amount, r.currency)})
                  </Table.Td>
                  <Table.Td>{formatMoney(r.commission, r.currency)}</Table.Td>
                  <Table.Td>{formatMoney(r.epc, r.currency)}</Table.Td>
                  <Table.Td>{r.throttled ? `${r.throttled.conversions} (${formatMoney(r.throttled.revenue, r.currency)})` : '—'}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
        {!q.isPending && rows.length === 0 && !q.error && (
          <Text c="dimmed" role="status">
            No affiliate orders in this period.
          </Text>
        )}
      </Stack>
    </AffiliatesPage>
  );
}
