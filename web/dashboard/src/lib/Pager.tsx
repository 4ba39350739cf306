import { Button, Group, Loader, Text } from '@mantine/core';
import type { PaginatedList } from './pagination.ts';

/** Previous / Next under a table driven by usePaginatedList. */
export function Pager({ list, label = 'Pages' }: { list: PaginatedList<unknown>; label?: string }) {
  return (
    <Group justify="space-between" component="nav" aria-label={label}>
      <Text size="sm" c="dimmed" aria-live="polite">
        Page {list.page}
        {list.isFetching && <Loader size="xs" ml="xs" aria-label="Loading" />}
      </Text>
      <Group gap="xs">
        <Button variant="default" size="xs" onClick={list.previous} disabled={!list.hasPrevious}>
          Previous
        </Button>
        <Button variant="default" size="xs" onClick={list.next} disabled={!list.hasNext}>
          Next
        </Button>
      </Group>
    </Group>
  );
}
