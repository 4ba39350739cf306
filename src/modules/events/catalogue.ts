/**
 * The outbound event catalogue: every event a merchant can subscribe a webhook endpoint to.
 * Payloads are `{ id, type, created_at, data: { object } }` where `object` is the API's view
 * of the order (or refund, or subscription) at the time of the event.
 */
export const EVENT_CATALOGUE = {
  'order.completed': 'The order was completed (Complete Order, or payment confirmation for redirect flows). Fired once per order.',
  'order.declined': 'A first payment (Create Order, Process Payment, Reprocess Payment) was declined.',
  'order.upsell_added': 'A one-click upsell was charged and its line added to the order.',
  'order.upsell_declined': 'A one-click upsell was declined; nothing was added.',
  'refund.created': 'A refund of a charge was approved by the gateway.',
  'charge.voided': 'A charge was voided before settlement.',
  'subscription.created': 'A subscription was created for a recurring or trial line at completion.',
  'subscription.updated': 'A subscription changed state (cancel, pause, restart, reactivate, a failed renewal, or a provider sync).',
  'subscription.renewed': 'A subscription renewed: the renewal is recorded as a new rebill order (the object is that order).',
  'subscription.past_due': "A card subscription's rebill was declined: it is past due and retried on the dunning schedule (the object is the subscription).",
  'subscription.recovered': 'A past-due card subscription was charged again successfully and is active (the object is the subscription).',
  'subscription.cancelled': 'A card subscription ended: a hard decline, its last dunning retry failed, or it reached the end of a period it was cancelled at (the object is the subscription).',
  'lead.abandoned':
    "A lead of a campaign with the abandoned-lead follow-up on stayed unpaid for the campaign's delay after its last change. Fired at most once per lead; the object is the order with `abandoned_at` and `checkout_url` (the campaign's checkout link for this lead, or null).",
  'order.disputed': 'A dispute (chargeback or early warning) was opened or updated on an order; the order is flagged for QA.',
  'fulfillment.shipped': "A fulfillment was marked shipped with its carrier and tracking number (the object is the fulfillment; its `order_number` names the order). Fired once per fulfillment.",
} as const;

export type EventType = keyof typeof EVENT_CATALOGUE;
export const EVENT_TYPES = Object.keys(EVENT_CATALOGUE) as EventType[];
