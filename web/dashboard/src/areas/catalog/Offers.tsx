import { Button, Checkbox, Group, Modal, NativeSelect, NumberInput, Stack, Table, Text, TextInput } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useEffect, useState } from 'react';
import { api, type Schemas, unwrap } from '../../lib/api.ts';
import { ApiErrorAlert, notifySuccess } from '../../lib/errors.tsx';
import { formatMoney, parseMoney, toDecimalString } from '../../lib/money.ts';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { useCan } from '../../lib/session.tsx';
import { campaignOptions, type Offer, PAGE_SIZE, useAllCampaigns, useAllProducts } from './catalogApi.ts';
import { ActiveBadge } from './ActiveBadge.tsx';

/** "Every 1 month at $29.99 after 14 days" — an offer's billing in words. */
export function billingText(o: Offer, currency: string): string {
  if (o.billing === 'one_time') return 'One time';
  const every = `every ${o.interval_count ?? 1} ${o.interval_unit ?? ''}${(o.interval_count ?? 1) > 1 ? 's' : ''}`;
  const recurring = o.recurring_price !== null ? ` at ${formatMoney(o.recurring_price, currency)}` : '';
  return o.billing === 'trial' ? `Trial ${o.trial_days ?? '?'} days, then ${every}${recurring}` : `Recurring ${every}${recurring}`;
}

export function OffersTab({ campaignId }: { campaignId?: string }) {
  const canManage = useCan('catalog:manage');
  const campaigns = useAllCampaigns();
  const products = useAllProducts();
  const [filter, setFilter] = useState(campaignId ?? '');
  const [editing, setEditing] = useState<Offer | 'new' | null>(null);
  const list = usePaginatedList<Offer>({
    key: ['offers', 'list', filter],
    fetchPage: async (after) => unwrap(await api.GET('/v1/offers', { params: { query: { limit: PAGE_SIZE, ...(filter ? { campaign_id: filter } : {}), ...(after ? { starting_after: after } : {}) } } })),
    idOf: (o) => o.id,
  });
  const campaignOf = (id: string) => campaigns.data?.find((c) => c.id === id);
  const productName = (id: string) => products.data?.find((p) => p.id === id)?.name ?? id;
  return (
    <Stack>
      <Group align="flex-end">
        {!campaignId && <NativeSelect label="Campaign" data={campaignOptions(campaigns.data, 'All campaigns')} value={filter} onChange={(e) => setFilter(e.currentTarget.value)} w={280} />}
        {canManage && <Button onClick={() => setEditing('new')}>New offer</Button>}
      </Group>
      <ApiErrorAlert error={list.error} title="Could not load offers" />
      <Table.ScrollContainer minWidth={800}>
        <Table striped highlightOnHover aria-label="Offers" aria-busy={list.isLoading}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Name</Table.Th>
              {!campaignId && <Table.Th scope="col">Campaign</Table.Th>}
              <Table.Th scope="col">Product</Table.Th>
              <Table.Th scope="col">Billing</Table.Th>
              <Table.Th scope="col" style={{ textAlign: 'right' }}>
                Price
              </Table.Th>
              <Table.Th scope="col" style={{ textAlign: 'right' }}>
                Shipping
              </Table.Th>
              <Table.Th scope="col">Status</Table.Th>
              {canManage && <Table.Th scope="col">Actions</Table.Th>}
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.items.map((o) => {
              const currency = campaignOf(o.campaign_id)?.currency ?? 'USD';
              return (
                <Table.Tr key={o.id} data-offer={o.id}>
                  <Table.Td>
                    {o.name}
                    <Text size="xs" c="dimmed" ff="monospace">
                      {o.id}
                    </Text>
                  </Table.Td>
                  {!campaignId && <Table.Td>{campaignOf(o.campaign_id)?.name ?? o.campaign_id}</Table.Td>}
                  <Table.Td>{productName(o.product_id)}</Table.Td>
                  <Table.Td>
                    <Text size="sm">{billingText(o, currency)}</Text>
                    <Text size="xs" c="dimmed">
                      {o.fulfillment_type}
                    </Text>
                  </Table.Td>
                  <Table.Td style={{ textAlign: 'right' }}>{formatMoney(o.price, currency)}</Table.Td>
                  <Table.Td style={{ textAlign: 'right' }}>{formatMoney(o.shipping, currency)}</Table.Td>
                  <Table.Td><ActiveBadge active={o.is_active} /></Table.Td>
                  {canManage && (
                    <Table.Td>
                      <Button size="xs" variant="default" onClick={() => setEditing(o)} aria-label={`Edit offer ${o.name}`}>
                        Edit
                      </Button>
                    </Table.Td>
                  )}
                </Table.Tr>
              );
            })}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {!list.isLoading && list.items.length === 0 && <Text c="dimmed">No offers.</Text>}
      <Pager list={list as never} label="Offer pages" />
      <OfferForm offer={editing} defaultCampaignId={filter || campaignId || ''} onClose={() => setEditing(null)} />
    </Stack>
  );
}

