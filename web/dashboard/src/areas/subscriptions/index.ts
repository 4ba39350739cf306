import { IconRepeat } from '@tabler/icons-react';
import { createRoute } from '@tanstack/react-router';
import { defineArea } from '../types.ts';
import { SubscriptionPage } from './SubscriptionPage.tsx';
import { SubscriptionsList } from './SubscriptionsList.tsx';

export default defineArea({
  key: 'subscriptions',
  label: 'Subscriptions',
  icon: IconRepeat,
  permission: 'orders:view',
  routes: (parent) => [
    createRoute({ getParentRoute: () => parent, path: 'subscriptions', component: SubscriptionsList }),
    createRoute({ getParentRoute: () => parent, path: 'subscriptions/$id', component: SubscriptionPage }),
  ],
});
