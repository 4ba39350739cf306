import { ExtpayEffects } from '../inbound/extpay-effects.ts';
import { GatewayEvents } from '../inbound/gateway-events.ts';
import { Renewals } from '../subscriptions/renew.ts';
import { CardFirstPayment } from './card-first-payment.ts';
import { CaptureUseCase } from './capture.ts';
import { FinalizeUseCase } from './finalize.ts';
import { PayUseCase } from './pay.ts';
import { ReconcileUseCase } from './reconcile.ts';
import { RebillUseCase } from './rebill.ts';
import { ReverseUseCase } from './reverse.ts';
import { UpsellSettlement } from './upsell-settle.ts';
import { UpsellUseCase } from './upsell.ts';
import type { CheckoutDeps, UseCases } from './use-case.ts';

export type { CheckoutDeps, UseCases } from './use-case.ts';

/** The payment use cases, assembled once: routes, webhooks, the worker and the CLI call them here. */
export function createCheckout(d: CheckoutDeps): UseCases {
  const uc = {} as UseCases;
  uc.card = new CardFirstPayment({ store: d.store, payments: d.payments, catalog: d.catalog, events: d.events, orders: d.orders, ledger: d.ledger, affiliates: d.affiliates, recordEvents: (trx, teamId, orderId, evs) => d.orders.recordEvents(trx, teamId, orderId, evs) });
  uc.pay = new PayUseCase(d, uc);
  uc.upsell = new UpsellUseCase(d, uc);
  uc.upsellSettlement = new UpsellSettlement(d, uc);
  uc.capture = new CaptureUseCase(d, uc);
  uc.finalize = new FinalizeUseCase(d, uc);
  uc.reverse = new ReverseUseCase(d, uc);
  uc.reconcile = new ReconcileUseCase(d, uc);
  uc.rebill = new RebillUseCase(d, uc);
  uc.gatewayEvents = new GatewayEvents(d, uc);
  uc.extpayEffects = new ExtpayEffects(d, uc);
  uc.renewals = new Renewals(d, uc);
  return uc;
}
