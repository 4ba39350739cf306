import { Anchor, Button, Card, Code, Group, Stack, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { Link, useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { api, unwrap } from '../../lib/api.ts';
import { useDates } from '../../lib/dates.ts';
import { ApiErrorAlert } from '../../lib/errors.tsx';
import { useCan } from '../../lib/session.tsx';
import { CampaignForm } from './Campaigns.tsx';
import { OffersTab } from './Offers.tsx';
import { PurchaseEmailEditor } from './PurchaseEmail.tsx';
import { UpsellsTab } from './Upsells.tsx';
import { ActiveBadge } from './ActiveBadge.tsx';

/** One campaign: its settings, its offers, its funnel steps (upsells by step) and its purchase e-mail. */
export function CampaignPage() {
  const { id } = useParams({ strict: false }) as { id: string };
  const canManage = useCan('catalog:manage');
  const dates = useDates();
  const [editing, setEditing] = useState(false);
  const campaign = useQuery({ queryKey: ['campaign', id], queryFn: async () => unwrap(await api.GET('/v1/campaigns/{id}', { params: { path: { id } } })).data });
  const c = campaign.data;
  return (
    <Stack>
      <Anchor component={Link} to="/catalog/campaigns" size="sm">
        ← Campaigns
      </Anchor>
      <ApiErrorAlert error={campaign.error} title="Could not load the campaign" />
      {c && (
        <>
          <Group justify="space-between">
            <Title order={1} size="h2">
              {c.name}
            </Title>
            {canManage && (
              <Button variant="default" onClick={() => setEditing(true)}>
                Edit campaign
              </Button>
            )}
          </Group>
          <Group gap="lg">
            <Text size="sm">
              <Code>{c.id}</Code>
            </Text>
            <Text size="sm">Currency {c.currency}</Text>
            <Text size="sm">Gateway {c.payment_orchestrator_id ?? c.gateway_id ?? '—'}</Text>
            <ActiveBadge active={c.is_active} />
            <Text size="sm" c="dimmed">
              Created {dates.date(c.created_at)}
            </Text>
          </Group>
          <Card withBorder>
            <Title order={2} size="h4" mb="sm">
              Offers
            </Title>
            <OffersTab campaignId={c.id} />
          </Card>
          <Card withBorder>
            <Title order={2} size="h4" mb="sm">
              Funnel steps (upsells)
            </Title>
            <UpsellsTab campaignId={c.id} />
          </Card>
          <Card withBorder>
            <Title order={2} size="h4" mb="sm">
              Purchase e-mail
            </Title>
            <PurchaseEmailEditor campaignId={c.id} />
          </Card>
          <CampaignForm campaign={editing ? c : null} onClose={() => setEditing(false)} />
        </>
      )}
    </Stack>
  );
}
