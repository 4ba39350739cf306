import { Badge, Card, Text, Title } from '@mantine/core';
import type { ReactNode } from 'react';

/** Shared by the Customers, Subscriptions, Fulfillment and Tickets areas. */

const COLORS: Record<string, string> = {
  // subscriptions
  trialing: 'cyan',
  active: 'green',
  past_due: 'orange',
  paused: 'yellow',
  cancel_at_period_end: 'orange',
  cancelled: 'gray',
  completed: 'green',
  expired: 'gray',
  pending: 'yellow',
  // fulfillments
  shipped: 'blue',
  delivered: 'green',
  // tickets
  open: 'blue',
  solved: 'green',
  closed: 'gray',
  // orders
  declined: 'red',
  refunded: 'grape',
  processing: 'blue',
  lead: 'gray',
};

export const humanize = (s: string) => s.replace(/_/g, ' ');

/** A status as a light badge; `label` names it for screen readers ("Status: active"). */
export function Status({ status, label }: { status: string | null | undefined; label?: string }) {
  if (!status) return <Badge variant="outline" color="gray">none</Badge>;
  return (
    <Badge variant="light" color={COLORS[status] ?? 'gray'} aria-label={label ? `${label}: ${humanize(status)}` : undefined} data-status={status}>
      {humanize(status)}
    </Badge>
  );
}

export function Section({ title, children, count, actions }: { title: string; children: ReactNode; count?: number; actions?: ReactNode }) {
  const id = `section-${title.toLowerCase().replace(/\W+/g, '-')}`;
  return (
    <Card withBorder component="section" aria-labelledby={id}>
      <Title order={2} size="h4" id={id} mb="sm" style={{ display: 'flex', alignItems: 'center', gap: 8 }}>
        <span>
          {title}
          {count !== undefined && (
            <Text span c="dimmed" size="sm" ml={6}>
              ({count})
            </Text>
          )}
        </span>
        {actions && <span style={{ marginLeft: 'auto' }}>{actions}</span>}
      </Title>
      {children}
    </Card>
  );
}

export function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div>
      <Text size="xs" c="dimmed" component="dt">
        {label}
      </Text>
      <Text size="sm" component="dd" m={0}>
        {children}
      </Text>
    </div>
  );
}
