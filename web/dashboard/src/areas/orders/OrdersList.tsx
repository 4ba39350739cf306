import { Anchor, Button, Group, Paper, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { IconSearch } from '@tabler/icons-react';
import { useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { type FormEvent, useState } from 'react';
import { api, type Query, type Schemas, unwrap } from '../../lib/api.ts';
import { dayBoundary, useDates } from '../../lib/dates.ts';
import { ApiErrorAlert } from '../../lib/errors.tsx';
import { formatMoney } from '../../lib/money.ts';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { useSession } from '../../lib/session.tsx';
import { humanize, ORDER_STATUSES, PAYMENT_STATUSES, StatusBadge } from './format.tsx';
import { OrdersTabs } from './OrdersTabs.tsx';

type Order = Schemas['Order'];
type OrderQuery = Query<'/v1/orders'>;

interface Filters {
  search: string;
  status: string | null;
  payment_status: string | null;
  campaign_id: string | null;
  affiliate_id: string;
  needs_qa: string | null;
  is_test: string | null;
  from: string;
  to: string;
}
const EMPTY: Filters = { search: '', status: null, payment_status: null, campaign_id: null, affiliate_id: '', needs_qa: null, is_test: null, from: '', to: '' };
const PAGE_SIZE = 25;

/**
 * What the search box sends: a customer number (`cus_…`) filters by customer_number; anything else
 * is the API's one search box `q` (order number or its start, card last 4, customer e-mail or name).
 */
export function searchQuery(search: string): Partial<OrderQuery> {
  const s = search.trim();
  if (!s) return {};
  if (/^cus_\w+$/.test(s)) return { customer_number: s };
  return { q: s };
}

function toQuery(f: Filters, timeZone: string): OrderQuery {
  const q: OrderQuery = { limit: PAGE_SIZE, ...searchQuery(f.search) };
  if (f.status) q.status = f.status as OrderQuery['status'];
  if (f.payment_status) q.payment_status = f.payment_status as OrderQuery['payment_status'];
  if (f.campaign_id) q.campaign_id = f.campaign_id;
  if (f.affiliate_id.trim()) q.affiliate_id = f.affiliate_id.trim();
  if (f.needs_qa === 'true' || f.needs_qa === 'false') q.needs_qa = f.needs_qa;
  if (f.is_test === 'true' || f.is_test === 'false') q.is_test = f.is_test;
  if (f.from) q.created_gte = dayBoundary(f.from, timeZone);
  if (f.to) q.created_lte = dayBoundary(f.to, timeZone, true);
  return q;
}

function useCampaigns() {
  const { can } = useSession();
  return useQuery({
    queryKey: ['campaigns', 'all'],
    enabled: can('catalog:view'),
    staleTime: 5 * 60_000,
    queryFn: async () => unwrap(await api.GET('/v1/campaigns', { params: { query: { limit: 100 } } })).data,
  });
}

export function OrdersList() {
  const { timeZone } = useSession();
  const dates = useDates();
  const campaigns = useCampaigns();
  const [draft, setDraft] = useState<Filters>(EMPTY);
  const [filters, setFilters] = useState<Filters>(EMPTY);
  const query = toQuery(filters, timeZone);

  const list = usePaginatedList<Order>({
    key: ['orders', query],
    fetchPage: async (starting_after) => {
      const page = unwrap(await api.GET('/v1/orders', { params: { query: { ...query, ...(starting_after ? { starting_after } : {}) } } }));
      // An affiliate-scoped member gets orders without their customer: the Customer column then shows a dash.
      return { ...page, data: page.data as Order[] };
    },
    idOf: (o) => o.order_number,
  });
  const rows = list.items;
  const loading = list.isLoading;
  const error = list.error;

  function apply(e: FormEvent) {
    e.preventDefault();
    setFilters(draft);
  }
  const set = <K extends keyof Filters>(k: K) => (v: Filters[K]) => setDraft((d) => ({ ...d, [k]: v }));
  const campaignName = (id: string) => campaigns.data?.find((c) => c.id === id)?.name ?? id;

  return (
    <Stack>
      <Title order={1} size="h2">
        Orders
      </Title>
      <OrdersTabs current="orders" />
      <Paper withBorder p="sm" component="form" onSubmit={apply} role="search" aria-label="Search and filter orders">
        <Stack gap="xs">
          <Group align="flex-end" wrap="wrap">
            <TextInput
              label="Search"
              placeholder="ord_…, e-mail, name, last 4"
              description="Number, e-mail, name, card last 4 or cus_…"
              leftSection={<IconSearch size={16} aria-hidden />}
              value={draft.search}
              onChange={(e) => set('search')(e.currentTarget.value)}
              w={320}
              name="search"
            />
            <Select label="Status" placeholder="Any" clearable data={ORDER_STATUSES.map((s) => ({ value: s, label: humanize(s) }))} value={draft.status} onChange={set('status')} w={170} />
            <Select label="Payment status" placeholder="Any" clearable data={PAYMENT_STATUSES.map((s) => ({ value: s, label: humanize(s) }))} value={draft.payment_status} onChange={set('payment_status')} w={190} />
            {campaigns.data ? (
              <Select label="Campaign" placeholder="Any" clearable searchable data={campaigns.data.map((c) => ({ value: c.id, label: c.name }))} value={draft.campaign_id} onChange={set('campaign_id')} w={200} />
            ) : (
              <TextInput label="Campaign id" placeholder="cmp_…" value={draft.campaign_id ?? ''} onChange={(e) => set('campaign_id')(e.currentTarget.value || null)} w={200} />
            )}
            <Select
              label="Test orders"
              placeholder="Both"
              clearable
              data={[
                { value: 'false', label: 'Live only' },
                { value: 'true', label: 'Test only' },
              ]}
              value={draft.is_test}
              onChange={set('is_test')}
              w={130}
            />
            <TextInput label="Affiliate" placeholder="Affiliate id" value={draft.affiliate_id} onChange={(e) => set('affiliate_id')(e.currentTarget.value)} w={150} />
            <Select
              label="QA flag"
              placeholder="Any"
              clearable
              data={[
                { value: 'true', label: 'Flagged' },
                { value: 'false', label: 'Not flagged' },
              ]}
              value={draft.needs_qa}
              onChange={set('needs_qa')}
              w={140}
            />
            <TextInput label="From" type="date" value={draft.from} onChange={(e) => set('from')(e.currentTarget.value)} w={150} />
            <TextInput label="To" type="date" value={draft.to} onChange={(e) => set('to')(e.currentTarget.value)} w={150} />
          </Group>
          <Group gap="xs">
            <Button type="submit">Search</Button>
            <Button
              variant="default"
              onClick={() => {
                setDraft(EMPTY);
                setFilters(EMPTY);
              }}
            >
              Clear
            </Button>
            <Text size="xs" c="dimmed">
              Dates are in the team’s time zone ({timeZone}).
            </Text>
          </Group>
        </Stack>
      </Paper>

      <ApiErrorAlert error={error} title="Could not load orders" />

      <Table.ScrollContainer minWidth={800}>
        <Table striped highlightOnHover aria-label="Orders" aria-busy={loading}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Order</Table.Th>
              <Table.Th scope="col">Created</Table.Th>
              <Table.Th scope="col">Customer</Table.Th>
              <Table.Th scope="col">Campaign</Table.Th>
              <Table.Th scope="col">Status</Table.Th>
              <Table.Th scope="col">Payment</Table.Th>
              <Table.Th scope="col" style={{ textAlign: 'right' }}>
                Total
              </Table.Th>
              <Table.Th scope="col" style={{ textAlign: 'right' }}>
                Refunded
              </Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rows.map((o) => (
              <Table.Tr key={o.order_number} data-order={o.order_number}>
                <Table.Td>
                  <Anchor component={Link} to={`/orders/${o.order_number}`} ff="monospace" size="sm">
                    {o.order_number}
                  </Anchor>
                  {o.is_test && (
                    <Text span size="xs" c="dimmed" ml={6}>
                      test
                    </Text>
                  )}
                </Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{dates.dateTime(o.created_at)}</Table.Td>
                <Table.Td>
                  <Text size="sm">{[o.customer?.first_name, o.customer?.last_name].filter(Boolean).join(' ') || '—'}</Text>
                  <Text size="xs" c="dimmed">
                    {o.customer?.email}
                  </Text>
                </Table.Td>
                <Table.Td>{campaignName(o.campaign_id)}</Table.Td>
                <Table.Td>
                  <StatusBadge status={o.status} label="Status" />
                </Table.Td>
                <Table.Td>
                  <StatusBadge status={o.payment_status} label="Payment" />
                </Table.Td>
                <Table.Td style={{ textAlign: 'right' }}>{formatMoney(o.total, o.currency)}</Table.Td>
                <Table.Td style={{ textAlign: 'right' }}>{o.refunded_total ? formatMoney(o.refunded_total, o.currency) : '—'}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {!loading && rows.length === 0 && !error && (
        <Text c="dimmed" role="status">
          No orders match.
        </Text>
      )}
      <Pager list={list as never} label="Order pages" />
    </Stack>
  );
}
