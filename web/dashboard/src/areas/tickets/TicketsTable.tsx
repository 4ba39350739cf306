import { Anchor, Code, Table } from '@mantine/core';
import { Link } from '@tanstack/react-router';
import { useDates } from '../../lib/dates.ts';
import type { Ticket } from '../../lib/service.ts';
import { Status } from '../customers/ui.tsx';
import { useMembers } from './members.ts';

export function TicketsTable({ rows, label = 'Tickets', showCustomer = true }: { rows: Ticket[]; label?: string; showCustomer?: boolean }) {
  const dates = useDates();
  const members = useMembers();
  return (
    <Table.ScrollContainer minWidth={800}>
      <Table striped highlightOnHover aria-label={label}>
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Subject</Table.Th>
            <Table.Th scope="col">Status</Table.Th>
            {showCustomer && <Table.Th scope="col">Customer</Table.Th>}
            <Table.Th scope="col">Order</Table.Th>
            <Table.Th scope="col">Assignee</Table.Th>
            <Table.Th scope="col">Updated</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {rows.map((t) => (
            <Table.Tr key={t.id} data-ticket={t.id}>
              <Table.Td>
                <Anchor component={Link} to={`/tickets/${t.id}`} size="sm">
                  {t.subject}
                </Anchor>
              </Table.Td>
              <Table.Td>
                <Status status={t.status} label="Status" />
              </Table.Td>
              {showCustomer && (
                <Table.Td>
                  <Anchor component={Link} to={`/customers/${t.customer_number}`} size="sm">
                    {t.customer_number}
                  </Anchor>
                </Table.Td>
              )}
              <Table.Td>
                {t.order_number ? (
                  <Anchor component={Link} to={`/orders/${t.order_number}`} size="sm">
                    <Code>{t.order_number}</Code>
                  </Anchor>
                ) : (
                  '—'
                )}
              </Table.Td>
              <Table.Td>{members.nameOf(t.assignee)}</Table.Td>
              <Table.Td style={{ whiteSpace: 'nowrap' }}>{dates.dateTime(t.updated_at)}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}
