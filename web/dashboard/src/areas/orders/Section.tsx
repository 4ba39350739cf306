import { Card, Table, Text, Title } from '@mantine/core';
import type { ReactNode } from 'react';

/** A titled card of the order page; `count` shows beside the title. */
export function Section({ title, children, count, actions }: { title: string; children: ReactNode; count?: number | undefined; actions?: ReactNode }) {
  const id = `section-${title.toLowerCase().replace(/\W+/g, '-')}`;
  return (
    <Card withBorder component="section" aria-labelledby={id}>
      <Title order={2} size="h4" id={id} mb="sm">
        {title}
        {count !== undefined && (
          <Text span c="dimmed" size="sm" ml={6}>
            ({count})
          </Text>
        )}
      </Title>
      {actions}
      {children}
    </Card>
  );
}

/**
 * A table that scrolls sideways on narrow screens: the scrolling region is reachable by keyboard
 * (focusable, named), as axe's scrollable-region-focusable asks.
 */
export function ScrollTable({ minWidth, label, children }: { minWidth: number; label: string; children: ReactNode }) {
  return (
    <Table.ScrollContainer minWidth={minWidth} type="native" tabIndex={0} role="region" aria-label={label}>
      {children}
    </Table.ScrollContainer>
  );
}
