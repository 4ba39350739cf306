import { Alert, Button, Card, Code, Select, Stack, Text, TextInput } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useEffect, useMemo, useState } from 'react';
import { api, unwrap } from '../../lib/api.ts';
import { ApiErrorAlert, notifySuccess } from '../../lib/errors.tsx';
import { useSession } from '../../lib/session.tsx';
import { TeamHeader } from './ui.tsx';

function timeZones(current: string): string[] {
  const all = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  return Array.from(new Set([current, 'UTC', ...all])).filter(Boolean);
}

/** The team's name and time zone (PATCH /v1/team, settings:manage); read-only for the others. */
export function TeamSettings() {
  const { team, can, session } = useSession();
  const qc = useQueryClient();
  const editable = can('settings:manage');
  const [name, setName] = useState(team?.name ?? '');
  const [zone, setZone] = useState<string | null>(team?.time_zone ?? 'UTC');
  useEffect(() => {
    setName(team?.name ?? '');
    setZone(team?.time_zone ?? 'UTC');
  }, [team]);
  const zones = useMemo(() => timeZones(team?.time_zone ?? 'UTC'), [team?.time_zone]);
  const save = useMutation({
    mutationFn: async () => {
      const body: { name?: string; time_zone?: string } = {};
      if (name.trim() !== team?.name) body.name = name.trim();
      if (zone && zone !== team?.time_zone) body.time_zone = zone;
      return unwrap(await api.PATCH('/v1/team', { body })).data;
    },
    onSuccess: async () => {
      notifySuccess('Team settings saved.');
      await qc.invalidateQueries({ queryKey: ['team', session.team.id] });
      await qc.invalidateQueries({ queryKey: ['session'] });
    },
  });
  const changed = !!team && (name.trim() !== team.name || zone !== team.time_zone);
  function submit(e: FormEvent) {
    e.preventDefault();
    if (changed && name.trim()) save.mutate();
  }
  return (
    <Stack>
      <TeamHeader title="Team settings" />
      <Card withBorder maw={640}>
        <form onSubmit={submit}>
          <Stack>
            <TextInput label="Team name" required maxLength={200} value={name} onChange={(e) => setName(e.currentTarget.value)} readOnly={!editable} />
            <Select label="Time zone" description="Reports, dates on these pages and card subscriptions’ billing days follow it" searchable allowDeselect={false} data={zones} value={zone} onChange={setZone} readOnly={!editable} />
            {team && zone !== team.time_zone && (
              <Alert color="yellow" role="status">
                Changing the time zone moves every live card subscription’s next billing day to the rebill hour in {zone}.
              </Alert>
            )}
            <Text size="xs" c="dimmed">
              Team id <Code>{session.team.id}</Code>
            </Text>
            <ApiErrorAlert error={save.error} title="Not saved" />
            {editable ? (
              <Button type="submit" w="fit-content" loading={save.isPending} disabled={!changed || !name.trim()}>
                Save
              </Button>
            ) : (
              <Text size="sm" c="dimmed">
                Only members with the settings permission can change these.
              </Text>
            )}
          </Stack>
        </form>
      </Card>
    </Stack>
  );
}
