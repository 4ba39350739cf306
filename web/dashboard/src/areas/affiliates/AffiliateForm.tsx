import { Button, Checkbox, Group, Modal, NativeSelect, NumberInput, Stack, Switch, Text, Textarea, TextInput } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, type Schemas, unwrap } from '../../lib/api.ts';
import { ApiErrorAlert, notifySuccess } from '../../lib/errors.tsx';

type Affiliate = Schemas['Affiliate'];
const EVENTS = ['conversion', 'upsell', 'rebill', 'refund'] as const;
type PostbackEvent = (typeof EVENTS)[number];

/** Create (affiliate null) or edit an affiliate: POST /v1/affiliates or PATCH /v1/affiliates/{id}. */
export function AffiliateForm({ affiliate, onClose, onSaved }: { affiliate: Affiliate | null; onClose: () => void; onSaved?: (a: Affiliate) => void }) {
  const qc = useQueryClient();
  const [id, setId] = useState(affiliate?.id ?? '');
  const [name, setName] = useState(affiliate?.name ?? '');
  const [status, setStatus] = useState<Affiliate['status']>(affiliate?.status ?? 'active');
  const [rate, setRate] = useState<number | string>(affiliate?.throttle_rate ?? '');
  const [automatic, setAutomatic] = useState(affiliate?.automatic_throttling ?? false);
  const [commType, setCommType] = useState<Affiliate['commission']['type']>(affiliate?.commission.type ?? 'none');
  const [amount, setAmount] = useState<number | string>(affiliate?.commission.amount ?? '');
  const [percent, setPercent] = useState<number | string>(affiliate?.commission.percent ?? '');
  const [onUpsells, setOnUpsells] = useState(affiliate?.commission.on_upsells ?? false);
  const [onRebills, setOnRebills] = useState(affiliate?.commission.on_rebills ?? false);
  const [holdDays, setHoldDays] = useState<number | string>(affiliate?.commission.hold_days ?? '');
  const [postbackUrl, setPostbackUrl] = useState(affiliate?.postback_url ?? '');
  const [events, setEvents] = useState<string[]>(affiliate?.postback_events ?? ['conversion']);
  const [pixel, setPixel] = useState(affiliate?.pixel_html ?? '');

  const save = useMutation({
    mutationFn: async () => {
      const commission = {
        type: commType,
        ...(commType === 'fixed' ? { amount: Number(amount) || 0 } : {}),
        ...(commType === 'percent' ? { percent: Number(percent) || 0 } : {}),
        on_upsells: onUpsells,
        on_rebills: onRebills,
        hold_days: holdDays === '' ? null : Number(holdDays),
      };
      const body = {
        name,
        status,
        throttle_rate: rate === '' ? null : Number(rate),
        automatic_throttling: automatic,
        commission,
        postback_url: postbackUrl.trim() || null,
        postback_events: events as PostbackEvent[],
        pixel_html: pixel.trim() || null,
      };
      if (affiliate) return unwrap(await api.PATCH('/v1/affiliates/{id}', { params: { path: { id: affiliate.id } }, body })).data;
      return unwrap(await api.POST('/v1/affiliates', { body: { id: id.trim(), ...body } })).data;
    },
    onSuccess: (a) => {
      notifySuccess(`Affiliate ${a.name} saved`);
      void qc.invalidateQueries({ queryKey: ['affiliates'] });
      qc.setQueryData(['affiliate', a.id], a);
      onSaved?.(a);
      onClose();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <Modal opened onClose={onClose} title={affiliate ? `Edit ${affiliate.name}` : 'New affiliate'} size="lg">
      <form onSubmit={submit}>
        <Stack>
          <TextInput label="Affiliate id" description="Chosen by you (e.g. the network's id); fixed once created" required disabled={!!affiliate} value={id} onChange={(e) => setId(e.currentTarget.value)} />
          <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} />
          <NativeSelect
            label="Status"
            description="Paused: orders still attributed, but no postback, pixel or commission"
            data={[
              { value: 'active', label: 'Active' },
              { value: 'paused', label: 'Paused' },
            ]}
            value={status}
            onChange={(e) => setStatus(e.currentTarget.value as Affiliate['status'])}
          />
          <Group grow align="flex-end">
            <NumberInput label="Throttle rate (%)" description="Empty: no throttling configured" min={0} max={100} decimalScale={2} value={rate} onChange={setRate} />
            <Switch label="Automatic throttling" checked={automatic} onChange={(e) => setAutomatic(e.currentTarget.checked)} />
          </Group>
          <Group grow align="flex-end">
            <NativeSelect
              label="Commission"
              data={[
                { value: 'none', label: 'None' },
                { value: 'fixed', label: 'Fixed per conversion' },
                { value: 'percent', label: 'Percent of the first payment' },
              ]}
              value={commType}
              onChange={(e) => setCommType(e.currentTarget.value as Affiliate['commission']['type'])}
            />
            {commType === 'fixed' && <NumberInput label="Amount (minor units of the order currency)" min={0} allowDecimal={false} value={amount} onChange={setAmount} />}
            {commType === 'percent' && <NumberInput label="Percent" min={0} max={100} decimalScale={2} value={percent} onChange={setPercent} />}
          </Group>
          {commType !== 'none' && (
            <Group>
              <Checkbox label="Also on upsells" checked={onUpsells} onChange={(e) => setOnUpsells(e.currentTarget.checked)} />
              <Checkbox label="Also on rebills" checked={onRebills} onChange={(e) => setOnRebills(e.currentTarget.checked)} />
              <NumberInput label="Hold days" description="Empty: the team's default" min={0} max={365} allowDecimal={false} value={holdDays} onChange={setHoldDays} w={160} />
            </Group>
          )}
          <TextInput label="Postback URL" placeholder="https://network.example/pb?click={click_id}&amount={amount}" value={postbackUrl} onChange={(e) => setPostbackUrl(e.currentTarget.value)} />
          <Checkbox.Group label="Postback events" value={events} onChange={setEvents}>
            <Group mt={4}>
              {EVENTS.map((e) => (
                <Checkbox key={e} value={e} label={e} />
              ))}
            </Group>
          </Checkbox.Group>
          <Textarea label="Pixel HTML" description="Shown on the thank-you page of orders that are not throttled" autosize minRows={2} value={pixel} onChange={(e) => setPixel(e.currentTarget.value)} />
          {affiliate && (
            <Text size="xs" c="dimmed">
              Changing the throttle rate or automatic throttling starts the count over.
            </Text>
          )}
          <ApiErrorAlert error={save.error} title="Could not save the affiliate" />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={save.isPending}>
              {affiliate ? 'Save affiliate' : 'Create affiliate'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
