import { Anchor, Button, Code, Group, Paper, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { IconSearch } from '@tabler/icons-react';
import { Link } from '@tanstack/react-router';
import { type FormEvent, useState } from 'react';
import { dayBoundary, useDates } from '../../lib/dates.ts';
import { ApiErrorAlert } from '../../lib/errors.tsx';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { useSession } from '../../lib/session.tsx';
import { type CustomerRecord, fullName, serviceApi } from '../../lib/service.ts';

interface Filters {
  email: string;
  name: string;
  phone: string;
  from: string;
  to: string;
}
const EMPTY: Filters = { email: '', name: '', phone: '', from: '', to: '' };

export function CustomersList() {
  const { timeZone } = useSession();
  const dates = useDates();
  const [draft, setDraft] = useState<Filters>(EMPTY);
  const [filters, setFilters] = useState<Filters>(EMPTY);
  const query = {
    limit: 25,
    email: filters.email.trim() || undefined,
    name: filters.name.trim() || undefined,
    phone: filters.phone.trim() || undefined,
    created_gte: filters.from ? dayBoundary(filters.from, timeZone) : undefined,
    created_lte: filters.to ? dayBoundary(filters.to, timeZone, true) : undefined,
  };
  const list = usePaginatedList<CustomerRecord>({
    key: ['customers', query],
    fetchPage: (starting_after) => serviceApi.listCustomers({ ...query, starting_after }),
    idOf: (c) => c.customer_number,
  });
  const set = (k: keyof Filters) => (e: { currentTarget: { value: string } }) => {
    const v = e.currentTarget.value;
    setDraft((d) => ({ ...d, [k]: v }));
  };
  function apply(e: FormEvent) {
    e.preventDefault();
    setFilters(draft);
  }

  return (
    <Stack>
      <Title order={1} size="h2">
        Customers
      </Title>
      <Paper withBorder p="sm" component="form" onSubmit={apply} role="search" aria-label="Search customers">
        <Stack gap="xs">
          <Group align="flex-end" wrap="wrap">
            <TextInput label="E-mail" placeholder="amy@…" leftSection={<IconSearch size={16} aria-hidden />} value={draft.email} onChange={set('email')} w={240} />
            <TextInput label="Name" placeholder="First or last name" value={draft.name} onChange={set('name')} w={200} />
            <TextInput label="Phone" placeholder="Digits" value={draft.phone} onChange={set('phone')} w={160} />
            <TextInput label="Created from" type="date" value={draft.from} onChange={set('from')} w={160} />
            <TextInput label="Created to" type="date" value={draft.to} onChange={set('to')} w={160} />
          </Group>
          <Group gap="xs">
            <Button type="submit">Search</Button>
            <Button
              variant="default"
              onClick={() => {
                setDraft(EMPTY);
                setFilters(EMPTY);
              }}
            >
              Clear
            </Button>
            <Text size="xs" c="dimmed">
              Each box matches part of the value, case-insensitively; dates are in the team’s time zone ({timeZone}).
            </Text>
          </Group>
        </Stack>
      </Paper>
      <ApiErrorAlert error={list.error} title="Could not load customers" />
      <Table.ScrollContainer minWidth={700}>
        <Table striped highlightOnHover aria-label="Customers" aria-busy={list.isLoading}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Customer</Table.Th>
              <Table.Th scope="col">Name</Table.Th>
              <Table.Th scope="col">E-mail</Table.Th>
              <Table.Th scope="col">Phone</Table.Th>
              <Table.Th scope="col">Since</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.items.map((c) => (
              <Table.Tr key={c.customer_number} data-customer={c.customer_number}>
                <Table.Td>
                  <Anchor component={Link} to={`/customers/${c.customer_number}`} size="sm">
                    <Code>{c.customer_number}</Code>
                  </Anchor>
                </Table.Td>
                <Table.Td>{fullName(c) || '—'}</Table.Td>
                <Table.Td>{c.email}</Table.Td>
                <Table.Td>{c.phone ?? '—'}</Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{dates.dateTime(c.created_at)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {!list.isLoading && list.items.length === 0 && !list.error && (
        <Text c="dimmed" role="status">
          No customers match.
        </Text>
      )}
      <Pager list={list as never} label="Customer pages" />
    </Stack>
  );
}
