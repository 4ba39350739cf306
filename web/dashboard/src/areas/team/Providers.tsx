import { Badge, Button, Card, Group, Modal, MultiSelect, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useEffect, useState } from 'react';
import { api, type Schemas, unwrap } from '../../lib/api.ts';
import { useConfirm } from '../../lib/confirm.tsx';
import { useDates } from '../../lib/dates.ts';
import { ApiErrorAlert, notifyError, notifySuccess } from '../../lib/errors.tsx';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { useSession } from '../../lib/session.tsx';
import { usePermissionCatalogue } from './Roles.tsx';
import { Empty, parseIds, TeamHeader } from './ui.tsx';

type Grant = Schemas['ProviderGrant'];
type Kind = Grant['kind'];
type GrantBody = Schemas['GrantProvider'];
type OptionalPermission = NonNullable<GrantBody['permissions']>[number];

function useOptional(kind: Kind | null): string[] {
  const catalogue = usePermissionCatalogue();
  return catalogue.data?.providers.find((p) => p.kind === kind)?.optional ?? [];
}

function GrantForm() {
  const qc = useQueryClient();
  const [providerId, setProviderId] = useState('');
  const [kind, setKind] = useState<string | null>('customer_service');
  const [permissions, setPermissions] = useState<string[]>([]);
  const [affiliates, setAffiliates] = useState('');
  const optional = useOptional(kind as Kind | null);
  useEffect(() => setPermissions([]), [kind]);
  const grant = useMutation({
    mutationFn: async () =>
      unwrap(
        await api.POST('/v1/provider-grants', {
          body: {
            provider_id: providerId.trim(),
            kind: kind as Kind,
            ...(permissions.length ? { permissions: permissions as OptionalPermission[] } : {}),
            ...(kind === 'affiliate' ? { affiliate_ids: parseIds(affiliates) } : {}),
          },
        }),
      ).data,
    onSuccess: async (g) => {
      notifySuccess(`${g.provider_id} has access as ${g.kind.replace(/_/g, ' ')}.`);
      setProviderId('');
      setPermissions([]);
      setAffiliates('');
      await qc.invalidateQueries({ queryKey: ['provider-grants'] });
    },
  });
  function submit(e: FormEvent) {
    e.preventDefault();
    if (providerId.trim() && kind) grant.mutate();
  }
  return (
    <Card withBorder component="section" aria-labelledby="grant">
      <Title order={2} size="h4" id="grant" mb="sm">
        Grant a provider access
      </Title>
      <form onSubmit={submit}>
        <Stack gap="xs">
          <Group align="flex-end" wrap="wrap">
            <TextInput label="Provider id" description="The provider organisation’s team id" required w={240} value={providerId} onChange={(e) => setProviderId(e.currentTarget.value)} />
            <Select
              label="Kind"
              allowDeselect={false}
              w={200}
              data={[
                { value: 'customer_service', label: 'Customer service' },
                { value: 'affiliate', label: 'Affiliate' },
              ]}
              value={kind}
              onChange={setKind}
            />
            {optional.length > 0 && <MultiSelect label="Optional permissions" w={320} data={optional} value={permissions} onChange={setPermissions} />}
            {kind === 'affiliate' && <TextInput label="Affiliate ids" description="Separated by commas" w={220} value={affiliates} onChange={(e) => setAffiliates(e.currentTarget.value)} />}
            <Button type="submit" loading={grant.isPending} disabled={!providerId.trim() || !kind}>
              Grant access
            </Button>
          </Group>
          <ApiErrorAlert error={grant.error} title="Access was not granted" />
        </Stack>
      </form>
    </Card>
  );
}

