import { IconAffiliate } from '@tabler/icons-react';
import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { defineArea } from '../types.ts';

// Each page is its own chunk (lazyRouteComponent), loaded when its route is first opened or hovered.
export default defineArea({
  key: 'affiliates',
  label: 'Affiliates',
  icon: IconAffiliate,
  permission: 'affiliates:view',
  routes: (parent) => [
    createRoute({ getParentRoute: () => parent, path: 'affiliates', component: lazyRouteComponent(() => import('./AffiliatesList.tsx'), 'AffiliatesList') }),
    createRoute({ getParentRoute: () => parent, path: 'affiliates/report', component: lazyRouteComponent(() => import('./Report.tsx'), 'AffiliateReport') }),
    createRoute({ getParentRoute: () => parent, path: 'affiliates/commissions', component: lazyRouteComponent(() => import('./Ledgers.tsx'), 'CommissionsPage') }),
    createRoute({ getParentRoute: () => parent, path: 'affiliates/postbacks', component: lazyRouteComponent(() => import('./Ledgers.tsx'), 'PostbacksPage') }),
    createRoute({ getParentRoute: () => parent, path: 'affiliates/$id', component: lazyRouteComponent(() => import('./AffiliatePage.tsx'), 'AffiliatePage') }),
  ],
});
