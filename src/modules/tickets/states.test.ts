import { describe, expect, it } from 'vitest';
import { walkMachine } from '../../app/state-machine.walk.ts';
import { FULFILLMENT } from '../fulfillments/states.ts';
import { TICKET } from './states.ts';

describe('ticket and fulfillment state machines', () => {
  it('a ticket is reopened until it is closed; closed is final', () => {
    walkMachine(TICKET);
    expect(TICKET.terminal).toEqual(['closed']);
    expect(TICKET.canMove('solved', 'open')).toBe(true);
    expect(() => TICKET.assertMove('closed', 'open')).toThrow('A ticket in status closed cannot move to open.');
  });
  it('a fulfillment ships once, from pending', () => {
    walkMachine(FULFILLMENT);
    expect(FULFILLMENT.canMove('pending', 'shipped')).toBe(true);
    expect(() => FULFILLMENT.assertMove('cancelled', 'shipped')).toThrow('A fulfillment in status cancelled cannot move to shipped.');
  });
});
