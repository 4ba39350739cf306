import { AreaChart } from '@mantine/charts';
import { Anchor, Card, Group, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { Link } from '@tanstack/react-router';
import { ApiErrorAlert } from '../../lib/errors.tsx';
import { formatMoney } from '../../lib/money.ts';
import { formatMajor, major } from './ReportTable.tsx';
import { type ReportRange, useReport } from './reportsApi.ts';

const LAST_30: ReportRange = { from: '', to: '', is_test: '' };

function Stat({ label, value, hint }: { label: string; value: string; hint?: string }) {
  return (
    <Card withBorder padding="sm" role="group" aria-label={label}>
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

/** The landing page of Reports: the last 30 days of live orders — revenue per day, key numbers, top decline reasons. */
export function Overview() {
  const revenue = useReport('revenue', LAST_30, { interval: 'day' });
  const approvals = useReport('approvals', LAST_30, { by: 'gateway' });
  const declines = useReport('declines', LAST_30);
  const main = revenue.data?.totals[0];
  const currency = main?.currency ?? null;
  const chart = (revenue.data?.rows ?? []).filter((r) => r.currency === currency).map((r) => ({ day: r.period.slice(5), Gross: major(r.gross, r.currency), Net: major(r.net, r.currency) }));
  const approvalTotal = approvals.data?.totals[0];
  return (
    <Stack>
      <Group justify="space-between" align="flex-end">
        <Title order={2} size="h3">
          Last 30 days
        </Title>
        {revenue.data && (
          <Text size="sm" c="dimmed">
            Live and test orders, {revenue.data.from} to {revenue.data.to} · {revenue.data.time_zone}
          </Text>
        )}
      </Group>
      <ApiErrorAlert error={revenue.error ?? approvals.error ?? declines.error} title="Could not load the overview" />
      <SimpleGrid cols={{ base: 2, md: 5 }}>
        <Stat label="Gross" value={main ? formatMoney(main.gross, main.currency) : '—'} hint={revenue.data && revenue.data.totals.length > 1 ? `${revenue.data.totals.length - 1} more currencies in the Revenue report` : undefined} />
        <Stat label="Refunds" value={main ? formatMoney(main.refunds, main.currency) : '—'} />
        <Stat label="Chargebacks" value={main ? `${main.chargebacks} · ${formatMoney(main.chargeback_amount, main.currency)}` : '—'} />
        <Stat label="Net" value={main ? formatMoney(main.net, main.currency) : '—'} />
        <Stat label="Approval rate" value={approvalTotal ? `${approvalTotal.approval_rate.toFixed(2)} %` : '—'} hint={approvalTotal ? `${approvalTotal.approved} of ${approvalTotal.attempts} attempts` : undefined} />
      </SimpleGrid>
      {chart.length > 0 && currency ? (
        <Card withBorder>
          <Text fw={600} mb="xs">
            Revenue per day ({currency})
          </Text>
          <div role="img" aria-label={`Gross and net revenue per day over the last 30 days, in ${currency}`}>
            <AreaChart h={260} data={chart} dataKey="day" series={[{ name: 'Gross', color: 'blue.6' }, { name: 'Net', color: 'teal.6' }]} valueFormatter={(v) => formatMajor(v, currency)} withLegend curveType="monotone" />
          </div>
          <Anchor component={Link} to="/reports/revenue" size="sm" mt="xs">
            Open the revenue report
          </Anchor>
        </Card>
      ) : (
        revenue.data && <Text c="dimmed">No paid orders in the last 30 days.</Text>
      )}
      {declines.data && declines.data.rows.length > 0 && (
        <Card withBorder>
          <Text fw={600} mb="xs">
            Top decline reasons
          </Text>
          <Table aria-label="Top decline reasons">
            <Table.Tbody>
              {declines.data.rows.slice(0, 5).map((r, i) => (
                <Table.Tr key={i}>
                  <Table.Td ff="monospace">{r.code ?? '—'}</Table.Td>
                  <Table.Td>{r.reason ?? '—'}</Table.Td>
                  <Table.Td style={{ textAlign: 'right' }}>{r.count}</Table.Td>
                  <Table.Td style={{ textAlign: 'right' }}>{r.share.toFixed(2)} %</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
          <Anchor component={Link} to="/reports/declines" size="sm" mt="xs">
            All decline reasons
          </Anchor>
        </Card>
      )}
    </Stack>
  );
}
