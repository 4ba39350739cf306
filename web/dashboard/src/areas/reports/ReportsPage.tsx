import { Button, Group, Paper, Select, Stack, Tabs, Text, TextInput, Title } from '@mantine/core';
import { IconDownload } from '@tabler/icons-react';
import { useNavigate, useParams } from '@tanstack/react-router';
import { type FormEvent, type ReactNode, useState } from 'react';
import { ApiErrorAlert } from '../../lib/errors.tsx';
import { useSession } from '../../lib/session.tsx';
import { Overview } from './Overview.tsx';
import { ApprovalsReport, DeclinesReport, RebillsReport, RevenueReport, UpsellsReport } from './Reports.tsx';
import { REPORT_LABELS, REPORTS, type ReportName, type ReportRange } from './reportsApi.ts';

// The range outlives a tab switch (each tab is its own route): kept here for the page's life.
let lastRange: ReportRange = { from: '', to: '', is_test: '' };

/** Reports: an overview (the last 30 days) and the five reports of /v1/reports, over one date range. */
export function ReportsPage() {
  const params = useParams({ strict: false });
  const navigate = useNavigate();
  const current = (REPORTS as readonly string[]).includes(params.report ?? '') ? (params.report as ReportName) : 'overview';
  const [range, setRange] = useState<ReportRange>(lastRange);
  const [draft, setDraft] = useState<ReportRange>(lastRange);
  const { timeZone } = useSession();

  function apply(e: FormEvent) {
    e.preventDefault();
    lastRange = draft;
    setRange(draft);
  }

  return (
    <Stack>
      <Title order={1} size="h2">
        Reports
      </Title>
      <Tabs value={current} onChange={(v) => void navigate({ to: v === 'overview' || !v ? '/reports' : `/reports/${v}` })} keepMounted={false}>
        <Tabs.List aria-label="Reports">
          <Tabs.Tab value="overview">Overview</Tabs.Tab>
          {REPORTS.map((r) => (
            <Tabs.Tab key={r} value={r}>
              {REPORT_LABELS[r]}
            </Tabs.Tab>
          ))}
        </Tabs.List>
      </Tabs>
      {current === 'overview' ? (
        <Overview />
      ) : (
        <>
          <Paper withBorder p="sm" component="form" onSubmit={apply} aria-label="Report period">
            <Group align="flex-end" wrap="wrap">
              <TextInput label="From" type="date" value={draft.from} onChange={(e) => setDraft({ ...draft, from: e.currentTarget.value })} w={160} />
              <TextInput label="To" type="date" value={draft.to} onChange={(e) => setDraft({ ...draft, to: e.currentTarget.value })} w={160} />
              <Select
                label="Orders"
                placeholder="Live and test"
                clearable
                data={[
                  { value: 'false', label: 'Live only' },
                  { value: 'true', label: 'Test only' },
                ]}
                value={draft.is_test || null}
                onChange={(v) => setDraft({ ...draft, is_test: (v ?? '') as ReportRange['is_test'] })}
                w={150}
              />
              <Button type="submit">Show</Button>
              <Button
                variant="default"
                onClick={() => {
                  const empty: ReportRange = { from: '', to: '', is_test: '' };
                  lastRange = empty;
                  setDraft(empty);
                  setRange(empty);
                }}
              >
                Last 30 days
              </Button>
              <Text size="xs" c="dimmed">
                Calendar days in the team’s time zone ({timeZone}); both ends included. Empty: the last 30 days.
              </Text>
            </Group>
          </Paper>
          {current === 'revenue' && <RevenueReport range={range} />}
          {current === 'approvals' && <ApprovalsReport range={range} />}
          {current === 'declines' && <DeclinesReport range={range} />}
          {current === 'upsells' && <UpsellsReport range={range} />}
          {current === 'rebills' && <RebillsReport range={range} />}
        </>
      )}
    </Stack>
  );
}

/** A report's frame: its title, the period the API answered, the Export CSV link and the body. */
export function ReportFrame({ title, answer, csv, error, loading, controls, children }: { title: string; answer: { from: string; to: string; time_zone: string } | undefined; csv: string | null; error: unknown; loading: boolean; controls?: ReactNode; children?: ReactNode }) {
  return (
    <Stack aria-busy={loading}>
      <Group justify="space-between" align="flex-end">
        <div>
          <Title order={2} size="h3">
            {title}
          </Title>
          {answer && (
            <Text size="sm" c="dimmed" data-testid="report-period">
              {answer.from} to {answer.to} · {answer.time_zone}
            </Text>
          )}
        </div>
        <Group align="flex-end">
          {controls}
          {/* The API's own CSV: same numbers as the JSON, downloaded with the session cookie. */}
          <Button component="a" href={csv ?? undefined} download variant="light" leftSection={<IconDownload size={16} aria-hidden />} disabled={!csv} aria-disabled={!csv}>
            Export CSV
          </Button>
        </Group>
      </Group>
      <ApiErrorAlert error={error} title="Could not load the report" />
      {loading && !answer && <Text c="dimmed">Loading…</Text>}
      {children}
    </Stack>
  );
}
