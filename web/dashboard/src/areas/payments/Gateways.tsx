import { Button, Code, Group, Modal, NumberInput, PasswordInput, Select, Stack, Switch, Table, Text, TextInput } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, type Schemas, unwrap } from '../../lib/api.ts';
import { ApiErrorAlert, notifyError, notifySuccess } from '../../lib/errors.tsx';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { DoctorReportView, Empty, PaymentsPage, YesNo } from './common.tsx';

type Gateway = Schemas['Gateway'];
type Kind = Gateway['kind'];

/** Credential fields per kind: they are sent, never shown (the API answers `credentials_hint`). */
const CREDENTIAL_FIELDS: Record<Kind, { key: string; label: string; required: boolean }[]> = {
  nmi: [{ key: 'security_key', label: 'Security key', required: true }],
  threeds: [
    { key: 'api_key', label: 'API key', required: true },
    { key: 'risk_sdk_key', label: 'Risk SDK key', required: false },
    { key: 'webhook_secret', label: 'Webhook secret', required: false },
  ],
};

export function useGateways(limit = 100) {
  return usePaginatedList<Gateway>({
    key: ['gateways', limit],
    fetchPage: async (starting_after) => unwrap(await api.GET('/v1/gateways', { params: { query: { limit, ...(starting_after ? { starting_after } : {}) } } })),
    idOf: (g) => g.id,
  });
}

