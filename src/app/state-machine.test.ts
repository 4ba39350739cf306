import { describe, expect, it } from 'vitest';
import { ApiError } from './errors.ts';
import { defineMachine, transition, type TransitionEvent } from './state-machine.ts';
import { walkMachine } from './state-machine.walk.ts';

const DOOR_MOVES = {
  open: ['closed'],
  closed: ['open', 'locked', 'bricked'],
  locked: ['closed'],
  bricked: [],
} as const;

const DOOR = defineMachine('door', DOOR_MOVES, { initial: ['closed'] });
const LAMP = defineMachine('item', { off: ['on'], on: ['off', 'broken'], broken: [] } as const, { initial: ['off'] });

describe('defineMachine', () => {
  it('exposes the table: states, moves, initial and terminal states', () => {
    expect(DOOR.name).toBe('door');
    expect(DOOR.states).toEqual(['open', 'closed', 'locked', 'bricked']);
    expect(DOOR.moves).toBe(DOOR_MOVES);
    expect(DOOR.initial).toEqual(['closed']);
    expect(DOOR.terminal).toEqual(['bricked']);
    expect(DOOR.isState('locked')).toBe(true);
    expect(DOOR.isState('ajar')).toBe(false);
    expect(DOOR.isState(null)).toBe(false);
    walkMachine(DOOR);
  });

  it('defaults the initial states to those nothing moves to', () => {
    expect(defineMachine('flow', { a: ['b'], b: ['c'], c: [] } as const).initial).toEqual(['a']);
  });

  it('refuses with the conflict error, naming the machine, both states and the right article', () => {
    expect(DOOR.canMove('open', 'locked')).toBe(false);
    expect(() => DOOR.assertMove('open', 'locked')).toThrow(new ApiError('conflict', 'A door in status open cannot move to locked.'));
    expect(() => LAMP.assertMove('broken', 'on')).toThrow('An item in status broken cannot move to on.');
    expect(() => DOOR.assertMove('ajar', 'open')).toThrow('A door in status ajar cannot move to open.');
    expect(() => DOOR.assertMove('closed', 'closed')).toThrow(/cannot move/);
    expect(() => DOOR.assertMove('closed', 'locked')).not.toThrow();
  });

  it('fails at definition on a malformed table', () => {
    const bad = (moves: Record<string, readonly string[]>, opts: { initial?: string[]; states?: string[] } = {}) => () =>
      defineMachine('bad', moves as Record<string, readonly string[]>, opts as { initial?: string[]; states?: string[] });
    expect(bad({ a: ['b'] })).toThrow(/a → b: b is not a state/);
    expect(bad({ a: ['a'] }, { initial: ['a'] })).toThrow(/a lists itself/);
    expect(bad({ a: ['b', 'b'], b: [] })).toThrow(/a lists b twice/);
    expect(bad({ a: ['b'], b: [] }, { states: ['a', 'b', 'c'] })).toThrow(/state c has no entry/);
    expect(bad({ a: ['b'], b: [], c: [] }, { states: ['a', 'b'], initial: ['a', 'c'] })).toThrow(/c is in the table but not one of its states/);
    expect(bad({ a: ['b'], b: [] }, { initial: ['z'] })).toThrow(/initial state z is not a state/);
    expect(bad({ a: ['b'], b: ['c'], c: [], d: ['a'], e: ['e2'], e2: ['e'] }, { initial: ['a'] })).toThrow(/unreachable from a: d, e, e2/);
    expect(bad({ a: ['b'], b: ['a'] })).toThrow(/no initial state/);
    expect(bad({ a: 'b' as unknown as string[] }, { initial: ['a'] })).toThrow(/no list of moves/);
    expect(bad({})).toThrow(/no states/);
    expect(() => defineMachine('', { a: [] } as const)).toThrow(/needs a name/);
  });
});

describe('transition', () => {
  const trx = { id: 'trx_1' };
  const recorder = () => {
    const log: string[] = [];
    const recordEvent = async (t: typeof trx, e: TransitionEvent) => {
      log.push(`event ${e.type} in ${t.id}`);
    };
    return { log, recordEvent };
  };

  it('checks the move, runs the write, then records the event, in the given transaction', async () => {
    const { log, recordEvent } = recorder();
    const result = await transition(trx, DOOR.move('closed', 'locked'), {
      write: async (t) => {
        log.push(`write in ${t.id}`);
        return 'row';
      },
      event: { teamId: 'team_1', orderId: 'ord_1', type: 'door.locked', data: { by: 'test' } },
      recordEvent,
    });
    expect(result).toBe('row');
    expect(log).toEqual(['write in trx_1', 'event door.locked in trx_1']);
  });

  it('refuses before anything is written or recorded', async () => {
    const { log, recordEvent } = recorder();
    const attempt = transition(trx, [DOOR.move('closed', 'open'), LAMP.move('broken', 'on')], {
      write: async () => log.push('write'),
      event: { teamId: 'team_1', orderId: 'ord_1', type: 'x' },
      recordEvent,
    });
    await expect(attempt).rejects.toMatchObject({ code: 'conflict', message: 'An item in status broken cannot move to on.' });
    expect(log).toEqual([]);
  });

  it('checks every move of a write that changes two machines, and lets a stay through', async () => {
    const { log, recordEvent } = recorder();
    await transition(trx, [DOOR.move('locked', 'locked'), LAMP.move('off', 'on')], { write: async () => log.push('write'), event: { teamId: 't', orderId: 'o', type: 'both' }, recordEvent });
    expect(log).toEqual(['write', 'event both in trx_1']);
    await transition(trx, [], { write: async () => log.push('write only'), event: null });
    expect(log.at(-1)).toBe('write only');
  });
});
