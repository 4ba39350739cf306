import { IconBox } from '@tabler/icons-react';
import { createRoute } from '@tanstack/react-router';
import { defineArea } from '../types.ts';
import { CampaignPage } from './CampaignPage.tsx';
import { CatalogPage } from './CatalogPage.tsx';

export default defineArea({
  key: 'catalog',
  label: 'Catalog',
  icon: IconBox,
  permission: 'catalog:view',
  routes: (parent) => [
    createRoute({ getParentRoute: () => parent, path: 'catalog', component: CatalogPage }),
    createRoute({ getParentRoute: () => parent, path: 'catalog/$tab', component: CatalogPage }),
    createRoute({ getParentRoute: () => parent, path: 'catalog/campaigns/$id', component: CampaignPage }),
  ],
});
