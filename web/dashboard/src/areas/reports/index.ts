import { IconChartBar } from '@tabler/icons-react';
import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { defineArea } from '../types.ts';

// Each page is its own chunk (lazyRouteComponent), loaded when its route is first opened or hovered.
export default defineArea({
  key: 'reports',
  label: 'Reports',
  icon: IconChartBar,
  permission: 'revenue:view',
  routes: (parent) => [
    createRoute({ getParentRoute: () => parent, path: 'reports', component: lazyRouteComponent(() => import('./ReportsPage.tsx'), 'ReportsPage') }),
    createRoute({ getParentRoute: () => parent, path: 'reports/$report', component: lazyRouteComponent(() => import('./ReportsPage.tsx'), 'ReportsPage') }),
  ],
});
