import { Alert, Anchor, Button, Code, CopyButton, Group, Modal, ScrollArea, Stack, Text, TextInput, Title } from '@mantine/core';
import { IconCheck, IconCopy } from '@tabler/icons-react';
import { Link, useRouterState } from '@tanstack/react-router';
import type { ReactNode } from 'react';
import { useSession } from '../../lib/session.tsx';

export interface SubPage {
  label: string;
  to: string;
  permission: string;
}

/** The area's sections as links (the current one marked `aria-current="page"`), only those the user may open. */
export function SubNav({ pages, label }: { pages: SubPage[]; label: string }) {
  const { can } = useSession();
  const pathname = useRouterState({ select: (s) => s.location.pathname.replace(/^\/dashboard/, '') });
  const visible = pages.filter((p) => can(p.permission));
  const current = [...visible].sort((a, b) => b.to.length - a.to.length).find((p) => pathname === p.to || pathname.startsWith(`${p.to}/`));
  return (
    <Group component="nav" aria-label={label} gap={4} wrap="wrap">
      {visible.map((p) => {
        const active = current?.to === p.to;
        return (
          <Button key={p.to} component={Link} to={p.to} size="xs" variant={active ? 'filled' : 'subtle'} aria-current={active ? 'page' : undefined}>
            {p.label}
          </Button>
        );
      })}
    </Group>
  );
}

/** A page heading with the area's sub-navigation above it. */
export function PageHeader({ nav, title, children }: { nav: ReactNode; title: string; children?: ReactNode }) {
  return (
    <Stack gap="xs">
      {nav}
      <Group justify="space-between" align="flex-end">
        <Title order={1} size="h2">
          {title}
        </Title>
        {children}
      </Group>
    </Stack>
  );
}

export function BackLink({ to, children }: { to: string; children: ReactNode }) {
  return (
    <Anchor component={Link} to={to} size="sm">
      ← {children}
    </Anchor>
  );
}

/**
 * A secret the API answers once (an API token, a webhook signing secret): shown in a dialog with a
 * Copy button and the plain warning that it will not be shown again.
 */
export function SecretDialog({ title, secret, label, onClose, children }: { title: string; secret: string | null; label: string; onClose: () => void; children?: ReactNode }) {
  return (
    <Modal opened={!!secret} onClose={onClose} title={title} centered size="lg" closeOnClickOutside={false}>
      <Stack>
        <Alert color="yellow" title="Copy it now" role="alert">
          This is the only time the secret is shown: you will not see it again. Store it somewhere safe; if it is lost, rotate it.
        </Alert>
        <Group align="flex-end" wrap="nowrap">
          <TextInput label={label} value={secret ?? ''} readOnly style={{ flex: 1 }} styles={{ input: { fontFamily: 'monospace' } }} onFocus={(e) => e.currentTarget.select()} data-testid="secret-value" />
          <CopyButton value={secret ?? ''}>
            {({ copied, copy }) => (
              <Button onClick={copy} color={copied ? 'teal' : undefined} leftSection={copied ? <IconCheck size={16} aria-hidden /> : <IconCopy size={16} aria-hidden />}>
                {copied ? 'Copied' : 'Copy'}
              </Button>
            )}
          </CopyButton>
        </Group>
        {children}
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            I have stored it
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

/** JSON, pretty-printed, in a scrollable code block. */
export function JsonBlock({ value, label }: { value: unknown; label: string }) {
  return (
    <ScrollArea.Autosize mah={480} type="auto">
      <Code block aria-label={label} style={{ whiteSpace: 'pre' }}>
        {JSON.stringify(value, null, 2)}
      </Code>
    </ScrollArea.Autosize>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return (
    <Text c="dimmed" role="status" size="sm">
      {children}
    </Text>
  );
}

export const DEV_PAGES: SubPage[] = [
  { label: 'API tokens', to: '/developers/tokens', permission: 'api_tokens:manage' },
  { label: 'Webhooks', to: '/developers/webhooks', permission: 'webhooks:manage' },
  { label: 'Events', to: '/developers/events', permission: 'webhooks:manage' },
  { label: 'Mail outbox', to: '/developers/mail', permission: 'webhooks:manage' },
  { label: 'Audit log', to: '/developers/audit', permission: 'audit:view' },
];

export function DevNav() {
  return <SubNav pages={DEV_PAGES} label="Developers sections" />;
}

/** Grace periods the API takes (`grace_seconds`, at most 7 days). */
export const GRACE_OPTIONS = [
  { value: '0', label: 'None: the old one stops at once' },
  { value: '3600', label: '1 hour' },
  { value: '86400', label: '1 day (default)' },
  { value: '259200', label: '3 days' },
  { value: '604800', label: '7 days (the most)' },
];
