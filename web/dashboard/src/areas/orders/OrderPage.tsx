import { Alert, Anchor, Badge, Button, Code, Grid, Group, Loader, SimpleGrid, Stack, Table, Text, Timeline, Title, Tooltip } from '@mantine/core';
import { IconArrowBackUp, IconBan, IconCircleDot } from '@tabler/icons-react';
import { useQuery } from '@tanstack/react-query';
import { Link, useParams } from '@tanstack/react-router';
import { type ReactNode, useState } from 'react';
import { api, type Schemas, unwrap } from '../../lib/api.ts';
import { useDates } from '../../lib/dates.ts';
import { ApiErrorAlert } from '../../lib/errors.tsx';
import { formatMoney } from '../../lib/money.ts';
import { useSession } from '../../lib/session.tsx';
import { chargesOf } from './charges.ts';
import { humanize, StatusBadge } from './format.tsx';
import { CancelOrderButton, QaFlagButton } from './OrderActions.tsx';
import { OrderNotes } from './OrderNotes.tsx';
import { OrderWebhooks } from './OrderWebhooks.tsx';
import { RefundDialog, VoidDialog } from './RefundDialog.tsx';
import { ScrollTable, Section } from './Section.tsx';

type OrderDetail = Schemas['OrderDetail'];
type Address = NonNullable<OrderDetail['shipping_address']>;

const FIRST_PAYMENT_TYPES = new Set(['sale', 'auth', 'verification']);

function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div>
      <Text size="xs" c="dimmed" component="dt">
        {label}
      </Text>
      <Text size="sm" component="dd" m={0}>
        {children}
      </Text>
    </div>
  );
}

function AddressBlock({ a }: { a: Address | null }) {
  if (!a) return <>—</>;
  const name = [a.first_name, a.last_name].filter(Boolean).join(' ');
  return (
    <>
      {[name, a.line1, a.line2, [a.postal_code, a.city].filter(Boolean).join(' '), [a.state, a.country].filter(Boolean).join(', ')]
        .filter(Boolean)
        .map((l, i) => (
          <span key={i} style={{ display: 'block' }}>
            {l}
          </span>
        ))}
    </>
  );
}

function eventSummary(data: Record<string, unknown>): string {
  return Object.entries(data)
    .filter(([, v]) => v !== null && v !== undefined && typeof v !== 'object')
    .map(([k, v]) => `${k}: ${String(v)}`)
    .join(' · ');
}

