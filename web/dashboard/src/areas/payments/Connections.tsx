import { Alert, Badge, Button, Code, Group, List, Modal, NativeSelect, PasswordInput, Stack, Table, Text, TextInput } from '@mantine/core';
import { IconCircleCheck, IconLock, IconPlugConnectedX } from '@tabler/icons-react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, type Schemas, unwrap } from '../../lib/api.ts';
import { useConfirm } from '../../lib/confirm.tsx';
import { ApiErrorAlert, notifyError, notifySuccess } from '../../lib/errors.tsx';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { DoctorReportView, Empty, PaymentsPage } from './common.tsx';

type Connection = Schemas['ExtpayConnection'];
type TestResult = Schemas['ExtpayConnectionTest'];

/** The Test button's three outcomes (POST /v1/extpay-connections/{id}/test), each shown its own way. */
const OUTCOMES: Record<TestResult['status'], { title: string; color: string; icon: typeof IconCircleCheck }> = {
  connected: { title: 'Connected', color: 'green', icon: IconCircleCheck },
  cannot_create_checkouts: { title: 'Cannot create checkouts', color: 'orange', icon: IconLock },
  failed_to_authenticate: { title: 'Failed to authenticate', color: 'red', icon: IconPlugConnectedX },
};

export function TestOutcome({ name, result }: { name: string; result: TestResult }) {
  const o = OUTCOMES[result.status];
  const Icon = o.icon;
  return (
    <div role="status" aria-label={`Test result for ${name}`} data-outcome={result.status}>
      <Alert color={o.color} title={o.title} icon={<Icon aria-hidden />} mt={6}>
        <Text size="sm">{result.message}</Text>
        {result.status === 'cannot_create_checkouts' && result.missing_permissions.length > 0 && (
          <>
            <Text size="sm" mt={4}>
              The key lacks these permissions:
            </Text>
            <List size="sm">
              {result.missing_permissions.map((p) => (
                <List.Item key={p}>
                  <Code>{p}</Code>
                </List.Item>
              ))}
            </List>
          </>
        )}
      </Alert>
    </div>
  );
}

export function ConnectionsPage() {
  const qc = useQueryClient();
  const confirm = useConfirm();
  const list = usePaginatedList<Connection>({
    key: ['extpay-connections'],
    fetchPage: async (starting_after) => unwrap(await api.GET('/v1/extpay-connections', { params: { query: { limit: 25, ...(starting_after ? { starting_after } : {}) } } })),
    idOf: (c) => c.id,
  });
  const [creating, setCreating] = useState(false);
  const [results, setResults] = useState<Record<string, TestResult>>({});
  const [doctor, setDoctor] = useState<{ id: string; report: Schemas['DoctorReport'] } | null>(null);
  const test = useMutation({
    mutationFn: async (id: string) => ({ id, result: unwrap(await api.POST('/v1/extpay-connections/{id}/test', { params: { path: { id } } })).data }),
    onSuccess: ({ id, result }) => setResults((r) => ({ ...r, [id]: result })),
    onError: (e) => notifyError(e, 'The test could not run'),
  });
  const diagnose = useMutation({
    mutationFn: async (id: string) => ({ id, report: unwrap(await api.POST('/v1/extpay-connections/{id}/doctor', { params: { path: { id } } })).data }),
    onSuccess: setDoctor,
    onError: (e) => notifyError(e, 'The diagnosis failed'),
  });
  const setStatus = useMutation({
    mutationFn: async ({ id, activate }: { id: string; activate: boolean }) =>
      unwrap(activate ? await api.POST('/v1/extpay-connections/{id}/activate', { params: { path: { id } } }) : await api.POST('/v1/extpay-connections/{id}/deactivate', { params: { path: { id } } })).data,
    onSuccess: (c) => {
      notifySuccess(`${c.name} is ${c.status}`);
      void qc.invalidateQueries({ queryKey: ['extpay-connections'] });
    },
    onError: (e) => notifyError(e),
  });
  return (
    <PaymentsPage title="Payments setup">
      <Group justify="space-between">
        <Text size="sm" c="dimmed">
          External checkout (extpay) connections. Keys and webhook secrets are write-only.
        </Text>
        <Button onClick={() => setCreating(true)}>New connection</Button>
      </Group>
      <ApiErrorAlert error={list.error} title="Could not load connections" />
      <Table.ScrollContainer minWidth={900}>
        <Table striped aria-label="Extpay connections" aria-busy={list.isLoading}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Name</Table.Th>
              <Table.Th scope="col">Environment</Table.Th>
              <Table.Th scope="col">Company</Table.Th>
              <Table.Th scope="col">Key</Table.Th>
              <Table.Th scope="col">Webhook secret</Table.Th>
              <Table.Th scope="col">Status</Table.Th>
              <Table.Th scope="col">Actions</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.items.map((c) => [
              <Table.Tr key={c.id} data-connection={c.id}>
                <Table.Td>
                  <Text size="sm">{c.name}</Text>
                  <Text size="xs" c="dimmed" ff="monospace">
                    {c.id}
                  </Text>
                </Table.Td>
                <Table.Td>{c.environment}</Table.Td>
                <Table.Td ff="monospace">{c.company_id}</Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>
                  <Code>{c.api_key_hint}</Code>
                </Table.Td>
                <Table.Td>{c.webhook_secret_configured ? 'configured' : 'missing'}</Table.Td>
                <Table.Td>
                  <Badge variant="light" color={c.status === 'active' ? 'green' : 'gray'} styles={{ root: { overflow: 'visible' }, label: { overflow: 'visible' } }}>
                    {c.status}
                  </Badge>
                </Table.Td>
                <Table.Td>
                  <Group gap={4} wrap="nowrap">
                    <Button size="xs" loading={test.isPending && test.variables === c.id} onClick={() => test.mutate(c.id)} aria-label={`Test ${c.name}`}>
                      Test
                    </Button>
                    <Button size="xs" variant="light" loading={diagnose.isPending && diagnose.variables === c.id} onClick={() => diagnose.mutate(c.id)} aria-label={`Diagnose ${c.name}`}>
                      Diagnose
                    </Button>
                    {c.status === 'active' ? (
                      <Button
                        size="xs"
                        variant="default"
                        aria-label={`Deactivate ${c.name}`}
                        onClick={async () => {
                          if (await confirm({ title: 'Deactivate this connection?', message: 'Checkouts stop using it until it is activated again.', confirmLabel: 'Deactivate', danger: true })) setStatus.mutate({ id: c.id, activate: false });
                        }}
                      >
                        Deactivate
                      </Button>
                    ) : (
                      <Button size="xs" variant="default" aria-label={`Activate ${c.name}`} onClick={() => setStatus.mutate({ id: c.id, activate: true })}>
                        Activate
                      </Button>
                    )}
                  </Group>
                </Table.Td>
              </Table.Tr>,
              results[c.id] ? (
                <Table.Tr key={`${c.id}-test`}>
                  <Table.Td colSpan={7} pt={0}>
                    <TestOutcome name={c.name} result={results[c.id]!} />
                  </Table.Td>
                </Table.Tr>
              ) : null,
            ])}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      <Empty show={!list.isLoading && list.items.length === 0 && !list.error}>No extpay connections yet.</Empty>
      <Pager list={list as never} label="Connection pages" />
      {doctor && <DoctorReportView report={doctor.report} label={`Diagnosis of ${doctor.id}`} />}
      {creating && <ConnectionForm onClose={() => setCreating(false)} />}
    </PaymentsPage>
  );
}