type CreateOffer = Schemas['CreateOffer'];
type Billing = 'one_time' | 'recurring' | 'trial';
type Unit = 'day' | 'week' | 'month' | 'year';

/** Create an offer (campaign, product, prices in the campaign's currency, billing) or edit its name, prices and status. */
function OfferForm({ offer, defaultCampaignId, onClose }: { offer: Offer | 'new' | null; defaultCampaignId: string; onClose: () => void }) {
  const qc = useQueryClient();
  const campaigns = useAllCampaigns();
  const products = useAllProducts();
  const isNew = offer === 'new';
  const existing = offer && offer !== 'new' ? offer : null;
  const [campaignId, setCampaignId] = useState('');
  const [productId, setProductId] = useState('');
  const [name, setName] = useState('');
  const [price, setPrice] = useState('');
  const [shipping, setShipping] = useState('0');
  const [fulfillment, setFulfillment] = useState<'physical' | 'digital'>('physical');
  const [billing, setBilling] = useState<Billing>('one_time');
  const [unit, setUnit] = useState<Unit>('month');
  const [count, setCount] = useState<number | string>(1);
  const [recurringPrice, setRecurringPrice] = useState('');
  const [trialDays, setTrialDays] = useState<number | string>(14);
  const [active, setActive] = useState(true);

  const currency = campaigns.data?.find((c) => c.id === (existing?.campaign_id ?? campaignId))?.currency ?? 'USD';
  useEffect(() => {
    if (!offer) return;
    setCampaignId(existing?.campaign_id ?? (defaultCampaignId || campaigns.data?.[0]?.id || ''));
    setProductId(existing?.product_id ?? products.data?.[0]?.id ?? '');
    setName(existing?.name ?? '');
    setPrice(existing ? toDecimalString(existing.price, currency) : '');
    setShipping(existing ? toDecimalString(existing.shipping, currency) : '0');
    setFulfillment(existing?.fulfillment_type ?? 'physical');
    setBilling(existing?.billing ?? 'one_time');
    setActive(existing?.is_active ?? true);
  }, [offer]);

  const priceMinor = parseMoney(price, currency);
  const shippingMinor = parseMoney(shipping || '0', currency);
  const recurringMinor = parseMoney(recurringPrice, currency);
  const save = useMutation({
    mutationFn: async () => {
      if (priceMinor === null) throw new Error(`Enter the price in ${currency}`);
      if (shippingMinor === null) throw new Error(`Enter the shipping in ${currency}`);
      if (existing) {
        return unwrap(await api.PATCH('/v1/offers/{id}', { params: { path: { id: existing.id } }, body: { name, price: priceMinor, shipping: shippingMinor, is_active: active } })).data;
      }
      const base = { campaign_id: campaignId, product_id: productId, name, price: priceMinor, shipping: shippingMinor, fulfillment_type: fulfillment };
      let body: CreateOffer;
      if (billing === 'one_time') body = { ...base, billing };
      else {
        if (recurringMinor === null) throw new Error(`Enter the recurring price in ${currency}`);
        const plan = { interval_unit: unit, interval_count: Number(count), recurring_price: recurringMinor };
        body = billing === 'recurring' ? { ...base, billing, ...plan } : { ...base, billing, ...plan, trial_days: Number(trialDays) };
      }
      return unwrap(await api.POST('/v1/offers', { body })).data;
    },
    onSuccess: async (o) => {
      notifySuccess(isNew ? `Offer ${o.name} created` : `Offer ${o.name} saved`);
      await qc.invalidateQueries({ queryKey: ['offers'] });
      onClose();
    },
  });
  useEffect(() => save.reset(), [offer]);
  function submit(e: FormEvent) {
    e.preventDefault();
    save.mutate();
  }
  return (
    <Modal opened={!!offer} onClose={onClose} title={isNew ? 'New offer' : 'Edit offer'} size="lg">
      <form onSubmit={submit}>
        <Stack>
          {isNew && (
            <Group grow>
              <NativeSelect label="Campaign" required data={campaignOptions(campaigns.data)} value={campaignId} onChange={(e) => setCampaignId(e.currentTarget.value)} />
              <NativeSelect label="Product" required data={(products.data ?? []).map((p) => ({ value: p.id, label: p.name }))} value={productId} onChange={(e) => setProductId(e.currentTarget.value)} />
            </Group>
          )}
          <TextInput label="Offer name" required value={name} onChange={(e) => setName(e.currentTarget.value)} maxLength={200} />
          <Group grow>
            <TextInput label={`Price (${currency})`} required inputMode="decimal" value={price} onChange={(e) => setPrice(e.currentTarget.value)} error={price && priceMinor === null ? 'Not an amount' : null} />
            <TextInput label={`Shipping (${currency})`} inputMode="decimal" value={shipping} onChange={(e) => setShipping(e.currentTarget.value)} error={shipping && shippingMinor === null ? 'Not an amount' : null} />
          </Group>
          {isNew && (
            <>
              <Group grow>
                <NativeSelect
                  label="Fulfillment"
                  data={[
                    { value: 'physical', label: 'Physical (shipped)' },
                    { value: 'digital', label: 'Digital' },
                  ]}
                  value={fulfillment}
                  onChange={(e) => setFulfillment(e.currentTarget.value as typeof fulfillment)}
                />
                <NativeSelect
                  label="Billing"
                  data={[
                    { value: 'one_time', label: 'One time' },
                    { value: 'recurring', label: 'Recurring' },
                    { value: 'trial', label: 'Trial, then recurring' },
                  ]}
                  value={billing}
                  onChange={(e) => setBilling(e.currentTarget.value as Billing)}
                />
              </Group>
              {billing !== 'one_time' && (
                <Group grow>
                  <NumberInput label="Every" min={1} max={365} value={count} onChange={setCount} allowDecimal={false} />
                  <NativeSelect label="Unit" data={['day', 'week', 'month', 'year']} value={unit} onChange={(e) => setUnit(e.currentTarget.value as Unit)} />
                  <TextInput label={`Recurring price (${currency})`} required inputMode="decimal" value={recurringPrice} onChange={(e) => setRecurringPrice(e.currentTarget.value)} />
                  {billing === 'trial' && <NumberInput label="Trial days" min={1} max={365} value={trialDays} onChange={setTrialDays} allowDecimal={false} />}
                </Group>
              )}
            </>
          )}
          {!isNew && <Checkbox label="Active" checked={active} onChange={(e) => setActive(e.currentTarget.checked)} />}
          <ApiErrorAlert error={save.error} title="Not saved" />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={save.isPending}>
              {isNew ? 'Create offer' : 'Save'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
