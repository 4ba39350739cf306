import { Stack, Tabs, Title } from '@mantine/core';
import { useNavigate, useRouterState } from '@tanstack/react-router';
import type { ReactNode } from 'react';

const SECTIONS = [
  { path: '/affiliates', label: 'Affiliates' },
  { path: '/affiliates/report', label: 'Report' },
  { path: '/affiliates/commissions', label: 'Commissions' },
  { path: '/affiliates/postbacks', label: 'Postbacks' },
] as const;

/** The heading and the tabs between the Affiliates pages. */
export function AffiliatesPage({ title, children }: { title: string; children: ReactNode }) {
  const navigate = useNavigate();
  const pathname = useRouterState({ select: (s) => s.location.pathname });
  const rel = pathname.replace(/^\/dashboard/, '').replace(/\/+$/, '') || '/affiliates';
  const active = SECTIONS.find((s) => s.path !== '/affiliates' && (rel === s.path || rel.startsWith(`${s.path}/`)))?.path ?? '/affiliates';
  return (
    <Stack>
      <Title order={1} size="h2">
        {title}
      </Title>
      <Tabs value={active} onChange={(v) => v && void navigate({ to: v })}>
        <Tabs.List aria-label="Affiliates sections">
          {SECTIONS.map((s) => (
            <Tabs.Tab key={s.path} value={s.path}>
              {s.label}
            </Tabs.Tab>
          ))}
        </Tabs.List>
      </Tabs>
      {children}
    </Stack>
  );
}

export const pct = (n: number | null | undefined) => (n === null || n === undefined ? '—' : `${Number(n.toFixed(2))} %`);
