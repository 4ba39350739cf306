import { Button, Checkbox, Group, Modal, NativeSelect, NumberInput, Stack, Table, Text, TextInput } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useEffect, useState } from 'react';
import { api, unwrap } from '../../lib/api.ts';
import { ApiErrorAlert, notifySuccess } from '../../lib/errors.tsx';
import { formatMoney } from '../../lib/money.ts';
import { useCan } from '../../lib/session.tsx';
import { campaignOptions, type Upsell, useAllCampaigns, useCampaignOffers, useCampaignUpsells } from './catalogApi.ts';
import { ActiveBadge } from './ActiveBadge.tsx';

/** A campaign's funnel steps after the first purchase, ordered by step. */
export function UpsellsTab({ campaignId }: { campaignId?: string }) {
  const canManage = useCan('catalog:manage');
  const campaigns = useAllCampaigns();
  const [picked, setPicked] = useState(campaignId ?? '');
  const selected = picked || campaigns.data?.[0]?.id || '';
  const upsells = useCampaignUpsells(selected || null);
  const offers = useCampaignOffers(selected || null);
  const currency = campaigns.data?.find((c) => c.id === selected)?.currency ?? 'USD';
  const [editing, setEditing] = useState<Upsell | 'new' | null>(null);
  const offerOf = (id: string) => offers.data?.find((o) => o.id === id);
  return (
    <Stack>
      <Group align="flex-end">
        {!campaignId && <NativeSelect label="Campaign" data={campaignOptions(campaigns.data)} value={selected} onChange={(e) => setPicked(e.currentTarget.value)} w={280} />}
        {canManage && selected && <Button onClick={() => setEditing('new')}>New upsell</Button>}
      </Group>
      <ApiErrorAlert error={upsells.error} title="Could not load upsells" />
      <Table striped aria-label="Upsells" aria-busy={upsells.isFetching}>
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Step</Table.Th>
            <Table.Th scope="col">Name</Table.Th>
            <Table.Th scope="col">Offer</Table.Th>
            <Table.Th scope="col" style={{ textAlign: 'right' }}>
              Price
            </Table.Th>
            <Table.Th scope="col">Status</Table.Th>
            {canManage && <Table.Th scope="col">Actions</Table.Th>}
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {(upsells.data ?? []).map((u) => (
            <Table.Tr key={u.id} data-upsell={u.id}>
              <Table.Td>{u.step}</Table.Td>
              <Table.Td>
                {u.name}
                <Text size="xs" c="dimmed" ff="monospace">
                  {u.id}
                </Text>
              </Table.Td>
              <Table.Td>{offerOf(u.offer_id)?.name ?? u.offer_id}</Table.Td>
              <Table.Td style={{ textAlign: 'right' }}>{offerOf(u.offer_id) ? formatMoney(offerOf(u.offer_id)!.price, currency) : '—'}</Table.Td>
              <Table.Td><ActiveBadge active={u.is_active} /></Table.Td>
              {canManage && (
                <Table.Td>
                  <Button size="xs" variant="default" onClick={() => setEditing(u)} aria-label={`Edit upsell ${u.name}`}>
                    Edit
                  </Button>
                </Table.Td>
              )}
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {upsells.data && upsells.data.length === 0 && <Text c="dimmed">No upsells in this campaign’s funnel.</Text>}
      <UpsellForm upsell={editing} campaignId={selected} nextStep={(upsells.data?.at(-1)?.step ?? 0) + 1} onClose={() => setEditing(null)} />
    </Stack>
  );
}

function UpsellForm({ upsell, campaignId, nextStep, onClose }: { upsell: Upsell | 'new' | null; campaignId: string; nextStep: number; onClose: () => void }) {
  const qc = useQueryClient();
  const offers = useCampaignOffers(campaignId || null);
  const existing = upsell && upsell !== 'new' ? upsell : null;
  const [name, setName] = useState('');
  const [step, setStep] = useState<number | string>(1);
  const [offerId, setOfferId] = useState('');
  const [active, setActive] = useState(true);
  useEffect(() => {
    if (!upsell) return;
    setName(existing?.name ?? '');
    setStep(existing?.step ?? nextStep);
    setOfferId(existing?.offer_id ?? offers.data?.[0]?.id ?? '');
    setActive(existing?.is_active ?? true);
  }, [upsell]);
  const save = useMutation({
    mutationFn: async () => {
      if (existing) return unwrap(await api.PATCH('/v1/upsells/{id}', { params: { path: { id: existing.id } }, body: { name, step: Number(step), is_active: active } })).data;
      return unwrap(await api.POST('/v1/upsells', { body: { campaign_id: campaignId, offer_id: offerId, step: Number(step), name } })).data;
    },
    onSuccess: async (u) => {
      notifySuccess(existing ? `Upsell ${u.name} saved` : `Upsell ${u.name} created`);
      await qc.invalidateQueries({ queryKey: ['upsells'] });
      onClose();
    },
  });
  useEffect(() => save.reset(), [upsell]);
  function submit(e: FormEvent) {
    e.preventDefault();
    save.mutate();
  }
  return (
    <Modal opened={!!upsell} onClose={onClose} title={existing ? 'Edit upsell' : 'New upsell'}>
      <form onSubmit={submit}>
        <Stack>
          {!existing && <NativeSelect label="Offer" description="An offer of this campaign" required data={(offers.data ?? []).map((o) => ({ value: o.id, label: o.name }))} value={offerId} onChange={(e) => setOfferId(e.currentTarget.value)} />}
          <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} maxLength={200} />
          <NumberInput label="Step" description="Position in the funnel after the first purchase, from 1" min={1} max={100} allowDecimal={false} required value={step} onChange={setStep} />
          {existing && <Checkbox label="Active" checked={active} onChange={(e) => setActive(e.currentTarget.checked)} />}
          <ApiErrorAlert error={save.error} title="Not saved" />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={save.isPending}>
              {existing ? 'Save' : 'Create upsell'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
