import { Anchor, Badge, Button, Card, Code, CloseButton, Group, Loader, SegmentedControl, Select, SimpleGrid, Stack, Text, Textarea, Title } from '@mantine/core';
import { IconDownload, IconPaperclip } from '@tabler/icons-react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useParams } from '@tanstack/react-router';
import { type ChangeEvent, useId, useRef, useState } from 'react';
import { useDates } from '../../lib/dates.ts';
import { ApiErrorAlert, notifyError, notifySuccess } from '../../lib/errors.tsx';
import { useSession } from '../../lib/session.tsx';
import { type Attachment, ATTACHMENT_ACCEPT, formatBytes, serviceApi, type Ticket, TICKET_MOVES, type TicketStatus } from '../../lib/service.ts';
import { Field, humanize, Section, Status } from '../customers/ui.tsx';
import { useMembers } from './members.ts';

function AttachmentLink({ a }: { a: Attachment }) {
  return (
    <Group gap={6} data-attachment={a.id}>
      <IconPaperclip size={14} aria-hidden />
      <Anchor href={a.url} download={a.filename} size="sm">
        {a.filename}
      </Anchor>
      <Text size="xs" c="dimmed">
        {a.content_type} · {formatBytes(a.size)}
      </Text>
    </Group>
  );
}

function Settings({ ticket }: { ticket: Ticket }) {
  const { can } = useSession();
  const qc = useQueryClient();
  const members = useMembers();
  const update = useMutation({
    mutationFn: (body: { status?: TicketStatus; assignee?: string | null }) => serviceApi.updateTicket(ticket.id, body),
    onSuccess: async (t) => {
      notifySuccess(`Ticket ${humanize(t.status)}${t.assignee ? `, assigned to ${members.nameOf(t.assignee)}` : ''}.`);
      qc.setQueryData(['ticket', ticket.id], t);
      await qc.invalidateQueries({ queryKey: ['tickets'] });
    },
    onError: (e) => notifyError(e, 'The ticket was not changed'),
  });
  const editable = can('orders:annotate');
  const statusOptions = [ticket.status, ...TICKET_MOVES[ticket.status]].map((s) => ({ value: s, label: humanize(s) }));
  const assigneeOptions = members.options.some((o) => o.value === ticket.assignee) || !ticket.assignee ? members.options : [...members.options, { value: ticket.assignee, label: ticket.assignee }];
  return (
    <Section title="Ticket">
      <Stack gap="sm">
        {editable ? (
          <Select
            label="Status"
            data={statusOptions}
            value={ticket.status}
            allowDeselect={false}
            disabled={update.isPending || ticket.status === 'closed'}
            description={ticket.status === 'closed' ? 'Closed is final: a follow-up is a new ticket.' : undefined}
            onChange={(v) => v && v !== ticket.status && update.mutate({ status: v as TicketStatus })}
          />
        ) : (
          <Field label="Status">
            <Status status={ticket.status} />
          </Field>
        )}
        {editable && members.available ? (
          <Select label="Assignee" placeholder="Unassigned" clearable searchable data={assigneeOptions} value={ticket.assignee} disabled={update.isPending} onChange={(v) => v !== ticket.assignee && update.mutate({ assignee: v })} />
        ) : (
          <Field label="Assignee">{members.nameOf(ticket.assignee)}</Field>
        )}
        <ApiErrorAlert error={update.error} title="The ticket was not changed" />
      </Stack>
    </Section>
  );
}

