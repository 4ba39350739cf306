import { Badge, Code, List, Paper, Stack, Tabs, Text, Title } from '@mantine/core';
import { useNavigate, useRouterState } from '@tanstack/react-router';
import type { ReactNode } from 'react';
import type { Schemas } from '../../lib/api.ts';
import { useCan } from '../../lib/session.tsx';

/** The Payments setup sections, each its own path under /payments. */
const SECTIONS = [
  { path: '/payments', label: 'Gateways', permission: 'gateways:manage' },
  { path: '/payments/routers', label: 'Routers', permission: 'gateways:manage' },
  { path: '/payments/bin-blacklist', label: 'BIN blacklist', permission: 'gateways:manage' },
  { path: '/payments/test-cards', label: 'Test cards', permission: 'gateways:manage' },
  { path: '/payments/fraud-rules', label: 'Fraud rules', permission: 'gateways:manage' },
  { path: '/payments/connections', label: 'Extpay connections', permission: 'connections:manage' },
] as const;

/** The page heading and the section tabs (links between the Payments pages). */
export function PaymentsPage({ title, children }: { title: string; children: ReactNode }) {
  const navigate = useNavigate();
  const pathname = useRouterState({ select: (s) => s.location.pathname });
  const canGateways = useCan('gateways:manage');
  const canConnections = useCan('connections:manage');
  const visible = SECTIONS.filter((s) => (s.permission === 'gateways:manage' ? canGateways : canConnections));
  const rel = pathname.replace(/^\/dashboard/, '').replace(/\/+$/, '') || '/payments';
  const active = [...visible].sort((a, b) => b.path.length - a.path.length).find((s) => rel === s.path || rel.startsWith(`${s.path}/`))?.path ?? '/payments';
  return (
    <Stack>
      <Title order={1} size="h2">
        {title}
      </Title>
      <Tabs value={active} onChange={(v) => v && void navigate({ to: v })} keepMounted={false}>
        <Tabs.List aria-label="Payments setup sections">
          {visible.map((s) => (
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

const DOCTOR_COLORS = { pass: 'green', warn: 'yellow', fail: 'red' } as const;

/** A doctor report (POST …/doctor): the overall status, then each named check with its fix. */
export function DoctorReportView({ report, label }: { report: Schemas['DoctorReport']; label: string }) {
  return (
    <Paper withBorder p="sm" role="region" aria-label={label} data-doctor-status={report.status}>
      <Stack gap="xs">
        <Title order={3} size="h5">
          Diagnosis: <Badge color={DOCTOR_COLORS[report.status]}>{report.status}</Badge>
        </Title>
        <List spacing={4} size="sm">
          {report.checks.map((c) => (
            <List.Item key={c.name}>
              <Badge size="sm" variant="light" color={DOCTOR_COLORS[c.status]} mr={6}>
                {c.status}
              </Badge>
              <Code>{c.name}</Code> {c.message}
              {c.fix && (
                <Text size="xs" c="dimmed">
                  Fix: {c.fix}
                </Text>
              )}
            </List.Item>
          ))}
        </List>
      </Stack>
    </Paper>
  );
}

export function YesNo({ value, yes = 'Yes', no = 'No', label }: { value: boolean; yes?: string; no?: string; label?: string }) {
  return (
    <Badge variant="light" color={value ? 'green' : 'gray'} aria-label={label ? `${label}: ${value ? yes : no}` : undefined}>
      {value ? yes : no}
    </Badge>
  );
}

/** Empty-state line under a table. */
export function Empty({ show, children }: { show: boolean; children: ReactNode }) {
  if (!show) return null;
  return (
    <Text c="dimmed" role="status">
      {children}
    </Text>
  );
}
