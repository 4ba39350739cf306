import { defineMachine } from '../../app/state-machine.ts';

export const FULFILLMENT_STATUSES = ['pending', 'shipped', 'delivered', 'cancelled'] as const;
export type FulfillmentStatus = (typeof FULFILLMENT_STATUSES)[number];

/**
 * A fulfillment is created `pending` at completion; POST /v1/fulfillments/{id}/ship moves it to
 * `shipped` once. Shipping again with the same carrier and tracking number is answered as a no-op
 * (as a second Complete Order is); with other tracking it is a 409 (the parcel has left).
 */
export const FULFILLMENT_MOVES = {
  pending: ['shipped', 'cancelled'],
  shipped: ['delivered'],
  delivered: [],
  cancelled: [],
} as const satisfies Record<FulfillmentStatus, readonly FulfillmentStatus[]>;

export const FULFILLMENT = defineMachine('fulfillment', FULFILLMENT_MOVES, { states: FULFILLMENT_STATUSES, initial: ['pending'] });
