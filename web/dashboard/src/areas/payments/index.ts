import { IconCreditCard } from '@tabler/icons-react';
import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { defineArea } from '../types.ts';

// Each page is its own chunk (lazyRouteComponent), loaded when its route is first opened or hovered.

/**
 * Payments setup: every read and write of gateways, routers, the BIN blacklist, test cards and
 * fraud rules needs `gateways:manage` (there is no narrower view permission), so the area does too;
 * the extpay connections tab needs `connections:manage`.
 */
export default defineArea({
  key: 'payments',
  label: 'Payments setup',
  icon: IconCreditCard,
  permission: 'gateways:manage',
  routes: (parent) => [
    createRoute({ getParentRoute: () => parent, path: 'payments', component: lazyRouteComponent(() => import('./Gateways.tsx'), 'GatewaysPage') }),
    createRoute({ getParentRoute: () => parent, path: 'payments/routers', component: lazyRouteComponent(() => import('./Routers.tsx'), 'RoutersPage') }),
    createRoute({ getParentRoute: () => parent, path: 'payments/routers/$id', component: lazyRouteComponent(() => import('./Routers.tsx'), 'RouterPage') }),
    createRoute({ getParentRoute: () => parent, path: 'payments/bin-blacklist', component: lazyRouteComponent(() => import('./Lists.tsx'), 'BinBlacklistPage') }),
    createRoute({ getParentRoute: () => parent, path: 'payments/test-cards', component: lazyRouteComponent(() => import('./Lists.tsx'), 'TestCardsPage') }),
    createRoute({ getParentRoute: () => parent, path: 'payments/fraud-rules', component: lazyRouteComponent(() => import('./Lists.tsx'), 'FraudRulesPage') }),
    createRoute({ getParentRoute: () => parent, path: 'payments/connections', component: lazyRouteComponent(() => import('./Connections.tsx'), 'ConnectionsPage') }),
  ],
});
