import { ActionIcon, Alert, Anchor, Button, Group, Modal, NativeSelect, NumberInput, Paper, Progress, Stack, Switch, Table, Text, TextInput, Title } from '@mantine/core';
import { IconTrash } from '@tabler/icons-react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams } from '@tanstack/react-router';
import { type FormEvent, useState } from 'react';
import { api, type Schemas, unwrap } from '../../lib/api.ts';
import { useDates } from '../../lib/dates.ts';
import { ApiErrorAlert, notifySuccess } from '../../lib/errors.tsx';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { Empty, PaymentsPage, YesNo } from './common.tsx';
import { useGateways } from './Gateways.tsx';

type Router = Schemas['PaymentOrchestrator'];
type MemberSpec = Schemas['PaymentOrchestratorMemberSpec'];
interface MemberDraft {
  gateway_id: string;
  priority: number | string;
  weight: number | string;
  monthly_cap: number | string;
}

export function RoutersPage() {
  const list = usePaginatedList<Router>({
    key: ['payment-orchestrators'],
    fetchPage: async (starting_after) => unwrap(await api.GET('/v1/payment-orchestrators', { params: { query: { limit: 25, ...(starting_after ? { starting_after } : {}) } } })),
    idOf: (r) => r.id,
  });
  const gateways = useGateways();
  const gatewayName = (id: string) => gateways.items.find((g) => g.id === id)?.name ?? id;
  const [creating, setCreating] = useState(false);
  const navigate = useNavigate();
  return (
    <PaymentsPage title="Payments setup">
      <Group justify="space-between">
        <Text size="sm" c="dimmed">
          Payment orchestrators (routers) spread card payments over several gateways, by priority or by weight.
        </Text>
        <Button onClick={() => setCreating(true)}>New router</Button>
      </Group>
      <ApiErrorAlert error={list.error} title="Could not load routers" />
      <Table striped aria-label="Routers" aria-busy={list.isLoading}>
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Name</Table.Th>
            <Table.Th scope="col">Strategy</Table.Th>
            <Table.Th scope="col">Max attempts</Table.Th>
            <Table.Th scope="col">Active</Table.Th>
            <Table.Th scope="col">Members</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {list.items.map((r) => (
            <Table.Tr key={r.id} data-router={r.id}>
              <Table.Td>
                <Anchor component={Link} to={`/payments/routers/${r.id}`} size="sm">
                  {r.name}
                </Anchor>
              </Table.Td>
              <Table.Td>{r.strategy}</Table.Td>
              <Table.Td>{r.max_attempts}</Table.Td>
              <Table.Td>
                <YesNo value={r.is_active} label="Active" />
              </Table.Td>
              <Table.Td>{r.members.map((m) => `${gatewayName(m.gateway_id)}${r.strategy === 'weighted' ? ` ×${m.weight}` : ` #${m.priority}`}`).join(', ')}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <Empty show={!list.isLoading && list.items.length === 0 && !list.error}>No routers yet.</Empty>
      <Pager list={list as never} label="Router pages" />
      {creating && (
        <RouterForm
          router={null}
          onClose={() => setCreating(false)}
          onSaved={(r) => {
            setCreating(false);
            void navigate({ to: `/payments/routers/${r.id}` });
          }}
        />
      )}
    </PaymentsPage>
  );
}

export function RouterPage() {
  const { id } = useParams({ strict: false }) as { id: string };
  const dates = useDates();
  const gateways = useGateways();
  const [editing, setEditing] = useState(false);
  const q = useQuery({
    queryKey: ['payment-orchestrator', id],
    queryFn: async () => unwrap(await api.GET('/v1/payment-orchestrators/{id}', { params: { path: { id } } })).data,
  });
  const r = q.data;
  const totalWeight = r ? r.members.reduce((s, m) => s + m.weight, 0) : 0;
  const gw = (gid: string) => gateways.items.find((g) => g.id === gid);
  return (
    <PaymentsPage title={r ? `Router ${r.name}` : 'Router'}>
      <ApiErrorAlert error={q.error} title="Could not load the router" />
      {r && (
        <>
          <Paper withBorder p="sm">
            <Group justify="space-between" align="flex-start">
              <Stack gap={2}>
                <Text size="sm">
                  <Text span c="dimmed">
                    Id:
                  </Text>{' '}
                  <Text span ff="monospace">
                    {r.id}
                  </Text>
                </Text>
                <Text size="sm">Strategy: {r.strategy === 'weighted' ? 'weighted (random by weight, no repeats)' : 'priority (lowest first)'}</Text>
                <Text size="sm">Max attempts per payment: {r.max_attempts}</Text>
                <Text size="sm">
                  Active: <YesNo value={r.is_active} label="Active" />
                </Text>
                <Text size="xs" c="dimmed">
                  Updated {dates.dateTime(r.updated_at)}
                </Text>
              </Stack>
              <Button onClick={() => setEditing(true)}>Edit router</Button>
            </Group>
          </Paper>
          <Title order={2} size="h4">
            Members
          </Title>
          <Table striped aria-label="Router members">
            <Table.Thead>
              <Table.Tr>
                <Table.Th scope="col">Gateway</Table.Th>
                <Table.Th scope="col">Priority</Table.Th>
                <Table.Th scope="col">Weight</Table.Th>
                <Table.Th scope="col">Share of first attempts</Table.Th>
                <Table.Th scope="col">Router cap (month)</Table.Th>
                <Table.Th scope="col">Gateway cap (month)</Table.Th>
                <Table.Th scope="col">Month-to-date volume</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {r.members.map((m) => (
                <Table.Tr key={m.id} data-member={m.gateway_id}>
                  <Table.Td>{gw(m.gateway_id)?.name ?? m.gateway_id}</Table.Td>
                  <Table.Td>{m.priority}</Table.Td>
                  <Table.Td>{m.weight}</Table.Td>
                  <Table.Td>{r.strategy === 'weighted' && totalWeight ? `${((100 * m.weight) / totalWeight).toFixed(1)} %` : '—'}</Table.Td>
                  <Table.Td>{m.monthly_cap ?? 'none'}</Table.Td>
                  <Table.Td>{gw(m.gateway_id)?.monthly_cap ?? 'none'}</Table.Td>
                  <Table.Td>
                    <VolumeVsCap name={gw(m.gateway_id)?.name ?? m.gateway_id} volume={m.month_to_date_volume} caps={[m.monthly_cap, gw(m.gateway_id)?.monthly_cap ?? null]} />
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
          <Alert color="gray" role="note">
            Caps and volumes are in minor units per UTC calendar month. A member’s volume is its gateway’s approved sales this month (through any router or directly); refunds are not subtracted. A charge that would pass the lower of the two caps skips the gateway.
          </Alert>
          {editing && <RouterForm router={r} onClose={() => setEditing(false)} onSaved={() => setEditing(false)} />}
        </>
      )}
    </PaymentsPage>
  );
}

/** The month's volume against the lower of the member's and the gateway's caps, as a bar; the number alone when uncapped. */
function VolumeVsCap({ name, volume, caps }: { name: string; volume: number; caps: (number | null)[] }) {
  const set = caps.filter((c): c is number => c !== null);
  const cap = set.length ? Math.min(...set) : null;
  const fmt = (n: number) => n.toLocaleString();
  if (cap === null) return <Text size="sm">{fmt(volume)}</Text>;
  const pct = Math.min(100, Math.round((100 * volume) / cap));
  return (
    <Stack gap={2} miw={140}>
      <Text size="sm">
        {fmt(volume)} of {fmt(cap)}
      </Text>
      <Progress value={pct} color={pct >= 90 ? 'red' : pct >= 70 ? 'yellow' : 'blue'} aria-label={`${name}: month-to-date volume, ${pct} % of the cap`} />
    </Stack>
  );
}

function toDraft(m: Schemas['PaymentOrchestratorMember']): MemberDraft {
  return { gateway_id: m.gateway_id, priority: m.priority, weight: m.weight, monthly_cap: m.monthly_cap ?? '' };
}
const EMPTY_MEMBER: MemberDraft = { gateway_id: '', priority: 1, weight: 1, monthly_cap: '' };

function RouterForm({ router, onClose, onSaved }: { router: Router | null; onClose: () => void; onSaved: (r: Router) => void }) {
  const qc = useQueryClient();
  const gateways = useGateways();
  const [name, setName] = useState(router?.name ?? '');
  const [strategy, setStrategy] = useState<Router['strategy']>(router?.strategy ?? 'weighted');
  const [maxAttempts, setMaxAttempts] = useState<number | string>(router?.max_attempts ?? 3);
  const [active, setActive] = useState(router?.is_active ?? true);
  const [members, setMembers] = useState<MemberDraft[]>(router ? router.members.map(toDraft) : [{ ...EMPTY_MEMBER }]);
  const setMember = (i: number, patch: Partial<MemberDraft>) => setMembers((ms) => ms.map((m, j) => (j === i ? { ...m, ...patch } : m)));
  const save = useMutation({
    mutationFn: async () => {
      const specs: MemberSpec[] = members.map((m) => ({
        gateway_id: m.gateway_id,
        priority: Number(m.priority) || 1,
        weight: Number(m.weight) || 1,
        monthly_cap: m.monthly_cap === '' ? null : Number(m.monthly_cap),
      }));
      const body = { name, strategy, max_attempts: Number(maxAttempts) || 1, is_active: active, members: specs };
      if (router) return unwrap(await api.PATCH('/v1/payment-orchestrators/{id}', { params: { path: { id: router.id } }, body })).data;
      return unwrap(await api.POST('/v1/payment-orchestrators', { body })).data;
    },
    onSuccess: (r) => {
      notifySuccess(`Router ${r.name} saved`);
      void qc.invalidateQueries({ queryKey: ['payment-orchestrators'] });
      qc.setQueryData(['payment-orchestrator', r.id], r);
      onSaved(r);
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  const options = [{ value: '', label: 'Choose a gateway…' }, ...gateways.items.map((g) => ({ value: g.id, label: `${g.name}${g.is_active ? '' : ' (inactive)'}` }))];
  return (
    <Modal opened onClose={onClose} title={router ? `Edit router ${router.name}` : 'New router'} size="xl">
      <form onSubmit={submit}>
        <Stack>
          <TextInput label="Router name" required value={name} onChange={(e) => setName(e.currentTarget.value)} />
          <Group grow>
            <NativeSelect
              label="Strategy"
              data={[
                { value: 'weighted', label: 'Weighted (random by weight)' },
                { value: 'priority', label: 'Priority (lowest first)' },
              ]}
              value={strategy}
              onChange={(e) => setStrategy(e.currentTarget.value as Router['strategy'])}
            />
            <NumberInput label="Max attempts" min={1} max={10} allowDecimal={false} value={maxAttempts} onChange={setMaxAttempts} />
          </Group>
          <Switch label="Router active" checked={active} onChange={(e) => setActive(e.currentTarget.checked)} />
          <Title order={3} size="h5">
            Members
          </Title>
          {members.map((m, i) => (
            <Group key={i} align="flex-end" wrap="nowrap" role="group" aria-label={`Member ${i + 1}`}>
              <NativeSelect label={`Member ${i + 1} gateway`} data={options} value={m.gateway_id} onChange={(e) => setMember(i, { gateway_id: e.currentTarget.value })} required style={{ flex: 2 }} />
              <NumberInput label={`Member ${i + 1} weight`} min={1} max={1000} allowDecimal={false} value={m.weight} onChange={(v) => setMember(i, { weight: v })} style={{ flex: 1 }} />
              <NumberInput label={`Member ${i + 1} priority`} min={1} max={1000} allowDecimal={false} value={m.priority} onChange={(v) => setMember(i, { priority: v })} style={{ flex: 1 }} />
              <NumberInput label={`Member ${i + 1} monthly cap`} placeholder="none" min={1} allowDecimal={false} value={m.monthly_cap} onChange={(v) => setMember(i, { monthly_cap: v })} style={{ flex: 1 }} />
              <ActionIcon variant="subtle" color="red" size="lg" aria-label={`Remove member ${i + 1}`} disabled={members.length === 1} onClick={() => setMembers((ms) => ms.filter((_, j) => j !== i))}>
                <IconTrash size={18} aria-hidden />
              </ActionIcon>
            </Group>
          ))}
          <Button variant="light" w="fit-content" onClick={() => setMembers((ms) => [...ms, { ...EMPTY_MEMBER }])} disabled={members.length >= 20}>
            Add member
          </Button>
          <Text size="xs" c="dimmed">
            Weight counts for the weighted strategy, priority for the priority strategy; caps are minor units per UTC calendar month.
          </Text>
          <ApiErrorAlert error={save.error} title="Could not save the router" />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={save.isPending}>
              {router ? 'Save router' : 'Create router'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
