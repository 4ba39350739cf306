import { Badge, Button, Group, Modal, Select, Stack, Table, Text, TextInput } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { api, type Schemas, unwrap } from '../../lib/api.ts';
import { useConfirm } from '../../lib/confirm.tsx';
import { useDates } from '../../lib/dates.ts';
import { ApiErrorAlert, notifyError, notifySuccess } from '../../lib/errors.tsx';
import { useSession } from '../../lib/session.tsx';
import { ASSIGNABLE_ROLES, type AssignableRole, Empty, parseIds, TeamHeader } from './ui.tsx';

type Member = Schemas['Member'];

function RoleDialog({ member, onClose }: { member: Member | null; onClose: () => void }) {
  const qc = useQueryClient();
  const [role, setRole] = useState<string | null>(null);
  const [affiliates, setAffiliates] = useState('');
  useEffect(() => {
    setRole(member && member.role !== 'owner' ? member.role : null);
    setAffiliates(member?.affiliate_ids.join(', ') ?? '');
  }, [member]);
  const save = useMutation({
    mutationFn: async () =>
      unwrap(
        await api.PATCH('/v1/members/{id}', {
          params: { path: { id: member!.id } },
          body: { role: role as AssignableRole, ...(role === 'affiliate' ? { affiliate_ids: parseIds(affiliates) } : {}) },
        }),
      ).data,
    onSuccess: async (m) => {
      notifySuccess(`${m.name || m.email} is now ${m.role_name}.`);
      await qc.invalidateQueries({ queryKey: ['members'] });
      onClose();
    },
  });
  useEffect(() => save.reset(), [member?.id]);
  return (
    <Modal opened={!!member} onClose={onClose} title={`Change the role of ${member?.name || member?.email || ''}`} centered>
      <Stack>
        <Select label="Role" allowDeselect={false} data={ASSIGNABLE_ROLES.map((r) => ({ ...r }))} value={role} onChange={setRole} />
        {role === 'affiliate' && <TextInput label="Affiliate ids" description="The affiliates this member sees, separated by commas" value={affiliates} onChange={(e) => setAffiliates(e.currentTarget.value)} />}
        <Text size="xs" c="dimmed">
          You can give only a role whose every permission you hold yourself; the Team Owner’s role changes only by transferring ownership.
        </Text>
        <ApiErrorAlert error={save.error} title="The role was not changed" />
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button onClick={() => save.mutate()} loading={save.isPending} disabled={!role}>
            Save role
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

export function Members() {
  const { can, session } = useSession();
  const dates = useDates();
  const qc = useQueryClient();
  const confirm = useConfirm();
  const [editing, setEditing] = useState<Member | null>(null);
  const manage = can('users:manage');
  const isOwner = session.role === 'owner';
  const q = useQuery({ queryKey: ['members'], queryFn: async () => unwrap(await api.GET('/v1/members')).data });
  const remove = useMutation({
    mutationFn: async (m: Member) => unwrap(await api.DELETE('/v1/members/{id}', { params: { path: { id: m.id } } })).data,
    onSuccess: async (m) => {
      notifySuccess(`${m.name || m.email} was removed from the team.`);
      await qc.invalidateQueries({ queryKey: ['members'] });
    },
    onError: (err) => notifyError(err, 'Not removed'),
  });
  const transfer = useMutation({
    mutationFn: async (m: Member) => unwrap(await api.POST('/v1/members/{id}/transfer-ownership', { params: { path: { id: m.id } } })).data,
    onSuccess: async (m) => {
      notifySuccess(`${m.name || m.email} is now the Team Owner; you are an Account Admin.`);
      await qc.invalidateQueries({ queryKey: ['members'] });
      await qc.invalidateQueries({ queryKey: ['session'] });
    },
    onError: (err) => notifyError(err, 'Ownership not transferred'),
  });
  return (
    <Stack>
      <TeamHeader title="Members" />
      <ApiErrorAlert error={q.error} title="Could not load the members" />
      <Table.ScrollContainer minWidth={800}>
        <Table striped aria-label="Members" aria-busy={q.isPending}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Name</Table.Th>
              <Table.Th scope="col">Role</Table.Th>
              <Table.Th scope="col">Two-factor</Table.Th>
              <Table.Th scope="col">Joined</Table.Th>
              {manage && <Table.Th scope="col">Actions</Table.Th>}
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {q.data?.map((m) => {
              const self = m.id === session.user?.id;
              const label = m.name || m.email;
              return (
                <Table.Tr key={m.id} data-member={m.email}>
                  <Table.Td>
                    <Text size="sm" fw={500}>
                      {m.name || '—'} {self && <Badge size="xs" variant="outline">you</Badge>}
                    </Text>
                    <Text size="xs" c="dimmed">
                      {m.email}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <Badge variant="light" color={m.role === 'owner' ? 'violet' : 'blue'}>
                      {m.role_name}
                    </Badge>
                    {m.affiliate_ids.length > 0 && (
                      <Text size="xs" c="dimmed">
                        affiliates: {m.affiliate_ids.join(', ')}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>{m.two_factor ? 'on' : 'off'}</Table.Td>
                  <Table.Td style={{ whiteSpace: 'nowrap' }}>{dates.dateTime(m.joined_at)}</Table.Td>
                  {manage && (
                    <Table.Td>
                      {m.role !== 'owner' && !self && (
                        <Group gap={4} wrap="nowrap">
                          <Button size="xs" variant="light" onClick={() => setEditing(m)} aria-label={`Change the role of ${label}`}>
                            Change role
                          </Button>
                          <Button
                            size="xs"
                            variant="subtle"
                            color="red"
                            aria-label={`Remove ${label}`}
                            loading={remove.isPending && remove.variables?.id === m.id}
                            onClick={async () => {
                              if (await confirm({ title: 'Remove this member?', message: `${label} loses access to this team at once (their sessions here end).`, confirmLabel: 'Remove member', danger: true })) remove.mutate(m);
                            }}
                          >
                            Remove
                          </Button>
                          {isOwner && (
                            <Button
                              size="xs"
                              variant="subtle"
                              aria-label={`Make ${label} the Team Owner`}
                              onClick={async () => {
                                if (await confirm({ title: 'Transfer ownership?', message: `${label} becomes the Team Owner; you become an Account Admin. Only the new owner can undo it.`, confirmLabel: 'Transfer ownership', danger: true }))
                                  transfer.mutate(m);
                              }}
                            >
                              Make owner
                            </Button>
                          )}
                        </Group>
                      )}
                    </Table.Td>
                  )}
                </Table.Tr>
              );
            })}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {q.data?.length === 0 && <Empty>No members.</Empty>}
      <RoleDialog member={editing} onClose={() => setEditing(null)} />
    </Stack>
  );
}
