import { Badge, Button, Code, Group, Modal, MultiSelect, SegmentedControl, Select, Stack, Table, Text, TextInput, VisuallyHidden } from '@mantine/core';
import { IconKey, IconPlus } from '@tabler/icons-react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useEffect, useState } from 'react';
import { api, type Schemas, unwrap } from '../../lib/api.ts';
import { useConfirm } from '../../lib/confirm.tsx';
import { dayBoundary, useDates } from '../../lib/dates.ts';
import { ApiErrorAlert, notifyError, notifySuccess } from '../../lib/errors.tsx';
import { usePaginatedList } from '../../lib/pagination.ts';
import { Pager } from '../../lib/Pager.tsx';
import { DevNav, Empty, GRACE_OPTIONS, PageHeader, SecretDialog } from './ui.tsx';

type ApiToken = Schemas['ApiToken'];
type Status = 'active' | 'expired' | 'revoked';
const STATUS_COLORS: Record<Status, string> = { active: 'green', expired: 'gray', revoked: 'red' };

/** The permission catalogue (roles, permissions): GET /v1/permissions. */
export function usePermissionCatalogue() {
  return useQuery({ queryKey: ['permissions'], staleTime: 10 * 60_000, queryFn: async () => unwrap(await api.GET('/v1/permissions')).data });
}