function EditGrantDialog({ grant, onClose }: { grant: Grant | null; onClose: () => void }) {
  const qc = useQueryClient();
  const optional = useOptional(grant?.kind ?? null);
  const [permissions, setPermissions] = useState<string[]>([]);
  const [affiliates, setAffiliates] = useState('');
  useEffect(() => {
    setPermissions(grant?.optional_permissions ?? []);
    setAffiliates(grant?.affiliate_ids.join(', ') ?? '');
  }, [grant]);
  const save = useMutation({
    mutationFn: async () =>
      unwrap(
        await api.PATCH('/v1/provider-grants/{id}', {
          params: { path: { id: grant!.id } },
          body: grant!.kind === 'affiliate' ? { affiliate_ids: parseIds(affiliates) } : { permissions: permissions as OptionalPermission[] },
        }),
      ).data,
    onSuccess: async () => {
      notifySuccess('Access changed.');
      await qc.invalidateQueries({ queryKey: ['provider-grants'] });
      onClose();
    },
  });
  return (
    <Modal opened={!!grant} onClose={onClose} title={`Access of ${grant?.provider_id ?? ''}`} centered>
      <Stack>
        {grant?.kind === 'affiliate' ? (
          <TextInput label="Affiliate ids" description="Separated by commas" value={affiliates} onChange={(e) => setAffiliates(e.currentTarget.value)} />
        ) : (
          <MultiSelect label="Optional permissions" data={optional} value={permissions} onChange={setPermissions} />
        )}
        <ApiErrorAlert error={save.error} title="Not saved" />
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button onClick={() => save.mutate()} loading={save.isPending}>
            Save
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

export function Providers() {
  const { can } = useSession();
  const dates = useDates();
  const qc = useQueryClient();
  const confirm = useConfirm();
  const manage = can('providers:manage');
  const [editing, setEditing] = useState<Grant | null>(null);
  const list = usePaginatedList<Grant>({
    key: ['provider-grants'],
    fetchPage: async (starting_after) => unwrap(await api.GET('/v1/provider-grants', { params: { query: { limit: 25, ...(starting_after ? { starting_after } : {}) } } })),
    idOf: (g) => g.id,
  });
  const revoke = useMutation({
    mutationFn: async (g: Grant) => unwrap(await api.DELETE('/v1/provider-grants/{id}', { params: { path: { id: g.id } } })).data,
    onSuccess: async (g) => {
      notifySuccess(`${g.provider_id} no longer has access.`);
      await qc.invalidateQueries({ queryKey: ['provider-grants'] });
    },
    onError: (err) => notifyError(err, 'Not revoked'),
  });
  return (
    <Stack>
      <TeamHeader title="Providers" />
      <Text size="sm" c="dimmed">
        Outside organisations (a customer-service agency, an affiliate network) whose users work on this team with a fixed set of permissions.
      </Text>
      {manage && <GrantForm />}
      <ApiErrorAlert error={list.error} title="Could not load the providers" />
      <Table.ScrollContainer minWidth={800}>
        <Table striped aria-label="Provider grants" aria-busy={list.isLoading}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Provider</Table.Th>
              <Table.Th scope="col">Kind</Table.Th>
              <Table.Th scope="col">Permissions</Table.Th>
              <Table.Th scope="col">Since</Table.Th>
              {manage && <Table.Th scope="col">Actions</Table.Th>}
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.items.map((g) => (
              <Table.Tr key={g.id}>
                <Table.Td ff="monospace">{g.provider_id}</Table.Td>
                <Table.Td>
                  <Badge variant="light">{g.kind.replace(/_/g, ' ')}</Badge>
                  {g.revoked_at && (
                    <Badge variant="light" color="gray" ml={4}>
                      revoked
                    </Badge>
                  )}
                </Table.Td>
                <Table.Td>
                  <Text size="xs">{g.permissions.join(', ')}</Text>
                  {g.affiliate_ids.length > 0 && (
                    <Text size="xs" c="dimmed">
                      affiliates: {g.affiliate_ids.join(', ')}
                    </Text>
                  )}
                </Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{dates.dateTime(g.created_at)}</Table.Td>
                {manage && (
                  <Table.Td>
                    {!g.revoked_at && (
                      <Group gap={4} wrap="nowrap">
                        <Button size="xs" variant="light" onClick={() => setEditing(g)} aria-label={`Change the access of ${g.provider_id}`}>
                          Change
                        </Button>
                        <Button
                          size="xs"
                          variant="subtle"
                          color="red"
                          aria-label={`Revoke the access of ${g.provider_id}`}
                          onClick={async () => {
                            if (await confirm({ title: 'Revoke this provider’s access?', message: `The users of ${g.provider_id} lose access to this team at once.`, confirmLabel: 'Revoke access', danger: true })) revoke.mutate(g);
                          }}
                        >
                          Revoke
                        </Button>
                      </Group>
                    )}
                  </Table.Td>
                )}
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {!list.isLoading && list.items.length === 0 && !list.error && <Empty>No provider has access to this team.</Empty>}
      <Pager list={list as never} label="Provider pages" />
      <EditGrantDialog grant={editing} onClose={() => setEditing(null)} />
    </Stack>
  );
}
