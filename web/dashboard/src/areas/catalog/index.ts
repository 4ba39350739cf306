import { IconBox } from '@tabler/icons-react';
import { createRoute, lazyRouteComponent } from '@tanstack/react-router';
import { defineArea } from '../types.ts';

// Each page is its own chunk (lazyRouteComponent), loaded when its route is first opened or hovered.
export default defineArea({
  key: 'catalog',
  label: 'Catalog',
  icon: IconBox,
  permission: 'catalog:view',
  routes: (parent) => [
    createRoute({ getParentRoute: () => parent, path: 'catalog', component: lazyRouteComponent(() => import('./CatalogPage.tsx'), 'CatalogPage') }),
    createRoute({ getParentRoute: () => parent, path: 'catalog/$tab', component: lazyRouteComponent(() => import('./CatalogPage.tsx'), 'CatalogPage') }),
    createRoute({ getParentRoute: () => parent, path: 'catalog/campaigns/$id', component: lazyRouteComponent(() => import('./CampaignPage.tsx'), 'CampaignPage') }),
  ],
});
