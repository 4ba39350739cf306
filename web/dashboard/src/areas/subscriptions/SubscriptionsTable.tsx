import { Anchor, Code, Table, Text } from '@mantine/core';
import { Link } from '@tanstack/react-router';
import type { Schemas } from '../../lib/api.ts';
import { useDates } from '../../lib/dates.ts';
import { formatMoney } from '../../lib/money.ts';
import { Status } from '../customers/ui.tsx';

export type Subscription = Schemas['Subscription'];

export function every(s: Pick<Subscription, 'interval_unit' | 'interval_count'>): string {
  return s.interval_count === 1 ? `every ${s.interval_unit}` : `every ${s.interval_count} ${s.interval_unit}s`;
}

export function SubscriptionsTable({ rows, label = 'Subscriptions', showCustomer = true }: { rows: Subscription[]; label?: string; showCustomer?: boolean }) {
  const dates = useDates();
  return (
    <Table.ScrollContainer minWidth={800}>
      <Table striped highlightOnHover aria-label={label}>
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Subscription</Table.Th>
            <Table.Th scope="col">Status</Table.Th>
            {showCustomer && <Table.Th scope="col">Customer</Table.Th>}
            <Table.Th scope="col">Price</Table.Th>
            <Table.Th scope="col">Next billing</Table.Th>
            <Table.Th scope="col">Cycle</Table.Th>
            <Table.Th scope="col">Dunning</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {rows.map((s) => (
            <Table.Tr key={s.id} data-subscription={s.id}>
              <Table.Td>
                <Anchor component={Link} to={`/subscriptions/${s.id}`} size="sm">
                  <Code>{s.id}</Code>
                </Anchor>
                {s.externally_managed && (
                  <Text size="xs" c="dimmed">
                    external provider
                  </Text>
                )}
              </Table.Td>
              <Table.Td>
                <Status status={s.status} label="Status" />
              </Table.Td>
              {showCustomer && (
                <Table.Td>
                  <Anchor component={Link} to={`/customers/${s.customer_number}`} size="sm">
                    {s.customer_number}
                  </Anchor>
                </Table.Td>
              )}
              <Table.Td style={{ whiteSpace: 'nowrap' }}>
                {formatMoney(s.recurring_price, s.currency)} {every(s)}
              </Table.Td>
              <Table.Td style={{ whiteSpace: 'nowrap' }}>{dates.dateTime(s.next_billing_at)}</Table.Td>
              <Table.Td>{s.cycle}</Table.Td>
              <Table.Td>{s.retry_count > 0 ? `${s.retry_count} failed${s.retry_at ? `, retry ${dates.date(s.retry_at)}` : ''}` : '—'}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}
