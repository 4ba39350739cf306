import { Alert, Anchor, Button, Group, Paper, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { IconSearch } from '@tabler/icons-react';
import { useQuery } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { type FormEvent, useState } from 'react';
import { api, CheckstandError, type Query, type Schemas, unwrap } from '../../lib/api.ts';
import { dayBoundary, useDates } from '../../lib/dates.ts';
import { ApiErrorAlert } from '../../lib/errors.tsx';
import { formatMoney } from '../../lib/money.ts';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { useSession } from '../../lib/session.tsx';
import { humanize, ORDER_STATUSES, PAYMENT_STATUSES, StatusBadge } from './format.tsx';

type Order = Schemas['Order'];
type OrderQuery = Query<'/v1/orders'>;

interface Filters {
  search: string;
  status: string | null;
  payment_status: string | null;
  campaign_id: string | null;
  is_test: string | null;
  from: string;
  to: string;
}
const EMPTY: Filters = { search: '', status: null, payment_status: null, campaign_id: null, is_test: null, from: '', to: '' };
const PAGE_SIZE = 25;

/**
 * What the search box means: an order number opens that order, an e-mail filters by customer_email,
 * a customer number (`cus_…`) by customer_number. Card last 4 and customer names are not filters
 * of GET /v1/orders (yet): the box says so instead of pretending.
 */
export function searchQuery(search: string): { kind: 'order'; orderNumber: string } | { kind: 'query'; query: Partial<OrderQuery> } | { kind: 'unsupported'; reason: string } | { kind: 'none' } {
  const s = search.trim();
  if (!s) return { kind: 'none' };
  if (/^ord_\w+$/.test(s)) return { kind: 'order', orderNumber: s };
  if (/^cus_\w+$/.test(s)) return { kind: 'query', query: { customer_number: s } };
  if (s.includes('@')) return { kind: 'query', query: { customer_email: s } };
  if (/^\d{4}$/.test(s)) return { kind: 'unsupported', reason: 'Searching by the card’s last 4 digits is not supported by the API yet (GET /v1/orders has no last4 filter).' };
  return { kind: 'unsupported', reason: 'Search takes an order number (ord_…), an e-mail address or a customer number (cus_…); the API has no filter by customer name yet.' };
}

function toQuery(f: Filters, timeZone: string): OrderQuery {
  const q: OrderQuery = { limit: PAGE_SIZE };
  const s = searchQuery(f.search);
  if (s.kind === 'query') Object.assign(q, s.query);
  if (f.status) q.status = f.status as OrderQuery['status'];
  if (f.payment_status) q.payment_status = f.payment_status as OrderQuery['payment_status'];
  if (f.campaign_id) q.campaign_id = f.campaign_id;
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
  const navigate = useNavigate();
  const campaigns = useCampaigns();
  const [draft, setDraft] = useState<Filters>(EMPTY);
  const [filters, setFilters] = useState<Filters>(EMPTY);
  const search = searchQuery(filters.search);
  const query = toQuery(filters, timeZone);

  const exact = useQuery({
    queryKey: ['order', search.kind === 'order' ? search.orderNumber : null],
    enabled: search.kind === 'order',
    queryFn: async () => {
      if (search.kind !== 'order') return null;
      const r = await api.GET('/v1/orders/{order_number}', { params: { path: { order_number: search.orderNumber } } });
      if (r.response.status === 404) return null;
      return unwrap(r).data;
    },
  });
  const list = usePaginatedList<Order>({
    key: ['orders', query],
    enabled: search.kind !== 'order' && search.kind !== 'unsupported',
    fetchPage: async (starting_after) => unwrap(await api.GET('/v1/orders', { params: { query: { ...query, ...(starting_after ? { starting_after } : {}) } } })),
    idOf: (o) => o.order_number,
  });

  const rows: Order[] = search.kind === 'order' ? (exact.data ? [exact.data] : []) : search.kind === 'unsupported' ? [] : list.items;
  const loading = search.kind === 'order' ? exact.isPending : list.isLoading;
  const error = search.kind === 'order' ? exact.error : list.error;

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
      <Paper withBorder p="sm" component="form" onSubmit={apply} role="search" aria-label="Search and filter orders">
        <Stack gap="xs">
          <Group align="flex-end" wrap="wrap">
            <TextInput
              label="Search"
              placeholder="Order number, e-mail or cus_…"
              description="Order number, customer e-mail or customer number"
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

      {search.kind === 'unsupported' && (
        <Alert color="yellow" role="status">
          {search.reason}
        </Alert>
      )}
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
                  <Text size="sm">{[o.customer.first_name, o.customer.last_name].filter(Boolean).join(' ') || '—'}</Text>
                  <Text size="xs" c="dimmed">
                    {o.customer.email}
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
          {search.kind === 'order' ? `No order ${search.orderNumber} on this team.` : 'No orders match.'}
        </Text>
      )}
      {search.kind !== 'order' && search.kind !== 'unsupported' && <Pager list={list as never} label="Order pages" />}
      {search.kind === 'order' && exact.data && (
        <Button variant="light" w="fit-content" onClick={() => void navigate({ to: `/orders/${exact.data!.order_number}` })}>
          Open {exact.data.order_number}
        </Button>
      )}
      {exact.error instanceof CheckstandError && exact.error.status === 404 && <Text c="dimmed">Not found.</Text>}
    </Stack>
  );
}
