import { Alert, Anchor, Button, Code, Group, Loader, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { api, unwrap } from '../../lib/api.ts';
import { useConfirm } from '../../lib/confirm.tsx';
import { useDates } from '../../lib/dates.ts';
import { ApiErrorAlert, notifyError, notifySuccess } from '../../lib/errors.tsx';
import { formatMoney } from '../../lib/money.ts';
import { useSession } from '../../lib/session.tsx';
import { Field, humanize, Section, Status } from '../customers/ui.tsx';
import { ReplaceCardDialog } from './ReplaceCard.tsx';
import { every, type Subscription } from './SubscriptionsTable.tsx';

type Action = 'cancel' | 'cancel_at_period_end' | 'pause' | 'resume' | 'reactivate' | 'sync' | 'rebill';

const ENDED = new Set(['cancelled', 'completed', 'expired']);

/** Which actions the subscription's state allows (the API has the last word: a 409 is shown as it comes). */
export function allowedActions(s: Subscription): Set<Action> {
  const a = new Set<Action>();
  if (!ENDED.has(s.status)) a.add('cancel');
  if (['active', 'trialing', 'past_due'].includes(s.status)) a.add('cancel_at_period_end');
  if (['active', 'trialing'].includes(s.status)) a.add('pause');
  if (s.status === 'paused') a.add('resume');
  if (s.status === 'cancelled' || s.status === 'cancel_at_period_end') a.add('reactivate');
  if (s.externally_managed) a.add('sync');
  if (!s.externally_managed && ['active', 'trialing', 'past_due'].includes(s.status)) a.add('rebill');
  return a;
}

const LABELS: Record<Action, { button: string; title: string; danger?: boolean }> = {
  cancel: { button: 'Cancel now', title: 'Cancel the subscription now?', danger: true },
  cancel_at_period_end: { button: 'Cancel at period end', title: 'Cancel at the end of the paid period?', danger: true },
  pause: { button: 'Pause', title: 'Pause the subscription?' },
  resume: { button: 'Resume', title: 'Resume the subscription?' },
  reactivate: { button: 'Reactivate', title: 'Reactivate the subscription?' },
  sync: { button: 'Sync from provider', title: 'Sync from the provider?' },
  rebill: { button: 'Rebill now', title: 'Charge the next cycle now?', danger: true },
};

export function SubscriptionPage() {
  const { id } = useParams({ strict: false }) as { id: string };
  const { can } = useSession();
  const dates = useDates();
  const confirm = useConfirm();
  const qc = useQueryClient();
  const [replacing, setReplacing] = useState(false);
  const q = useQuery({
    queryKey: ['subscription', id],
    queryFn: async () => unwrap(await api.GET('/v1/subscriptions/{id}', { params: { path: { id } } })).data,
  });
  const rebills = useQuery({
    queryKey: ['orders', { rebill_of: q.data?.order_number }],
    enabled: !!q.data,
    queryFn: async () => unwrap(await api.GET('/v1/orders', { params: { query: { rebill_of: q.data!.order_number, limit: 25 } } })).data,
  });
  const act = useMutation({
    mutationFn: async (action: Action): Promise<string> => {
      const path = { params: { path: { id } } };
      switch (action) {
        case 'cancel':
          return unwrap(await api.POST('/v1/subscriptions/{id}/cancel', { ...path, body: { at_period_end: false } })).message;
        case 'cancel_at_period_end':
          return unwrap(await api.POST('/v1/subscriptions/{id}/cancel', { ...path, body: { at_period_end: true } })).message;
        case 'pause':
          return unwrap(await api.POST('/v1/subscriptions/{id}/pause', { ...path, body: {} })).message;
        case 'resume':
          return unwrap(await api.POST('/v1/subscriptions/{id}/resume', { ...path, body: {} })).message;
        case 'reactivate':
          return unwrap(await api.POST('/v1/subscriptions/{id}/reactivate', { ...path, body: {} })).message;
        case 'sync':
          return unwrap(await api.POST('/v1/subscriptions/{id}/sync', { ...path, body: {} })).message;
        case 'rebill':
          // `cycle` makes a repeat safe: a cycle already paid answers 409 instead of billing the next.
          return unwrap(await api.POST('/v1/subscriptions/{id}/rebill', { ...path, body: { cycle: q.data!.cycle + 1 } })).message;
      }
    },
    onSuccess: async (message) => {
      notifySuccess(message);
      await qc.invalidateQueries({ queryKey: ['subscription', id] });
      await qc.invalidateQueries({ queryKey: ['subscriptions'] });
      await qc.invalidateQueries({ queryKey: ['orders'] });
    },
    onError: (err) => notifyError(err),
  });

  if (q.isPending) return <Loader aria-label="Loading the subscription" />;
  if (q.error || !q.data)
    return (
      <Stack>
        <Anchor component={Link} to="/subscriptions">
          ← Subscriptions
        </Anchor>
        <ApiErrorAlert error={q.error} title={`Could not load ${id}`} />
      </Stack>
    );
  const s = q.data;
  const money = (n: number) => formatMoney(n, s.currency);
  const allowed = allowedActions(s);
  const canManage = can('subscriptions:manage');

  async function run(action: Action) {
    const l = LABELS[action];
    const message =
      action === 'rebill'
        ? `Charges cycle ${s.cycle + 1} (${money(s.recurring_price)}) now on ${s.payment_method ? `the ${s.payment_method.brand} ending ${s.payment_method.last4}` : 'the saved card'}, as a new order. Later cycles keep their dates.`
        : action === 'cancel'
          ? 'The subscription ends now and is never charged again (retries included).'
          : action === 'cancel_at_period_end'
            ? `It runs until ${dates.dateTime(s.next_billing_at)}, then ends instead of being charged.`
            : action === 'pause'
              ? 'Billing stops until it is resumed.'
              : action === 'resume'
                ? 'Billing starts again; cycles missed while paused are skipped, not billed.'
                : action === 'reactivate'
                  ? 'The subscription becomes active again; cycles missed meanwhile are skipped.'
                  : 'Reads the provider’s membership again and mirrors its status and next billing date.';
    if (await confirm({ title: l.title, message, confirmLabel: l.button, danger: l.danger })) act.mutate(action);
  }

  const order: Action[] = ['rebill', 'pause', 'resume', 'reactivate', 'sync', 'cancel_at_period_end', 'cancel'];

  return (
    <Stack>
      <Anchor component={Link} to="/subscriptions" size="sm">
        ← Subscriptions
      </Anchor>
      <Group justify="space-between" align="flex-start">
        <Stack gap={4}>
          <Title order={1} size="h2" ff="monospace">
            {s.id}
          </Title>
          <Group gap="xs">
            <Status status={s.status} label="Status" />
            {s.externally_managed && <Text size="sm" c="dimmed">billed by an external provider</Text>}
          </Group>
        </Stack>
        {canManage && (
          <Group gap="xs" role="group" aria-label="Subscription actions">
            {order
              .filter((a) => allowed.has(a))
              .map((a) => (
                <Button key={a} variant={LABELS[a].danger ? 'outline' : 'default'} color={LABELS[a].danger ? 'red' : undefined} loading={act.isPending && act.variables === a} disabled={act.isPending} onClick={() => void run(a)}>
                  {LABELS[a].button}
                </Button>
              ))}
            {!s.externally_managed && !ENDED.has(s.status) && (
              <Button variant="default" disabled={act.isPending} onClick={() => setReplacing(true)}>
                Replace card
              </Button>
            )}
          </Group>
        )}
      </Group>
      {!canManage && (
        <Text size="sm" c="dimmed">
          Changing subscriptions needs the permission subscriptions:manage.
        </Text>
      )}
      <ApiErrorAlert error={act.error} title="The action was refused" />
      {replacing && <ReplaceCardDialog subscription={s} onClose={() => setReplacing(false)} />}
      {s.status === 'past_due' && (
        <Alert color="orange" title="Past due (dunning)">
          {s.retry_count} failed charge{s.retry_count === 1 ? '' : 's'} of the current cycle; next retry {dates.dateTime(s.retry_at)}.
        </Alert>
      )}
      <SimpleGrid cols={{ base: 1, md: 3 }}>
        <Section title="Billing">
          <Stack gap="xs" component="dl" m={0}>
            <Field label="Price">
              {money(s.recurring_price)} {every(s)} (quantity {s.quantity})
            </Field>
            <Field label="Next billing">{dates.dateTime(s.next_billing_at)}</Field>
            <Field label="Cycles billed">{s.cycle}</Field>
            <Field label="Payment method">{s.payment_method ? `${s.payment_method.brand} •••• ${s.payment_method.last4} (exp ${s.payment_method.exp})` : '—'}</Field>
          </Stack>
        </Section>
        <Section title="Dunning">
          <Stack gap="xs" component="dl" m={0}>
            <Field label="Failed charges this cycle">{s.retry_count}</Field>
            <Field label="Next retry">{dates.dateTime(s.retry_at)}</Field>
            <Field label="Ended">{dates.dateTime(s.ended_at)}</Field>
            <Field label="End reason">{s.end_reason ? humanize(s.end_reason) : '—'}</Field>
          </Stack>
        </Section>
        <Section title="Details">
          <Stack gap="xs" component="dl" m={0}>
            <Field label="Customer">
              <Anchor component={Link} to={`/customers/${s.customer_number}`} size="sm">
                {s.customer_number}
              </Anchor>
            </Field>
            <Field label="First order">
              <Anchor component={Link} to={`/orders/${s.order_number}`} size="sm">
                {s.order_number}
              </Anchor>
            </Field>
            <Field label="Offer">
              <Code>{s.offer_id}</Code>
            </Field>
            {s.externally_managed && <Field label="Membership">{s.membership_ref ?? 'not known yet (Sync from provider)'}</Field>}
            <Field label="Created">{dates.dateTime(s.created_at)}</Field>
          </Stack>
        </Section>
      </SimpleGrid>
      <Section title="Rebill orders" count={rebills.data?.length}>
        <ApiErrorAlert error={rebills.error} title="Could not load the rebill orders" />
        {rebills.data && rebills.data.length > 0 ? (
          <Table aria-label="Rebill orders" striped>
            <Table.Thead>
              <Table.Tr>
                <Table.Th scope="col">Order</Table.Th>
                <Table.Th scope="col">Created</Table.Th>
                <Table.Th scope="col">Status</Table.Th>
                <Table.Th scope="col" style={{ textAlign: 'right' }}>
                  Total
                </Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rebills.data.map((o) => (
                <Table.Tr key={o.order_number}>
                  <Table.Td>
                    <Anchor component={Link} to={`/orders/${o.order_number}`} size="sm" ff="monospace">
                      {o.order_number}
                    </Anchor>
                  </Table.Td>
                  <Table.Td>{dates.dateTime(o.created_at)}</Table.Td>
                  <Table.Td>
                    <Status status={o.status} label="Status" />
                  </Table.Td>
                  <Table.Td style={{ textAlign: 'right' }}>{formatMoney(o.total, o.currency)}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        ) : (
          rebills.data && (
            <Text size="sm" c="dimmed">
              No rebill yet.
            </Text>
          )
        )}
      </Section>
    </Stack>
  );
}
