import { Anchor, Button, Code, Grid, Group, Loader, SimpleGrid, Stack, Table, Text, Textarea, Title } from '@mantine/core';
import { IconMessagePlus } from '@tabler/icons-react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { api, type Schemas, unwrap } from '../../lib/api.ts';
import { useDates } from '../../lib/dates.ts';
import { ApiErrorAlert, notifySuccess } from '../../lib/errors.tsx';
import { formatMoney } from '../../lib/money.ts';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { useSession } from '../../lib/session.tsx';
import { SubscriptionsTable } from '../subscriptions/SubscriptionsTable.tsx';
import { NewTicketDialog } from '../tickets/NewTicketDialog.tsx';
import { TicketsTable } from '../tickets/TicketsTable.tsx';
import { fullName, serviceApi } from '../../lib/service.ts';
import { Field, Section, Status } from './ui.tsx';

type Order = Schemas['Order'];

function Notes({ customer }: { customer: string }) {
  const { can } = useSession();
  const dates = useDates();
  const qc = useQueryClient();
  const [body, setBody] = useState('');
  const notes = useQuery({
    queryKey: ['customer', customer, 'notes'],
    queryFn: async () => unwrap(await api.GET('/v1/customers/{customer_number}/notes', { params: { path: { customer_number: customer }, query: { limit: 50 } } })).data,
  });
  const add = useMutation({
    mutationFn: async () => unwrap(await api.POST('/v1/customers/{customer_number}/notes', { params: { path: { customer_number: customer } }, body: { body: body.trim() } })),
    onSuccess: async () => {
      setBody('');
      notifySuccess('Note added.');
      await qc.invalidateQueries({ queryKey: ['customer', customer, 'notes'] });
    },
  });
  return (
    <Section title="Notes" count={notes.data?.length}>
      <ApiErrorAlert error={notes.error} title="Could not load the notes" />
      <Stack gap="xs">
        {notes.data?.map((n) => (
          <div key={n.id}>
            <Text size="sm" style={{ whiteSpace: 'pre-wrap' }}>
              {n.body}
            </Text>
            <Text size="xs" c="dimmed">
              {dates.dateTime(n.created_at)} · {n.author}
            </Text>
          </div>
        ))}
        {notes.data?.length === 0 && (
          <Text size="sm" c="dimmed">
            No notes yet.
          </Text>
        )}
      </Stack>
      {can('orders:annotate') && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (body.trim()) add.mutate();
          }}
        >
          <Stack gap="xs" mt="md">
            <Textarea label="Add a note" maxLength={10_000} autosize minRows={2} value={body} onChange={(e) => setBody(e.currentTarget.value)} />
            <ApiErrorAlert error={add.error} title="Could not add the note" />
            <Button type="submit" size="xs" w="fit-content" loading={add.isPending} disabled={!body.trim()}>
              Add note
            </Button>
          </Stack>
        </form>
      )}
    </Section>
  );
}

