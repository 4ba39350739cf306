import { defineMachine } from '../../app/state-machine.ts';

export { ORDER_PAYMENT, PAYMENT_STATUSES, type PaymentStatus } from '../payments/states.ts';

export const ORDER_STATUSES = [
  'lead',
  'pending',
  'declined',
  'pending_external_confirmation',
  'processing',
  'completed',
  'cancelled',
  'refunded',
] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

/**
 * Allowed moves of an order, checked in one place. `processing` is the spec's "order
 * Processing": paid, not yet completed by Complete Order.
 */
export const ORDER_MOVES = {
  lead: ['pending', 'declined', 'processing', 'pending_external_confirmation', 'cancelled'],
  pending: ['declined', 'processing', 'pending_external_confirmation', 'cancelled'],
  declined: ['pending', 'processing', 'pending_external_confirmation', 'cancelled'],
  pending_external_confirmation: ['processing', 'declined', 'cancelled'],
  processing: ['completed', 'refunded', 'cancelled'],
  completed: ['refunded', 'cancelled'],
  cancelled: [],
  refunded: [],
} as const satisfies Record<OrderStatus, readonly OrderStatus[]>;

/** Initial: a lead (Create Lead), an order paid in the same call (Create Order, `pending`), a rebill order recorded `completed`. */
export const ORDER = defineMachine('order', ORDER_MOVES, { states: ORDER_STATUSES, initial: ['lead', 'pending', 'completed'] });

/** Orders a Process Payment may charge: a lead, or an unpaid or declined order. */
export const PAYABLE: readonly OrderStatus[] = ['lead', 'pending', 'declined'];

/** Orders a one-click upsell may be added to: paid, not yet refunded or cancelled. */
export const UPSELLABLE: readonly OrderStatus[] = ['processing', 'completed'];

export function canMove(from: OrderStatus, to: OrderStatus): boolean {
  return ORDER.canMove(from, to);
}

export function assertOrderMove(from: string, to: OrderStatus): void {
  ORDER.assertMove(from, to);
}

export const ORDER_UPSELL_STATUSES = ['in_flight', 'approved', 'declined', 'pending'] as const;
export type OrderUpsellStatus = (typeof ORDER_UPSELL_STATUSES)[number];

/**
 * An upsell's claim on an order (`order_upsells`): taken in flight, answered approved or declined,
 * or pending while the external provider confirms the charge (its payment.succeeded / failed ends it).
 */
export const ORDER_UPSELL_MOVES = {
  in_flight: ['approved', 'declined', 'pending'],
  pending: ['approved', 'declined'],
  approved: [],
  declined: [],
} as const satisfies Record<OrderUpsellStatus, readonly OrderUpsellStatus[]>;

export const ORDER_UPSELL = defineMachine('upsell', ORDER_UPSELL_MOVES, { states: ORDER_UPSELL_STATUSES, initial: ['in_flight'] });
