import { IconCreditCard } from '@tabler/icons-react';
import { createRoute } from '@tanstack/react-router';
import { defineArea } from '../types.ts';
import { ConnectionsPage } from './Connections.tsx';
import { GatewaysPage } from './Gateways.tsx';
import { BinBlacklistPage, FraudRulesPage, TestCardsPage } from './Lists.tsx';
import { RouterPage, RoutersPage } from './Routers.tsx';

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
    createRoute({ getParentRoute: () => parent, path: 'payments', component: GatewaysPage }),
    createRoute({ getParentRoute: () => parent, path: 'payments/routers', component: RoutersPage }),
    createRoute({ getParentRoute: () => parent, path: 'payments/routers/$id', component: RouterPage }),
    createRoute({ getParentRoute: () => parent, path: 'payments/bin-blacklist', component: BinBlacklistPage }),
    createRoute({ getParentRoute: () => parent, path: 'payments/test-cards', component: TestCardsPage }),
    createRoute({ getParentRoute: () => parent, path: 'payments/fraud-rules', component: FraudRulesPage }),
    createRoute({ getParentRoute: () => parent, path: 'payments/connections', component: ConnectionsPage }),
  ],
});
