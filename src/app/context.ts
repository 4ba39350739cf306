import { configureConfigCaches } from './cache.ts';
import type { Store } from '../db/database.ts';
import { AffiliatesService } from '../modules/affiliates/service.ts';
import { CatalogService } from '../modules/catalog/service.ts';
import { IdempotencyService } from '../modules/idempotency/service.ts';
import { LeadFollowUpService } from '../modules/leads/service.ts';
import { OrdersService } from '../modules/orders/service.ts';
import { ConnectionsService } from '../modules/connections/service.ts';
import { ExtpayEventsService } from '../modules/inbound/extpay-events.ts';
import { createCheckout, type UseCases } from '../modules/checkout/service.ts';
import { CustomersService } from '../modules/customers/service.ts';
import { extpayAdapter } from '../providers/extpay/adapter.ts';
import { EventsService } from '../modules/events/service.ts';
import { FraudService } from '../modules/fraud/service.ts';
import { FulfillmentsService } from '../modules/fulfillments/service.ts';
import { GatewaysService } from '../modules/gateways/service.ts';
import { MailService } from '../modules/mail/service.ts';
import { createMailTransport } from '../modules/mail/transport.ts';
import { PaymentsService } from '../modules/payments/service.ts';
import { LedgerService } from '../modules/ledger/service.ts';
import { InboundService } from '../modules/inbound/service.ts';
import { WebhooksService, webhookOptionsFrom } from '../modules/webhooks/service.ts';
import { nmiAdapter } from '../providers/nmi/adapter.ts';
import { threeDsAdapter } from '../providers/threeds/adapter.ts';
import { nmiProvider } from '../providers/nmi/provider.ts';
import { threeDsProvider } from '../providers/threeds/provider.ts';
import { extpayProvider } from '../providers/extpay/provider.ts';
import { SubscriptionsService } from '../modules/subscriptions/service.ts';
import { TeamsService } from '../modules/teams/service.ts';
import { TicketsService } from '../modules/tickets/service.ts';
import { attachmentStorageFor } from '../modules/tickets/storage.ts';
import { accountMailer } from '../modules/users/mailer.ts';
import { UsersService } from '../modules/users/service.ts';
import { ApiTokensService } from '../modules/teams/tokens.ts';
import { AuditService } from '../modules/access/audit.ts';
import { ProvidersService } from '../modules/access/providers.ts';
import { type Clock, systemClock } from './clock.ts';
import type { Config } from './config.ts';
import type { Secrets } from './secrets.ts';
import type { Drainer } from '../worker/worker.ts';

/** Everything a process needs, assembled once. Modules reach each other only through these services. */
export interface AppContext {
  config: Config;
  store: Store;
  secrets: Secrets;
  /** Where billing reads "now" (subscriptions, rebills, dunning); tests pass a ManualClock. */
  clock: Clock;
  /** The queues `checkstand worker` drains (webhook deliveries, autoresponder mail). */
  drainers: Drainer[];
  services: {
    teams: TeamsService;
    /** Team members, browser sessions, invitations, password resets, two-factor. */
    users: UsersService;
    apiTokens: ApiTokensService;
    providers: ProvidersService;
    audit: AuditService;
    idempotency: IdempotencyService;
    catalog: CatalogService;
    orders: OrdersService;
    customers: CustomersService;
    payments: PaymentsService;
    ledger: LedgerService;
    inbound: InboundService;
    fulfillments: FulfillmentsService;
    subscriptions: SubscriptionsService;
    gateways: GatewaysService;
    fraud: FraudService;
    events: EventsService;
    webhooks: WebhooksService;
    mail: MailService;
    /** Abandoned-lead follow-up: the `lead.abandoned` event and mail, driven by the worker's schedule. */
    leads: LeadFollowUpService;
    connections: ConnectionsService;
    extpayEvents: ExtpayEventsService;
    /** The payment use cases (pay, upsell, capture, finalize, reverse, reconcile, inbound effects, renewals). */
    checkout: UseCases;
    /** Affiliates: attribution, throttling at the conversion, commissions, postbacks, pixels, reports. */
    affiliates: AffiliatesService;
    /** Support tickets of customers, their messages and attachments. */
    tickets: TicketsService;
  };
}

export function createContext(config: Config, store: Store, secrets: Secrets, clock: Clock = systemClock): AppContext {
  configureConfigCaches(store, { ttlMs: config.configCacheTtlMs });
  const teams = new TeamsService(store);
  const catalog = new CatalogService(store);
  const customers = new CustomersService(store);
  const gateways = new GatewaysService(store, secrets, { publicBaseUrl: config.publicBaseUrl ?? `http://${config.host}:${config.port}` });
  const events = new EventsService(store);
  const webhooks = new WebhooksService(store, secrets, events, webhookOptionsFrom(config));
  events.registerSink(webhooks);
  const mailTransport = createMailTransport(config);
  const mail = new MailService(store, catalog, mailTransport, { from: config.mailFrom, retryDelaysMs: config.mailRetryScheduleMs });
  const users = new UsersService({ store, secrets, mailer: accountMailer(mailTransport, config.mailFrom), config });
  events.registerSink(mail);
  const connections = new ConnectionsService(store, secrets, extpayAdapter);
  const ledger = new LedgerService(store);
  const fraud = new FraudService(store, secrets);
  const inbound = new InboundService();
  const payments = new PaymentsService(store, gateways, ledger, { nmi: nmiProvider(nmiAdapter), threeds: threeDsProvider(threeDsAdapter) }, extpayProvider(extpayAdapter), connections, extpayAdapter, fraud);
  const fulfillments = new FulfillmentsService(store);
  const subscriptions = new SubscriptionsService(store, connections, extpayAdapter, ledger, events, { teams, clock, settings: config.rebill });
  const affiliates = new AffiliatesService(store, { allowPrivateTargets: config.webhookAllowPrivateTargets, timeoutMs: config.webhookTimeoutMs, retryScheduleMs: config.webhookRetryScheduleMs }, () => events.nudge());
  const orders = new OrdersService(store, catalog, customers, ledger, affiliates);
  affiliates.attachOrders(orders);
  fulfillments.attachShipping({ events, orders });
  const checkout = createCheckout({ store, catalog, customers, orders, payments, ledger, inbound, fulfillments, subscriptions, events, affiliates });
  return {
    config,
    store,
    secrets,
    clock,
    drainers: [mail.drainer, webhooks.drainer, affiliates.postbacks.drainer],
    services: {
      teams,
      users,
      apiTokens: new ApiTokensService(store),
      providers: new ProvidersService(store, (db, id) => teams.kindOf(db, id)),
      audit: new AuditService(store),
      idempotency: new IdempotencyService(store, secrets, config.idempotencyTtlHours),
      catalog,
      orders,
      customers,
      payments,
      ledger,
      inbound,
      fulfillments,
      subscriptions,
      gateways,
      fraud,
      events,
      connections,
      extpayEvents: new ExtpayEventsService(store, checkout, payments, ledger, inbound),
      checkout,
      affiliates,
      webhooks,
      mail,
      leads: new LeadFollowUpService(store, { orders, catalog, events, mail, clock }),
      tickets: new TicketsService({ store, customers, orders, users, storage: attachmentStorageFor(store.kind, config.dataDir) }),
    },
  };
}
