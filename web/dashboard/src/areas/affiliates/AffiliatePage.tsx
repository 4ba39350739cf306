import { Alert, Button, Group, NativeSelect, NumberInput, Paper, SimpleGrid, Stack, Switch, Table, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useParams } from '@tanstack/react-router';
import { type FormEvent, useState } from 'react';
import { api, type Query, type Schemas, unwrap } from '../../lib/api.ts';
import { dayBoundary, useDates } from '../../lib/dates.ts';
import { ApiErrorAlert } from '../../lib/errors.tsx';
import { formatMoney } from '../../lib/money.ts';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { useCan, useSession } from '../../lib/session.tsx';
import { AffiliateForm } from './AffiliateForm.tsx';
import { commissionText } from './AffiliatesList.tsx';
import { AffiliatesPage, pct } from './common.tsx';

type Decision = Schemas['ThrottleDecision'];

export function AffiliatePage() {
  const { id } = useParams({ strict: false }) as { id: string };
  const canManage = useCan('affiliates:manage');
  const [editing, setEditing] = useState(false);
  const q = useQuery({ queryKey: ['affiliate', id], queryFn: async () => unwrap(await api.GET('/v1/affiliates/{id}', { params: { path: { id } } })).data });
  const a = q.data;
  return (
    <AffiliatesPage title={a ? `Affiliate ${a.name}` : 'Affiliate'}>
      <ApiErrorAlert error={q.error} title="Could not load the affiliate" />
      {a && (
        <>
          <Paper withBorder p="sm">
            <Group justify="space-between" align="flex-start">
              <SimpleGrid cols={{ base: 1, sm: 2 }} spacing={4}>
                <Text size="sm">Id: {a.id}</Text>
                <Text size="sm">Status: {a.status}</Text>
                {a.automatic_throttling !== undefined && <Text size="sm">Throttle rate: {pct(a.throttle_rate)}</Text>}
                {a.automatic_throttling !== undefined && <Text size="sm">Automatic throttling: {a.automatic_throttling ? 'on' : 'off'}</Text>}
                <Text size="sm">Commission: {commissionText(a.commission)}</Text>
                <Text size="sm">Postback: {a.postback_url ?? 'none'}</Text>
                {a.campaign_throttle_rates && Object.keys(a.campaign_throttle_rates).length > 0 && (
                  <Text size="sm">
                    Campaign rates:{' '}
                    {Object.entries(a.campaign_throttle_rates)
                      .map(([c, r]) => `${c} ${r} %`)
                      .join(', ')}
                  </Text>
                )}
              </SimpleGrid>
              {canManage && <Button onClick={() => setEditing(true)}>Edit affiliate</Button>}
            </Group>
          </Paper>
          {/* Merchant only: affiliate-scoped callers get no throttling fields (and 404 from the ledger and the dry run). */}
          {a.automatic_throttling !== undefined && (
            <>
              <ThrottleSimulator affiliateId={a.id} currentRate={a.throttle_rate ?? null} />
              <ThrottleLedger affiliateId={a.id} />
            </>
          )}
          {editing && <AffiliateForm affiliate={a} onClose={() => setEditing(false)} />}
        </>
      )}
    </AffiliatesPage>
  );
}