export function GatewaysPage() {
  const list = useGateways(25);
  const [editing, setEditing] = useState<Gateway | 'new' | null>(null);
  const [doctor, setDoctor] = useState<{ id: string; report: Schemas['DoctorReport'] } | null>(null);
  const diagnose = useMutation({
    mutationFn: async (id: string) => ({ id, report: unwrap(await api.POST('/v1/gateways/{id}/doctor', { params: { path: { id } } })).data }),
    onSuccess: setDoctor,
    onError: (e) => notifyError(e, 'The diagnosis failed'),
  });
  return (
    <PaymentsPage title="Payments setup">
      <Group justify="space-between">
        <Text size="sm" c="dimmed">
          Card gateway accounts. Credentials are write-only: they are stored encrypted and only their last characters are shown.
        </Text>
        <Button onClick={() => setEditing('new')}>New gateway</Button>
      </Group>
      <ApiErrorAlert error={list.error} title="Could not load gateways" />
      <Table.ScrollContainer minWidth={900}>
        <Table striped aria-label="Gateways" aria-busy={list.isLoading}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Name</Table.Th>
              <Table.Th scope="col">Kind</Table.Th>
              <Table.Th scope="col">Mode</Table.Th>
              <Table.Th scope="col">Active</Table.Th>
              <Table.Th scope="col">Monthly cap</Table.Th>
              <Table.Th scope="col">Credentials</Table.Th>
              <Table.Th scope="col">Actions</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.items.map((g) => (
              <Table.Tr key={g.id} data-gateway={g.id}>
                <Table.Td>
                  <Text size="sm">{g.name}</Text>
                  <Text size="xs" c="dimmed" ff="monospace">
                    {g.id}
                  </Text>
                </Table.Td>
                <Table.Td>{g.kind === 'nmi' ? 'NMI' : '3-D Secure'}</Table.Td>
                <Table.Td>{g.test_mode ? 'Test' : 'Live'}</Table.Td>
                <Table.Td>
                  <YesNo value={g.is_active} label="Active" />
                </Table.Td>
                <Table.Td>{g.monthly_cap ?? '—'}</Table.Td>
                <Table.Td>
                  {Object.entries(g.credentials_hint).map(([k, v]) => (
                    <Text key={k} size="xs">
                      {k}: <Code>{v}</Code>
                    </Text>
                  ))}
                </Table.Td>
                <Table.Td>
                  <Group gap={4} wrap="nowrap">
                    <Button size="xs" variant="default" onClick={() => setEditing(g)} aria-label={`Edit ${g.name}`}>
                      Edit
                    </Button>
                    <Button size="xs" variant="light" loading={diagnose.isPending && diagnose.variables === g.id} onClick={() => diagnose.mutate(g.id)} aria-label={`Diagnose ${g.name}`}>
                      Diagnose
                    </Button>
                  </Group>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      <Empty show={!list.isLoading && list.items.length === 0 && !list.error}>No gateways yet.</Empty>
      <Pager list={list as never} label="Gateway pages" />
      {doctor && <DoctorReportView report={doctor.report} label={`Diagnosis of ${doctor.id}`} />}
      {editing && <GatewayForm gateway={editing === 'new' ? null : editing} onClose={() => setEditing(null)} />}
    </PaymentsPage>
  );
}

function GatewayForm({ gateway, onClose }: { gateway: Gateway | null; onClose: () => void }) {
  const qc = useQueryClient();
  const [kind, setKind] = useState<Kind>(gateway?.kind ?? 'nmi');
  const [name, setName] = useState(gateway?.name ?? '');
  const [baseUrl, setBaseUrl] = useState(gateway?.base_url ?? '');
  const [testMode, setTestMode] = useState(gateway?.test_mode ?? false);
  const [active, setActive] = useState(gateway?.is_active ?? true);
  const [cap, setCap] = useState<number | string>(gateway?.monthly_cap ?? '');
  const [descriptor, setDescriptor] = useState(gateway?.descriptor ?? '');
  const [creds, setCreds] = useState<Record<string, string>>({});
  const save = useMutation({
    mutationFn: async () => {
      const credentials = Object.fromEntries(Object.entries(creds).filter(([, v]) => v.trim() !== ''));
      const common = {
        name,
        is_active: active,
        monthly_cap: cap === '' ? null : Number(cap),
        descriptor: descriptor.trim() ? descriptor.trim() : null,
        ...(baseUrl.trim() ? { base_url: baseUrl.trim() } : {}),
      };
      if (gateway) {
        return unwrap(
          await api.PATCH('/v1/gateways/{id}', {
            params: { path: { id: gateway.id } },
            body: { ...common, test_mode: testMode, ...(Object.keys(credentials).length ? { credentials } : {}) },
          }),
        ).data;
      }
      const body =
        kind === 'nmi'
          ? { kind, ...common, test_mode: testMode, credentials: credentials as { security_key: string } }
          : { kind, ...common, base_url: baseUrl.trim(), test_mode: testMode, credentials: credentials as { api_key: string } };
      return unwrap(await api.POST('/v1/gateways', { body })).data;
    },
    onSuccess: (g) => {
      notifySuccess(`${g.name} saved`);
      void qc.invalidateQueries({ queryKey: ['gateways'] });
      onClose();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <Modal opened onClose={onClose} title={gateway ? `Edit ${gateway.name}` : 'New gateway'} size="lg">
      <form onSubmit={submit}>
        <Stack>
          <Select
            label="Kind"
            data={[
              { value: 'nmi', label: 'NMI (Direct Post)' },
              { value: 'threeds', label: '3-D Secure gateway' },
            ]}
            value={kind}
            onChange={(v) => v && setKind(v as Kind)}
            disabled={!!gateway}
            description={gateway ? 'The kind is fixed once created' : undefined}
            allowDeselect={false}
          />
          <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} />
          <TextInput label="Base URL" required={kind === 'threeds' && !gateway} placeholder={kind === 'nmi' ? 'https://secure.nmi.com' : 'https://…'} value={baseUrl} onChange={(e) => setBaseUrl(e.currentTarget.value)} />
          <Stack gap={4}>
            <Text size="sm" fw={500}>
              Credentials {gateway ? '(leave empty to keep the stored ones; filling any replaces them as a whole)' : ''}
            </Text>
            {gateway &&
              Object.entries(gateway.credentials_hint).map(([k, v]) => (
                <Text key={k} size="xs" c="dimmed">
                  Stored {k}: <Code>{v}</Code>
                </Text>
              ))}
            {CREDENTIAL_FIELDS[kind].map((f) => (
              <PasswordInput
                key={f.key}
                label={f.label}
                required={f.required && !gateway}
                autoComplete="off"
                value={creds[f.key] ?? ''}
                onChange={(e) => {
                  const v = e.currentTarget.value;
                  setCreds((c) => ({ ...c, [f.key]: v }));
                }}
              />
            ))}
          </Stack>
          <NumberInput label="Monthly cap (minor units, UTC calendar month)" description="Empty: no cap" min={1} allowDecimal={false} value={cap} onChange={setCap} />
          <TextInput label="Soft descriptor" value={descriptor} onChange={(e) => setDescriptor(e.currentTarget.value)} />
          <Switch label="Test mode" checked={testMode} onChange={(e) => setTestMode(e.currentTarget.checked)} />
          <Switch label="Active" checked={active} onChange={(e) => setActive(e.currentTarget.checked)} />
          <ApiErrorAlert error={save.error} title="Could not save the gateway" />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={save.isPending}>
              {gateway ? 'Save gateway' : 'Create gateway'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
