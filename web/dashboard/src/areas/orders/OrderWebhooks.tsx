import { Anchor, Button, Code, Table, Text, VisuallyHidden } from '@mantine/core';
import { IconRepeat } from '@tabler/icons-react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { api, unwrap } from '../../lib/api.ts';
import { useDates } from '../../lib/dates.ts';
import { ApiErrorAlert, notifyError, notifySuccess } from '../../lib/errors.tsx';
import { useSession } from '../../lib/session.tsx';
import { StatusBadge } from './format.tsx';
import { ScrollTable, Section } from './Section.tsx';

/** The deliveries of the order's events to the team's endpoints, each with Resend (a replay); `webhooks:manage`. */
export function OrderWebhooks({ orderNumber }: { orderNumber: string }) {
  const { can } = useSession();
  if (!can('webhooks:manage')) return null;
  return <Deliveries orderNumber={orderNumber} />;
}

function Deliveries({ orderNumber }: { orderNumber: string }) {
  const dates = useDates();
  const qc = useQueryClient();
  const key = ['order', orderNumber, 'webhook-deliveries'];
  const list = useQuery({
    queryKey: key,
    queryFn: async () => unwrap(await api.GET('/v1/webhook-deliveries', { params: { query: { order_number: orderNumber, limit: 50 } } })).data,
  });
  const replay = useMutation({
    mutationFn: async (id: string) => unwrap(await api.POST('/v1/webhook-deliveries/{id}/replay', { params: { path: { id } } })),
    onSuccess: async (r) => {
      notifySuccess(`${r.data.event_type} will be sent again to the endpoint.`, 'Resend scheduled');
      await qc.invalidateQueries({ queryKey: key });
    },
    onError: (e) => notifyError(e, 'Could not resend the webhook'),
  });
  return (
    <Section title="Webhooks" count={list.data?.length}>
      <ApiErrorAlert error={list.error} title="Could not load the webhook deliveries" />
      {list.data && list.data.length > 0 && (
        <ScrollTable minWidth={520} label="Webhook deliveries (scrolls sideways)">
          <Table aria-label="Webhook deliveries">
            <Table.Thead>
              <Table.Tr>
                <Table.Th scope="col">Event</Table.Th>
                <Table.Th scope="col">Endpoint</Table.Th>
                <Table.Th scope="col">Status</Table.Th>
                <Table.Th scope="col">Attempts</Table.Th>
                <Table.Th scope="col">
                  <VisuallyHidden>Actions</VisuallyHidden>
                </Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {list.data.map((d) => (
                <Table.Tr key={d.id} data-delivery={d.id}>
                  <Table.Td>
                    <Text size="sm">{d.event_type}</Text>
                    <Text size="xs" c="dimmed">
                      {dates.dateTime(d.created_at)}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <Anchor component={Link} to={`/developers/webhooks/${d.endpoint_id}`} size="sm">
                      <Code>{d.endpoint_id}</Code>
                    </Anchor>
                  </Table.Td>
                  <Table.Td>
                    <StatusBadge status={d.status} />
                    {d.last_status_code !== null && (
                      <Text size="xs" c="dimmed">
                        HTTP {d.last_status_code}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>{d.attempt_count}</Table.Td>
                  <Table.Td>
                    <Button
                      size="xs"
                      variant="light"
                      leftSection={<IconRepeat size={14} aria-hidden />}
                      aria-label={`Resend ${d.event_type} to ${d.endpoint_id}`}
                      loading={replay.isPending && replay.variables === d.id}
                      onClick={() => replay.mutate(d.id)}
                    >
                      Resend
                    </Button>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </ScrollTable>
      )}
      {list.data?.length === 0 && (
        <Text size="sm" c="dimmed">
          No webhook was sent for this order’s events.
        </Text>
      )}
    </Section>
  );
}
