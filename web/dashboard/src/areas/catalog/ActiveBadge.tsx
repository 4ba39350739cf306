import { Badge } from '@mantine/core';

/** Active / Inactive, never truncated in a narrow column. */
export function ActiveBadge({ active }: { active: boolean }) {
  return (
    <Badge color={active ? 'green' : 'gray'} style={{ minWidth: 'max-content' }}>
      {active ? 'Active' : 'Inactive'}
    </Badge>
  );
}
