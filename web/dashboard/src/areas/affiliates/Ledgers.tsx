import { Badge, Button, Group, NativeSelect, Table, Text, TextInput } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, type Query, type Schemas, unwrap } from '../../lib/api.ts';
import { useDates } from '../../lib/dates.ts';
import { ApiErrorAlert, notifyError, notifySuccess } from '../../lib/errors.tsx';
import { formatMoney } from '../../lib/money.ts';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { useCan } from '../../lib/session.tsx';
import { AffiliatesPage } from './common.tsx';

const COLORS: Record<string, string> = { pending: 'yellow', payable: 'green', reversed: 'gray', succeeded: 'green', failed: 'red' };

function Filters({ statuses, onApply }: { statuses: string[]; onApply: (f: { affiliate_id: string; status: string }) => void }) {
  const [affiliate, setAffiliate] = useState('');
  const [status, setStatus] = useState('');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onApply({ affiliate_id: affiliate.trim(), status });
  };
  return (
    <Group align="flex-end" component="form" onSubmit={submit} role="search" aria-label="Filters">
      <TextInput label="Affiliate id" value={affiliate} onChange={(e) => setAffiliate(e.currentTarget.value)} w={200} />
      <NativeSelect label="Status" data={[{ value: '', label: 'Any' }, ...statuses.map((s) => ({ value: s, label: s }))]} value={status} onChange={(e) => setStatus(e.currentTarget.value)} w={160} />
      <Button type="submit">Filter</Button>
    </Group>
  );
}

