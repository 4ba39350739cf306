import { Anchor, Badge, Button, Group, NativeSelect, Table, Text } from '@mantine/core';
import { Link, useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import { api, type Schemas, unwrap } from '../../lib/api.ts';
import { ApiErrorAlert } from '../../lib/errors.tsx';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { useCan } from '../../lib/session.tsx';
import { AffiliateForm } from './AffiliateForm.tsx';
import { AffiliatesPage, pct } from './common.tsx';
import { AffiliateSettingsCard } from './Settings.tsx';

type Affiliate = Schemas['Affiliate'];

export function commissionText(c: Affiliate['commission']): string {
  if (c.type === 'fixed') return `${c.amount ?? 0} (minor units) per conversion`;
  if (c.type === 'percent') return `${c.percent ?? 0} % of the first payment`;
  return 'none';
}

export function AffiliatesList() {
  const canManage = useCan('affiliates:manage');
  const navigate = useNavigate();
  const [status, setStatus] = useState('');
  const [creating, setCreating] = useState(false);
  const list = usePaginatedList<Affiliate>({
    key: ['affiliates', status],
    fetchPage: async (starting_after) =>
      unwrap(await api.GET('/v1/affiliates', { params: { query: { limit: 25, ...(status ? { status: status as Affiliate['status'] } : {}), ...(starting_after ? { starting_after } : {}) } } })),
    idOf: (a) => a.id,
  });
  return (
    <AffiliatesPage title="Affiliates">
      <Group justify="space-between" align="flex-end">
        <NativeSelect
          label="Status"
          data={[
            { value: '', label: 'Any' },
            { value: 'active', label: 'Active' },
            { value: 'paused', label: 'Paused' },
          ]}
          value={status}
          onChange={(e) => setStatus(e.currentTarget.value)}
          w={160}
        />
        {canManage && <Button onClick={() => setCreating(true)}>New affiliate</Button>}
      </Group>
      <ApiErrorAlert error={list.error} title="Could not load affiliates" />
      <Table striped aria-label="Affiliates" aria-busy={list.isLoading}>
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Affiliate</Table.Th>
            <Table.Th scope="col">Status</Table.Th>
            <Table.Th scope="col">Throttle rate</Table.Th>
            <Table.Th scope="col">Automatic</Table.Th>
            <Table.Th scope="col">Commission</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {list.items.map((a) => (
            <Table.Tr key={a.id} data-affiliate={a.id}>
              <Table.Td>
                <Anchor component={Link} to={`/affiliates/${encodeURIComponent(a.id)}`} size="sm">
                  {a.name}
                </Anchor>
                <Text size="xs" c="dimmed" ff="monospace">
                  {a.id}
                </Text>
              </Table.Td>
              <Table.Td>
                <Badge variant="light" color={a.status === 'active' ? 'green' : 'gray'}>
                  {a.status}
                </Badge>
                {a.deleted && (
                  <Badge variant="outline" color="red" ml={4}>
                    deleted
                  </Badge>
                )}
              </Table.Td>
              <Table.Td>{pct(a.throttle_rate)}</Table.Td>
              <Table.Td>{a.automatic_throttling === undefined ? '—' : a.automatic_throttling ? 'on' : 'off'}</Table.Td>
              <Table.Td>{commissionText(a.commission)}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {!list.isLoading && list.items.length === 0 && !list.error && (
        <Text c="dimmed" role="status">
          No affiliates.
        </Text>
      )}
      <Pager list={list as never} label="Affiliate pages" />
      <AffiliateSettingsCard canManage={canManage} />
      {creating && <AffiliateForm affiliate={null} onClose={() => setCreating(false)} onSaved={(a) => void navigate({ to: `/affiliates/${encodeURIComponent(a.id)}` })} />}
    </AffiliatesPage>
  );
}
