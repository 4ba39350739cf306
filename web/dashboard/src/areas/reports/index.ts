import { IconChartBar } from '@tabler/icons-react';
import { createRoute } from '@tanstack/react-router';
import { defineArea } from '../types.ts';
import { ReportsPage } from './ReportsPage.tsx';

export default defineArea({
  key: 'reports',
  label: 'Reports',
  icon: IconChartBar,
  permission: 'revenue:view',
  routes: (parent) => [
    createRoute({ getParentRoute: () => parent, path: 'reports', component: ReportsPage }),
    createRoute({ getParentRoute: () => parent, path: 'reports/$report', component: ReportsPage }),
  ],
});