function ThrottleSimulator({ affiliateId, currentRate }: { affiliateId: string; currentRate: number | null }) {
  const { timeZone } = useSession();
  const [rate, setRate] = useState<number | string>(currentRate ?? '');
  const [automatic, setAutomatic] = useState(true);
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const sim = useMutation({
    mutationFn: async () =>
      unwrap(
        await api.POST('/v1/affiliates/{id}/throttle/simulate', {
          params: { path: { id: affiliateId } },
          body: {
            throttle_rate: rate === '' ? null : Number(rate),
            automatic_throttling: automatic,
            ...(from ? { created_gte: dayBoundary(from, timeZone) } : {}),
            ...(to ? { created_lte: dayBoundary(to, timeZone, true) } : {}),
          },
        }),
      ).data,
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    sim.mutate();
  };
  const r = sim.data;
  return (
    <Paper withBorder p="sm" component="section" aria-labelledby="sim-title">
      <Stack gap="xs">
        <Title order={2} size="h4" id="sim-title">
          Throttle rate dry run
        </Title>
        <Text size="xs" c="dimmed">
          Replays the affiliate’s conversions of the period with another rate. Nothing is written.
        </Text>
        <Group align="flex-end" component="form" onSubmit={submit}>
          <NumberInput label="Simulated rate (%)" min={0} max={100} decimalScale={2} value={rate} onChange={setRate} w={170} />
          <Switch label="Automatic throttling" checked={automatic} onChange={(e) => setAutomatic(e.currentTarget.checked)} />
          <TextInput label="From" type="date" value={from} onChange={(e) => setFrom(e.currentTarget.value)} w={150} />
          <TextInput label="To" type="date" value={to} onChange={(e) => setTo(e.currentTarget.value)} w={150} />
          <Button type="submit" loading={sim.isPending}>
            Simulate
          </Button>
        </Group>
        <ApiErrorAlert error={sim.error} title="The simulation failed" />
        {r && (
          <div role="status" aria-label="Simulation result">
            <Alert color="blue" title={`At ${pct(r.throttle_rate)}: ${r.throttled} of ${r.conversions} conversions throttled (${pct(r.throttled_share)})`}>
              <Text size="sm">
                Simulated: {r.requested} requested, {r.automatic} automatic. What actually happened: {r.actual.throttled} throttled ({r.actual.requested} requested, {r.actual.automatic} automatic).
              </Text>
            </Alert>
          </div>
        )}
      </Stack>
    </Paper>
  );
}

function ThrottleLedger({ affiliateId }: { affiliateId: string }) {
  const dates = useDates();
  const [reason, setReason] = useState('');
  const list = usePaginatedList<Decision>({
    key: ['throttle-ledger', affiliateId, reason],
    fetchPage: async (starting_after) =>
      unwrap(
        await api.GET('/v1/affiliates/{id}/throttle/ledger', {
          params: { path: { id: affiliateId }, query: { limit: 25, ...(reason ? { reason: reason as Query<'/v1/affiliates/{id}/throttle/ledger'>['reason'] } : {}), ...(starting_after ? { starting_after } : {}) } },
        }),
      ),
    idOf: (d) => d.id,
  });
  return (
    <Stack gap="xs" component="section" aria-labelledby="ledger-title">
      <Group justify="space-between" align="flex-end">
        <Title order={2} size="h4" id="ledger-title">
          Throttle ledger
        </Title>
        <NativeSelect
          label="Reason"
          data={[
            { value: '', label: 'Any' },
            { value: 'requested', label: 'Requested' },
            { value: 'automatic', label: 'Automatic' },
            { value: 'none', label: 'Not throttled' },
          ]}
          value={reason}
          onChange={(e) => setReason(e.currentTarget.value)}
          w={170}
        />
      </Group>
      <ApiErrorAlert error={list.error} title="Could not load the ledger" />
      <Table.ScrollContainer minWidth={800}>
        <Table striped aria-label="Throttle ledger">
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">When</Table.Th>
              <Table.Th scope="col">Order</Table.Th>
              <Table.Th scope="col">Counted in</Table.Th>
              <Table.Th scope="col">Before (conv. / throttled)</Table.Th>
              <Table.Th scope="col">Rate</Table.Th>
              <Table.Th scope="col">Decision</Table.Th>
              <Table.Th scope="col">Amount</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.items.map((d) => (
              <Table.Tr key={d.id}>
                <Table.Td>{dates.dateTime(d.created_at)}</Table.Td>
                <Table.Td ff="monospace">{d.order_number}</Table.Td>
                <Table.Td>{d.counted_in}</Table.Td>
                <Table.Td>
                  {d.conversions_before} / {d.throttled_before}
                </Table.Td>
                <Table.Td>
                  {pct(d.rate)}
                  {d.automatic_throttling ? ' (auto)' : ''}
                </Table.Td>
                <Table.Td>{d.throttled ? `throttled (${d.reason})` : 'not throttled'}</Table.Td>
                <Table.Td>{formatMoney(d.amount, d.currency)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {!list.isLoading && list.items.length === 0 && !list.error && (
        <Text c="dimmed" size="sm">
          No conversions yet.
        </Text>
      )}
      <Pager list={list as never} label="Ledger pages" />
    </Stack>
  );
}
