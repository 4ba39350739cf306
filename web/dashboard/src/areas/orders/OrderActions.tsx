import { Button, Group, Modal, Stack, Text, Textarea, Tooltip } from '@mantine/core';
import { IconFlag, IconFlagOff, IconX } from '@tabler/icons-react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, type Schemas, unwrap } from '../../lib/api.ts';
import { useConfirm } from '../../lib/confirm.tsx';
import { ApiErrorAlert, notifyError, notifySuccess } from '../../lib/errors.tsx';
import { useSession } from '../../lib/session.tsx';

type OrderDetail = Schemas['OrderDetail'];

/** As the API's cancel rule (src/modules/orders/manage.ts): no money moved and no payment awaiting its outcome. */
const CANCELLABLE = new Set(['lead', 'pending', 'declined', 'pending_external_confirmation']);

export function cancelRefusal(o: OrderDetail): string | null {
  if (o.status === 'cancelled') return 'The order is cancelled';
  if (!CANCELLABLE.has(o.status)) return 'Money moved: refund or void the order instead';
  if (o.transactions.some((t) => t.status === 'pending')) return 'A payment is awaiting its outcome: void it, or wait for the decline';
  if (o.transactions.some((t) => t.status === 'approved' && t.amount > 0 && t.type !== 'verification')) return 'A charge was approved: refund or void it instead';
  return null;
}

function useRefreshOrder(orderNumber: string) {
  const qc = useQueryClient();
  return () => Promise.all([qc.invalidateQueries({ queryKey: ['order', orderNumber] }), qc.invalidateQueries({ queryKey: ['orders'] })]);
}

/** The QA flag: Flag for QA (with a reason) or Clear QA flag; `orders:annotate`. */
export function QaFlagButton({ order }: { order: OrderDetail }) {
  const { can } = useSession();
  const refresh = useRefreshOrder(order.order_number);
  const [open, setOpen] = useState(false);
  const [reason, setReason] = useState('');
  const patch = useMutation({
    mutationFn: async (body: { needs_qa: boolean; qa_reason?: string }) => unwrap(await api.PATCH('/v1/orders/{order_number}', { params: { path: { order_number: order.order_number } }, body })),
    onSuccess: async (r) => {
      setOpen(false);
      setReason('');
      notifySuccess(r.data.needs_qa ? 'Flagged for QA.' : 'QA flag cleared.');
      await refresh();
    },
  });
  if (!can('orders:annotate')) return null;
  if (order.needs_qa) {
    return (
      <Button variant="default" leftSection={<IconFlagOff size={16} aria-hidden />} loading={patch.isPending} onClick={() => patch.mutate({ needs_qa: false }, { onError: (e) => notifyError(e, 'Could not clear the QA flag') })}>
        Clear QA flag
      </Button>
    );
  }
  return (
    <>
      <Button variant="default" leftSection={<IconFlag size={16} aria-hidden />} onClick={() => setOpen(true)}>
        Flag for QA
      </Button>
      <Modal opened={open} onClose={() => setOpen(false)} title={`Flag ${order.order_number} for QA`}>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            patch.mutate(reason.trim() ? { needs_qa: true, qa_reason: reason.trim() } : { needs_qa: true });
          }}
        >
          <Stack>
            <Text size="sm">The order joins the disputes and QA queue until the flag is cleared.</Text>
            <Textarea label="QA reason" description="Optional; shown in the queue" maxLength={500} autosize minRows={2} value={reason} onChange={(e) => setReason(e.currentTarget.value)} />
            <ApiErrorAlert error={patch.error} title="Could not flag the order" />
            <Group justify="flex-end">
              <Button variant="default" onClick={() => setOpen(false)}>
                Cancel
              </Button>
              <Button type="submit" loading={patch.isPending}>
                Flag
              </Button>
            </Group>
          </Stack>
        </form>
      </Modal>
    </>
  );
}

/** Cancel order, after a confirmation; `orders:void`, and only while no money moved. */
export function CancelOrderButton({ order }: { order: OrderDetail }) {
  const { can } = useSession();
  const confirm = useConfirm();
  const refresh = useRefreshOrder(order.order_number);
  const cancel = useMutation({
    mutationFn: async () => unwrap(await api.POST('/v1/orders/{order_number}/cancel', { params: { path: { order_number: order.order_number } }, body: {} })),
    onSuccess: async () => {
      notifySuccess(`${order.order_number} cancelled.`);
      await refresh();
    },
    onError: (e) => notifyError(e, 'Could not cancel the order'),
  });
  if (!can('orders:void') || order.status === 'cancelled') return null;
  const refusal = cancelRefusal(order);
  return (
    <Tooltip label={refusal} disabled={!refusal}>
      <Button
        variant="outline"
        color="red"
        leftSection={<IconX size={16} aria-hidden />}
        disabled={!!refusal}
        loading={cancel.isPending}
        onClick={async () => {
          const yes = await confirm({
            title: `Cancel ${order.order_number}?`,
            message: `The ${order.status.replace(/_/g, ' ')} order becomes cancelled and can no longer be paid. Nothing was charged, so nothing is refunded.`,
            confirmLabel: 'Cancel order',
            cancelLabel: 'Keep it',
            danger: true,
          });
          if (yes) cancel.mutate();
        }}
      >
        Cancel order
      </Button>
    </Tooltip>
  );
}
