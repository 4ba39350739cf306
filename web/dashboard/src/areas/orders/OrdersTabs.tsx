import { Anchor, Group } from '@mantine/core';
import { Link } from '@tanstack/react-router';

/** The orders area's two lists: all orders, and the disputes and QA queue. */
export function OrdersTabs({ current }: { current: 'orders' | 'disputes' }) {
  const link = (key: 'orders' | 'disputes', to: string, label: string) => (
    <Anchor component={Link} to={to} size="sm" fw={current === key ? 700 : 400} aria-current={current === key ? 'page' : undefined} underline={current === key ? 'always' : 'hover'}>
      {label}
    </Anchor>
  );
  return (
    <Group gap="md" component="nav" aria-label="Order lists">
      {link('orders', '/orders', 'All orders')}
      {link('disputes', '/orders/disputes', 'Disputes and QA')}
    </Group>
  );
}
