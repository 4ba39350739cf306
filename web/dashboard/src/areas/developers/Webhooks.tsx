import { Anchor, Badge, Button, Checkbox, Group, Modal, SimpleGrid, Stack, Switch, Table, Text, TextInput } from '@mantine/core';
import { IconPlus } from '@tabler/icons-react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { type FormEvent, useEffect, useState } from 'react';
import { api, type Schemas, unwrap } from '../../lib/api.ts';
import { useDates } from '../../lib/dates.ts';
import { ApiErrorAlert } from '../../lib/errors.tsx';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { DevNav, Empty, PageHeader, SecretDialog } from './ui.tsx';

type Endpoint = Schemas['WebhookEndpoint'];

export function useEventTypes() {
  return useQuery({ queryKey: ['event-types'], staleTime: 10 * 60_000, queryFn: async () => unwrap(await api.GET('/v1/event-types')).data });
}

/** Event types as checkboxes, with "All events" (`["*"]`). */
export function EventTypesField({ value, onChange }: { value: string[]; onChange: (v: string[]) => void }) {
  const types = useEventTypes();
  const all = value.includes('*');
  return (
    <Stack gap="xs">
      <Switch label="All events, including types added later" checked={all} onChange={(e) => onChange(e.currentTarget.checked ? ['*'] : [])} />
      {!all && (
        <Checkbox.Group label="Event types" description="At least one" value={value} onChange={onChange}>
          <SimpleGrid cols={{ base: 1, sm: 2 }} mt="xs" spacing={6}>
            {(types.data ?? []).map((t) => (
              <Checkbox key={t.type} value={t.type} label={t.type} description={t.description} />
            ))}
          </SimpleGrid>
        </Checkbox.Group>
      )}
      <ApiErrorAlert error={types.error} title="Could not load the event types" />
    </Stack>
  );
}

function CreateEndpointDialog({ opened, onClose, onCreated }: { opened: boolean; onClose: () => void; onCreated: (e: Schemas['WebhookEndpointWithSecret']) => void }) {
  const qc = useQueryClient();
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [types, setTypes] = useState<string[]>(['*']);
  useEffect(() => {
    if (!opened) return;
    setUrl('');
    setDescription('');
    setTypes(['*']);
  }, [opened]);
  const create = useMutation({
    mutationFn: async () =>
      unwrap(await api.POST('/v1/webhook-endpoints', { body: { url: url.trim(), event_types: types, ...(description.trim() ? { description: description.trim() } : {}) } })).data,
    onSuccess: async (e) => {
      await qc.invalidateQueries({ queryKey: ['webhook-endpoints'] });
      onCreated(e);
      onClose();
    },
  });
  const valid = url.trim().length > 0 && types.length > 0;
  function submit(e: FormEvent) {
    e.preventDefault();
    if (valid) create.mutate();
  }
  return (
    <Modal opened={opened} onClose={onClose} title="Add a webhook endpoint" centered size="lg">
      <form onSubmit={submit}>
        <Stack>
          <TextInput label="Endpoint URL" description="Deliveries are POSTed here as JSON, signed the Standard Webhooks way" placeholder="https://example.com/webhooks/checkstand" required type="url" value={url} onChange={(e) => setUrl(e.currentTarget.value)} data-autofocus />
          <TextInput label="Description (optional)" maxLength={500} value={description} onChange={(e) => setDescription(e.currentTarget.value)} />
          <EventTypesField value={types} onChange={setTypes} />
          <ApiErrorAlert error={create.error} title="The endpoint was not added" />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={create.isPending} disabled={!valid}>
              Add endpoint
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

export function EndpointStatus({ e }: { e: Endpoint }) {
  if (e.is_active) return <Badge color="green" variant="light">active</Badge>;
  return (
    <Badge color="gray" variant="light" title={e.disabled_reason ?? undefined}>
      disabled
    </Badge>
  );
}

export function Webhooks() {
  const dates = useDates();
  const navigate = useNavigate();
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<Schemas['WebhookEndpointWithSecret'] | null>(null);
  const list = usePaginatedList<Endpoint>({
    key: ['webhook-endpoints'],
    fetchPage: async (starting_after) => unwrap(await api.GET('/v1/webhook-endpoints', { params: { query: { limit: 25, ...(starting_after ? { starting_after } : {}) } } })),
    idOf: (e) => e.id,
  });
  return (
    <Stack>
      <PageHeader nav={<DevNav />} title="Webhook endpoints">
        <Button leftSection={<IconPlus size={16} aria-hidden />} onClick={() => setCreating(true)}>
          Add endpoint
        </Button>
      </PageHeader>
      <ApiErrorAlert error={list.error} title="Could not load the endpoints" />
      <Table.ScrollContainer minWidth={800}>
        <Table striped highlightOnHover aria-label="Webhook endpoints" aria-busy={list.isLoading}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">URL</Table.Th>
              <Table.Th scope="col">Events</Table.Th>
              <Table.Th scope="col">Status</Table.Th>
              <Table.Th scope="col">Failures in a row</Table.Th>
              <Table.Th scope="col">Created</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.items.map((e) => (
              <Table.Tr key={e.id} data-endpoint={e.id}>
                <Table.Td>
                  <Anchor component={Link} to={`/developers/webhooks/${e.id}`} size="sm" style={{ wordBreak: 'break-all' }}>
                    {e.url}
                  </Anchor>
                  {e.description && (
                    <Text size="xs" c="dimmed">
                      {e.description}
                    </Text>
                  )}
                </Table.Td>
                <Table.Td>
                  <Text size="sm">{e.event_types.includes('*') ? 'All events' : e.event_types.join(', ')}</Text>
                </Table.Td>
                <Table.Td>
                  <EndpointStatus e={e} />
                </Table.Td>
                <Table.Td>{e.consecutive_failures}</Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{dates.dateTime(e.created_at)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {!list.isLoading && list.items.length === 0 && !list.error && <Empty>No webhook endpoints yet.</Empty>}
      <Pager list={list as never} label="Endpoint pages" />
      <CreateEndpointDialog opened={creating} onClose={() => setCreating(false)} onCreated={setCreated} />
      <SecretDialog
        title="Endpoint added: its signing secret"
        label="Signing secret"
        secret={created?.secret ?? null}
        onClose={() => {
          const id = created?.id;
          setCreated(null);
          if (id) void navigate({ to: `/developers/webhooks/${id}` });
        }}
      >
        <Text size="sm">Verify each delivery’s <code>webhook-signature</code> with it (any Standard Webhooks library does).</Text>
      </SecretDialog>
    </Stack>
  );
}
