import { Button, Checkbox, Group, Modal, NativeSelect, NumberInput, SegmentedControl, Stack, Table, Text, TextInput } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useEffect, useState } from 'react';
import { api, unwrap } from '../../lib/api.ts';
import { dayBoundary, useDates } from '../../lib/dates.ts';
import { ApiErrorAlert, notifySuccess } from '../../lib/errors.tsx';
import { formatMoney, parseMoney } from '../../lib/money.ts';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { useCan, useSession } from '../../lib/session.tsx';
import { campaignOptions, type Coupon, PAGE_SIZE, useAllCampaigns } from './catalogApi.ts';
import { ActiveBadge } from './ActiveBadge.tsx';

export function CouponsTab() {
  const canManage = useCan('coupons:manage');
  const dates = useDates();
  const campaigns = useAllCampaigns();
  const [filter, setFilter] = useState('');
  const [editing, setEditing] = useState<Coupon | 'new' | null>(null);
  const list = usePaginatedList<Coupon>({
    key: ['coupons', 'list', filter],
    fetchPage: async (after) => unwrap(await api.GET('/v1/coupons', { params: { query: { limit: PAGE_SIZE, ...(filter ? { campaign_id: filter } : {}), ...(after ? { starting_after: after } : {}) } } })),
    idOf: (c) => c.id,
  });
  return (
    <Stack>
      <Group align="flex-end">
        <NativeSelect label="Campaign" data={campaignOptions(campaigns.data, 'All campaigns')} value={filter} onChange={(e) => setFilter(e.currentTarget.value)} w={280} />
        {canManage && <Button onClick={() => setEditing('new')}>New coupon</Button>}
      </Group>
      <ApiErrorAlert error={list.error} title="Could not load coupons" />
      <Table striped highlightOnHover aria-label="Coupons" aria-busy={list.isLoading}>
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Code</Table.Th>
            <Table.Th scope="col">Discount</Table.Th>
            <Table.Th scope="col">Campaign</Table.Th>
            <Table.Th scope="col">Redeemed</Table.Th>
            <Table.Th scope="col">Expires</Table.Th>
            <Table.Th scope="col">Status</Table.Th>
            {canManage && <Table.Th scope="col">Actions</Table.Th>}
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {list.items.map((c) => (
            <Table.Tr key={c.id} data-coupon={c.id}>
              <Table.Td ff="monospace">{c.code}</Table.Td>
              <Table.Td>{c.percent_off !== null ? `${c.percent_off} %` : formatMoney(c.amount_off, c.currency ?? 'USD')}</Table.Td>
              <Table.Td>{c.campaign_id ? (campaigns.data?.find((x) => x.id === c.campaign_id)?.name ?? c.campaign_id) : 'Any'}</Table.Td>
              <Table.Td>
                {c.times_redeemed}
                {c.max_redemptions !== null ? ` of ${c.max_redemptions}` : ''}
              </Table.Td>
              <Table.Td>{c.expires_at ? dates.dateTime(c.expires_at) : 'Never'}</Table.Td>
              <Table.Td><ActiveBadge active={c.is_active} /></Table.Td>
              {canManage && (
                <Table.Td>
                  <Button size="xs" variant="default" onClick={() => setEditing(c)} aria-label={`Edit coupon ${c.code}`}>
                    Edit
                  </Button>
                </Table.Td>
              )}
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {!list.isLoading && list.items.length === 0 && <Text c="dimmed">No coupons.</Text>}
      <Pager list={list as never} label="Coupon pages" />
      <CouponForm coupon={editing} onClose={() => setEditing(null)} />
    </Stack>
  );
}

/** Create a coupon (code, percent or amount off, campaign, limits) or edit its limits and status. */
function CouponForm({ coupon, onClose }: { coupon: Coupon | 'new' | null; onClose: () => void }) {
  const qc = useQueryClient();
  const { timeZone } = useSession();
  const campaigns = useAllCampaigns();
  const existing = coupon && coupon !== 'new' ? coupon : null;
  const [code, setCode] = useState('');
  const [campaignId, setCampaignId] = useState('');
  const [kind, setKind] = useState<'percent' | 'amount'>('percent');
  const [percent, setPercent] = useState<number | string>(10);
  const [amount, setAmount] = useState('');
  const [currency, setCurrency] = useState('USD');
  const [maxRedemptions, setMaxRedemptions] = useState<number | string>('');
  const [expires, setExpires] = useState('');
  const [active, setActive] = useState(true);
  useEffect(() => {
    if (!coupon) return;
    setCode(existing?.code ?? '');
    setCampaignId(existing?.campaign_id ?? '');
    setKind('percent');
    setPercent(10);
    setAmount('');
    setCurrency(campaigns.data?.[0]?.currency ?? 'USD');
    setMaxRedemptions(existing?.max_redemptions ?? '');
    setExpires(existing?.expires_at ? existing.expires_at.slice(0, 10) : '');
    setActive(existing?.is_active ?? true);
  }, [coupon]);
  const save = useMutation({
    mutationFn: async () => {
      const limits = { max_redemptions: maxRedemptions === '' ? null : Number(maxRedemptions), expires_at: expires ? dayBoundary(expires, timeZone, true) : null };
      if (existing) return unwrap(await api.PATCH('/v1/coupons/{id}', { params: { path: { id: existing.id } }, body: { ...limits, is_active: active } })).data;
      let discount: { percent_off: number } | { amount_off: number; currency: string };
      if (kind === 'percent') discount = { percent_off: Number(percent) };
      else {
        const minor = parseMoney(amount, currency);
        if (minor === null) throw new Error(`Enter the amount off in ${currency}`);
        discount = { amount_off: minor, currency };
      }
      return unwrap(await api.POST('/v1/coupons', { body: { code, campaign_id: campaignId || null, ...discount, ...limits } })).data;
    },
    onSuccess: async (c) => {
      notifySuccess(existing ? `Coupon ${c.code} saved` : `Coupon ${c.code} created`);
      await qc.invalidateQueries({ queryKey: ['coupons'] });
      onClose();
    },
  });
  useEffect(() => save.reset(), [coupon]);
  function submit(e: FormEvent) {
    e.preventDefault();
    save.mutate();
  }
  return (
    <Modal opened={!!coupon} onClose={onClose} title={existing ? `Edit coupon ${existing.code}` : 'New coupon'}>
      <form onSubmit={submit}>
        <Stack>
          {!existing && (
            <>
              <TextInput label="Code" description="Letters, digits, - and _; unique regardless of case" required value={code} onChange={(e) => setCode(e.currentTarget.value)} maxLength={64} />
              <NativeSelect label="Campaign" data={campaignOptions(campaigns.data, 'Any campaign')} value={campaignId} onChange={(e) => setCampaignId(e.currentTarget.value)} />
              <SegmentedControl
                aria-label="Discount type"
                value={kind}
                onChange={(v) => setKind(v as typeof kind)}
                data={[
                  { value: 'percent', label: 'Percent off' },
                  { value: 'amount', label: 'Amount off' },
                ]}
              />
              {kind === 'percent' ? (
                <NumberInput label="Percent off" min={1} max={100} allowDecimal={false} required value={percent} onChange={setPercent} />
              ) : (
                <Group grow>
                  <TextInput label={`Amount off (${currency})`} required inputMode="decimal" value={amount} onChange={(e) => setAmount(e.currentTarget.value)} />
                  <TextInput label="Currency" required maxLength={3} value={currency} onChange={(e) => setCurrency(e.currentTarget.value.toUpperCase())} />
                </Group>
              )}
            </>
          )}
          <NumberInput label="Max redemptions" description="Empty: no limit" min={1} allowDecimal={false} value={maxRedemptions} onChange={setMaxRedemptions} />
          <TextInput label="Expires after" description={`The end of that day in ${timeZone}; empty: never`} type="date" value={expires} onChange={(e) => setExpires(e.currentTarget.value)} />
          {existing && <Checkbox label="Active" checked={active} onChange={(e) => setActive(e.currentTarget.checked)} />}
          <ApiErrorAlert error={save.error} title="Not saved" />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={save.isPending}>
              {existing ? 'Save' : 'Create coupon'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
