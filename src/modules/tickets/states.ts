import { defineMachine } from '../../app/state-machine.ts';

export const TICKET_STATUSES = ['open', 'pending', 'solved', 'closed'] as const;
export type TicketStatus = (typeof TICKET_STATUSES)[number];

/**
 * A ticket (as Zendesk and Help Scout keep them): `open` waits on the team, `pending` on the customer,
 * `solved` can be reopened, `closed` is final (a follow-up is a new ticket). A message from the
 * customer on a pending or solved ticket reopens it.
 */
export const TICKET_MOVES = {
  open: ['pending', 'solved', 'closed'],
  pending: ['open', 'solved', 'closed'],
  solved: ['open', 'closed'],
  closed: [],
} as const satisfies Record<TicketStatus, readonly TicketStatus[]>;

export const TICKET = defineMachine('ticket', TICKET_MOVES, { states: TICKET_STATUSES, initial: ['open'] });