function Composer({ ticket }: { ticket: Ticket }) {
  const qc = useQueryClient();
  const inputId = useId();
  const fileInput = useRef<HTMLInputElement>(null);
  const [body, setBody] = useState('');
  const [author, setAuthor] = useState<'member' | 'customer'>('member');
  const [pending, setPending] = useState<Attachment[]>([]);
  const upload = useMutation({
    mutationFn: (file: File) => serviceApi.uploadAttachment(ticket.id, file),
    onSuccess: (a) => {
      setPending((p) => [...p, a]);
      notifySuccess(`${a.filename} uploaded: send the message to attach it.`);
    },
  });
  const send = useMutation({
    mutationFn: () =>
      serviceApi.addMessage(ticket.id, {
        body: body.trim() || `Attached: ${pending.map((a) => a.filename).join(', ')}`,
        author,
        ...(pending.length ? { attachment_ids: pending.map((a) => a.id) } : {}),
      }),
    onSuccess: async () => {
      setBody('');
      setPending([]);
      upload.reset();
      notifySuccess('Message added.');
      await qc.invalidateQueries({ queryKey: ['ticket', ticket.id] });
      await qc.invalidateQueries({ queryKey: ['tickets'] });
    },
  });
  function pick(e: ChangeEvent<HTMLInputElement>) {
    const file = e.currentTarget.files?.[0];
    e.currentTarget.value = '';
    if (file) upload.mutate(file);
  }
  if (ticket.status === 'closed') return <Text c="dimmed">This ticket is closed: it takes no more messages.</Text>;
  return (
    <Card withBorder component="form" aria-label="Add a message" onSubmit={(e) => {
      e.preventDefault();
      if (body.trim() || pending.length) send.mutate();
    }}>
      <Stack gap="xs">
        <Textarea label="Message" autosize minRows={3} maxLength={20_000} value={body} onChange={(e) => setBody(e.currentTarget.value)} />
        <SegmentedControl
          aria-label="Written by"
          w="fit-content"
          size="xs"
          value={author}
          onChange={(v) => setAuthor(v as 'member' | 'customer')}
          data={[
            { value: 'member', label: 'From the team' },
            { value: 'customer', label: 'The customer’s words' },
          ]}
        />
        <Group gap="xs">
          <label htmlFor={inputId}>
            <Text size="sm" fw={500}>
              Attach a file
            </Text>
          </label>
          <input id={inputId} ref={fileInput} type="file" accept={ATTACHMENT_ACCEPT} onChange={pick} disabled={upload.isPending} />
          {upload.isPending && <Loader size="xs" aria-label="Uploading" />}
        </Group>
        <Text size="xs" c="dimmed">
          PNG, JPEG, GIF, WebP, PDF, plain text or CSV; at most 10 MB per file.
        </Text>
        <ApiErrorAlert error={upload.error} title="The file was not attached" />
        {pending.length > 0 && (
          <Stack gap={4} aria-label="Files to send">
            {pending.map((a) => (
              <Group key={a.id} gap="xs">
                <Badge variant="light" leftSection={<IconPaperclip size={12} aria-hidden />}>
                  {a.filename}
                </Badge>
                <Text size="xs" c="dimmed">
                  {formatBytes(a.size)}
                </Text>
                <CloseButton size="sm" aria-label={`Do not attach ${a.filename}`} onClick={() => setPending((p) => p.filter((x) => x.id !== a.id))} />
              </Group>
            ))}
          </Stack>
        )}
        <ApiErrorAlert error={send.error} title="The message was not added" />
        <Button type="submit" w="fit-content" loading={send.isPending} disabled={(!body.trim() && pending.length === 0) || upload.isPending}>
          Send message
        </Button>
      </Stack>
    </Card>
  );
}

export function TicketPage() {
  const { id } = useParams({ strict: false }) as { id: string };
  const { can } = useSession();
  const dates = useDates();
  const members = useMembers();
  const ticket = useQuery({ queryKey: ['ticket', id], queryFn: () => serviceApi.getTicket(id) });
  const messages = useQuery({ queryKey: ['ticket', id, 'messages'], queryFn: async () => (await serviceApi.listMessages(id)).data });

  if (ticket.isPending) return <Loader aria-label="Loading the ticket" />;
  if (ticket.error || !ticket.data)
    return (
      <Stack>
        <Anchor component={Link} to="/tickets">
          ← Tickets
        </Anchor>
        <ApiErrorAlert error={ticket.error} title={`Could not load ${id}`} />
      </Stack>
    );
  const t = ticket.data;
  return (
    <Stack>
      <Anchor component={Link} to="/tickets" size="sm">
        ← Tickets
      </Anchor>
      <Stack gap={4}>
        <Title order={1} size="h2">
          {t.subject}
        </Title>
        <Group gap="xs">
          <Code>{t.id}</Code>
          <Status status={t.status} label="Status" />
        </Group>
      </Stack>
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        <Settings ticket={t} />
        <Section title="About">
          <Stack gap="xs" component="dl" m={0}>
            <Field label="Customer">
              <Anchor component={Link} to={`/customers/${t.customer_number}`} size="sm">
                {t.customer_number}
              </Anchor>
            </Field>
            <Field label="Order">
              {t.order_number ? (
                <Anchor component={Link} to={`/orders/${t.order_number}`} size="sm">
                  {t.order_number}
                </Anchor>
              ) : (
                '—'
              )}
            </Field>
            <Field label="Opened">
              {dates.dateTime(t.created_at)} by {t.created_by.startsWith('user:') ? members.nameOf(t.created_by.slice(5)) : t.created_by}
            </Field>
          </Stack>
        </Section>
      </SimpleGrid>
      {can('orders:annotate') && <Composer ticket={t} />}
      <Section title="Messages" count={messages.data?.length}>
        <ApiErrorAlert error={messages.error} title="Could not load the messages" />
        <Stack gap="md" aria-label="Messages, newest first" component="ol" style={{ listStyle: 'none', padding: 0, margin: 0 }}>
          {messages.data?.map((m) => (
            <li key={m.id} data-message={m.id}>
              <Text size="xs" c="dimmed">
                {m.author.type === 'customer' ? 'Customer' : m.author.type === 'user' ? members.nameOf(m.author.id) : `API token ${m.author.id}`} · {dates.dateTime(m.created_at)}
              </Text>
              <Text size="sm" style={{ whiteSpace: 'pre-wrap' }}>
                {m.body}
              </Text>
              {m.attachments.length > 0 && (
                <Stack gap={2} mt={4}>
                  {m.attachments.map((a) => (
                    <AttachmentLink key={a.id} a={a} />
                  ))}
                </Stack>
              )}
            </li>
          ))}
        </Stack>
        {messages.data?.length === 0 && (
          <Text size="sm" c="dimmed">
            No messages yet.
          </Text>
        )}
        <Group mt="sm" gap={4}>
          <IconDownload size={14} aria-hidden />
          <Text size="xs" c="dimmed">
            Attachments download with their own name and type.
          </Text>
        </Group>
      </Section>
    </Stack>
  );
}
