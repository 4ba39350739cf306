import { Anchor, Group, Stack, Text, Title } from '@mantine/core';
import { Link } from '@tanstack/react-router';
import { lazy, Suspense } from 'react';
import { areas } from '../areas/index.ts';
import { areaPath } from '../areas/types.ts';
import { useSession } from '../lib/session.tsx';

// Its own chunk: a user without revenue:view never loads it, and the order list's first load does not wait for it.
const HomeOverview = lazy(() => import('../areas/reports/HomeOverview.tsx').then((m) => ({ default: m.HomeOverview })));

/** /dashboard: today's and the last 30 days' numbers (with revenue:view), then links to the areas the user may open. */
export function Home() {
  const { session, can, team } = useSession();
  const visible = areas.filter((a) => can(a.permission));
  return (
    <Stack>
      <Title order={1} size="h2">
        {team?.name ?? session.team.name ?? 'Dashboard'}
      </Title>
      <Text c="dimmed">
        Signed in as {session.user?.email ?? 'an API token'}
        {team ? ` · times in ${team.time_zone}` : ''}
      </Text>
      {can('revenue:view') && (
        <Suspense fallback={<Text c="dimmed">Loading today’s numbers…</Text>}>
          <HomeOverview />
        </Suspense>
      )}
      <nav aria-label="Areas">
        <Title order={2} size="h4" mb="xs">
          Areas
        </Title>
        <Group gap="lg">
          {visible.map((a) => {
            const Icon = a.icon;
            return (
              <Anchor key={a.key} component={Link} to={areaPath(a)} size="sm">
                <Group gap={6} wrap="nowrap">
                  {Icon && <Icon size={18} aria-hidden />}
                  {a.label}
                </Group>
              </Anchor>
            );
          })}
        </Group>
      </nav>
      {visible.length === 0 && <Text>Your role has no area of the dashboard yet.</Text>}
    </Stack>
  );
}
