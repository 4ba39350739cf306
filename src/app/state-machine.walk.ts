import { expect } from 'vitest';
import { ApiError } from './errors.ts';
import type { Machine } from './state-machine.ts';

/**
 * For the states.test.ts files beside each table: walks every pair of states of a machine and
 * checks the table and the check agree — every state is initial or reachable, every listed move is
 * allowed, every other pair (stays included) is refused with the conflict error, terminal states
 * have no moves.
 */
export function walkMachine(m: Machine<string>): void {
  const reached = new Set<string>(m.initial);
  for (let grew = true; grew; ) {
    grew = false;
    for (const from of [...reached]) {
      for (const to of m.moves[from]!) {
        if (!reached.has(to)) {
          reached.add(to);
          grew = true;
        }
      }
    }
  }
  expect([...reached].sort(), `${m.name}: every state initial or reachable`).toEqual([...m.states].sort());
  for (const from of m.states) {
    const listed = new Set<string>(m.moves[from]!);
    for (const to of m.states) {
      if (listed.has(to)) {
        expect(m.canMove(from, to), `${m.name}: ${from} → ${to} is listed`).toBe(true);
        expect(() => m.assertMove(from, to)).not.toThrow();
        continue;
      }
      expect(m.canMove(from, to), `${m.name}: ${from} → ${to} is not listed`).toBe(false);
      let refused: unknown;
      try {
        m.assertMove(from, to);
      } catch (err) {
        refused = err;
      }
      expect(refused, `${m.name}: ${from} → ${to} refused`).toBeInstanceOf(ApiError);
      expect((refused as ApiError).code).toBe('conflict');
      expect((refused as ApiError).status).toBe(409);
      expect((refused as ApiError).message).toMatch(new RegExp(`^An? ${m.name} in status ${from} cannot move to ${to}\\.$`));
    }
  }
  for (const s of m.terminal) expect(m.moves[s], `${m.name}: terminal ${s}`).toEqual([]);
  expect([...m.terminal].sort()).toEqual(m.states.filter((s) => m.moves[s]!.length === 0).sort());
  expect(m.canMove('no_such_status', m.states[0]!), `${m.name}: an unknown status moves nowhere`).toBe(false);
}
