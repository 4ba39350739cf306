import { IconLifebuoy } from '@tabler/icons-react';
import { createRoute } from '@tanstack/react-router';
import { defineArea } from '../types.ts';
import { TicketPage } from './TicketPage.tsx';
import { TicketsList } from './TicketsList.tsx';

export default defineArea({
  key: 'tickets',
  label: 'Support tickets',
  icon: IconLifebuoy,
  permission: 'orders:view',
  routes: (parent) => [
    createRoute({ getParentRoute: () => parent, path: 'tickets', component: TicketsList }),
    createRoute({ getParentRoute: () => parent, path: 'tickets/$id', component: TicketPage }),
  ],
});
