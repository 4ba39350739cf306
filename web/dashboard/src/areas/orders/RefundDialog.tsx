import { Alert, Button, Group, Modal, NumberInput, SegmentedControl, Select, Stack, Text, Textarea } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useState } from 'react';
import { api, newIdempotencyKey, type Schemas, unwrap } from '../../lib/api.ts';
import { ApiErrorAlert, notifySuccess } from '../../lib/errors.tsx';
import { formatMoney, minorDigits, parseMoney, toDecimalString } from '../../lib/money.ts';
import { type Charge, chargeLabel, chargesOf } from './charges.ts';

type OrderDetail = Schemas['OrderDetail'];

/**
 * Refund (full or partial) in two steps: the form, then "Refund $X to …?" with Confirm. The
 * Idempotency-Key is made when the dialog opens, so a double click or a retry is one refund.
 */
export function RefundDialog({ order, opened, onClose }: { order: OrderDetail; opened: boolean; onClose: () => void }) {
  const qc = useQueryClient();
  const money = (n: number) => formatMoney(n, order.currency);
  const charges = useMemo(() => chargesOf(order.transactions).filter((c) => c.refundable > 0), [order.transactions]);
  const [chargeId, setChargeId] = useState<string | null>(null);
  const [mode, setMode] = useState<'full' | 'partial'>('full');
  const [amount, setAmount] = useState<string | number>('');
  const [reason, setReason] = useState('');
  const [review, setReview] = useState(false);
  const [key, setKey] = useState(newIdempotencyKey);

  useEffect(() => {
    if (!opened) return;
    setChargeId(charges[0]?.txn.id ?? null);
    setMode('full');
    setAmount('');
    setReason('');
    setReview(false);
    setKey(newIdempotencyKey());
  }, [opened]);

  const charge: Charge | undefined = charges.find((c) => c.txn.id === chargeId);
  const minor = mode === 'full' ? (charge?.refundable ?? null) : parseMoney(String(amount), order.currency);
  const amountError = mode === 'partial' && amount !== '' ? (minor === null || minor <= 0 ? 'Enter an amount' : charge && minor > charge.refundable ? `At most ${money(charge.refundable)}` : null) : null;
  const valid = !!charge && minor !== null && minor > 0 && minor <= charge.refundable;

  const refund = useMutation({
    mutationFn: async () => {
      const body = { transaction_id: charge!.txn.id, ...(mode === 'partial' ? { amount: minor! } : {}), ...(reason.trim() ? { reason: reason.trim() } : {}) };
      return unwrap(await api.POST('/v1/orders/{order_number}/refunds', { params: { path: { order_number: order.order_number } }, body, headers: { 'idempotency-key': key } }));
    },
    onSuccess: async (r) => {
      notifySuccess(`Refunded ${money(r.data.refund.amount)}.`, 'Refund done');
      await qc.invalidateQueries({ queryKey: ['order'] });
      await qc.invalidateQueries({ queryKey: ['orders'] });
      onClose();
    },
  });

  return (
    <Modal opened={opened} onClose={onClose} title={review ? 'Confirm the refund' : `Refund ${order.order_number}`} centered size="lg">
      {charges.length === 0 ? (
        <Text>Nothing left to refund on this order.</Text>
      ) : !review ? (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (valid) setReview(true);
          }}
        >
          <Stack>
            <Select
              label="Charge"
              data={charges.map((c) => ({ value: c.txn.id, label: chargeLabel(c, money) }))}
              value={chargeId}
              onChange={setChargeId}
              allowDeselect={false}
              description={charge ? `Refundable: ${money(charge.refundable)}${charge.refunded ? ` (already refunded ${money(charge.refunded)})` : ''}` : undefined}
            />
            <SegmentedControl
              aria-label="Refund amount"
              value={mode}
              onChange={(v) => setMode(v as 'full' | 'partial')}
              data={[
                { value: 'full', label: `Full${charge ? ` (${money(charge.refundable)})` : ''}` },
                { value: 'partial', label: 'Partial' },
              ]}
            />
            {mode === 'partial' && (
              <NumberInput
                label={`Amount (${order.currency})`}
                placeholder={charge ? toDecimalString(charge.refundable, order.currency) : ''}
                decimalScale={minorDigits(order.currency)}
                min={0}
                hideControls
                allowNegative={false}
                value={amount}
                onChange={setAmount}
                error={amountError}
                required
                data-autofocus
              />
            )}
            <Textarea label="Reason (optional)" maxLength={500} value={reason} onChange={(e) => setReason(e.currentTarget.value)} autosize minRows={2} />
            <Group justify="flex-end">
              <Button variant="default" onClick={onClose}>
                Cancel
              </Button>
              <Button type="submit" disabled={!valid}>
                Review refund
              </Button>
            </Group>
          </Stack>
        </form>
      ) : (
        <Stack>
          <Alert color="orange" role="status">
            Refund <strong>{money(minor!)}</strong> of charge {charge!.txn.id}
            {charge!.txn.card ? ` to the card ending ${charge!.txn.card.last4}` : ''}? The gateway is asked at once; this cannot be undone.
          </Alert>
          <ApiErrorAlert error={refund.error} title="The refund failed" />
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setReview(false)} disabled={refund.isPending}>
              Back
            </Button>
            <Button color="red" onClick={() => refund.mutate()} loading={refund.isPending}>
              Refund {money(minor!)}
            </Button>
          </Group>
        </Stack>
      )}
    </Modal>
  );
}

