import { Anchor, Button, Stack, Text, Textarea } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useState } from 'react';
import { api, type Schemas, unwrap } from '../../lib/api.ts';
import { useDates } from '../../lib/dates.ts';
import { ApiErrorAlert, notifySuccess } from '../../lib/errors.tsx';
import { useSession } from '../../lib/session.tsx';
import { Section } from './Section.tsx';

type OrderDetail = Schemas['OrderDetail'];

/** The order's notes (GET/POST /v1/orders/{n}/notes): each is also a note of the customer. */
export function OrderNotes({ order }: { order: OrderDetail }) {
  const { can } = useSession();
  const dates = useDates();
  const qc = useQueryClient();
  const orderNumber = order.order_number;
  const customer = order.customer.customer_number;
  const [body, setBody] = useState('');
  const notes = useQuery({
    queryKey: ['order', orderNumber, 'notes'],
    queryFn: async () => unwrap(await api.GET('/v1/orders/{order_number}/notes', { params: { path: { order_number: orderNumber }, query: { limit: 50 } } })).data,
  });
  const add = useMutation({
    mutationFn: async () => unwrap(await api.POST('/v1/orders/{order_number}/notes', { params: { path: { order_number: orderNumber } }, body: { body: body.trim() } })),
    onSuccess: async () => {
      setBody('');
      notifySuccess('Note added.');
      await Promise.all([qc.invalidateQueries({ queryKey: ['order', orderNumber, 'notes'] }), qc.invalidateQueries({ queryKey: ['customer', customer, 'notes'] })]);
    },
  });
  return (
    <Section title="Notes" count={notes.data?.length}>
      <Text size="xs" c="dimmed" mb="xs">
        Notes about this order (dispute notes included). They are notes of the customer too:{' '}
        <Anchor component={Link} to={`/customers/${customer}`} size="xs" underline="always">
          all of {customer}’s notes
        </Anchor>
        .
      </Text>
      <ApiErrorAlert error={notes.error} title="Could not load the notes" />
      {!!notes.data?.length && (
        <Stack gap="xs" aria-label="Order notes" role="list">
          {notes.data.map((n) => (
            <div key={n.id} role="listitem" data-note={n.id}>
              <Text size="sm" style={{ whiteSpace: 'pre-wrap' }}>
                {n.body}
              </Text>
              <Text size="xs" c="dimmed">
                {dates.dateTime(n.created_at)} · {n.author}
              </Text>
            </div>
          ))}
        </Stack>
      )}
      {notes.data?.length === 0 && (
        <Text size="sm" c="dimmed">
          No notes yet.
        </Text>
      )}
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
