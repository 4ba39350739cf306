import { IconCode } from '@tabler/icons-react';
import { createRoute } from '@tanstack/react-router';
import { defineArea } from '../types.ts';
import { ApiTokens } from './ApiTokens.tsx';
import { AuditLog } from './AuditLog.tsx';
import { EventPage, Events } from './Events.tsx';
import { MailOutbox, MailPage } from './Mail.tsx';
import { DevelopersHome } from './Home.tsx';
import { WebhookEndpointPage } from './WebhookEndpointPage.tsx';
import { Webhooks } from './Webhooks.tsx';

export default defineArea({
  key: 'developers',
  label: 'Developers',
  icon: IconCode,
  permission: 'webhooks:manage',
  routes: (parent) => [
    createRoute({ getParentRoute: () => parent, path: 'developers', component: DevelopersHome }),
    createRoute({ getParentRoute: () => parent, path: 'developers/tokens', component: ApiTokens }),
    createRoute({ getParentRoute: () => parent, path: 'developers/webhooks', component: Webhooks }),
    createRoute({ getParentRoute: () => parent, path: 'developers/webhooks/$id', component: WebhookEndpointPage }),
    createRoute({ getParentRoute: () => parent, path: 'developers/events', component: Events }),
    createRoute({ getParentRoute: () => parent, path: 'developers/events/$id', component: EventPage }),
    createRoute({ getParentRoute: () => parent, path: 'developers/mail', component: MailOutbox }),
    createRoute({ getParentRoute: () => parent, path: 'developers/mail/$id', component: MailPage }),
    createRoute({ getParentRoute: () => parent, path: 'developers/audit', component: AuditLog }),
  ],
});
