import { type Machine, transition } from '../../app/state-machine.ts';
import type { Tx } from '../../db/database.ts';
import type { Row, RowPatch } from '../../db/schema.ts';
import { transactionMachine, transactionState } from '../payments/states.ts';
import * as repo from './repo.ts';

/** The machine of a row's type, over plain strings (the row's columns are). */
function machineOf(type: string): Machine<string> {
  return transactionMachine(type) as Machine<string>;
}

/** A row's state in its machine; a refund or void still `pending` is waiting for its provider's answer. */
function stateOf(t: { type: string; status: string; in_flight: boolean }): string {
  return (t.type === 'refund' || t.type === 'void') && t.status === 'pending' ? 'in_flight' : transactionState(t);
}

/**
 * The one way a transaction's status changes: the move from what the row is now (read under its
 * lock by the caller) to what `patch` makes it is checked against its machine (sale, refund, void),
 * then written. The caller records the order's timeline row for the change in the same transaction.
 */
export function moveTransaction(trx: Tx, current: Row<'transactions'>, patch: RowPatch<'transactions'>): Promise<Row<'transactions'>> {
  const next = { type: current.type, status: patch.status ?? current.status, in_flight: patch.in_flight ?? current.in_flight };
  return transition(trx, machineOf(current.type).move(stateOf(current), stateOf(next)), { write: (t) => repo.updateTransaction(t, current.team_id, current.id, patch), event: null });
}

/**
 * Phase 3 for an attempt still in flight: the move in_flight → its answer is checked, and written
 * only while the row is still in flight. Undefined when another path recorded the answer first.
 */
export function closeAttempt(trx: Tx, teamId: string, attempt: Pick<Row<'transactions'>, 'id' | 'type'>, patch: RowPatch<'transactions'>): Promise<Row<'transactions'> | undefined> {
  const to = stateOf({ type: attempt.type, status: patch.status ?? 'pending', in_flight: false });
  return transition(trx, machineOf(attempt.type).move('in_flight', to), { write: (t) => repo.closeAttempt(t, teamId, attempt.id, patch), event: null });
}


/**
 * closeAttempt() for a caller that sends the answer's consequences with it, in one socket write
 * (repo.closeAttemptAtCommit): the move is checked here, the row's in-flight state by the statement
 * itself, which fails the transaction (SQLSTATE CS409) when another path recorded the answer first.
 * The answer is the attempt as the statement leaves it.
 */
export async function closeAttemptAtCommit(trx: Tx, teamId: string, attempt: Row<'transactions'>, patch: RowPatch<'transactions'>): Promise<Row<'transactions'>> {
  const to = stateOf({ type: attempt.type, status: patch.status ?? 'pending', in_flight: false });
  await transition(trx, machineOf(attempt.type).move('in_flight', to), { write: (t) => repo.closeAttemptAtCommit(t, teamId, attempt.id, patch), event: null });
  return { ...attempt, ...patch, in_flight: false } as Row<'transactions'>;
}
