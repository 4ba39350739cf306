import { Card, Code, Loader, Stack, Table, Text, Title, Tooltip } from '@mantine/core';
import { IconCheck } from '@tabler/icons-react';
import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../../lib/api.ts';
import { ApiErrorAlert } from '../../lib/errors.tsx';
import { TeamHeader } from './ui.tsx';

export function usePermissionCatalogue() {
  return useQuery({ queryKey: ['permissions'], staleTime: 10 * 60_000, queryFn: async () => unwrap(await api.GET('/v1/permissions')).data });
}

function Check({ on, label }: { on: boolean; label: string }) {
  return on ? <IconCheck size={16} aria-label={label} role="img" /> : <Text span c="dimmed" aria-label={`not ${label}`}>·</Text>;
}

/** The predefined roles and provider kinds against the permission catalogue (GET /v1/permissions), read-only. */
export function Roles() {
  const q = usePermissionCatalogue();
  if (q.isPending) return <Loader aria-label="Loading the roles" />;
  const c = q.data;
  return (
    <Stack>
      <TeamHeader title="Roles" />
      <Text size="sm" c="dimmed">
        The roles are predefined: this is what each can do. Give a member a role on the Members page.
      </Text>
      <ApiErrorAlert error={q.error} title="Could not load the roles" />
      {c && (
        <>
          <Table.ScrollContainer minWidth={900}>
            <Table striped withColumnBorders aria-label="Role permissions">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th scope="col">Permission</Table.Th>
                  {c.roles.map((r) => (
                    <Table.Th scope="col" key={r.role} style={{ textAlign: 'center' }}>
                      {r.name}
                    </Table.Th>
                  ))}
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {c.permissions.map((p) => (
                  <Table.Tr key={p.name}>
                    <Table.Th scope="row" style={{ fontWeight: 'normal' }}>
                      <Tooltip label={p.description} multiline w={320}>
                        <Code>{p.name}</Code>
                      </Tooltip>
                      <Text size="xs" c="dimmed">
                        {p.description}
                      </Text>
                    </Table.Th>
                    {c.roles.map((r) => (
                      <Table.Td key={r.role} style={{ textAlign: 'center' }}>
                        <Check on={r.permissions.includes(p.name)} label={`${r.name}: ${p.name}`} />
                      </Table.Td>
                    ))}
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
          <Card withBorder component="section" aria-labelledby="provider-kinds">
            <Title order={2} size="h4" id="provider-kinds" mb="sm">
              Provider kinds
            </Title>
            <Table aria-label="Provider kinds">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th scope="col">Kind</Table.Th>
                  <Table.Th scope="col">Always granted</Table.Th>
                  <Table.Th scope="col">Optional</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {c.providers.map((p) => (
                  <Table.Tr key={p.kind}>
                    <Table.Td>{p.kind.replace(/_/g, ' ')}</Table.Td>
                    <Table.Td>{p.base.join(', ')}</Table.Td>
                    <Table.Td>{p.optional.join(', ') || '—'}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Card>
          <Text size="sm">
            You: {c.you.role ? <Code>{c.you.role}</Code> : c.you.kind}, {c.you.permissions.length} permissions.
          </Text>
        </>
      )}
    </Stack>
  );
}
