import { Anchor, Stack, Table, Text, Title } from '@mantine/core';
import { Link } from '@tanstack/react-router';
import { api, type Schemas, unwrap } from '../../lib/api.ts';
import { useDates } from '../../lib/dates.ts';
import { ApiErrorAlert } from '../../lib/errors.tsx';
import { formatMoney } from '../../lib/money.ts';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { StatusBadge } from './format.tsx';
import { OrdersTabs } from './OrdersTabs.tsx';

type Order = Schemas['Order'];

/**
 * A dispute's QA reason as the extpay handler writes it: "Dispute <id>: <status> (<reason>)".
 * Other reasons (a flag set by hand) are shown as they are.
 */
export function disputeOf(reason: string | null): { id: string; status: string; reason: string } | null {
  const m = /^Dispute (\S+): (.+) \((.*)\)$/.exec(reason ?? '');
  return m ? { id: m[1]!, status: m[2]!, reason: m[3]! } : null;
}

/** The disputes and QA queue: orders with needs_qa (GET /v1/orders?needs_qa=true), newest first. */
export function DisputesPage() {
  const dates = useDates();
  const list = usePaginatedList<Order>({
    key: ['orders', { needs_qa: 'true' }],
    fetchPage: async (starting_after) => {
      const page = unwrap(await api.GET('/v1/orders', { params: { query: { needs_qa: 'true', limit: 25, ...(starting_after ? { starting_after } : {}) } } }));
      return { ...page, data: page.data as Order[] };
    },
    idOf: (o) => o.order_number,
  });
  return (
    <Stack>
      <Title order={1} size="h2">
        Disputes and QA
      </Title>
      <OrdersTabs current="disputes" />
      <Text size="sm" c="dimmed">
        Orders flagged for review: by a dispute (chargeback or early warning) or by hand. Clear the flag on the order page once handled.
      </Text>
      <ApiErrorAlert error={list.error} title="Could not load the queue" />
      <Table.ScrollContainer minWidth={800}>
        <Table striped highlightOnHover aria-label="Disputes and QA queue" aria-busy={list.isLoading}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Order</Table.Th>
              <Table.Th scope="col">Customer</Table.Th>
              <Table.Th scope="col">Dispute status</Table.Th>
              <Table.Th scope="col">Reason</Table.Th>
              <Table.Th scope="col">Order status</Table.Th>
              <Table.Th scope="col" style={{ textAlign: 'right' }}>
                Total
              </Table.Th>
              <Table.Th scope="col">Updated</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.items.map((o) => {
              const d = disputeOf(o.qa_reason);
              return (
                <Table.Tr key={o.order_number} data-order={o.order_number}>
                  <Table.Td>
                    <Anchor component={Link} to={`/orders/${o.order_number}`} ff="monospace" size="sm">
                      {o.order_number}
                    </Anchor>
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm">{[o.customer.first_name, o.customer.last_name].filter(Boolean).join(' ') || '—'}</Text>
                    <Text size="xs" c="dimmed">
                      {o.customer.email}
                    </Text>
                  </Table.Td>
                  <Table.Td>{d ? <StatusBadge status={d.status.replace(/ /g, '_')} /> : <Text size="sm" c="dimmed">flagged by hand</Text>}</Table.Td>
                  <Table.Td>
                    <Text size="sm">{d ? d.reason : (o.qa_reason ?? '—')}</Text>
                    {d && (
                      <Text size="xs" c="dimmed">
                        {d.id}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <StatusBadge status={o.status} label="Status" />
                  </Table.Td>
                  <Table.Td style={{ textAlign: 'right' }}>{formatMoney(o.total, o.currency)}</Table.Td>
                  <Table.Td style={{ whiteSpace: 'nowrap' }}>{dates.dateTime(o.updated_at)}</Table.Td>
                </Table.Tr>
              );
            })}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {!list.isLoading && list.items.length === 0 && !list.error && (
        <Text c="dimmed" role="status">
          No order is flagged for review.
        </Text>
      )}
      <Pager list={list as never} label="Queue pages" />
    </Stack>
  );
}
