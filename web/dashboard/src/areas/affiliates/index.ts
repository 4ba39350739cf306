import { IconAffiliate } from '@tabler/icons-react';
import { createRoute } from '@tanstack/react-router';
import { defineArea } from '../types.ts';
import { AffiliatePage } from './AffiliatePage.tsx';
import { AffiliatesList } from './AffiliatesList.tsx';
import { CommissionsPage, PostbacksPage } from './Ledgers.tsx';
import { AffiliateReport } from './Report.tsx';

export default defineArea({
  key: 'affiliates',
  label: 'Affiliates',
  icon: IconAffiliate,
  permission: 'affiliates:view',
  routes: (parent) => [
    createRoute({ getParentRoute: () => parent, path: 'affiliates', component: AffiliatesList }),
    createRoute({ getParentRoute: () => parent, path: 'affiliates/report', component: AffiliateReport }),
    createRoute({ getParentRoute: () => parent, path: 'affiliates/commissions', component: CommissionsPage }),
    createRoute({ getParentRoute: () => parent, path: 'affiliates/postbacks', component: PostbacksPage }),
    createRoute({ getParentRoute: () => parent, path: 'affiliates/$id', component: AffiliatePage }),
  ],
});
