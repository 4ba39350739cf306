import { Button, Group, Stack, Text, Title } from '@mantine/core';
import { Link, useRouterState } from '@tanstack/react-router';
import type { ReactNode } from 'react';
import { useSession } from '../../lib/session.tsx';

const TEAM_PAGES = [
  { label: 'Members', to: '/team', permission: 'users:view' },
  { label: 'Invitations', to: '/team/invitations', permission: 'users:view' },
  { label: 'Roles', to: '/team/roles', permission: 'team:view' },
  { label: 'Providers', to: '/team/providers', permission: 'users:view' },
  { label: 'Settings', to: '/team/settings', permission: 'team:view' },
];

/** The Team area's sections as links; the current one is `aria-current="page"`. */
export function TeamNav() {
  const { can } = useSession();
  const pathname = useRouterState({ select: (s) => s.location.pathname.replace(/^\/dashboard/, '').replace(/\/$/, '') });
  return (
    <Group component="nav" aria-label="Team sections" gap={4} wrap="wrap">
      {TEAM_PAGES.filter((p) => can(p.permission)).map((p) => {
        const active = pathname === p.to;
        return (
          <Button key={p.to} component={Link} to={p.to} size="xs" variant={active ? 'filled' : 'subtle'} aria-current={active ? 'page' : undefined}>
            {p.label}
          </Button>
        );
      })}
    </Group>
  );
}

export function TeamHeader({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <Stack gap="xs">
      <TeamNav />
      <Group justify="space-between" align="flex-end">
        <Title order={1} size="h2">
          {title}
        </Title>
        {children}
      </Group>
    </Stack>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return (
    <Text c="dimmed" role="status" size="sm">
      {children}
    </Text>
  );
}

/** Roles a member can be given (owner only by a transfer), with the API's names. */
export const ASSIGNABLE_ROLES = [
  { value: 'account_admin', label: 'Account Admin' },
  { value: 'account_manager', label: 'Account Manager' },
  { value: 'support_l2', label: 'Customer Support Level 2' },
  { value: 'support_l1', label: 'Customer Support Level 1' },
  { value: 'affiliate', label: 'Affiliate' },
] as const;
export type AssignableRole = (typeof ASSIGNABLE_ROLES)[number]['value'];

/** Comma- or space-separated ids as a list. */
export function parseIds(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}
