import { Anchor, Button, Checkbox, Group, Modal, Stack, Table, Text, TextInput } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { type FormEvent, useEffect, useState } from 'react';
import { api, unwrap } from '../../lib/api.ts';
import { ApiErrorAlert, notifySuccess } from '../../lib/errors.tsx';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { useCan } from '../../lib/session.tsx';
import { useDates } from '../../lib/dates.ts';
import { type Campaign, PAGE_SIZE } from './catalogApi.ts';
import { ActiveBadge } from './ActiveBadge.tsx';

export function CampaignsTab() {
  const canManage = useCan('catalog:manage');
  const dates = useDates();
  const [editing, setEditing] = useState<Campaign | 'new' | null>(null);
  const list = usePaginatedList<Campaign>({
    key: ['campaigns', 'list'],
    fetchPage: async (after) => unwrap(await api.GET('/v1/campaigns', { params: { query: { limit: PAGE_SIZE, ...(after ? { starting_after: after } : {}) } } })),
    idOf: (c) => c.id,
  });
  return (
    <Stack>
      {canManage && (
        <Button w="fit-content" onClick={() => setEditing('new')}>
          New campaign
        </Button>
      )}
      <ApiErrorAlert error={list.error} title="Could not load campaigns" />
      <Table striped highlightOnHover aria-label="Campaigns" aria-busy={list.isLoading}>
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Name</Table.Th>
            <Table.Th scope="col">Currency</Table.Th>
            <Table.Th scope="col">Gateway</Table.Th>
            <Table.Th scope="col">Status</Table.Th>
            <Table.Th scope="col">Created</Table.Th>
            {canManage && <Table.Th scope="col">Actions</Table.Th>}
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {list.items.map((c) => (
            <Table.Tr key={c.id} data-campaign={c.id}>
              <Table.Td>
                <Anchor component={Link} to={`/catalog/campaigns/${c.id}`}>
                  {c.name}
                </Anchor>
                <Text size="xs" c="dimmed" ff="monospace">
                  {c.id}
                </Text>
              </Table.Td>
              <Table.Td>{c.currency}</Table.Td>
              <Table.Td ff="monospace">{c.payment_orchestrator_id ?? c.gateway_id ?? '—'}</Table.Td>
              <Table.Td><ActiveBadge active={c.is_active} /></Table.Td>
              <Table.Td>{dates.date(c.created_at)}</Table.Td>
              {canManage && (
                <Table.Td>
                  <Button size="xs" variant="default" onClick={() => setEditing(c)} aria-label={`Edit campaign ${c.name}`}>
                    Edit
                  </Button>
                </Table.Td>
              )}
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {!list.isLoading && list.items.length === 0 && <Text c="dimmed">No campaigns yet.</Text>}
      <Pager list={list as never} label="Campaign pages" />
      <CampaignForm campaign={editing} onClose={() => setEditing(null)} />
    </Stack>
  );
}

/** Create (name, currency, gateway) or edit (name, gateway, active) a campaign. */
export function CampaignForm({ campaign, onClose }: { campaign: Campaign | 'new' | null; onClose: () => void }) {
  const qc = useQueryClient();
  const isNew = campaign === 'new';
  const [name, setName] = useState('');
  const [currency, setCurrency] = useState('USD');
  const [gateway, setGateway] = useState('');
  const [active, setActive] = useState(true);
  useEffect(() => {
    if (!campaign) return;
    const c = campaign === 'new' ? null : campaign;
    setName(c?.name ?? '');
    setCurrency(c?.currency ?? 'USD');
    setGateway(c?.gateway_id ?? '');
    setActive(c?.is_active ?? true);
  }, [campaign]);
  const save = useMutation({
    mutationFn: async () => {
      if (campaign === 'new') return unwrap(await api.POST('/v1/campaigns', { body: { name, currency: currency.toUpperCase(), ...(gateway ? { gateway_id: gateway } : {}) } })).data;
      return unwrap(await api.PATCH('/v1/campaigns/{id}', { params: { path: { id: (campaign as Campaign).id } }, body: { name, is_active: active, gateway_id: gateway || null } })).data;
    },
    onSuccess: async (c) => {
      notifySuccess(isNew ? `Campaign ${c.name} created` : `Campaign ${c.name} saved`);
      await qc.invalidateQueries({ queryKey: ['campaigns'] });
      await qc.invalidateQueries({ queryKey: ['campaign', c.id] });
      onClose();
    },
  });
  useEffect(() => save.reset(), [campaign]);
  function submit(e: FormEvent) {
    e.preventDefault();
    save.mutate();
  }
  return (
    <Modal opened={!!campaign} onClose={onClose} title={isNew ? 'New campaign' : 'Edit campaign'}>
      <form onSubmit={submit}>
        <Stack>
          <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} maxLength={200} />
          <TextInput label="Currency" description="ISO 4217 code; fixed once created" required disabled={!isNew} value={currency} onChange={(e) => setCurrency(e.currentTarget.value)} maxLength={3} />
          <TextInput label="Gateway id" description="gw_… (optional)" value={gateway} onChange={(e) => setGateway(e.currentTarget.value.trim())} />
          {!isNew && <Checkbox label="Active" checked={active} onChange={(e) => setActive(e.currentTarget.checked)} />}
          <ApiErrorAlert error={save.error} title="Not saved" />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={save.isPending}>
              {isNew ? 'Create campaign' : 'Save'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
