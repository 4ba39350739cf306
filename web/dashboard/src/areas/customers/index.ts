import { IconUsers } from '@tabler/icons-react';
import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { defineArea } from '../types.ts';

// Each page is its own chunk (lazyRouteComponent), loaded when its route is first opened or hovered.
export default defineArea({
  key: 'customers',
  label: 'Customers',
  icon: IconUsers,
  permission: 'orders:view',
  routes: (parent) => [
    createRoute({ getParentRoute: () => parent, path: 'customers', component: lazyRouteComponent(() => import('./CustomersList.tsx'), 'CustomersList') }),
    createRoute({ getParentRoute: () => parent, path: 'customers/$id', component: lazyRouteComponent(() => import('./CustomerPage.tsx'), 'CustomerPage') }),
  ],
});
