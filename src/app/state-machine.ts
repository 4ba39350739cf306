import { ApiError } from './errors.ts';

/**
 * A state machine is data plus one check (STYLE.md): a const table of the moves each state allows,
 * validated when it is defined so a malformed table fails at start-up, and one `assertMove`.
 * A stay (from === to) is not a move: tables never list one, and `transition` lets it through.
 */
export interface Machine<S extends string> {
  readonly name: string;
  readonly states: readonly S[];
  readonly moves: Readonly<Record<S, readonly S[]>>;
  /** Where rows of this machine are created. Every other state is reachable from one of them. */
  readonly initial: readonly S[];
  /** States with no way out. */
  readonly terminal: readonly S[];
  isState(value: string | null | undefined): value is S;
  canMove(from: string, to: S): boolean;
  /** Throws ApiError('conflict', 'A <name> in status <from> cannot move to <to>.') unless the table lists the move. */
  assertMove(from: string, to: S): void;
  /** One move of this machine, for `transition`; checked there, not here. */
  move(from: string, to: S): Move;
}

export interface Move {
  readonly machine: { readonly name: string; assertMove(from: string, to: string): void };
  readonly from: string;
  readonly to: string;
}

export type StateOf<M> = M extends Machine<infer S> ? S : never;

/** The states of a table: its keys. */
type StatesOf<M> = Extract<keyof M, string>;

function article(name: string): string {
  return /^[aeiou]/i.test(name) ? 'An' : 'A';
}

/**
 * Defines a machine from its table. Throws (a programming error, not a client's) when a target is
 * not a state, a state lists itself or a target twice, `states` is given and the table's keys
 * differ from it, an initial state is unknown, or a state cannot be reached from an initial one.
 * `initial` defaults to the states nothing moves to.
 */
export function defineMachine<M extends { readonly [K in keyof M]: readonly StatesOf<M>[] }>(
  name: string,
  moves: M,
  opts: { initial?: readonly StatesOf<NoInfer<M>>[]; states?: readonly StatesOf<NoInfer<M>>[] } = {},
): Machine<StatesOf<M>> {
  type S = StatesOf<M>;
  const table = moves as unknown as Readonly<Record<S, readonly S[]>>;
  const fail = (why: string): never => {
    throw new Error(`State machine "${name}": ${why}`);
  };
  if (!name) fail('it needs a name');
  const keys = Object.keys(table) as S[];
  if (keys.length === 0) fail('it has no states');
  const known = new Set<string>(keys);
  if (opts.states) {
    for (const s of opts.states) if (!known.has(s)) fail(`state ${s} has no entry in the table`);
    const listed = new Set<string>(opts.states);
    for (const s of keys) if (!listed.has(s)) fail(`${s} is in the table but not one of its states`);
  }
  // In the order of `states` when given (the order the API lists them), else the table's.
  const states = opts.states ? [...new Set(opts.states)] : keys;
  for (const from of states) {
    const targets = table[from] as readonly string[] | undefined;
    if (!Array.isArray(targets)) fail(`state ${from} has no list of moves`);
    const seen = new Set<string>();
    for (const to of targets!) {
      if (!known.has(to)) fail(`${from} → ${to}: ${to} is not a state`);
      if (to === from) fail(`${from} lists itself: a stay is not a move`);
      if (seen.has(to)) fail(`${from} lists ${to} twice`);
      seen.add(to);
    }
  }
  const targeted = new Set<string>(states.flatMap((s) => table[s] as readonly string[]));
  const initial = opts.initial ?? states.filter((s) => !targeted.has(s));
  if (initial.length === 0) fail('no initial state: give `initial`');
  for (const s of initial) if (!known.has(s)) fail(`initial state ${s} is not a state`);
  const reached = new Set<string>(initial);
  const queue: string[] = [...initial];
  for (let s = queue.shift(); s !== undefined; s = queue.shift()) {
    for (const to of table[s as S]) {
      if (!reached.has(to)) {
        reached.add(to);
        queue.push(to);
      }
    }
  }
  const unreachable = states.filter((s) => !reached.has(s));
  if (unreachable.length > 0) fail(`unreachable from ${initial.join(', ')}: ${unreachable.join(', ')}`);

  const canMove = (from: string, to: S): boolean => known.has(from) && (table[from as S] as readonly string[]).includes(to);
  const machine: Machine<S> = {
    name,
    states: Object.freeze([...states]),
    moves: table,
    initial: Object.freeze([...initial]),
    terminal: Object.freeze(states.filter((s) => table[s].length === 0)),
    isState: (value): value is S => typeof value === 'string' && known.has(value),
    canMove,
    assertMove(from, to) {
      if (!canMove(from, to)) throw new ApiError('conflict', `${article(name)} ${name} in status ${from} cannot move to ${to}.`);
    },
    move: (from, to) => ({ machine, from, to }),
  };
  return Object.freeze(machine);
}

/** The order_events row an applied transition writes. */
export interface TransitionEvent {
  teamId: string;
  orderId: string;
  type: string;
  data?: Record<string, unknown>;
}

export type TransitionStep<Tx, T> = { write: (trx: Tx) => Promise<T> } & (
  | { event: TransitionEvent; recordEvent: (trx: Tx, event: TransitionEvent) => Promise<void> }
  /** null: the caller records the change's event itself, in the same transaction. */
  | { event: null }
);

/**
 * The one way a status changes: every move is checked (stays pass), then the write runs, then the
 * order_events row is recorded — all in the caller's transaction, which holds the row lock the
 * `from` states were read under. A refused move throws before anything is written.
 */
export async function transition<Tx, T>(trx: Tx, moves: Move | readonly Move[], step: TransitionStep<Tx, T>): Promise<T> {
  const list: readonly Move[] = 'machine' in moves ? [moves] : moves;
  for (const m of list) if (m.from !== m.to) m.machine.assertMove(m.from, m.to);
  const result = await step.write(trx);
  if (step.event) await step.recordEvent(trx, step.event);
  return result;
}
