import { IconUsersGroup } from '@tabler/icons-react';
import { createRoute } from '@tanstack/react-router';
import { defineArea } from '../types.ts';
import { Invitations } from './Invitations.tsx';
import { Members } from './Members.tsx';
import { Providers } from './Providers.tsx';
import { Roles } from './Roles.tsx';
import { TeamSettings } from './Settings.tsx';

export default defineArea({
  key: 'team',
  label: 'Team',
  icon: IconUsersGroup,
  permission: 'users:view',
  routes: (parent) => [
    createRoute({ getParentRoute: () => parent, path: 'team', component: Members }),
    createRoute({ getParentRoute: () => parent, path: 'team/invitations', component: Invitations }),
    createRoute({ getParentRoute: () => parent, path: 'team/roles', component: Roles }),
    createRoute({ getParentRoute: () => parent, path: 'team/providers', component: Providers }),
    createRoute({ getParentRoute: () => parent, path: 'team/settings', component: TeamSettings }),
  ],
});
