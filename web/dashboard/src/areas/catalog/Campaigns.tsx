import { Anchor, Button, Checkbox, Group, Modal, NativeSelect, Stack, Table, Text, TextInput } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
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

/**
 * Where the campaign's card payments go: one of the team's gateways or payment routers (listing them
 * needs gateways:manage; without it the current choice is kept and shown by id).
 */
function PaymentRouteSelect({ value, onChange, enabled }: { value: string; onChange: (v: string) => void; enabled: boolean }) {
  const routes = useQuery({
    queryKey: ['campaign-form', 'payment-routes'],
    enabled,
    retry: false,
    queryFn: async () => {
      const [gateways, routers] = await Promise.all([api.GET('/v1/gateways', { params: { query: { limit: 100 } } }), api.GET('/v1/payment-orchestrators', { params: { query: { limit: 100 } } })]);
      return { gateways: unwrap(gateways).data, routers: unwrap(routers).data };
    },
  });
  type Option = { value: string; label: string };
  const data: (Option | { group: string; items: Option[] })[] = [
    { value: '', label: 'None (the campaign takes no card payments)' },
    { group: 'Gateways', items: (routes.data?.gateways ?? []).map((g) => ({ value: `gateway:${g.id}`, label: `${g.name}${g.is_active ? '' : ' (inactive)'}` })) },
    { group: 'Payment routers', items: (routes.data?.routers ?? []).map((r) => ({ value: `router:${r.id}`, label: `${r.name} (${r.members.length} gateways, ${r.strategy})${r.is_active ? '' : ' (inactive)'}` })) },
  ];
  // The current choice stays selectable while the lists load or when they cannot be read.
  const known = data.some((d) => ('items' in d ? d.items.some((i) => i.value === value) : d.value === value));
  if (!known) data.push({ value, label: value.replace(':', ' ') });
  return (
    <NativeSelect
      label="Payment route"
      description={routes.isError ? 'Your role cannot list the gateways (gateways:manage); the current one is kept.' : 'A gateway, or a router that spreads payments over several'}
      data={data}
      value={value}
      onChange={(e) => onChange(e.currentTarget.value)}
    />
  );
}

/** Create (name, currency, gateway) or edit (name, gateway, active) a campaign. */
export function CampaignForm({ campaign, onClose }: { campaign: Campaign | 'new' | null; onClose: () => void }) {
  const qc = useQueryClient();
  const isNew = campaign === 'new';
  const [name, setName] = useState('');
  const [currency, setCurrency] = useState('USD');
  const [route, setRoute] = useState('');
  const [active, setActive] = useState(true);
  useEffect(() => {
    if (!campaign) return;
    const c = campaign === 'new' ? null : campaign;
    setName(c?.name ?? '');
    setCurrency(c?.currency ?? 'USD');
    setRoute(c?.payment_orchestrator_id ? `router:${c.payment_orchestrator_id}` : c?.gateway_id ? `gateway:${c.gateway_id}` : '');
    setActive(c?.is_active ?? true);
  }, [campaign]);
  const save = useMutation({
    mutationFn: async () => {
      const [kind, id] = route.split(':') as ['gateway' | 'router' | '', string | undefined];
      const gateway_id = kind === 'gateway' && id ? id : null;
      const payment_orchestrator_id = kind === 'router' && id ? id : null;
      if (campaign === 'new') {
        const body = { name, currency: currency.toUpperCase(), ...(gateway_id ? { gateway_id } : {}), ...(payment_orchestrator_id ? { payment_orchestrator_id } : {}) };
        return unwrap(await api.POST('/v1/campaigns', { body })).data;
      }
      return unwrap(await api.PATCH('/v1/campaigns/{id}', { params: { path: { id: (campaign as Campaign).id } }, body: { name, is_active: active, gateway_id, payment_orchestrator_id } })).data;
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
          <PaymentRouteSelect value={route} onChange={setRoute} enabled={!!campaign} />
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