function ConnectionForm({ onClose }: { onClose: () => void }) {
  const qc = useQueryClient();
  const [f, setF] = useState({ name: '', api_key: '', company_id: '', environment: 'sandbox', webhook_secret: '', base_url: '', api_version_date: '' });
  const set = (k: keyof typeof f) => (e: { currentTarget: { value: string } }) => {
    const v = e.currentTarget.value;
    setF((d) => ({ ...d, [k]: v }));
  };
  const save = useMutation({
    mutationFn: async () =>
      unwrap(
        await api.POST('/v1/extpay-connections', {
          body: {
            name: f.name,
            api_key: f.api_key,
            company_id: f.company_id.trim(),
            environment: f.environment,
            ...(f.webhook_secret ? { webhook_secret: f.webhook_secret } : {}),
            ...(f.base_url.trim() ? { base_url: f.base_url.trim() } : {}),
            ...(f.api_version_date.trim() ? { api_version_date: f.api_version_date.trim() } : {}),
          },
        }),
      ).data,
    onSuccess: (c) => {
      notifySuccess(`${c.name} created (active)`);
      void qc.invalidateQueries({ queryKey: ['extpay-connections'] });
      onClose();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <Modal opened onClose={onClose} title="New extpay connection" size="lg">
      <form onSubmit={submit}>
        <Stack>
          <TextInput label="Connection name" required value={f.name} onChange={set('name')} />
          <NativeSelect
            label="Environment"
            description="Sandbox (test mode) and Production are separate accounts"
            data={[
              { value: 'sandbox', label: 'Sandbox' },
              { value: 'production', label: 'Production' },
            ]}
            value={f.environment}
            onChange={set('environment')}
          />
          <TextInput label="Company id" placeholder="biz_…" required value={f.company_id} onChange={set('company_id')} />
          <PasswordInput label="API key" description="Needs the checkout_configuration, plan and access_pass permissions" required autoComplete="off" value={f.api_key} onChange={set('api_key')} />
          <PasswordInput label="Webhook secret" description="ws_… (sandbox) or whsec_… (production); needed for confirmations" autoComplete="off" value={f.webhook_secret} onChange={set('webhook_secret')} />
          <TextInput label="API base URL" description="Empty: the environment's default" value={f.base_url} onChange={set('base_url')} />
          <TextInput label="API version date" placeholder="YYYY-MM-DD" description="Empty: the version this release speaks" value={f.api_version_date} onChange={set('api_version_date')} />
          <ApiErrorAlert error={save.error} title="Could not create the connection" />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={save.isPending}>
              Create connection
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