export function OrderPage() {
  const { orderNumber } = useParams({ strict: false }) as { orderNumber: string };
  const { can } = useSession();
  const dates = useDates();
  const [dialog, setDialog] = useState<'refund' | 'void' | null>(null);
  const q = useQuery({
    queryKey: ['order', orderNumber, 'detail'],
    // A member of the merchant's team gets the full view (an affiliate-scoped caller never reaches this page's actions).
    queryFn: async () => unwrap(await api.GET('/v1/orders/{order_number}', { params: { path: { order_number: orderNumber } } })).data as OrderDetail,
  });

  if (q.isPending) return <Loader aria-label="Loading the order" />;
  if (q.error || !q.data)
    return (
      <Stack>
        <Anchor component={Link} to="/orders">
          ← Orders
        </Anchor>
        <ApiErrorAlert error={q.error} title={`Could not load ${orderNumber}`} />
      </Stack>
    );

  const o = q.data;
  const money = (n: number) => formatMoney(n, o.currency);
  const charges = chargesOf(o.transactions);
  const refundable = charges.reduce((s, c) => s + c.refundable, 0);
  const voidable = charges.some((c) => c.voidable);
  const attempts = o.transactions.filter((t) => FIRST_PAYMENT_TYPES.has(t.type));

  return (
    <Stack>
      <Anchor component={Link} to="/orders" size="sm">
        ← Orders
      </Anchor>
      <Group justify="space-between" align="flex-start">
        <Stack gap={4}>
          <Title order={1} size="h2" ff="monospace">
            {o.order_number}
          </Title>
          <Group gap="xs">
            <StatusBadge status={o.status} label="Status" />
            <StatusBadge status={o.payment_status} label="Payment" />
            {o.is_test && <Badge color="gray" variant="outline">test</Badge>}
            {o.needs_qa && (
              <Badge color="red" variant="filled" title={o.qa_reason ?? undefined}>
                QA{o.qa_reason ? `: ${o.qa_reason}` : ''}
              </Badge>
            )}
            {o.is_throttled && <Badge color="violet" variant="light">throttled</Badge>}
          </Group>
        </Stack>
        <Group gap="xs">
          <QaFlagButton order={o} />
          <CancelOrderButton order={o} />
          {can('orders:refund') && (
            <Tooltip label="Nothing left to refund" disabled={refundable > 0}>
              <Button leftSection={<IconArrowBackUp size={16} aria-hidden />} onClick={() => setDialog('refund')} disabled={refundable === 0}>
                Refund
              </Button>
            </Tooltip>
          )}
          {can('orders:void') && (
            <Tooltip label="No charge can be voided (already voided or refunded)" disabled={voidable}>
              <Button variant="outline" color="red" leftSection={<IconBan size={16} aria-hidden />} onClick={() => setDialog('void')} disabled={!voidable}>
                Void
              </Button>
            </Tooltip>
          )}
        </Group>
      </Group>

      <SimpleGrid cols={{ base: 1, md: 3 }}>
        <Section title="Customer">
          <Stack gap="xs" component="dl" m={0}>
            <Field label="Name">{[o.customer.first_name, o.customer.last_name].filter(Boolean).join(' ') || '—'}</Field>
            <Field label="E-mail">{o.customer.email}</Field>
            <Field label="Phone">{o.phone ?? o.customer.phone ?? '—'}</Field>
            <Field label="Customer">
              <Code>{o.customer.customer_number}</Code>
            </Field>
          </Stack>
        </Section>
        <Section title="Totals">
          <Stack gap="xs" component="dl" m={0}>
            <Field label="Subtotal">{money(o.subtotal)}</Field>
            <Field label="Shipping">{money(o.shipping_total)}</Field>
            {o.discount_total > 0 && <Field label="Discount">−{money(o.discount_total)}</Field>}
            <Field label="Total">
              <strong>{money(o.total)}</strong>
            </Field>
            <Field label="Refunded">{o.refunded_total ? money(o.refunded_total) : '—'}</Field>
          </Stack>
        </Section>
        <Section title="Details">
          <Stack gap="xs" component="dl" m={0}>
            <Field label="Created">{dates.dateTime(o.created_at)}</Field>
            <Field label="Completed">{dates.dateTime(o.completed_at)}</Field>
            <Field label="Campaign">
              <Code>{o.campaign_id}</Code>
            </Field>
            {o.affiliate && <Field label="Affiliate">{o.affiliate.affiliate_id}</Field>}
            {o.rebill_of && (
              <Field label="Renews">
                <Anchor component={Link} to={`/orders/${o.rebill_of}`} size="sm">
                  {o.rebill_of}
                </Anchor>
              </Field>
            )}
            {o.subscription_id && <Field label="Subscription">{o.subscription_id}</Field>}
          </Stack>
        </Section>
      </SimpleGrid>

      <Section title="Lines" count={o.lines.length}>
        <ScrollTable minWidth={600} label="Order lines (scrolls sideways)">
          <Table aria-label="Order lines">
            <Table.Thead>
              <Table.Tr>
                <Table.Th scope="col">Item</Table.Th>
                <Table.Th scope="col">Billing</Table.Th>
                <Table.Th scope="col" style={{ textAlign: 'right' }}>Qty</Table.Th>
                <Table.Th scope="col" style={{ textAlign: 'right' }}>Unit price</Table.Th>
                <Table.Th scope="col" style={{ textAlign: 'right' }}>Shipping</Table.Th>
                <Table.Th scope="col" style={{ textAlign: 'right' }}>Total</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {o.lines.map((l) => (
                <Table.Tr key={l.id}>
                  <Table.Td>
                    {l.name}
                    {l.upsell_id && (
                      <Badge ml="xs" size="xs" variant="light">
                        upsell
                      </Badge>
                    )}
                  </Table.Td>
                  <Table.Td>{humanize(l.billing_type)} · {l.fulfillment_type}</Table.Td>
                  <Table.Td style={{ textAlign: 'right' }}>{l.quantity}</Table.Td>
                  <Table.Td style={{ textAlign: 'right' }}>{money(l.unit_price)}</Table.Td>
                  <Table.Td style={{ textAlign: 'right' }}>{money(l.shipping)}</Table.Td>
                  <Table.Td style={{ textAlign: 'right' }}>{money(l.line_total)}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </ScrollTable>
      </Section>

      <Grid>
        <Grid.Col span={{ base: 12, lg: 8 }}>
          <Stack>
            <Section title="Transactions" count={o.transactions.length}>
              <ScrollTable minWidth={700} label="Transactions (scrolls sideways)">
                <Table aria-label="Transactions" striped>
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th scope="col">Transaction</Table.Th>
                      <Table.Th scope="col">Type</Table.Th>
                      <Table.Th scope="col">Status</Table.Th>
                      <Table.Th scope="col" style={{ textAlign: 'right' }}>Amount</Table.Th>
                      <Table.Th scope="col">Payment method</Table.Th>
                      <Table.Th scope="col">Time</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {o.transactions.map((t) => (
                      <Table.Tr key={t.id} data-transaction={t.id} data-type={t.type}>
                        <Table.Td>
                          <Code>{t.id}</Code>
                          {t.parent_id && (
                            <Text size="xs" c="dimmed">
                              of {t.parent_id}
                            </Text>
                          )}
                        </Table.Td>
                        <Table.Td>{t.type}{t.provisional ? ' (provisional)' : ''}</Table.Td>
                        <Table.Td>
                          <StatusBadge status={t.status} />
                        </Table.Td>
                        <Table.Td style={{ textAlign: 'right' }}>{money(t.amount)}</Table.Td>
                        <Table.Td>{t.card ? `${t.card.brand ?? 'card'} •••• ${t.card.last4}` : t.connection_id ? `extpay ${t.connection_id}` : '—'}</Table.Td>
                        <Table.Td style={{ whiteSpace: 'nowrap' }}>{dates.dateTime(t.created_at)}</Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </ScrollTable>
              {o.transactions.length === 0 && (
                <Text size="sm" c="dimmed">
                  No payment yet.
                </Text>
              )}
            </Section>

            <Section title="Payment attempts" count={attempts.length}>
              <ScrollTable minWidth={700} label="Payment attempts (scrolls sideways)">
                <Table aria-label="Payment attempts">
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th scope="col">#</Table.Th>
                      <Table.Th scope="col">Gateway</Table.Th>
                      <Table.Th scope="col">Outcome</Table.Th>
                      <Table.Th scope="col">Gateway answer</Table.Th>
                      <Table.Th scope="col">Reference</Table.Th>
                      <Table.Th scope="col">Time</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {attempts.map((t) => (
                      <Table.Tr key={t.id}>
                        <Table.Td>{t.attempt}</Table.Td>
                        <Table.Td>
                          {t.gateway_id ?? t.connection_id ?? '—'}
                          {t.router_id && (
                            <Text size="xs" c="dimmed">
                              router {t.router_id}
                            </Text>
                          )}
                        </Table.Td>
                        <Table.Td>
                          <StatusBadge status={t.status} />
                        </Table.Td>
                        <Table.Td>{[t.response_code, t.response_text].filter(Boolean).join(' — ') || '—'}{t.auth_code ? ` (auth ${t.auth_code})` : ''}</Table.Td>
                        <Table.Td>{t.provider_ref ?? '—'}</Table.Td>
                        <Table.Td style={{ whiteSpace: 'nowrap' }}>{dates.dateTime(t.created_at)}</Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </ScrollTable>
            </Section>

            {o.disputes.length > 0 && (
              <Section title="Disputes" count={o.disputes.length}>
                <Stack gap="xs">
                  {o.disputes.map((d) => (
                    <Alert key={d.id} color="red" title={`${humanize(d.status)} · ${money(d.amount)}`}>
                      {d.reason ?? 'No reason given'} — charge {d.transaction_id}, opened {dates.dateTime(d.created_at)}
                    </Alert>
                  ))}
                </Stack>
              </Section>
            )}

            <OrderWebhooks orderNumber={o.order_number} />

            <SimpleGrid cols={{ base: 1, sm: 2 }}>
              <Section title="Shipping address">
                <Text size="sm">
                  <AddressBlock a={o.shipping_address} />
                </Text>
              </Section>
              <Section title="Billing address">
                <Text size="sm">
                  <AddressBlock a={o.billing_address} />
                </Text>
              </Section>
            </SimpleGrid>
          </Stack>
        </Grid.Col>
        <Grid.Col span={{ base: 12, lg: 4 }}>
          <Stack>
            <Section title="Timeline" count={o.events.length}>
              <Timeline bulletSize={18} lineWidth={2} active={o.events.length - 1}>
                {o.events.map((e) => (
                  <Timeline.Item key={e.id} title={e.type} bullet={<IconCircleDot size={12} aria-hidden />}>
                    <Text size="xs" c="dimmed">
                      {dates.dateTime(e.created_at)}
                    </Text>
                    {eventSummary(e.data) && <Text size="xs">{eventSummary(e.data)}</Text>}
                  </Timeline.Item>
                ))}
              </Timeline>
            </Section>
            <OrderNotes order={o} />
          </Stack>
        </Grid.Col>
      </Grid>

      <RefundDialog order={o} opened={dialog === 'refund'} onClose={() => setDialog(null)} />
      <VoidDialog order={o} opened={dialog === 'void'} onClose={() => setDialog(null)} />
    </Stack>
  );
}
