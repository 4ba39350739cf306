import { IconUsers } from '@tabler/icons-react';
import { createRoute } from '@tanstack/react-router';
import { defineArea } from '../types.ts';
import { CustomerPage } from './CustomerPage.tsx';
import { CustomersList } from './CustomersList.tsx';

export default defineArea({
  key: 'customers',
  label: 'Customers',
  icon: IconUsers,
  permission: 'orders:view',
  routes: (parent) => [
    createRoute({ getParentRoute: () => parent, path: 'customers', component: CustomersList }),
    createRoute({ getParentRoute: () => parent, path: 'customers/$id', component: CustomerPage }),
  ],
});
