import { Anchor, Badge, Card, Code, Group, Loader, Select, SimpleGrid, Stack, Table, Tabs, Text, TextInput, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { Link, useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { api, type Query, type Schemas, unwrap } from '../../lib/api.ts';
import { useDates } from '../../lib/dates.ts';
import { ApiErrorAlert } from '../../lib/errors.tsx';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { BackLink, DevNav, Empty, PageHeader } from './ui.tsx';

type Mail = Schemas['Mail'];
type MailQuery = Query<'/v1/mail'>;
const MAIL_COLORS: Record<string, string> = { pending: 'yellow', sent: 'green', failed: 'red', cancelled: 'gray' };

function MailBadge({ status }: { status: string }) {
  return (
    <Badge variant="light" color={MAIL_COLORS[status] ?? 'gray'}>
      {status}
    </Badge>
  );
}

export function MailOutbox() {
  const dates = useDates();
  const [status, setStatus] = useState<string | null>(null);
  const [order, setOrder] = useState('');
  const query: MailQuery = { limit: 25 };
  if (status) query.status = status as MailQuery['status'];
  if (/^ord_\w+$/.test(order.trim())) query.order_number = order.trim();
  const list = usePaginatedList<Mail>({
    key: ['mail', query],
    fetchPage: async (starting_after) => unwrap(await api.GET('/v1/mail', { params: { query: { ...query, ...(starting_after ? { starting_after } : {}) } } })),
    idOf: (m) => m.id,
  });
  return (
    <Stack>
      <PageHeader nav={<DevNav />} title="Mail outbox" />
      <Text size="sm" c="dimmed">
        The purchase confirmations the team sent or is sending. Without SMTP (the embedded mode) each message is written as an <Code>.eml</Code> file on the server; its page shows where.
      </Text>
      <Group align="flex-end">
        <Select
          label="Status"
          placeholder="Any"
          clearable
          w={160}
          data={['pending', 'sent', 'failed', 'cancelled']}
          value={status}
          onChange={setStatus}
        />
        <TextInput label="Order number" placeholder="ord_…" w={220} value={order} onChange={(e) => setOrder(e.currentTarget.value)} />
      </Group>
      <ApiErrorAlert error={list.error} title="Could not load the mail" />
      <Table.ScrollContainer minWidth={800}>
        <Table striped highlightOnHover aria-label="Mail" aria-busy={list.isLoading}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Subject</Table.Th>
              <Table.Th scope="col">To</Table.Th>
              <Table.Th scope="col">Order</Table.Th>
              <Table.Th scope="col">Status</Table.Th>
              <Table.Th scope="col">Transport</Table.Th>
              <Table.Th scope="col">Created</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.items.map((m) => (
              <Table.Tr key={m.id}>
                <Table.Td>
                  <Anchor component={Link} to={`/developers/mail/${m.id}`} size="sm">
                    {m.subject || '(no subject)'}
                  </Anchor>
                  <Text size="xs" c="dimmed">
                    {m.kind.replace(/_/g, ' ')}
                  </Text>
                </Table.Td>
                <Table.Td>{m.to}</Table.Td>
                <Table.Td>
                  {m.order_number ? (
                    <Anchor component={Link} to={`/orders/${m.order_number}`} size="sm" ff="monospace">
                      {m.order_number}
                    </Anchor>
                  ) : (
                    '—'
                  )}
                </Table.Td>
                <Table.Td>
                  <MailBadge status={m.status} />
                  {m.last_error && (
                    <Text size="xs" c="dimmed" lineClamp={1}>
                      {m.last_error}
                    </Text>
                  )}
                </Table.Td>
                <Table.Td>{m.transport ?? '—'}</Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{dates.dateTime(m.created_at)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {!list.isLoading && list.items.length === 0 && !list.error && <Empty>No mail.</Empty>}
      <Pager list={list as never} label="Mail pages" />
    </Stack>
  );
}

function Field({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <div>
      <Text size="xs" c="dimmed" component="dt">
        {label}
      </Text>
      <Text size="sm" component="dd" m={0} style={{ wordBreak: 'break-all' }}>
        {children}
      </Text>
    </div>
  );
}

export function MailPage() {
  const { id } = useParams({ strict: false }) as { id: string };
  const dates = useDates();
  const q = useQuery({ queryKey: ['mail', id, 'detail'], queryFn: async () => unwrap(await api.GET('/v1/mail/{id}', { params: { path: { id } } })).data });
  if (q.isPending) return <Loader aria-label="Loading the message" />;
  const m = q.data;
  return (
    <Stack>
      <DevNav />
      <BackLink to="/developers/mail">Mail outbox</BackLink>
      <ApiErrorAlert error={q.error} title={`Could not load ${id}`} />
      {m && (
        <>
          <Title order={1} size="h2">
            {m.subject || '(no subject)'}
          </Title>
          <Card withBorder>
            <SimpleGrid cols={{ base: 1, sm: 3 }} component="dl" m={0}>
              <Field label="To">{m.to}</Field>
              <Field label="Status">
                <MailBadge status={m.status} /> {m.attempts} attempt{m.attempts === 1 ? '' : 's'}
              </Field>
              <Field label="Sent">{dates.dateTime(m.sent_at)}</Field>
              <Field label="Transport">{m.transport ?? '—'}</Field>
              <Field label={m.eml_path ? '.eml file on the server' : 'Transport reference'}>{m.eml_path ? <Code>{m.eml_path}</Code> : (m.transport_ref ?? '—')}</Field>
              <Field label="Order">{m.order_number ?? '—'}</Field>
            </SimpleGrid>
            {m.last_error && (
              <Text size="sm" c="red" mt="sm">
                Last error: {m.last_error}
              </Text>
            )}
          </Card>
          <Card withBorder component="section" aria-label="Preview">
            <Tabs defaultValue={m.html_body ? 'html' : 'text'}>
              <Tabs.List>
                {m.html_body && <Tabs.Tab value="html">HTML</Tabs.Tab>}
                <Tabs.Tab value="text">Plain text</Tabs.Tab>
              </Tabs.List>
              {m.html_body && (
                <Tabs.Panel value="html" pt="sm">
                  {/* The message's HTML in a sandbox: no scripts, no same-origin access. */}
                  <iframe title="HTML preview of the message" sandbox="" srcDoc={m.html_body} style={{ width: '100%', height: 560, border: '1px solid var(--mantine-color-gray-3)', background: 'white' }} />
                </Tabs.Panel>
              )}
              <Tabs.Panel value="text" pt="sm">
                <Code block style={{ whiteSpace: 'pre-wrap' }}>
                  {m.text_body}
                </Code>
              </Tabs.Panel>
            </Tabs>
          </Card>
        </>
      )}
    </Stack>
  );
}