export function VoidDialog({ order, opened, onClose }: { order: OrderDetail; opened: boolean; onClose: () => void }) {
  const qc = useQueryClient();
  const money = (n: number) => formatMoney(n, order.currency);
  const charges = useMemo(() => chargesOf(order.transactions).filter((c) => c.voidable), [order.transactions]);
  const [chargeId, setChargeId] = useState<string | null>(null);
  const [reason, setReason] = useState('');
  const [key, setKey] = useState(newIdempotencyKey);
  useEffect(() => {
    if (!opened) return;
    setChargeId(charges[0]?.txn.id ?? null);
    setReason('');
    setKey(newIdempotencyKey());
  }, [opened]);
  const charge = charges.find((c) => c.txn.id === chargeId);

  const voidIt = useMutation({
    mutationFn: async () =>
      unwrap(
        await api.POST('/v1/orders/{order_number}/void', {
          params: { path: { order_number: order.order_number } },
          body: { transaction_id: charge!.txn.id, ...(reason.trim() ? { reason: reason.trim() } : {}) },
          headers: { 'idempotency-key': key },
        }),
      ),
    onSuccess: async () => {
      notifySuccess(`Voided ${money(charge!.txn.amount)}.`, 'Void done');
      await qc.invalidateQueries({ queryKey: ['order'] });
      await qc.invalidateQueries({ queryKey: ['orders'] });
      onClose();
    },
  });

  return (
    <Modal opened={opened} onClose={onClose} title={`Void ${order.order_number}?`} centered size="lg">
      {charges.length === 0 ? (
        <Text>No charge of this order can be voided (voided already, or refunded: refund the rest instead).</Text>
      ) : (
        <Stack>
          {charges.length > 1 && <Select label="Charge" data={charges.map((c) => ({ value: c.txn.id, label: chargeLabel(c, money) }))} value={chargeId} onChange={setChargeId} allowDeselect={false} />}
          <Alert color="orange" role="status">
            Void {charge ? <strong>{money(charge.txn.amount)}</strong> : 'the charge'} ({charge?.txn.id}): the gateway cancels the unsettled charge and the customer is never billed. A charge that has settled cannot be voided: refund it instead.
          </Alert>
          <Textarea label="Reason (optional)" maxLength={500} value={reason} onChange={(e) => setReason(e.currentTarget.value)} autosize minRows={2} />
          <ApiErrorAlert error={voidIt.error} title="The void failed" />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose} disabled={voidIt.isPending} data-autofocus>
              Cancel
            </Button>
            <Button color="red" onClick={() => voidIt.mutate()} loading={voidIt.isPending} disabled={!charge}>
              Void {charge ? money(charge.txn.amount) : ''}
            </Button>
          </Group>
        </Stack>
      )}
    </Modal>
  );
}
