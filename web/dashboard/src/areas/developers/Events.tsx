import { Anchor, Button, Card, Code, Group, Loader, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { Link, useParams } from '@tanstack/react-router';
import { type FormEvent, useState } from 'react';
import { api, type Query, type Schemas, unwrap } from '../../lib/api.ts';
import { dayBoundary, useDates } from '../../lib/dates.ts';
import { ApiErrorAlert } from '../../lib/errors.tsx';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { BackLink, DevNav, Empty, JsonBlock, PageHeader } from './ui.tsx';
import { useEventTypes } from './Webhooks.tsx';

type Event = Schemas['Event'];
type EventQuery = Query<'/v1/events'>;
interface Filters {
  type: string | null;
  order_number: string;
  from: string;
  to: string;
}
const EMPTY: Filters = { type: null, order_number: '', from: '', to: '' };

/** What an event is about: the order number or the object's id, when its data says. */
function subjectOf(e: Event): string | null {
  const o = e.data['object'];
  if (o && typeof o === 'object') {
    const obj = o as Record<string, unknown>;
    for (const k of ['order_number', 'id']) if (typeof obj[k] === 'string') return obj[k] as string;
  }
  return null;
}

export function Events() {
  const dates = useDates();
  const types = useEventTypes();
  const [draft, setDraft] = useState<Filters>(EMPTY);
  const [filters, setFilters] = useState<Filters>(EMPTY);
  const query: EventQuery = { limit: 25 };
  if (filters.type) query.type = filters.type as EventQuery['type'];
  if (filters.order_number.trim()) query.order_number = filters.order_number.trim();
  if (filters.from) query.created_gte = dayBoundary(filters.from, dates.timeZone);
  if (filters.to) query.created_lte = dayBoundary(filters.to, dates.timeZone, true);
  const list = usePaginatedList<Event>({
    key: ['events', query],
    fetchPage: async (starting_after) => unwrap(await api.GET('/v1/events', { params: { query: { ...query, ...(starting_after ? { starting_after } : {}) } } })),
    idOf: (e) => e.id,
  });
  function apply(e: FormEvent) {
    e.preventDefault();
    setFilters(draft);
  }
  return (
    <Stack>
      <PageHeader nav={<DevNav />} title="Events" />
      <Group component="form" onSubmit={apply} align="flex-end" role="search" aria-label="Filter events">
        <Select label="Type" placeholder="Any" clearable searchable w={240} data={(types.data ?? []).map((t) => t.type)} value={draft.type} onChange={(v) => setDraft((d) => ({ ...d, type: v }))} />
        <TextInput label="Order number" placeholder="ord_…" w={200} value={draft.order_number} onChange={(e) => setDraft((d) => ({ ...d, order_number: e.currentTarget.value }))} />
        <TextInput label="From" type="date" w={150} value={draft.from} onChange={(e) => setDraft((d) => ({ ...d, from: e.currentTarget.value }))} />
        <TextInput label="To" type="date" w={150} value={draft.to} onChange={(e) => setDraft((d) => ({ ...d, to: e.currentTarget.value }))} />
        <Button type="submit">Filter</Button>
      </Group>
      <ApiErrorAlert error={list.error} title="Could not load the events" />
      <Table.ScrollContainer minWidth={700}>
        <Table striped highlightOnHover aria-label="Events" aria-busy={list.isLoading}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Event</Table.Th>
              <Table.Th scope="col">Type</Table.Th>
              <Table.Th scope="col">About</Table.Th>
              <Table.Th scope="col">Created</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.items.map((e) => (
              <Table.Tr key={e.id}>
                <Table.Td>
                  <Anchor component={Link} to={`/developers/events/${e.id}`} ff="monospace" size="sm">
                    {e.id}
                  </Anchor>
                </Table.Td>
                <Table.Td>{e.type}</Table.Td>
                <Table.Td>
                  <Text size="sm" ff="monospace">
                    {subjectOf(e) ?? '—'}
                  </Text>
                </Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{dates.dateTime(e.created_at)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {!list.isLoading && list.items.length === 0 && !list.error && <Empty>No events match.</Empty>}
      <Pager list={list as never} label="Event pages" />
    </Stack>
  );
}

export function EventPage() {
  const { id } = useParams({ strict: false }) as { id: string };
  const dates = useDates();
  const q = useQuery({ queryKey: ['event', id], queryFn: async () => unwrap(await api.GET('/v1/events/{id}', { params: { path: { id } } })).data });
  if (q.isPending) return <Loader aria-label="Loading the event" />;
  return (
    <Stack>
      <DevNav />
      <BackLink to="/developers/events">Events</BackLink>
      <ApiErrorAlert error={q.error} title={`Could not load ${id}`} />
      {q.data && (
        <>
          <Title order={1} size="h2" ff="monospace">
            {q.data.id}
          </Title>
          <Text>
            <Code>{q.data.type}</Code> · {dates.dateTime(q.data.created_at)}
          </Text>
          <Card withBorder component="section" aria-labelledby="payload">
            <Title order={2} size="h4" id="payload" mb="sm">
              Payload
            </Title>
            <Text size="xs" c="dimmed" mb="xs">
              Exactly what webhook deliveries POST.
            </Text>
            <JsonBlock value={q.data} label="Event payload" />
          </Card>
        </>
      )}
    </Stack>
  );
}