function Orders({ customer }: { customer: string }) {
  const dates = useDates();
  const list = usePaginatedList<Order>({
    key: ['orders', { customer_number: customer }],
    fetchPage: async (starting_after) => unwrap(await api.GET('/v1/orders', { params: { query: { customer_number: customer, limit: 10, ...(starting_after ? { starting_after } : {}) } } })),
    idOf: (o) => o.order_number,
  });
  return (
    <Section title="Orders">
      <ApiErrorAlert error={list.error} title="Could not load the orders" />
      <Table.ScrollContainer minWidth={600}>
        <Table striped aria-label="Customer orders">
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
            {list.items.map((o) => (
              <Table.Tr key={o.order_number} data-order={o.order_number}>
                <Table.Td>
                  <Anchor component={Link} to={`/orders/${o.order_number}`} size="sm" ff="monospace">
                    {o.order_number}
                  </Anchor>
                </Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{dates.dateTime(o.created_at)}</Table.Td>
                <Table.Td>
                  <Status status={o.status} label="Status" />
                </Table.Td>
                <Table.Td style={{ textAlign: 'right' }}>{formatMoney(o.total, o.currency)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {!list.isLoading && list.items.length === 0 && (
        <Text size="sm" c="dimmed">
          No orders.
        </Text>
      )}
      <Pager list={list as never} label="Customer order pages" />
    </Section>
  );
}

export function CustomerPage() {
  const { id } = useParams({ strict: false }) as { id: string };
  const { can } = useSession();
  const dates = useDates();
  const [ticketOpen, setTicketOpen] = useState(false);
  const customer = useQuery({
    queryKey: ['customer', id],
    queryFn: async () => unwrap(await api.GET('/v1/customers/{customer_number}', { params: { path: { customer_number: id } } })).data,
  });
  const subscriptions = useQuery({
    queryKey: ['subscriptions', { customer_number: id }],
    queryFn: async () => unwrap(await api.GET('/v1/subscriptions', { params: { query: { customer_number: id, limit: 100 } } })).data,
  });
  const tickets = useQuery({ queryKey: ['tickets', { customer_number: id }], queryFn: async () => (await serviceApi.listTickets({ customer_number: id, limit: 100 })).data });
  const recentOrders = useQuery({
    queryKey: ['orders', { customer_number: id }, 'for-ticket'],
    queryFn: async () => unwrap(await api.GET('/v1/orders', { params: { query: { customer_number: id, limit: 50 } } })).data.map((o) => o.order_number),
  });

  if (customer.isPending) return <Loader aria-label="Loading the customer" />;
  if (customer.error || !customer.data)
    return (
      <Stack>
        <Anchor component={Link} to="/customers">
          ← Customers
        </Anchor>
        <ApiErrorAlert error={customer.error} title={`Could not load ${id}`} />
      </Stack>
    );
  const c = customer.data;

  return (
    <Stack>
      <Anchor component={Link} to="/customers" size="sm">
        ← Customers
      </Anchor>
      <Group justify="space-between" align="flex-start">
        <Stack gap={4}>
          <Title order={1} size="h2">
            {fullName(c) || c.email}
          </Title>
          <Code w="fit-content">{c.customer_number}</Code>
        </Stack>
        {can('orders:annotate') && (
          <Button leftSection={<IconMessagePlus size={16} aria-hidden />} onClick={() => setTicketOpen(true)}>
            Open a ticket
          </Button>
        )}
      </Group>
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        <Section title="Contact">
          <Stack gap="xs" component="dl" m={0}>
            <Field label="E-mail">{c.email}</Field>
            <Field label="Phone">{c.phone ?? '—'}</Field>
            <Field label="Customer since">{dates.dateTime(c.created_at)}</Field>
          </Stack>
        </Section>
        <Notes customer={c.customer_number} />
      </SimpleGrid>
      <Grid>
        <Grid.Col span={12}>
          <Orders customer={c.customer_number} />
        </Grid.Col>
        <Grid.Col span={12}>
          <Section title="Subscriptions" count={subscriptions.data?.length}>
            <ApiErrorAlert error={subscriptions.error} title="Could not load the subscriptions" />
            {subscriptions.data && subscriptions.data.length > 0 ? (
              <SubscriptionsTable rows={subscriptions.data} label="Customer subscriptions" showCustomer={false} />
            ) : (
              subscriptions.data && (
                <Text size="sm" c="dimmed">
                  No subscriptions.
                </Text>
              )
            )}
          </Section>
        </Grid.Col>
        <Grid.Col span={12}>
          <Section title="Support tickets" count={tickets.data?.length}>
            <ApiErrorAlert error={tickets.error} title="Could not load the tickets" />
            {tickets.data && tickets.data.length > 0 ? (
              <TicketsTable rows={tickets.data} label="Customer tickets" showCustomer={false} />
            ) : (
              tickets.data && (
                <Text size="sm" c="dimmed">
                  No tickets.
                </Text>
              )
            )}
          </Section>
        </Grid.Col>
      </Grid>
      <NewTicketDialog opened={ticketOpen} onClose={() => setTicketOpen(false)} customerNumber={c.customer_number} orderNumbers={recentOrders.data ?? []} />
    </Stack>
  );
}
