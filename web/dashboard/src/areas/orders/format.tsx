import { Badge } from '@mantine/core';

const STATUS_COLORS: Record<string, string> = {
  lead: 'gray',
  pending: 'yellow',
  declined: 'red',
  pending_external_confirmation: 'orange',
  processing: 'blue',
  completed: 'green',
  cancelled: 'gray',
  refunded: 'grape',
  approved: 'green',
  voided: 'gray',
  pending_redirect: 'orange',
};

export const ORDER_STATUSES = ['lead', 'pending', 'declined', 'pending_external_confirmation', 'processing', 'completed', 'cancelled', 'refunded'] as const;
export const PAYMENT_STATUSES = ['pending_redirect', 'pending_external_confirmation', 'completed', 'declined', 'voided'] as const;

export const humanize = (s: string) => s.replace(/_/g, ' ');

/** A status as a badge (dark text on a light fill: readable at AA contrast). */
export function StatusBadge({ status, label }: { status: string | null | undefined; label?: string }) {
  if (!status) return <Badge variant="outline" color="gray">none</Badge>;
  return (
    <Badge variant="light" color={STATUS_COLORS[status] ?? 'gray'} styles={{ root: { maxWidth: 'none', flexShrink: 0, overflow: 'visible' }, label: { overflow: 'visible' } }} aria-label={label ? `${label}: ${humanize(status)}` : undefined}>
      {humanize(status)}
    </Badge>
  );
}
