import { Loader, Stack, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useParams } from '@tanstack/react-router';
import { api, unwrap } from '../../lib/api.ts';
import { ApiErrorAlert } from '../../lib/errors.tsx';

export function OrderPage() {
  const { orderNumber } = useParams({ strict: false }) as { orderNumber: string };
  const q = useQuery({ queryKey: ['order', orderNumber, 'detail'], queryFn: async () => unwrap(await api.GET('/v1/orders/{order_number}', { params: { path: { order_number: orderNumber } } })).data });
  return (
    <Stack>
      <Title order={1} size="h2">
        Order {orderNumber}
      </Title>
      {q.isPending && <Loader aria-label="Loading" />}
      <ApiErrorAlert error={q.error} />
      {q.data && <pre>{JSON.stringify(q.data, null, 2)}</pre>}
    </Stack>
  );
}
