import { Anchor, Button, Code, Group, Modal, Paper, Select, Stack, Table, Text, TextInput, Title, VisuallyHidden } from '@mantine/core';
import { IconDownload, IconTruckDelivery } from '@tabler/icons-react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useState } from 'react';
import { useDates } from '../../lib/dates.ts';
import { ApiErrorAlert, notifyError, notifySuccess } from '../../lib/errors.tsx';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { useSession } from '../../lib/session.tsx';
import { FULFILLMENT_STATUSES, type Fulfillment, saveBlob, serviceApi } from '../../lib/service.ts';
import { humanize, Status } from '../customers/ui.tsx';

function ShipDialog({ fulfillment, onClose }: { fulfillment: Fulfillment | null; onClose: () => void }) {
  const qc = useQueryClient();
  const [carrier, setCarrier] = useState('');
  const [tracking, setTracking] = useState('');
  const [url, setUrl] = useState('');
  const ship = useMutation({
    mutationFn: () => serviceApi.shipFulfillment(fulfillment!.id, { carrier: carrier.trim(), tracking_number: tracking.trim(), ...(url.trim() ? { tracking_url: url.trim() } : {}) }),
    onSuccess: async (r) => {
      notifySuccess(r.message);
      await qc.invalidateQueries({ queryKey: ['fulfillments'] });
      close();
    },
  });
  function close() {
    setCarrier('');
    setTracking('');
    setUrl('');
    ship.reset();
    onClose();
  }
  return (
    <Modal opened={!!fulfillment} onClose={close} title={`Mark ${fulfillment?.id ?? ''} shipped`} centered>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (carrier.trim() && tracking.trim()) ship.mutate();
        }}
      >
        <Stack>
          <Text size="sm">
            Order {fulfillment?.order_number}: {fulfillment?.lines.map((l) => `${l.quantity} × ${l.name}`).join(', ')}
          </Text>
          <TextInput label="Carrier" placeholder="USPS, UPS, DHL Express…" required maxLength={100} value={carrier} onChange={(e) => setCarrier(e.currentTarget.value)} data-autofocus />
          <TextInput label="Tracking number" required maxLength={100} value={tracking} onChange={(e) => setTracking(e.currentTarget.value)} />
          <TextInput label="Tracking URL" description="Optional, http(s)" type="url" maxLength={2000} value={url} onChange={(e) => setUrl(e.currentTarget.value)} />
          <ApiErrorAlert error={ship.error} title="Not shipped" />
          <Group justify="flex-end">
            <Button variant="default" onClick={close}>
              Cancel
            </Button>
            <Button type="submit" loading={ship.isPending} disabled={!carrier.trim() || !tracking.trim()}>
              Mark shipped
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

export function FulfillmentsList() {
  const { can } = useSession();
  const dates = useDates();
  const [status, setStatus] = useState<string | null>('pending');
  const [shipping, setShipping] = useState<Fulfillment | null>(null);
  const query = { status, limit: 25 };
  const list = usePaginatedList<Fulfillment>({
    key: ['fulfillments', query],
    fetchPage: (starting_after) => serviceApi.listFulfillments({ ...query, starting_after }),
    idOf: (f) => f.id,
  });
  const canFulfill = can('orders:fulfill');
  const exportCsv = useMutation({
    mutationFn: () => serviceApi.exportFulfillments(status ?? 'pending'),
    onSuccess: ({ blob, filename, rows }) => {
      saveBlob(blob, filename);
      notifySuccess(`${filename}${rows !== null ? `: ${rows} line${rows === 1 ? '' : 's'}` : ''}`, 'Exported');
    },
    onError: (e) => notifyError(e, 'Export failed'),
  });

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Fulfillment
        </Title>
        {canFulfill && (
          <Button leftSection={<IconDownload size={16} aria-hidden />} variant="default" loading={exportCsv.isPending} onClick={() => exportCsv.mutate()}>
            Export {humanize(status ?? 'pending')} as CSV
          </Button>
        )}
      </Group>
      <Paper withBorder p="sm" role="search" aria-label="Filter fulfillments">
        <Group align="flex-end">
          <Select label="Status" placeholder="Any" clearable data={FULFILLMENT_STATUSES.map((s) => ({ value: s, label: humanize(s) }))} value={status} onChange={setStatus} w={200} />
          <Text size="xs" c="dimmed">
            The export holds every {humanize(status ?? 'pending')} fulfillment (not only this page), one row per line to ship.
          </Text>
        </Group>
      </Paper>
      <ApiErrorAlert error={list.error} title="Could not load fulfillments" />
      <Table.ScrollContainer minWidth={900}>
        <Table striped highlightOnHover aria-label="Fulfillments" aria-busy={list.isLoading}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Fulfillment</Table.Th>
              <Table.Th scope="col">Order</Table.Th>
              <Table.Th scope="col">Items</Table.Th>
              <Table.Th scope="col">Status</Table.Th>
              <Table.Th scope="col">Shipment</Table.Th>
              <Table.Th scope="col">Created</Table.Th>
              <Table.Th scope="col">
                <VisuallyHidden>Actions</VisuallyHidden>
              </Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.items.map((f) => (
              <Table.Tr key={f.id} data-fulfillment={f.id}>
                <Table.Td>
                  <Code>{f.id}</Code>
                </Table.Td>
                <Table.Td>
                  <Anchor component={Link} to={`/orders/${f.order_number}`} size="sm" ff="monospace">
                    {f.order_number}
                  </Anchor>
                </Table.Td>
                <Table.Td>
                  {f.lines.map((l) => (
                    <Text key={l.line_id} size="sm">
                      {l.quantity} × {l.name}
                    </Text>
                  ))}
                </Table.Td>
                <Table.Td>
                  <Status status={f.status} label="Status" />
                </Table.Td>
                <Table.Td>
                  {f.tracking_number ? (
                    <>
                      <Text size="sm">
                        {f.carrier} ·{' '}
                        {f.tracking_url ? (
                          <Anchor href={f.tracking_url} target="_blank" rel="noreferrer" size="sm">
                            {f.tracking_number}
                          </Anchor>
                        ) : (
                          f.tracking_number
                        )}
                      </Text>
                      <Text size="xs" c="dimmed">
                        {dates.dateTime(f.shipped_at)}
                      </Text>
                    </>
                  ) : (
                    '—'
                  )}
                </Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{dates.dateTime(f.created_at)}</Table.Td>
                <Table.Td>
                  {canFulfill && f.status === 'pending' && (
                    <Button size="xs" leftSection={<IconTruckDelivery size={14} aria-hidden />} onClick={() => setShipping(f)} aria-label={`Mark shipped: ${f.id}`}>
                      Mark shipped
                    </Button>
                  )}
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {!list.isLoading && list.items.length === 0 && !list.error && (
        <Text c="dimmed" role="status">
          No {status ? humanize(status) : ''} fulfillments.
        </Text>
      )}
      <Pager list={list as never} label="Fulfillment pages" />
      <ShipDialog fulfillment={shipping} onClose={() => setShipping(null)} />
    </Stack>
  );
}
