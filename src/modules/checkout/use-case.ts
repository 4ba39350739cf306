import type { Store } from '../../db/database.ts';
import type { AffiliatesService } from '../affiliates/service.ts';
import type { CatalogService } from '../catalog/service.ts';
import type { CustomersService } from '../customers/service.ts';
import type { EventsService } from '../events/service.ts';
import type { FulfillmentsService } from '../fulfillments/service.ts';
import type { OrdersService } from '../orders/service.ts';
import type { PaymentsService } from '../payments/service.ts';
import type { LedgerService } from '../ledger/service.ts';
import type { InboundService } from '../inbound/service.ts';
import type { SubscriptionsService } from '../subscriptions/service.ts';
import type { ExtpayEffects } from '../inbound/extpay-effects.ts';
import type { GatewayEvents } from '../inbound/gateway-events.ts';
import type { Renewals } from '../subscriptions/renew.ts';
import type { CardFirstPayment } from './card-first-payment.ts';
import type { CaptureUseCase } from './capture.ts';
import type { FinalizeUseCase } from './finalize.ts';
import type { PayUseCase } from './pay.ts';
import type { ReconcileUseCase } from './reconcile.ts';
import type { RebillUseCase } from './rebill.ts';
import type { ReverseUseCase } from './reverse.ts';
import type { UpsellSettlement } from './upsell-settle.ts';
import type { UpsellUseCase } from './upsell.ts';

/** The services a payment use case works through (each module through its service, never its tables). */
export interface CheckoutDeps {
  store: Store;
  catalog: CatalogService;
  customers: CustomersService;
  orders: OrdersService;
  payments: PaymentsService;
  ledger: LedgerService;
  inbound: InboundService;
  fulfillments: FulfillmentsService;
  subscriptions: SubscriptionsService;
  events: EventsService;
  affiliates: AffiliatesService;
}

/** The use cases, one file each; they reach each other through this registry. */
export interface UseCases {
  card: CardFirstPayment;
  pay: PayUseCase;
  upsell: UpsellUseCase;
  upsellSettlement: UpsellSettlement;
  capture: CaptureUseCase;
  finalize: FinalizeUseCase;
  reverse: ReverseUseCase;
  reconcile: ReconcileUseCase;
  rebill: RebillUseCase;
  gatewayEvents: GatewayEvents;
  extpayEffects: ExtpayEffects;
  renewals: Renewals;
}

export abstract class UseCase {
  protected readonly store: Store;
  protected readonly catalog: CatalogService;
  protected readonly customers: CustomersService;
  protected readonly orders: OrdersService;
  protected readonly payments: PaymentsService;
  protected readonly ledger: LedgerService;
  protected readonly inbound: InboundService;
  protected readonly fulfillments: FulfillmentsService;
  protected readonly subscriptions: SubscriptionsService;
  protected readonly events: EventsService;
  protected readonly affiliates: AffiliatesService;

  constructor(
    d: CheckoutDeps,
    protected readonly uc: UseCases,
  ) {
    this.store = d.store;
    this.catalog = d.catalog;
    this.customers = d.customers;
    this.orders = d.orders;
    this.payments = d.payments;
    this.ledger = d.ledger;
    this.inbound = d.inbound;
    this.fulfillments = d.fulfillments;
    this.subscriptions = d.subscriptions;
    this.events = d.events;
    this.affiliates = d.affiliates;
  }
}
