import { Button, Group, Paper, Select, Stack, Text, TextInput, Title } from '@mantine/core';
import { type FormEvent, useState } from 'react';
import { api, type Query, unwrap } from '../../lib/api.ts';
import { dayBoundary } from '../../lib/dates.ts';
import { ApiErrorAlert } from '../../lib/errors.tsx';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { useSession } from '../../lib/session.tsx';
import { humanize } from '../customers/ui.tsx';
import { type Subscription, SubscriptionsTable } from './SubscriptionsTable.tsx';

type SubQuery = Query<'/v1/subscriptions'>;
export const SUBSCRIPTION_STATUSES = ['trialing', 'active', 'past_due', 'paused', 'cancel_at_period_end', 'cancelled', 'completed', 'expired', 'pending'] as const;

interface Filters {
  status: string | null;
  customer: string;
  order: string;
  from: string;
  to: string;
}
const EMPTY: Filters = { status: null, customer: '', order: '', from: '', to: '' };

export function SubscriptionsList() {
  const { timeZone } = useSession();
  const [draft, setDraft] = useState<Filters>(EMPTY);
  const [filters, setFilters] = useState<Filters>(EMPTY);
  const query: SubQuery = { limit: 25 };
  if (filters.status) query.status = filters.status as SubQuery['status'];
  if (filters.customer.trim()) query.customer_number = filters.customer.trim();
  if (filters.order.trim()) query.order_number = filters.order.trim();
  if (filters.from) query.created_gte = dayBoundary(filters.from, timeZone);
  if (filters.to) query.created_lte = dayBoundary(filters.to, timeZone, true);
  const list = usePaginatedList<Subscription>({
    key: ['subscriptions', query],
    fetchPage: async (starting_after) => unwrap(await api.GET('/v1/subscriptions', { params: { query: { ...query, ...(starting_after ? { starting_after } : {}) } } })),
    idOf: (s) => s.id,
  });
  const set = (k: 'customer' | 'order' | 'from' | 'to') => (e: { currentTarget: { value: string } }) => {
    const v = e.currentTarget.value;
    setDraft((d) => ({ ...d, [k]: v }));
  };
  function apply(e: FormEvent) {
    e.preventDefault();
    setFilters(draft);
  }
  return (
    <Stack>
      <Title order={1} size="h2">
        Subscriptions
      </Title>
      <Paper withBorder p="sm" component="form" onSubmit={apply} role="search" aria-label="Filter subscriptions">
        <Stack gap="xs">
          <Group align="flex-end" wrap="wrap">
            <Select label="Status" placeholder="Any" clearable data={SUBSCRIPTION_STATUSES.map((s) => ({ value: s, label: humanize(s) }))} value={draft.status} onChange={(v) => setDraft((d) => ({ ...d, status: v }))} w={200} />
            <TextInput label="Customer number" placeholder="cus_…" value={draft.customer} onChange={set('customer')} w={200} />
            <TextInput label="Order number" placeholder="ord_…" value={draft.order} onChange={set('order')} w={200} />
            <TextInput label="Created from" type="date" value={draft.from} onChange={set('from')} w={160} />
            <TextInput label="Created to" type="date" value={draft.to} onChange={set('to')} w={160} />
          </Group>
          <Group gap="xs">
            <Button type="submit">Filter</Button>
            <Button
              variant="default"
              onClick={() => {
                setDraft(EMPTY);
                setFilters(EMPTY);
              }}
            >
              Clear
            </Button>
          </Group>
        </Stack>
      </Paper>
      <ApiErrorAlert error={list.error} title="Could not load subscriptions" />
      <SubscriptionsTable rows={list.items} />
      {!list.isLoading && list.items.length === 0 && !list.error && (
        <Text c="dimmed" role="status">
          No subscriptions match.
        </Text>
      )}
      <Pager list={list as never} label="Subscription pages" />
    </Stack>
  );
}
