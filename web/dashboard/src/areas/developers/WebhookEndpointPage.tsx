import { Anchor, Badge, Button, Card, Code, Group, Loader, Modal, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { IconRefresh } from '@tabler/icons-react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams } from '@tanstack/react-router';
import { type FormEvent, useEffect, useState } from 'react';
import { api, type Schemas, unwrap } from '../../lib/api.ts';
import { useConfirm } from '../../lib/confirm.tsx';
import { useDates } from '../../lib/dates.ts';
import { ApiErrorAlert, notifyError, notifySuccess } from '../../lib/errors.tsx';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { BackLink, DevNav, Empty, GRACE_OPTIONS, SecretDialog } from './ui.tsx';
import { EndpointStatus, EventTypesField } from './Webhooks.tsx';

type Endpoint = Schemas['WebhookEndpoint'];
type Delivery = Schemas['WebhookDelivery'];
type DeliveryStatus = Delivery['status'];
const DELIVERY_COLORS: Record<DeliveryStatus, string> = { pending: 'yellow', succeeded: 'green', failed: 'red', cancelled: 'gray' };

export function DeliveryBadge({ status }: { status: DeliveryStatus }) {
  return (
    <Badge variant="light" color={DELIVERY_COLORS[status]}>
      {status}
    </Badge>
  );
}

function EditEndpoint({ endpoint }: { endpoint: Endpoint }) {
  const qc = useQueryClient();
  const [url, setUrl] = useState(endpoint.url);
  const [description, setDescription] = useState(endpoint.description ?? '');
  const [types, setTypes] = useState<string[]>(endpoint.event_types);
  useEffect(() => {
    setUrl(endpoint.url);
    setDescription(endpoint.description ?? '');
    setTypes(endpoint.event_types);
  }, [endpoint]);
  const save = useMutation({
    mutationFn: async () =>
      unwrap(await api.PATCH('/v1/webhook-endpoints/{id}', { params: { path: { id: endpoint.id } }, body: { url: url.trim(), description: description.trim() || null, event_types: types } })).data,
    onSuccess: async () => {
      notifySuccess('Endpoint saved.');
      await qc.invalidateQueries({ queryKey: ['webhook-endpoints'] });
      await qc.invalidateQueries({ queryKey: ['webhook-endpoint', endpoint.id] });
    },
  });
  function submit(e: FormEvent) {
    e.preventDefault();
    if (types.length > 0) save.mutate();
  }
  return (
    <Card withBorder component="section" aria-labelledby="edit-endpoint">
      <Title order={2} size="h4" id="edit-endpoint" mb="sm">
        Settings
      </Title>
      <form onSubmit={submit}>
        <Stack>
          <TextInput label="Endpoint URL" type="url" required value={url} onChange={(e) => setUrl(e.currentTarget.value)} />
          <TextInput label="Description" maxLength={500} value={description} onChange={(e) => setDescription(e.currentTarget.value)} />
          <EventTypesField value={types} onChange={setTypes} />
          <ApiErrorAlert error={save.error} title="Not saved" />
          <Button type="submit" w="fit-content" loading={save.isPending} disabled={types.length === 0}>
            Save
          </Button>
        </Stack>
      </form>
    </Card>
  );
}

function RotateSecretDialog({ endpoint, opened, onClose }: { endpoint: Endpoint; opened: boolean; onClose: () => void }) {
  const qc = useQueryClient();
  const dates = useDates();
  const [grace, setGrace] = useState<string | null>('86400');
  const [rotated, setRotated] = useState<Schemas['WebhookEndpointWithSecret'] | null>(null);
  const rotate = useMutation({
    mutationFn: async () => unwrap(await api.POST('/v1/webhook-endpoints/{id}/rotate-secret', { params: { path: { id: endpoint.id } }, body: { grace_seconds: Number(grace) } })).data,
    onSuccess: async (e) => {
      setRotated(e);
      onClose();
      await qc.invalidateQueries({ queryKey: ['webhook-endpoint', endpoint.id] });
    },
  });
  return (
    <>
      <Modal opened={opened} onClose={onClose} title="Rotate the signing secret" centered>
        <Stack>
          <Text size="sm">A new secret signs every delivery from now on. During the grace period deliveries carry a second signature made with the old one, so receivers can switch over.</Text>
          <Select label="Grace period for the old secret" allowDeselect={false} data={GRACE_OPTIONS} value={grace} onChange={setGrace} />
          <ApiErrorAlert error={rotate.error} title="The secret was not rotated" />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button onClick={() => rotate.mutate()} loading={rotate.isPending}>
              Rotate secret
            </Button>
          </Group>
        </Stack>
      </Modal>
      <SecretDialog title="The new signing secret" label="Signing secret" secret={rotated?.secret ?? null} onClose={() => setRotated(null)}>
        <Text size="sm">{rotated?.previous_secret_expires_at ? `The old secret also signs until ${dates.dateTime(rotated.previous_secret_expires_at)}.` : 'The old secret no longer signs.'}</Text>
      </SecretDialog>
    </>
  );
}

function AttemptsDialog({ deliveryId, onClose }: { deliveryId: string | null; onClose: () => void }) {
  const dates = useDates();
  const q = useQuery({
    queryKey: ['webhook-delivery', deliveryId],
    enabled: !!deliveryId,
    queryFn: async () => unwrap(await api.GET('/v1/webhook-deliveries/{id}', { params: { path: { id: deliveryId! } } })).data,
  });
  return (
    <Modal opened={!!deliveryId} onClose={onClose} title={`Delivery ${deliveryId ?? ''}`} centered size="xl">
      {q.isPending ? (
        <Loader aria-label="Loading the attempts" />
      ) : (
        <Stack>
          <ApiErrorAlert error={q.error} title="Could not load the delivery" />
          {q.data && (
            <>
              <Text size="sm">
                {q.data.event_type} · event <Code>{q.data.event_id}</Code> (the <Code>webhook-id</Code> header) · <DeliveryBadge status={q.data.status} />
              </Text>
              <Table aria-label="Attempts">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th scope="col">#</Table.Th>
                    <Table.Th scope="col">When</Table.Th>
                    <Table.Th scope="col">Status code</Table.Th>
                    <Table.Th scope="col">Duration</Table.Th>
                    <Table.Th scope="col">Answer or error</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {q.data.attempts.map((a) => (
                    <Table.Tr key={a.id}>
                      <Table.Td>{a.attempt}</Table.Td>
                      <Table.Td style={{ whiteSpace: 'nowrap' }}>{dates.dateTime(a.created_at)}</Table.Td>
                      <Table.Td>{a.status_code ?? 'no answer'}</Table.Td>
                      <Table.Td>{a.duration_ms} ms</Table.Td>
                      <Table.Td>
                        <Code block style={{ whiteSpace: 'pre-wrap', maxHeight: 160, overflow: 'auto' }}>
                          {a.error ?? a.response_body ?? ''}
                        </Code>
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
              {q.data.attempts.length === 0 && <Empty>No attempt yet.</Empty>}
            </>
          )}
        </Stack>
      )}
    </Modal>
  );
}

function Deliveries({ endpoint }: { endpoint: Endpoint }) {
  const dates = useDates();
  const qc = useQueryClient();
  const [status, setStatus] = useState<string | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const list = usePaginatedList<Delivery>({
    key: ['webhook-endpoint', endpoint.id, 'deliveries', status],
    fetchPage: async (starting_after) =>
      unwrap(
        await api.GET('/v1/webhook-endpoints/{id}/deliveries', {
          params: { path: { id: endpoint.id }, query: { limit: 25, ...(status ? { status: status as DeliveryStatus } : {}), ...(starting_after ? { starting_after } : {}) } },
        }),
      ),
    idOf: (d) => d.id,
  });
  const replay = useMutation({
    mutationFn: async (d: Delivery) => unwrap(await api.POST('/v1/webhook-deliveries/{id}/replay', { params: { path: { id: d.id } } })).data,
    onSuccess: async (d) => {
      notifySuccess(`${d.event_type} will be sent again now.`, 'Replay queued');
      await qc.invalidateQueries({ queryKey: ['webhook-endpoint', endpoint.id, 'deliveries'] });
      await qc.invalidateQueries({ queryKey: ['webhook-delivery', d.id] });
    },
    onError: (err) => notifyError(err, 'Not replayed'),
  });
  return (
    <Card withBorder component="section" aria-labelledby="deliveries">
      <Group justify="space-between" mb="sm">
        <Title order={2} size="h4" id="deliveries">
          Delivery log
        </Title>
        <Group gap="xs" align="flex-end">
          <Select
            label="Status"
            placeholder="Any"
            clearable
            size="xs"
            w={150}
            data={(['pending', 'succeeded', 'failed', 'cancelled'] as const).map((s) => ({ value: s, label: s }))}
            value={status}
            onChange={setStatus}
          />
          <Button size="xs" variant="default" leftSection={<IconRefresh size={14} aria-hidden />} onClick={() => void qc.invalidateQueries({ queryKey: ['webhook-endpoint', endpoint.id, 'deliveries'] })}>
            Refresh
          </Button>
        </Group>
      </Group>
      <ApiErrorAlert error={list.error} title="Could not load the deliveries" />
      <Table.ScrollContainer minWidth={800}>
        <Table striped aria-label="Deliveries" aria-busy={list.isLoading}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Event</Table.Th>
              <Table.Th scope="col">Status</Table.Th>
              <Table.Th scope="col">Attempts</Table.Th>
              <Table.Th scope="col">Last answer</Table.Th>
              <Table.Th scope="col">Next attempt</Table.Th>
              <Table.Th scope="col">Created</Table.Th>
              <Table.Th scope="col">Actions</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.items.map((d) => (
              <Table.Tr key={d.id} data-delivery={d.id}>
                <Table.Td>
                  <Text size="sm">{d.event_type}</Text>
                  <Anchor component={Link} to={`/developers/events/${d.event_id}`} size="xs" ff="monospace">
                    {d.event_id}
                  </Anchor>
                </Table.Td>
                <Table.Td>
                  <DeliveryBadge status={d.status} />
                </Table.Td>
                <Table.Td data-testid="attempt-count">{d.attempt_count}</Table.Td>
                <Table.Td>
                  <Text size="sm">{d.last_status_code ?? (d.last_error ? 'no answer' : '—')}</Text>
                  {d.last_error && (
                    <Text size="xs" c="dimmed" lineClamp={2}>
                      {d.last_error}
                    </Text>
                  )}
                </Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{d.next_attempt_at ? dates.dateTime(d.next_attempt_at) : '—'}</Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{dates.dateTime(d.created_at)}</Table.Td>
                <Table.Td>
                  <Group gap={4} wrap="nowrap">
                    <Button size="xs" variant="subtle" onClick={() => setOpen(d.id)} aria-label={`Attempts of ${d.id}`}>
                      Attempts
                    </Button>
                    <Button size="xs" variant="light" onClick={() => replay.mutate(d)} loading={replay.isPending && replay.variables?.id === d.id} disabled={!endpoint.is_active} aria-label={`Replay ${d.id}`}>
                      Replay
                    </Button>
                  </Group>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {!list.isLoading && list.items.length === 0 && !list.error && <Empty>No deliveries yet: they appear when an event of a subscribed type happens.</Empty>}
      <Pager list={list as never} label="Delivery pages" />
      <AttemptsDialog deliveryId={open} onClose={() => setOpen(null)} />
    </Card>
  );
}

export function WebhookEndpointPage() {
  const { id } = useParams({ strict: false }) as { id: string };
  const dates = useDates();
  const qc = useQueryClient();
  const confirm = useConfirm();
  const navigate = useNavigate();
  const [rotating, setRotating] = useState(false);
  const q = useQuery({ queryKey: ['webhook-endpoint', id], queryFn: async () => unwrap(await api.GET('/v1/webhook-endpoints/{id}', { params: { path: { id } } })).data });
  const refresh = async () => {
    await qc.invalidateQueries({ queryKey: ['webhook-endpoint', id] });
    await qc.invalidateQueries({ queryKey: ['webhook-endpoints'] });
  };
  const setActive = useMutation({
    mutationFn: async (is_active: boolean) => unwrap(await api.PATCH('/v1/webhook-endpoints/{id}', { params: { path: { id } }, body: { is_active } })).data,
    onSuccess: async (e) => {
      notifySuccess(e.is_active ? 'Endpoint enabled.' : 'Endpoint disabled.');
      await refresh();
    },
    onError: (err) => notifyError(err),
  });
  const remove = useMutation({
    mutationFn: async () => unwrap(await api.DELETE('/v1/webhook-endpoints/{id}', { params: { path: { id } } })).data,
    onSuccess: async () => {
      notifySuccess('Endpoint deleted.');
      await refresh();
      void navigate({ to: '/developers/webhooks' });
    },
    onError: (err) => notifyError(err, 'Not deleted'),
  });

  if (q.isPending) return <Loader aria-label="Loading the endpoint" />;
  if (q.error || !q.data)
    return (
      <Stack>
        <BackLink to="/developers/webhooks">Webhook endpoints</BackLink>
        <ApiErrorAlert error={q.error} title={`Could not load ${id}`} />
      </Stack>
    );
  const e = q.data;
  return (
    <Stack>
      <DevNav />
      <BackLink to="/developers/webhooks">Webhook endpoints</BackLink>
      <Group justify="space-between" align="flex-start">
        <Stack gap={4}>
          <Title order={1} size="h2" style={{ wordBreak: 'break-all' }}>
            {e.url}
          </Title>
          <Group gap="xs">
            <EndpointStatus e={e} />
            <Text size="sm" c="dimmed" ff="monospace">
              {e.id}
            </Text>
          </Group>
          {!e.is_active && e.disabled_reason && (
            <Text size="sm" c="dimmed">
              Disabled {dates.dateTime(e.disabled_at)}: {e.disabled_reason}
            </Text>
          )}
          <Text size="sm">
            Signing secret ends with <Code>{e.secret_hint}</Code>
            {e.previous_secret_expires_at && new Date(e.previous_secret_expires_at) > new Date() ? ` · the previous one also signs until ${dates.dateTime(e.previous_secret_expires_at)}` : ''}
          </Text>
        </Stack>
        <Group gap="xs">
          <Button variant="default" onClick={() => setRotating(true)}>
            Rotate secret
          </Button>
          <Button variant="default" loading={setActive.isPending} onClick={() => setActive.mutate(!e.is_active)}>
            {e.is_active ? 'Disable' : 'Enable'}
          </Button>
          {e.is_active && (
            <Button
              color="red"
              variant="outline"
              loading={remove.isPending}
              onClick={async () => {
                if (await confirm({ title: 'Delete this endpoint?', message: `${e.url} stops receiving events and its pending deliveries are cancelled. It stays listed, inactive, with its delivery log.`, confirmLabel: 'Delete endpoint', danger: true }))
                  remove.mutate();
              }}
            >
              Delete
            </Button>
          )}
        </Group>
      </Group>
      <Deliveries endpoint={e} />
      <EditEndpoint endpoint={e} />
      <RotateSecretDialog endpoint={e} opened={rotating} onClose={() => setRotating(false)} />
    </Stack>
  );
}
