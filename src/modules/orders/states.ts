import { ApiError } from '../../app/errors.ts';

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

/** Orders a Process Payment may charge: a lead, or an unpaid or declined order. */
export const PAYABLE: readonly OrderStatus[] = ['lead', 'pending', 'declined'];

/** Orders a one-click upsell may be added to: paid, not yet refunded or cancelled. */
export const UPSELLABLE: readonly OrderStatus[] = ['processing', 'completed'];

export const PAYMENT_STATUSES = ['pending_redirect', 'pending_external_confirmation', 'completed', 'declined', 'voided'] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

export function canMove(from: OrderStatus, to: OrderStatus): boolean {
  return (ORDER_MOVES[from] as readonly OrderStatus[]).includes(to);
}

export function assertOrderMove(from: string, to: OrderStatus): void {
  if (!canMove(from as OrderStatus, to)) {
    throw new ApiError('conflict', `An order in status ${from} cannot move to ${to}.`);
  }
}
