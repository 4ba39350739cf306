import { AppShell, Burger, Button, Group, Menu, NavLink, ScrollArea, Select, Stack, Text, Title, UnstyledButton } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { IconChevronDown, IconHome, IconLogout } from '@tabler/icons-react';
import { Link, Outlet, useRouterState } from '@tanstack/react-router';
import { areas } from '../areas/index.ts';
import { areaPath } from '../areas/types.ts';
import { notifyError } from '../lib/errors.tsx';
import { useSession } from '../lib/session.tsx';
import { NoAccess } from './NotFound.tsx';
import { publicPageFor } from './PublicPages.tsx';

const ROLE_NAMES: Record<string, string> = {
  owner: 'Team Owner',
  account_admin: 'Account Admin',
  account_manager: 'Account Manager',
  support_l2: 'Support Level 2',
  support_l1: 'Support Level 1',
  affiliate: 'Affiliate',
  customer_service: 'Customer Service',
};

function TeamSwitcher() {
  const { session, switchTeam } = useSession();
  if (session.teams.length < 2) return <Text size="sm" fw={500}>{session.team.name}</Text>;
  return (
    <Select
      aria-label="Active team"
      size="xs"
      w={220}
      allowDeselect={false}
      value={session.team.id}
      data={session.teams.map((t) => ({ value: t.team_id, label: `${t.name}${t.via === 'provider' ? ' (provider access)' : ''}` }))}
      onChange={(id) => {
        if (id && id !== session.team.id) switchTeam(id).catch((err) => notifyError(err, 'Could not switch team'));
      }}
    />
  );
}

function UserMenu() {
  const { session, logout } = useSession();
  const name = session.user?.name || session.user?.email || 'API token';
  return (
    <Menu position="bottom-end" withinPortal>
      <Menu.Target>
        {/* Named by what it shows (the name, then the role): an aria-label that differs from the visible text fails WCAG 2.5.3. */}
        <UnstyledButton>
          <Group gap={4}>
            <Stack gap={0} align="flex-end">
              <Text size="sm" fw={500}>
                {name}
              </Text>
              <Text size="xs" c="dimmed">
                {session.role ? (ROLE_NAMES[session.role] ?? session.role) : ''}
              </Text>
            </Stack>
            <IconChevronDown size={14} aria-hidden />
          </Group>
        </UnstyledButton>
      </Menu.Target>
      <Menu.Dropdown>
        <Menu.Label>{session.user?.email}</Menu.Label>
        <Menu.Item leftSection={<IconLogout size={14} aria-hidden />} onClick={() => void logout()}>
          Log out
        </Menu.Item>
      </Menu.Dropdown>
    </Menu>
  );
}

/** The app shell: header (team switcher, user menu), left navigation of the areas the user may see, the page. */
export function Layout() {
  const [opened, { toggle, close }] = useDisclosure();
  const { can, session } = useSession();
  const pathname = useRouterState({ select: (s) => s.location.pathname });
  const visible = areas.filter((a) => can(a.permission));
  const current = areas.find((a) => pathname === areaPath(a) || pathname.startsWith(`${areaPath(a)}/`));
  // A page an account mail links to shows alone, signed in or not.
  if (publicPageFor(pathname)) return <Outlet />;

  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 220, breakpoint: 'sm', collapsed: { mobile: !opened } }} padding="md">
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group wrap="nowrap">
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Toggle navigation" />
            <Title order={2} size="h4">
              <Link to="/" style={{ color: 'inherit', textDecoration: 'none' }}>
                Checkstand
              </Link>
            </Title>
            <TeamSwitcher />
          </Group>
          <Group wrap="nowrap">
            {session.team.kind === 'merchant' && (
              <Button component="a" href="/docs" variant="subtle" size="xs">
                API docs
              </Button>
            )}
            <UserMenu />
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" aria-label="Main navigation">
        <ScrollArea>
          <NavLink component={Link} to="/" label="Home" leftSection={<IconHome size={18} aria-hidden />} active={pathname === '/'} onClick={close} />
          {visible.map((a) => {
            const Icon = a.icon;
            return (
              <NavLink
                key={a.key}
                component={Link}
                to={areaPath(a)}
                label={a.label}
                leftSection={Icon ? <Icon size={18} aria-hidden /> : null}
                active={current?.key === a.key}
                aria-current={current?.key === a.key ? 'page' : undefined}
                onClick={close}
              />
            );
          })}
        </ScrollArea>
      </AppShell.Navbar>
      <AppShell.Main>{current && !can(current.permission) ? <NoAccess permission={current.permission} /> : <Outlet />}</AppShell.Main>
    </AppShell>
  );
}
