import { IconReceipt } from '@tabler/icons-react';
import { createRoute } from '@tanstack/react-router';
import { defineArea } from '../types.ts';
import { DisputesPage } from './DisputesPage.tsx';
import { OrderPage } from './OrderPage.tsx';
import { OrdersList } from './OrdersList.tsx';

export default defineArea({
  key: 'orders',
  label: 'Orders',
  icon: IconReceipt,
  permission: 'orders:view',
  routes: (parent) => [
    createRoute({ getParentRoute: () => parent, path: 'orders', component: OrdersList }),
    createRoute({ getParentRoute: () => parent, path: 'orders/disputes', component: DisputesPage }),
    createRoute({ getParentRoute: () => parent, path: 'orders/$orderNumber', component: OrderPage }),
  ],
});
