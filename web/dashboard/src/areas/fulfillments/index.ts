import { IconTruckDelivery } from '@tabler/icons-react';
import { createRoute } from '@tanstack/react-router';
import { defineArea } from '../types.ts';
import { FulfillmentsList } from './FulfillmentsList.tsx';

export default defineArea({
  key: 'fulfillments',
  label: 'Fulfillment',
  icon: IconTruckDelivery,
  permission: 'orders:view',
  routes: (parent) => [createRoute({ getParentRoute: () => parent, path: 'fulfillments', component: FulfillmentsList })],
});
