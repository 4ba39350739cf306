import { Button, Group, NativeSelect, NumberInput, Paper, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useEffect, useState } from 'react';
import { api, type Schemas, unwrap } from '../../lib/api.ts';
import { ApiErrorAlert, notifySuccess } from '../../lib/errors.tsx';

type Attribution = Schemas['AffiliateSettings']['attribution'];

/**
 * The team's affiliate settings (GET/PUT /v1/affiliate-settings): which affiliate block an order
 * keeps (first or last touch) and the default commission hold. Editable with affiliates:manage,
 * shown read-only otherwise.
 */
export function AffiliateSettingsCard({ canManage }: { canManage: boolean }) {
  const qc = useQueryClient();
  const q = useQuery({ queryKey: ['affiliate-settings'], queryFn: async () => unwrap(await api.GET('/v1/affiliate-settings')).data });
  const [attribution, setAttribution] = useState<NonNullable<Attribution>>('first_touch');
  const [holdDays, setHoldDays] = useState<number | string>(30);
  useEffect(() => {
    if (!q.data) return;
    setAttribution(q.data.attribution);
    setHoldDays(q.data.commission_hold_days);
  }, [q.data]);
  const save = useMutation({
    mutationFn: async () => unwrap(await api.PUT('/v1/affiliate-settings', { body: { attribution, commission_hold_days: Number(holdDays) } })).data,
    onSuccess: (s) => {
      qc.setQueryData(['affiliate-settings'], s);
      notifySuccess('Affiliate settings saved');
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  const dirty = !!q.data && (q.data.attribution !== attribution || String(q.data.commission_hold_days) !== String(holdDays));
  return (
    <Paper withBorder p="sm" component="section" aria-labelledby="affiliate-settings-title">
      <Title order={2} size="h5" id="affiliate-settings-title" mb="xs">
        Team affiliate settings
      </Title>
      <ApiErrorAlert error={q.error} title="Could not load the affiliate settings" />
      <form onSubmit={submit}>
        <Group align="flex-end">
          <NativeSelect
            label="Attribution"
            disabled={!canManage || !q.data}
            data={[
              { value: 'first_touch', label: 'First touch (the first affiliate block an order received)' },
              { value: 'last_touch', label: 'Last touch (the latest block before the conversion)' },
            ]}
            value={attribution}
            onChange={(e) => setAttribution(e.currentTarget.value as NonNullable<Attribution>)}
            w={380}
          />
          <NumberInput label="Commission hold (days)" disabled={!canManage || !q.data} min={0} max={365} allowDecimal={false} value={holdDays} onChange={setHoldDays} w={200} />
          {canManage && (
            <Button type="submit" loading={save.isPending} disabled={!dirty}>
              Save settings
            </Button>
          )}
        </Group>
      </form>
      {!canManage && (
        <Text size="xs" c="dimmed" mt="xs">
          Changing them needs affiliates:manage.
        </Text>
      )}
      <ApiErrorAlert error={save.error} title="The settings were not saved" />
    </Paper>
  );
}
