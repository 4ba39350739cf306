import { IconRepeat } from '@tabler/icons-react';
import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { defineArea } from '../types.ts';

// Each page is its own chunk (lazyRouteComponent), loaded when its route is first opened or hovered.
export default defineArea({
  key: 'subscriptions',
  label: 'Subscriptions',
  icon: IconRepeat,
  permission: 'orders:view',
  routes: (parent) => [
    createRoute({ getParentRoute: () => parent, path: 'subscriptions', component: lazyRouteComponent(() => import('./SubscriptionsList.tsx'), 'SubscriptionsList') }),
    createRoute({ getParentRoute: () => parent, path: 'subscriptions/$id', component: lazyRouteComponent(() => import('./SubscriptionPage.tsx'), 'SubscriptionPage') }),
  ],
});
