import { Button, Code, Group, Modal, Stack, Table, Text, TextInput } from '@mantine/core';
import { type FormEvent, useState } from 'react';
import { api, type Query, type Schemas, unwrap } from '../../lib/api.ts';
import { dayBoundary, useDates } from '../../lib/dates.ts';
import { ApiErrorAlert } from '../../lib/errors.tsx';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { DevNav, Empty, JsonBlock, PageHeader } from './ui.tsx';

type Entry = Schemas['AuditEntry'];
type AuditQuery = Query<'/v1/audit-log'>;
interface Filters {
  action: string;
  actor_id: string;
  target_id: string;
  from: string;
  to: string;
}
const EMPTY: Filters = { action: '', actor_id: '', target_id: '', from: '', to: '' };

export function AuditLog() {
  const dates = useDates();
  const [draft, setDraft] = useState<Filters>(EMPTY);
  const [filters, setFilters] = useState<Filters>(EMPTY);
  const [open, setOpen] = useState<Entry | null>(null);
  const query: AuditQuery = { limit: 50 };
  if (filters.action.trim()) query.action = filters.action.trim();
  if (filters.actor_id.trim()) query.actor_id = filters.actor_id.trim();
  if (filters.target_id.trim()) query.target_id = filters.target_id.trim();
  if (filters.from) query.created_gte = dayBoundary(filters.from, dates.timeZone);
  if (filters.to) query.created_lte = dayBoundary(filters.to, dates.timeZone, true);
  const list = usePaginatedList<Entry>({
    key: ['audit-log', query],
    fetchPage: async (starting_after) => unwrap(await api.GET('/v1/audit-log', { params: { query: { ...query, ...(starting_after ? { starting_after } : {}) } } })),
    idOf: (e) => e.id,
  });
  const set = (k: keyof Filters) => (e: React.ChangeEvent<HTMLInputElement>) => {
    const v = e.currentTarget.value;
    setDraft((d) => ({ ...d, [k]: v }));
  };
  function apply(e: FormEvent) {
    e.preventDefault();
    setFilters(draft);
  }
  return (
    <Stack>
      <PageHeader nav={<DevNav />} title="Audit log" />
      <Text size="sm" c="dimmed">
        Who (user, token or provider user) did what (money actions, settings, credentials, roles, tokens), when and from where. Append-only.
      </Text>
      <Group component="form" onSubmit={apply} align="flex-end" role="search" aria-label="Filter the audit log" wrap="wrap">
        <TextInput label="Action" placeholder="api_token.rotated" w={200} value={draft.action} onChange={set('action')} />
        <TextInput label="Actor id" w={180} value={draft.actor_id} onChange={set('actor_id')} />
        <TextInput label="Target id" w={180} value={draft.target_id} onChange={set('target_id')} />
        <TextInput label="From" type="date" w={150} value={draft.from} onChange={set('from')} />
        <TextInput label="To" type="date" w={150} value={draft.to} onChange={set('to')} />
        <Button type="submit">Filter</Button>
        <Button
          variant="default"
          onClick={() => {
            setDraft(EMPTY);
            setFilters(EMPTY);
          }}
        >
          Clear
        </Button>
      </Group>
      <ApiErrorAlert error={list.error} title="Could not load the audit log" />
      <Table.ScrollContainer minWidth={900}>
        <Table striped aria-label="Audit log" aria-busy={list.isLoading}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">When</Table.Th>
              <Table.Th scope="col">Action</Table.Th>
              <Table.Th scope="col">Actor</Table.Th>
              <Table.Th scope="col">Target</Table.Th>
              <Table.Th scope="col">From</Table.Th>
              <Table.Th scope="col">Details</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.items.map((e) => (
              <Table.Tr key={e.id}>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{dates.dateTime(e.created_at)}</Table.Td>
                <Table.Td>
                  <Code>{e.action}</Code>
                </Table.Td>
                <Table.Td>
                  <Text size="sm">{e.actor.label}</Text>
                  <Text size="xs" c="dimmed">
                    {e.actor.kind} · {e.actor.id}
                    {e.actor.provider_id ? ` · provider ${e.actor.provider_id}` : ''}
                  </Text>
                </Table.Td>
                <Table.Td>
                  {e.target ? (
                    <Text size="sm" ff="monospace">
                      {[e.target.type, e.target.id].filter(Boolean).join(' ')}
                    </Text>
                  ) : (
                    '—'
                  )}
                </Table.Td>
                <Table.Td>{e.ip_address ?? '—'}</Table.Td>
                <Table.Td>
                  <Button size="xs" variant="subtle" onClick={() => setOpen(e)} aria-label={`Details of ${e.action} at ${dates.dateTime(e.created_at)}`}>
                    View
                  </Button>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {!list.isLoading && list.items.length === 0 && !list.error && <Empty>No entries match.</Empty>}
      <Pager list={list as never} label="Audit log pages" />
      <Modal opened={!!open} onClose={() => setOpen(null)} title={open?.action} centered size="lg">
        {open && <JsonBlock value={open} label="Audit entry" />}
      </Modal>
    </Stack>
  );
}