export function CommissionsPage() {
  const dates = useDates();
  const [f, setF] = useState({ affiliate_id: '', status: '' });
  const list = usePaginatedList<Schemas['AffiliateCommission']>({
    key: ['affiliate-commissions', f],
    fetchPage: async (starting_after) =>
      unwrap(
        await api.GET('/v1/affiliate-commissions', {
          params: {
            query: {
              limit: 25,
              ...(f.affiliate_id ? { affiliate_id: f.affiliate_id } : {}),
              ...(f.status ? { status: f.status as Query<'/v1/affiliate-commissions'>['status'] } : {}),
              ...(starting_after ? { starting_after } : {}),
            },
          },
        }),
      ),
    idOf: (c) => c.id,
  });
  return (
    <AffiliatesPage title="Affiliate commissions">
      <Filters statuses={['pending', 'payable', 'reversed']} onApply={setF} />
      <ApiErrorAlert error={list.error} title="Could not load commissions" />
      <Table.ScrollContainer minWidth={900}>
        <Table striped aria-label="Commissions">
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Created</Table.Th>
              <Table.Th scope="col">Affiliate</Table.Th>
              <Table.Th scope="col">Order</Table.Th>
              <Table.Th scope="col">Kind</Table.Th>
              <Table.Th scope="col">Amount</Table.Th>
              <Table.Th scope="col">Status</Table.Th>
              <Table.Th scope="col">Payable at</Table.Th>
              <Table.Th scope="col">Sub ids</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.items.map((c) => (
              <Table.Tr key={c.id}>
                <Table.Td>{dates.dateTime(c.created_at)}</Table.Td>
                <Table.Td ff="monospace">{c.affiliate_id}</Table.Td>
                <Table.Td ff="monospace">{c.order_number}</Table.Td>
                <Table.Td>{c.kind}</Table.Td>
                <Table.Td>{formatMoney(c.amount, c.currency)}</Table.Td>
                <Table.Td>
                  <Badge variant="light" color={COLORS[c.status] ?? 'gray'}>
                    {c.status}
                  </Badge>
                  {c.reversal_reason && (
                    <Text size="xs" c="dimmed">
                      {c.reversal_reason}
                    </Text>
                  )}
                </Table.Td>
                <Table.Td>{dates.date(c.payable_at)}</Table.Td>
                <Table.Td>{[c.sub1, c.sub2, c.sub3, c.sub4, c.sub5].filter(Boolean).join(' · ') || '—'}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {!list.isLoading && list.items.length === 0 && !list.error && (
        <Text c="dimmed" role="status">
          No commissions.
        </Text>
      )}
      <Pager list={list as never} label="Commission pages" />
    </AffiliatesPage>
  );
}

export function PostbacksPage() {
  const dates = useDates();
  const qc = useQueryClient();
  const canManage = useCan('affiliates:manage');
  const [f, setF] = useState({ affiliate_id: '', status: '' });
  const list = usePaginatedList<Schemas['AffiliatePostback']>({
    key: ['affiliate-postbacks', f],
    fetchPage: async (starting_after) =>
      unwrap(
        await api.GET('/v1/affiliate-postbacks', {
          params: {
            query: {
              limit: 25,
              ...(f.affiliate_id ? { affiliate_id: f.affiliate_id } : {}),
              ...(f.status ? { status: f.status as Query<'/v1/affiliate-postbacks'>['status'] } : {}),
              ...(starting_after ? { starting_after } : {}),
            },
          },
        }),
      ),
    idOf: (p) => p.id,
  });
  const replay = useMutation({
    mutationFn: async (id: string) => unwrap(await api.POST('/v1/affiliate-postbacks/{id}/replay', { params: { path: { id } } })).data,
    onSuccess: () => {
      notifySuccess('Postback queued again');
      void qc.invalidateQueries({ queryKey: ['affiliate-postbacks'] });
    },
    onError: (e) => notifyError(e, 'The replay failed'),
  });
  return (
    <AffiliatesPage title="Affiliate postbacks">
      <Filters statuses={['pending', 'succeeded', 'failed']} onApply={setF} />
      <ApiErrorAlert error={list.error} title="Could not load postbacks" />
      <Table.ScrollContainer minWidth={1000}>
        <Table striped aria-label="Postbacks">
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Created</Table.Th>
              <Table.Th scope="col">Affiliate</Table.Th>
              <Table.Th scope="col">Order</Table.Th>
              <Table.Th scope="col">Event</Table.Th>
              <Table.Th scope="col">URL</Table.Th>
              <Table.Th scope="col">Status</Table.Th>
              <Table.Th scope="col">Attempts</Table.Th>
              <Table.Th scope="col">Actions</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.items.map((p) => (
              <Table.Tr key={p.id}>
                <Table.Td>{dates.dateTime(p.created_at)}</Table.Td>
                <Table.Td ff="monospace">{p.affiliate_id}</Table.Td>
                <Table.Td ff="monospace">{p.order_number}</Table.Td>
                <Table.Td>{p.event}</Table.Td>
                <Table.Td style={{ wordBreak: 'break-all', maxWidth: 320 }}>
                  <Text size="xs">{p.url}</Text>
                </Table.Td>
                <Table.Td>
                  <Badge variant="light" color={COLORS[p.status] ?? 'yellow'}>
                    {p.status}
                  </Badge>
                  {(p.last_status_code !== null || p.last_error) && (
                    <Text size="xs" c="dimmed">
                      {p.last_status_code !== null ? `HTTP ${p.last_status_code}` : ''} {p.last_error ?? ''}
                    </Text>
                  )}
                </Table.Td>
                <Table.Td>
                  {p.attempt_count}
                  {p.next_attempt_at && (
                    <Text size="xs" c="dimmed">
                      next {dates.dateTime(p.next_attempt_at)}
                    </Text>
                  )}
                </Table.Td>
                <Table.Td>
                  {canManage && (
                    <Button size="xs" variant="light" loading={replay.isPending && replay.variables === p.id} onClick={() => replay.mutate(p.id)} aria-label={`Replay postback ${p.id}`}>
                      Replay
                    </Button>
                  )}
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {!list.isLoading && list.items.length === 0 && !list.error && (
        <Text c="dimmed" role="status">
          No postbacks.
        </Text>
      )}
      <Pager list={list as never} label="Postback pages" />
    </AffiliatesPage>
  );
}
