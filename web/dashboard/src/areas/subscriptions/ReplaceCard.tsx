import { Button, Group, Modal, Stack, Text, TextInput } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, unwrap } from '../../lib/api.ts';
import { ApiErrorAlert, notifySuccess } from '../../lib/errors.tsx';
import type { Subscription } from './SubscriptionsTable.tsx';

/**
 * Replace a card subscription's card (POST /v1/subscriptions/{id}/payment-method): the API verifies
 * the new card at $0, vaults it at the gateway and answers the subscription with the new card; a
 * declined card comes back as 422 card_verification_declined and is shown in the dialog. The number
 * only passes through to the API (never kept in the page's state after the dialog closes).
 */
export function ReplaceCardDialog({ subscription, onClose }: { subscription: Subscription; onClose: () => void }) {
  const qc = useQueryClient();
  const [number, setNumber] = useState('');
  const [exp, setExp] = useState('');
  const [cvv, setCvv] = useState('');
  const save = useMutation({
    mutationFn: async () =>
      unwrap(
        await api.POST('/v1/subscriptions/{id}/payment-method', {
          params: { path: { id: subscription.id } },
          body: { card_number: number.replace(/[\s-]/g, ''), card_exp: exp.trim(), card_cvv: cvv.trim() },
        }),
      ),
    onSuccess: async (r) => {
      qc.setQueryData(['subscription', subscription.id], r.data);
      notifySuccess(r.message, 'Card replaced');
      await qc.invalidateQueries({ queryKey: ['subscriptions'] });
      onClose();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  const current = subscription.payment_method;
  return (
    <Modal opened onClose={onClose} title="Replace the card">
      <form onSubmit={submit}>
        <Stack>
          <Text size="sm">
            {current ? `Now: ${current.brand} ending ${current.last4} (exp ${current.exp}). ` : ''}
            The new card is verified at $0 and saved at the gateway; later cycles charge it{subscription.status === 'past_due' ? ', and the past-due cycle is retried now' : ''}.
          </Text>
          <TextInput label="Card number" required autoComplete="cc-number" inputMode="numeric" value={number} onChange={(e) => setNumber(e.currentTarget.value)} />
          <Group grow>
            <TextInput label="Expiry (MM/YY)" required autoComplete="cc-exp" placeholder="MM/YY" value={exp} onChange={(e) => setExp(e.currentTarget.value)} />
            <TextInput label="CVV" required autoComplete="cc-csc" inputMode="numeric" value={cvv} onChange={(e) => setCvv(e.currentTarget.value)} />
          </Group>
          <ApiErrorAlert error={save.error} title="The card was not saved" />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={save.isPending}>
              Replace card
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
