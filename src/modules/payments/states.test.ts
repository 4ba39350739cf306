import { describe, expect, it } from 'vitest';
import { walkMachine } from '../../app/state-machine.walk.ts';
import { EXTPAY_DISPUTE_STAGES } from '../../providers/extpay/status.ts';
import {
  CHARGEBACK,
  DISPUTE,
  DISPUTE_STATUSES,
  ORDER_PAYMENT,
  ORDER_PAYMENT_STATES,
  orderPaymentState,
  REFUND,
  SALE,
  TRANSACTION_MACHINES,
  transactionMachine,
  transactionState,
  VOID,
} from './states.ts';

describe('payment state machines', () => {
  it.each([ORDER_PAYMENT, SALE, REFUND, VOID, CHARGEBACK, DISPUTE])('$name: walked pair by pair', (m) => walkMachine(m));

  it("an order's payment_status: null is none; voided ends it", () => {
    expect(ORDER_PAYMENT.states).toEqual(ORDER_PAYMENT_STATES);
    expect(orderPaymentState(null)).toBe('none');
    expect(orderPaymentState('declined')).toBe('declined');
    expect(ORDER_PAYMENT.terminal).toEqual(['voided']);
    // A new payment may start over a decline or an open redirect; an under-review one waits for its answer.
    expect(ORDER_PAYMENT.canMove('declined', 'pending_redirect')).toBe(true);
    expect(ORDER_PAYMENT.canMove('pending_external_confirmation', 'pending_redirect')).toBe(false);
    expect(() => ORDER_PAYMENT.assertMove('completed', 'declined')).toThrow('An order payment in status completed cannot move to declined.');
  });

  it('an attempt in flight takes the answer; an approved or declined sale never moves', () => {
    expect(transactionState({ status: 'pending', in_flight: true })).toBe('in_flight');
    expect(transactionState({ status: 'pending', in_flight: false })).toBe('pending');
    // A refund settled by the provider's event while our call was out keeps in_flight; its status says where it is.
    expect(transactionState({ status: 'approved', in_flight: true })).toBe('approved');
    for (const to of ['approved', 'declined', 'pending'] as const) expect(SALE.canMove('in_flight', to)).toBe(true);
    expect(SALE.terminal).toEqual(['approved', 'declined']);
    expect(() => SALE.assertMove('approved', 'declined')).toThrow('A sale in status approved cannot move to declined.');
  });

  it('a refund stays provisional at the provider; a void is answered once', () => {
    expect(REFUND.canMove('approved', 'declined')).toBe(true);
    expect(REFUND.canMove('declined', 'approved')).toBe(true);
    expect(REFUND.canMove('approved', 'in_flight')).toBe(false);
    expect(REFUND.terminal).toEqual([]);
    expect(VOID.terminal).toEqual(['approved', 'declined']);
    expect(() => VOID.assertMove('approved', 'declined')).toThrow('A void in status approved cannot move to declined.');
    expect(CHARGEBACK.states).toEqual(['approved']);
  });

  it('finds the machine of a transaction type', () => {
    expect(transactionMachine('sale')).toBe(SALE);
    expect(transactionMachine('refund')).toBe(REFUND);
    expect(transactionMachine('void')).toBe(VOID);
    expect(transactionMachine('chargeback')).toBe(CHARGEBACK);
    expect(Object.keys(TRANSACTION_MACHINES)).toEqual(['sale', 'verification', 'refund', 'void', 'chargeback']);
    expect(() => transactionMachine('toString')).toThrow(/No state machine/);
  });

  it('a dispute reads forward through its stages and never goes back to the early warning', () => {
    expect([...DISPUTE.states].sort()).toEqual([...DISPUTE_STATUSES].sort());
    expect(DISPUTE.initial).toEqual(DISPUTE_STATUSES);
    expect([...DISPUTE.terminal].sort()).toEqual(['closed', 'lost', 'warning_closed', 'won']);
    // The paths the provider takes in the integration tests.
    expect(DISPUTE.canMove('warning_needs_response', 'needs_response')).toBe(true);
    expect(DISPUTE.canMove('needs_response', 'lost')).toBe(true);
    expect(DISPUTE.canMove('warning_needs_response', 'won')).toBe(true);
    const rank = { early_warning: 0, unknown: 1, chargeback: 1, won: 2 } as const;
    for (const from of DISPUTE.states) {
      for (const to of DISPUTE.moves[from]) {
        if (from === 'other' || to === 'other') continue;
        expect(rank[EXTPAY_DISPUTE_STAGES[to]], `${from} → ${to}`).toBeGreaterThanOrEqual(rank[EXTPAY_DISPUTE_STAGES[from]]);
      }
    }
  });
});
