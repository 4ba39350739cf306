import { Group, Paper, Select, Stack, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { ApiErrorAlert } from '../../lib/errors.tsx';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { useSession } from '../../lib/session.tsx';
import { serviceApi, type Ticket, TICKET_STATUSES } from '../../lib/service.ts';
import { humanize } from '../customers/ui.tsx';
import { useMembers } from './members.ts';
import { TicketsTable } from './TicketsTable.tsx';

export function TicketsList() {
  const { session } = useSession();
  const members = useMembers();
  const [status, setStatus] = useState<string | null>(null);
  const [assignee, setAssignee] = useState<string | null>(null);
  const query = { status, assignee, limit: 25 };
  const list = usePaginatedList<Ticket>({
    key: ['tickets', query],
    fetchPage: (starting_after) => serviceApi.listTickets({ ...query, starting_after }),
    idOf: (t) => t.id,
  });
  const me = session.user?.id ?? null;
  const assigneeOptions = members.available ? members.options : me ? [{ value: me, label: "Me" }] : [];
  return (
    <Stack>
      <Title order={1} size="h2">
        Support tickets
      </Title>
      <Paper withBorder p="sm" role="search" aria-label="Filter tickets">
        <Group align="flex-end">
          <Select label="Status" placeholder="Any" clearable data={TICKET_STATUSES.map((s) => ({ value: s, label: humanize(s) }))} value={status} onChange={setStatus} w={180} />
          <Select label="Assignee" placeholder="Anyone" clearable searchable data={assigneeOptions} value={assignee} onChange={setAssignee} w={260} />
          <Text size="xs" c="dimmed">
            Open a ticket from a customer’s page.
          </Text>
        </Group>
      </Paper>
      <ApiErrorAlert error={list.error} title="Could not load tickets" />
      <TicketsTable rows={list.items} />
      {!list.isLoading && list.items.length === 0 && !list.error && (
        <Text c="dimmed" role="status">
          No tickets match.
        </Text>
      )}
      <Pager list={list as never} label="Ticket pages" />
    </Stack>
  );
}
