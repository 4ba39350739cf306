import { Card, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { Link } from '@tanstack/react-router';
import { areas } from '../areas/index.ts';
import { areaPath } from '../areas/types.ts';
import { useSession } from '../lib/session.tsx';

export function Home() {
  const { session, can, team } = useSession();
  const visible = areas.filter((a) => can(a.permission));
  return (
    <Stack>
      <Title order={1} size="h2">
        {team?.name ?? session.team.name ?? 'Dashboard'}
      </Title>
      <Text c="dimmed">Signed in as {session.user?.email ?? 'an API token'}{team ? ` · times in ${team.time_zone}` : ''}</Text>
      <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }}>
        {visible.map((a) => {
          const Icon = a.icon;
          return (
            <Card key={a.key} withBorder component={Link} to={areaPath(a)} aria-label={a.label}>
              {Icon && <Icon size={24} aria-hidden />}
              <Text fw={600} mt="xs">
                {a.label}
              </Text>
            </Card>
          );
        })}
      </SimpleGrid>
      {visible.length === 0 && <Text>Your role has no area of the dashboard yet.</Text>}
    </Stack>
  );
}
