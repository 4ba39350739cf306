import type { Area } from './types.ts';

/** The dashboard's areas, in navigation order (the order of the lines below). */
export const areas: Area[] = [];

// To add an area: create src/areas/<name>/index.ts exporting `defineArea({ key, label, icon, permission, routes })`
// (see ./types.ts and web/dashboard/README.md), then append ONE line here:
import orders from './orders/index.ts'; areas.push(orders);
import reports from './reports/index.ts'; areas.push(reports);
import payments from './payments/index.ts'; areas.push(payments);
import customers from './customers/index.ts'; areas.push(customers);
import subscriptions from './subscriptions/index.ts'; areas.push(subscriptions);
import fulfillments from './fulfillments/index.ts'; areas.push(fulfillments);
import tickets from './tickets/index.ts'; areas.push(tickets);
import developers from './developers/index.ts'; areas.push(developers);
import affiliates from './affiliates/index.ts'; areas.push(affiliates);
import team from './team/index.ts'; areas.push(team);
import catalog from './catalog/index.ts'; areas.push(catalog);
