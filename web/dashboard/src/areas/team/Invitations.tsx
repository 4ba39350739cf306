import { Badge, Button, Card, Group, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, type Schemas, unwrap } from '../../lib/api.ts';
import { useConfirm } from '../../lib/confirm.tsx';
import { useDates } from '../../lib/dates.ts';
import { ApiErrorAlert, notifyError, notifySuccess } from '../../lib/errors.tsx';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { useSession } from '../../lib/session.tsx';
import { ASSIGNABLE_ROLES, type AssignableRole, Empty, parseIds, TeamHeader } from './ui.tsx';

type Invitation = Schemas['Invitation'];
const STATUS_COLORS: Record<Invitation['status'], string> = { pending: 'yellow', accepted: 'green', revoked: 'gray', expired: 'gray' };

function InviteForm() {
  const qc = useQueryClient();
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<string | null>('support_l1');
  const [affiliates, setAffiliates] = useState('');
  const invite = useMutation({
    mutationFn: async () =>
      unwrap(await api.POST('/v1/invitations', { body: { email: email.trim(), role: role as AssignableRole, ...(role === 'affiliate' ? { affiliate_ids: parseIds(affiliates) } : {}) } })).data,
    onSuccess: async (i) => {
      notifySuccess(i.mail_sent === false ? `Invitation created for ${i.email}, but the mail was not taken by the mail transport: see the mail outbox.` : `${i.email} is invited as ${i.role_name}.`, 'Invitation sent');
      setEmail('');
      setAffiliates('');
      await qc.invalidateQueries({ queryKey: ['invitations'] });
    },
  });
  function submit(e: FormEvent) {
    e.preventDefault();
    if (email.trim() && role) invite.mutate();
  }
  return (
    <Card withBorder component="section" aria-labelledby="invite">
      <Title order={2} size="h4" id="invite" mb="sm">
        Invite a member
      </Title>
      <form onSubmit={submit}>
        <Stack gap="xs">
          <Group align="flex-end" wrap="wrap">
            <TextInput label="E-mail" type="email" required w={280} value={email} onChange={(e) => setEmail(e.currentTarget.value)} />
            <Select label="Role" allowDeselect={false} w={260} data={ASSIGNABLE_ROLES.map((r) => ({ ...r }))} value={role} onChange={setRole} />
            {role === 'affiliate' && <TextInput label="Affiliate ids" description="Separated by commas" w={240} value={affiliates} onChange={(e) => setAffiliates(e.currentTarget.value)} />}
            <Button type="submit" loading={invite.isPending} disabled={!email.trim() || !role}>
              Send invitation
            </Button>
          </Group>
          <Text size="xs" c="dimmed">
            The link in the mail is valid 7 days; inviting the same address again replaces the open invitation.
          </Text>
          <ApiErrorAlert error={invite.error} title="The invitation was not sent" />
        </Stack>
      </form>
    </Card>
  );
}

export function Invitations() {
  const { can } = useSession();
  const dates = useDates();
  const qc = useQueryClient();
  const confirm = useConfirm();
  const manage = can('users:manage');
  const list = usePaginatedList<Invitation>({
    key: ['invitations'],
    fetchPage: async (starting_after) => unwrap(await api.GET('/v1/invitations', { params: { query: { limit: 25, ...(starting_after ? { starting_after } : {}) } } })),
    idOf: (i) => i.id,
  });
  const revoke = useMutation({
    mutationFn: async (i: Invitation) => unwrap(await api.DELETE('/v1/invitations/{id}', { params: { path: { id: i.id } } })).data,
    onSuccess: async (i) => {
      notifySuccess(`The invitation of ${i.email} is revoked.`);
      await qc.invalidateQueries({ queryKey: ['invitations'] });
    },
    onError: (err) => notifyError(err, 'Not revoked'),
  });
  return (
    <Stack>
      <TeamHeader title="Invitations" />
      {manage && <InviteForm />}
      <ApiErrorAlert error={list.error} title="Could not load the invitations" />
      <Table.ScrollContainer minWidth={800}>
        <Table striped aria-label="Invitations" aria-busy={list.isLoading}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">E-mail</Table.Th>
              <Table.Th scope="col">Role</Table.Th>
              <Table.Th scope="col">Status</Table.Th>
              <Table.Th scope="col">Sent</Table.Th>
              <Table.Th scope="col">Expires</Table.Th>
              {manage && <Table.Th scope="col">Actions</Table.Th>}
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.items.map((i) => (
              <Table.Tr key={i.id} data-invitation={i.email}>
                <Table.Td>{i.email}</Table.Td>
                <Table.Td>
                  {i.role_name}
                  {i.affiliate_ids.length > 0 && (
                    <Text size="xs" c="dimmed">
                      affiliates: {i.affiliate_ids.join(', ')}
                    </Text>
                  )}
                </Table.Td>
                <Table.Td>
                  <Badge variant="light" color={STATUS_COLORS[i.status]}>
                    {i.status}
                  </Badge>
                </Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{dates.dateTime(i.created_at)}</Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{i.status === 'pending' ? dates.dateTime(i.expires_at) : '—'}</Table.Td>
                {manage && (
                  <Table.Td>
                    {i.status === 'pending' && (
                      <Button
                        size="xs"
                        variant="subtle"
                        color="red"
                        aria-label={`Revoke the invitation of ${i.email}`}
                        loading={revoke.isPending && revoke.variables?.id === i.id}
                        onClick={async () => {
                          if (await confirm({ title: 'Revoke this invitation?', message: `The link sent to ${i.email} stops working.`, confirmLabel: 'Revoke invitation', danger: true })) revoke.mutate(i);
                        }}
                      >
                        Revoke
                      </Button>
                    )}
                  </Table.Td>
                )}
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {!list.isLoading && list.items.length === 0 && !list.error && <Empty>No invitations.</Empty>}
      <Pager list={list as never} label="Invitation pages" />
    </Stack>
  );
}
