import { Button, Group, Modal, Select, Stack, Textarea, TextInput } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import { ApiErrorAlert, notifySuccess } from '../../lib/errors.tsx';
import { serviceApi } from '../../lib/service.ts';
import { useMembers } from './members.ts';

/** Opens a ticket for a customer (optionally about one of their orders): POST /v1/tickets. */
export function NewTicketDialog({ opened, onClose, customerNumber, orderNumbers = [] }: { opened: boolean; onClose: () => void; customerNumber: string; orderNumbers?: string[] }) {
  const qc = useQueryClient();
  const navigate = useNavigate();
  const members = useMembers();
  const [subject, setSubject] = useState('');
  const [order, setOrder] = useState<string | null>(null);
  const [assignee, setAssignee] = useState<string | null>(null);
  const [message, setMessage] = useState('');
  const create = useMutation({
    mutationFn: () =>
      serviceApi.createTicket({
        customer_number: customerNumber,
        subject: subject.trim(),
        ...(order ? { order_number: order } : {}),
        ...(assignee ? { assignee } : {}),
        ...(message.trim() ? { message: { body: message.trim() } } : {}),
      }),
    onSuccess: async (t) => {
      notifySuccess(`Ticket ${t.id} opened.`);
      await qc.invalidateQueries({ queryKey: ['tickets'] });
      onClose();
      void navigate({ to: `/tickets/${t.id}` });
    },
  });
  return (
    <Modal opened={opened} onClose={onClose} title="Open a support ticket" centered>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (subject.trim()) create.mutate();
        }}
      >
        <Stack>
          <TextInput label="Subject" required maxLength={300} value={subject} onChange={(e) => setSubject(e.currentTarget.value)} data-autofocus />
          {orderNumbers.length > 0 && <Select label="About the order" placeholder="None" clearable data={orderNumbers} value={order} onChange={setOrder} />}
          {members.available && <Select label="Assign to" placeholder="Nobody" clearable searchable data={members.options} value={assignee} onChange={setAssignee} />}
          <Textarea label="First message" autosize minRows={3} maxLength={20_000} value={message} onChange={(e) => setMessage(e.currentTarget.value)} />
          <ApiErrorAlert error={create.error} title="Could not open the ticket" />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={create.isPending} disabled={!subject.trim()}>
              Open ticket
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