function CreateTokenDialog({ opened, onClose, onIssued }: { opened: boolean; onClose: () => void; onIssued: (t: Schemas['IssuedApiToken']) => void }) {
  const qc = useQueryClient();
  const { timeZone } = useDates();
  const catalogue = usePermissionCatalogue();
  const [name, setName] = useState('');
  const [mode, setMode] = useState<'role' | 'permissions'>('role');
  const [role, setRole] = useState<string | null>('account_manager');
  const [permissions, setPermissions] = useState<string[]>([]);
  const [expires, setExpires] = useState('');
  useEffect(() => {
    if (!opened) return;
    setName('');
    setMode('role');
    setRole('account_manager');
    setPermissions([]);
    setExpires('');
  }, [opened]);
  const create = useMutation({
    mutationFn: async () => {
      const body: Schemas['CreateApiToken'] = { name: name.trim() };
      if (mode === 'role') body.role = role as NonNullable<Schemas['CreateApiToken']['role']>;
      else body.permissions = permissions;
      if (expires) body.expires_at = dayBoundary(expires, timeZone, true);
      return unwrap(await api.POST('/v1/api-tokens', { body })).data;
    },
    onSuccess: async (t) => {
      await qc.invalidateQueries({ queryKey: ['api-tokens'] });
      onIssued(t);
      onClose();
    },
  });
  const valid = name.trim().length > 0 && (mode === 'role' ? !!role : permissions.length > 0);
  function submit(e: FormEvent) {
    e.preventDefault();
    if (valid) create.mutate();
  }
  return (
    <Modal opened={opened} onClose={onClose} title="Create an API token" centered size="lg">
      <form onSubmit={submit}>
        <Stack>
          <TextInput label="Name" description="What uses it (“Warehouse sync”)" required maxLength={100} value={name} onChange={(e) => setName(e.currentTarget.value)} data-autofocus />
          <SegmentedControl
            aria-label="Access"
            value={mode}
            onChange={(v) => setMode(v as 'role' | 'permissions')}
            data={[
              { value: 'role', label: 'A role' },
              { value: 'permissions', label: 'Chosen permissions' },
            ]}
          />
          {mode === 'role' ? (
            <Select label="Role" description="The token acts with this role’s permissions" allowDeselect={false} data={(catalogue.data?.roles ?? []).map((r) => ({ value: r.role, label: r.name }))} value={role} onChange={setRole} />
          ) : (
            <MultiSelect label="Permissions" description="Least privilege: only what the integration needs" searchable data={(catalogue.data?.permissions ?? []).map((p) => ({ value: p.name, label: p.name }))} value={permissions} onChange={setPermissions} />
          )}
          <TextInput label="Expires on (optional)" description={`The end of that day in the team’s time zone (${timeZone})`} type="date" value={expires} onChange={(e) => setExpires(e.currentTarget.value)} w={240} />
          <Text size="xs" c="dimmed">
            A token never gets more than you hold: the API refuses it otherwise.
          </Text>
          <ApiErrorAlert error={create.error} title="The token was not created" />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={create.isPending} disabled={!valid}>
              Create token
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

function RotateDialog({ token, onClose, onRotated }: { token: ApiToken | null; onClose: () => void; onRotated: (r: Schemas['RotatedApiToken']) => void }) {
  const qc = useQueryClient();
  const [grace, setGrace] = useState<string | null>('86400');
  useEffect(() => setGrace('86400'), [token?.id]);
  const rotate = useMutation({
    mutationFn: async () => unwrap(await api.POST('/v1/api-tokens/{id}/rotate', { params: { path: { id: token!.id } }, body: { grace_seconds: Number(grace) } })).data,
    onSuccess: async (r) => {
      await qc.invalidateQueries({ queryKey: ['api-tokens'] });
      onRotated(r);
      onClose();
    },
  });
  return (
    <Modal opened={!!token} onClose={onClose} title={`Rotate “${token?.name ?? ''}”`} centered>
      <Stack>
        <Text size="sm">
          A new token with the same name and permissions replaces <Code>{token?.hint}</Code>. Its secret is shown once. The old secret keeps working for the grace period, so the
          integration can switch over, then stops.
        </Text>
        <Select label="Grace period for the old secret" allowDeselect={false} data={GRACE_OPTIONS} value={grace} onChange={setGrace} />
        <ApiErrorAlert error={rotate.error} title="The token was not rotated" />
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button onClick={() => rotate.mutate()} loading={rotate.isPending}>
            Rotate token
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

export function ApiTokens() {
  const dates = useDates();
  const qc = useQueryClient();
  const confirm = useConfirm();
  const [status, setStatus] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);
  const [rotating, setRotating] = useState<ApiToken | null>(null);
  const [secret, setSecret] = useState<{ title: string; value: string; note?: string } | null>(null);
  const list = usePaginatedList<ApiToken>({
    key: ['api-tokens', status],
    fetchPage: async (starting_after) =>
      unwrap(await api.GET('/v1/api-tokens', { params: { query: { limit: 25, ...(status ? { status: status as Status } : {}), ...(starting_after ? { starting_after } : {}) } } })),
    idOf: (t) => t.id,
  });
  const revoke = useMutation({
    mutationFn: async (t: ApiToken) => unwrap(await api.DELETE('/v1/api-tokens/{id}', { params: { path: { id: t.id } } })).data,
    onSuccess: async (t) => {
      notifySuccess(`“${t.name}” is revoked.`);
      await qc.invalidateQueries({ queryKey: ['api-tokens'] });
    },
    onError: (err) => notifyError(err, 'The token was not revoked'),
  });

  return (
    <Stack>
      <PageHeader nav={<DevNav />} title="API tokens">
        <Button leftSection={<IconPlus size={16} aria-hidden />} onClick={() => setCreating(true)}>
          Create token
        </Button>
      </PageHeader>
      <Select
        label="Status"
        placeholder="Any"
        clearable
        w={180}
        data={[
          { value: 'active', label: 'Active' },
          { value: 'expired', label: 'Expired' },
          { value: 'revoked', label: 'Revoked' },
        ]}
        value={status}
        onChange={setStatus}
      />
      <ApiErrorAlert error={list.error} title="Could not load the tokens" />
      <Table.ScrollContainer minWidth={900}>
        <Table striped aria-label="API tokens" aria-busy={list.isLoading}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Name</Table.Th>
              <Table.Th scope="col">Ends with</Table.Th>
              <Table.Th scope="col">Access</Table.Th>
              <Table.Th scope="col">Status</Table.Th>
              <Table.Th scope="col">Created</Table.Th>
              <Table.Th scope="col">Last used</Table.Th>
              <Table.Th scope="col">Expires</Table.Th>
              <Table.Th scope="col">
                <VisuallyHidden>Actions</VisuallyHidden>
              </Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.items.map((t) => (
              <Table.Tr key={t.id} data-token={t.id}>
                <Table.Td>
                  <Text size="sm" fw={500}>
                    {t.name}
                  </Text>
                  <Text size="xs" c="dimmed" ff="monospace">
                    {t.id}
                  </Text>
                  {t.replaced_by && (
                    <Text size="xs" c="dimmed">
                      rotated: replaced by <Code>{t.replaced_by}</Code>
                    </Text>
                  )}
                </Table.Td>
                <Table.Td>
                  <Code>{t.hint}</Code>
                </Table.Td>
                <Table.Td>
                  <Text size="sm">{t.role ? t.role.replace(/_/g, ' ') : `${t.permissions.length} permissions`}</Text>
                </Table.Td>
                <Table.Td>
                  <Badge variant="light" color={STATUS_COLORS[t.status]}>
                    {t.status}
                  </Badge>
                </Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{dates.dateTime(t.created_at)}</Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{t.last_used_at ? dates.dateTime(t.last_used_at) : 'never'}</Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>{t.expires_at ? dates.dateTime(t.expires_at) : '—'}</Table.Td>
                <Table.Td>
                  {t.status === 'active' && (
                    <Group gap={4} wrap="nowrap">
                      <Button size="xs" variant="light" leftSection={<IconKey size={14} aria-hidden />} onClick={() => setRotating(t)} aria-label={`Rotate ${t.name}`}>
                        Rotate
                      </Button>
                      <Button
                        size="xs"
                        variant="subtle"
                        color="red"
                        aria-label={`Revoke ${t.name}`}
                        loading={revoke.isPending && revoke.variables?.id === t.id}
                        onClick={async () => {
                          if (await confirm({ title: 'Revoke this token?', message: `“${t.name}” (${t.hint}) stops working at once. Anything that uses it gets 401 from now on.`, confirmLabel: 'Revoke token', danger: true }))
                            revoke.mutate(t);
                        }}
                      >
                        Revoke
                      </Button>
                    </Group>
                  )}
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {!list.isLoading && list.items.length === 0 && !list.error && <Empty>No tokens.</Empty>}
      <Pager list={list as never} label="Token pages" />

      <CreateTokenDialog opened={creating} onClose={() => setCreating(false)} onIssued={(t) => setSecret({ title: `Token “${t.name}” created`, value: t.secret })} />
      <RotateDialog
        token={rotating}
        onClose={() => setRotating(null)}
        onRotated={(r) =>
          setSecret({
            title: `Token “${r.token.name}” rotated`,
            value: r.token.secret,
            note: r.previous.status === 'active' && r.previous.expires_at ? `The old secret (${r.previous.hint}) keeps working until ${dates.dateTime(r.previous.expires_at)}.` : `The old secret (${r.previous.hint}) no longer works.`,
          })
        }
      />
      <SecretDialog title={secret?.title ?? ''} secret={secret?.value ?? null} label="Token" onClose={() => setSecret(null)}>
        {secret?.note && (
          <Text size="sm" data-testid="rotation-note">
            {secret.note}
          </Text>
        )}
      </SecretDialog>
    </Stack>
  );
}
