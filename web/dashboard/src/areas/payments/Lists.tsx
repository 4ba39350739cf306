import { Button, Group, NativeSelect, NumberInput, Paper, PasswordInput, Switch, Table, Text, TextInput } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, type Schemas, unwrap } from '../../lib/api.ts';
import { useConfirm } from '../../lib/confirm.tsx';
import { useDates } from '../../lib/dates.ts';
import { ApiErrorAlert, notifyError, notifySuccess } from '../../lib/errors.tsx';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { Empty, PaymentsPage, YesNo } from './common.tsx';

export function BinBlacklistPage() {
  const qc = useQueryClient();
  const dates = useDates();
  const confirm = useConfirm();
  const list = usePaginatedList<Schemas['BinBlacklistEntry']>({
    key: ['bin-blacklist'],
    fetchPage: async (starting_after) => unwrap(await api.GET('/v1/bin-blacklist', { params: { query: { limit: 50, ...(starting_after ? { starting_after } : {}) } } })),
    idOf: (e) => e.id,
  });
  const [prefix, setPrefix] = useState('');
  const [reason, setReason] = useState('');
  const add = useMutation({
    mutationFn: async () => unwrap(await api.POST('/v1/bin-blacklist', { body: { prefix: prefix.trim(), reason: reason.trim() || null } })).data,
    onSuccess: (e) => {
      notifySuccess(`BIN ${e.prefix} blocked`);
      setPrefix('');
      setReason('');
      void qc.invalidateQueries({ queryKey: ['bin-blacklist'] });
    },
  });
  const remove = useMutation({
    mutationFn: async (id: string) => unwrap(await api.DELETE('/v1/bin-blacklist/{id}', { params: { path: { id } } })),
    onSuccess: () => void qc.invalidateQueries({ queryKey: ['bin-blacklist'] }),
    onError: (e) => notifyError(e),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    add.mutate();
  };
  return (
    <PaymentsPage title="Payments setup">
      <Paper withBorder p="sm" component="form" onSubmit={submit} aria-label="Block a BIN prefix">
        <Group align="flex-end">
          <TextInput label="BIN prefix" description="6 to 8 digits" required value={prefix} onChange={(e) => setPrefix(e.currentTarget.value)} w={160} inputMode="numeric" />
          <TextInput label="Reason" value={reason} onChange={(e) => setReason(e.currentTarget.value)} w={320} />
          <Button type="submit" loading={add.isPending}>
            Block prefix
          </Button>
        </Group>
        <ApiErrorAlert error={add.error} title="Could not block the prefix" />
      </Paper>
      <ApiErrorAlert error={list.error} title="Could not load the BIN blacklist" />
      <Table striped aria-label="BIN blacklist">
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Prefix</Table.Th>
            <Table.Th scope="col">Reason</Table.Th>
            <Table.Th scope="col">Added</Table.Th>
            <Table.Th scope="col">Actions</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {list.items.map((e) => (
            <Table.Tr key={e.id}>
              <Table.Td ff="monospace">{e.prefix}</Table.Td>
              <Table.Td>{e.reason ?? '—'}</Table.Td>
              <Table.Td>{dates.dateTime(e.created_at)}</Table.Td>
              <Table.Td>
                <Button
                  size="xs"
                  variant="light"
                  color="red"
                  aria-label={`Unblock ${e.prefix}`}
                  onClick={async () => {
                    if (await confirm({ title: 'Unblock this BIN?', message: `Cards starting with ${e.prefix} will be accepted again.`, confirmLabel: 'Unblock', danger: true })) remove.mutate(e.id);
                  }}
                >
                  Unblock
                </Button>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <Empty show={!list.isLoading && list.items.length === 0 && !list.error}>No blocked prefixes.</Empty>
      <Pager list={list as never} label="BIN blacklist pages" />
    </PaymentsPage>
  );
}

export function TestCardsPage() {
  const qc = useQueryClient();
  const dates = useDates();
  const confirm = useConfirm();
  const list = usePaginatedList<Schemas['TestCard']>({
    key: ['test-cards'],
    fetchPage: async (starting_after) => unwrap(await api.GET('/v1/test-cards', { params: { query: { limit: 50, ...(starting_after ? { starting_after } : {}) } } })),
    idOf: (e) => e.id,
  });
  const [number, setNumber] = useState('');
  const [label, setLabel] = useState('');
  const add = useMutation({
    mutationFn: async () => unwrap(await api.POST('/v1/test-cards', { body: { card_number: number.replace(/\s+/g, ''), label: label.trim() || null } })).data,
    onSuccess: (c) => {
      notifySuccess(`Card ending ${c.last4} listed as a test card`);
      setNumber('');
      setLabel('');
      void qc.invalidateQueries({ queryKey: ['test-cards'] });
    },
  });
  const remove = useMutation({
    mutationFn: async (id: string) => unwrap(await api.DELETE('/v1/test-cards/{id}', { params: { path: { id } } })),
    onSuccess: () => void qc.invalidateQueries({ queryKey: ['test-cards'] }),
    onError: (e) => notifyError(e),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    add.mutate();
  };
  return (
    <PaymentsPage title="Payments setup">
      <Paper withBorder p="sm" component="form" onSubmit={submit} aria-label="Add a test card">
        <Group align="flex-end">
          <PasswordInput label="Card number" description="Stored only as a keyed hash and its last 4 digits" required autoComplete="off" value={number} onChange={(e) => setNumber(e.currentTarget.value)} w={260} />
          <TextInput label="Label" value={label} onChange={(e) => setLabel(e.currentTarget.value)} w={240} />
          <Button type="submit" loading={add.isPending}>
            Add test card
          </Button>
        </Group>
        <ApiErrorAlert error={add.error} title="Could not add the test card" />
      </Paper>
      <ApiErrorAlert error={list.error} title="Could not load test cards" />
      <Table striped aria-label="Test cards">
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Card</Table.Th>
            <Table.Th scope="col">Label</Table.Th>
            <Table.Th scope="col">Added</Table.Th>
            <Table.Th scope="col">Actions</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {list.items.map((c) => (
            <Table.Tr key={c.id}>
              <Table.Td ff="monospace">•••• {c.last4}</Table.Td>
              <Table.Td>{c.label ?? '—'}</Table.Td>
              <Table.Td>{dates.dateTime(c.created_at)}</Table.Td>
              <Table.Td>
                <Button
                  size="xs"
                  variant="light"
                  color="red"
                  aria-label={`Remove test card ending ${c.last4}`}
                  onClick={async () => {
                    if (await confirm({ title: 'Remove this test card?', message: `Payments with the card ending ${c.last4} will be live payments again.`, confirmLabel: 'Remove', danger: true })) remove.mutate(c.id);
                  }}
                >
                  Remove
                </Button>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <Empty show={!list.isLoading && list.items.length === 0 && !list.error}>No test cards.</Empty>
      <Pager list={list as never} label="Test card pages" />
    </PaymentsPage>
  );
}

type FraudRule = Schemas['FraudRule'];
const DIMENSIONS: FraudRule['dimension'][] = ['card_fingerprint', 'bin', 'email', 'ip_address', 'order'];

export function FraudRulesPage() {
  const qc = useQueryClient();
  const confirm = useConfirm();
  const list = usePaginatedList<FraudRule>({
    key: ['fraud-rules'],
    fetchPage: async (starting_after) => unwrap(await api.GET('/v1/fraud-rules', { params: { query: { limit: 50, ...(starting_after ? { starting_after } : {}) } } })),
    idOf: (e) => e.id,
  });
  const [draft, setDraft] = useState({ name: '', metric: 'attempts' as FraudRule['metric'], dimension: 'card_fingerprint' as FraudRule['dimension'], bin_length: 6 as number | string, threshold: 5 as number | string, window_seconds: 3600 as number | string, is_enabled: true });
  const add = useMutation({
    mutationFn: async () =>
      unwrap(
        await api.POST('/v1/fraud-rules', {
          body: {
            name: draft.name,
            metric: draft.metric,
            dimension: draft.dimension,
            ...(draft.dimension === 'bin' ? { bin_length: Number(draft.bin_length) } : {}),
            threshold: Number(draft.threshold),
            window_seconds: Number(draft.window_seconds),
            is_enabled: draft.is_enabled,
          },
        }),
      ).data,
    onSuccess: (r) => {
      notifySuccess(`Rule ${r.name} created`);
      setDraft((d) => ({ ...d, name: '' }));
      void qc.invalidateQueries({ queryKey: ['fraud-rules'] });
    },
  });
  const toggle = useMutation({
    mutationFn: async (r: FraudRule) => unwrap(await api.PATCH('/v1/fraud-rules/{id}', { params: { path: { id: r.id } }, body: { is_enabled: !r.is_enabled } })).data,
    onSuccess: () => void qc.invalidateQueries({ queryKey: ['fraud-rules'] }),
    onError: (e) => notifyError(e),
  });
  const remove = useMutation({
    mutationFn: async (id: string) => unwrap(await api.DELETE('/v1/fraud-rules/{id}', { params: { path: { id } } })),
    onSuccess: () => void qc.invalidateQueries({ queryKey: ['fraud-rules'] }),
    onError: (e) => notifyError(e),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    add.mutate();
  };
  return (
    <PaymentsPage title="Payments setup">
      <Paper withBorder p="sm" component="form" onSubmit={submit} aria-label="New fraud velocity rule">
        <Group align="flex-end" wrap="wrap">
          <TextInput label="Rule name" required value={draft.name} onChange={(e) => setDraft({ ...draft, name: e.currentTarget.value })} w={200} />
          <NativeSelect
            label="Metric"
            data={[
              { value: 'attempts', label: 'Attempts' },
              { value: 'declines', label: 'Declines' },
            ]}
            value={draft.metric}
            onChange={(e) => setDraft({ ...draft, metric: e.currentTarget.value as FraudRule['metric'] })}
          />
          <NativeSelect label="Counted per" data={DIMENSIONS.map((d) => ({ value: d, label: d.replace(/_/g, ' ') }))} value={draft.dimension} onChange={(e) => setDraft({ ...draft, dimension: e.currentTarget.value as FraudRule['dimension'] })} />
          {draft.dimension === 'bin' && <NumberInput label="BIN length" min={6} max={8} value={draft.bin_length} onChange={(v) => setDraft({ ...draft, bin_length: v })} w={110} />}
          <NumberInput label="Threshold" min={1} allowDecimal={false} required value={draft.threshold} onChange={(v) => setDraft({ ...draft, threshold: v })} w={110} />
          <NumberInput label="Window (seconds)" min={1} max={2592000} allowDecimal={false} required value={draft.window_seconds} onChange={(v) => setDraft({ ...draft, window_seconds: v })} w={150} />
          <Switch label="Enabled" checked={draft.is_enabled} onChange={(e) => setDraft({ ...draft, is_enabled: e.currentTarget.checked })} />
          <Button type="submit" loading={add.isPending}>
            Create rule
          </Button>
        </Group>
        <ApiErrorAlert error={add.error} title="Could not create the rule" />
      </Paper>
      <ApiErrorAlert error={list.error} title="Could not load fraud rules" />
      <Table striped aria-label="Fraud rules">
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Name</Table.Th>
            <Table.Th scope="col">Rule</Table.Th>
            <Table.Th scope="col">Enabled</Table.Th>
            <Table.Th scope="col">Actions</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {list.items.map((r) => (
            <Table.Tr key={r.id}>
              <Table.Td>{r.name}</Table.Td>
              <Table.Td>
                <Text size="sm">
                  Block after {r.threshold} {r.metric} per {r.dimension.replace(/_/g, ' ')}
                  {r.bin_length ? ` (${r.bin_length} digits)` : ''} within {r.window_seconds} s
                </Text>
              </Table.Td>
              <Table.Td>
                <YesNo value={r.is_enabled} label="Enabled" />
              </Table.Td>
              <Table.Td>
                <Group gap={4} wrap="nowrap">
                  <Button size="xs" variant="default" onClick={() => toggle.mutate(r)} aria-label={`${r.is_enabled ? 'Disable' : 'Enable'} ${r.name}`}>
                    {r.is_enabled ? 'Disable' : 'Enable'}
                  </Button>
                  <Button
                    size="xs"
                    variant="light"
                    color="red"
                    aria-label={`Delete ${r.name}`}
                    onClick={async () => {
                      if (await confirm({ title: 'Delete this rule?', message: `${r.name} and what it counted are deleted.`, confirmLabel: 'Delete', danger: true })) remove.mutate(r.id);
                    }}
                  >
                    Delete
                  </Button>
                </Group>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <Empty show={!list.isLoading && list.items.length === 0 && !list.error}>No fraud rules: none exists until you create one.</Empty>
      <Pager list={list as never} label="Fraud rule pages" />
    </PaymentsPage>
  );
}
