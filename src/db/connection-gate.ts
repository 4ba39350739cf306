import type pg from 'pg';
import type { PipelinedConnection } from './pipelined-connection.ts';

/**
 * The pool's connections, handed out in two lines instead of pg-pool's one. A transaction that
 * records what already happened outside the database (a provider's answer to a charge: the outcome
 * phase of the payment core) takes the next free connection ahead of every transaction that starts
 * new work. Why:
 * - money that moved is on record sooner: the window in which a crash leaves an attempt to the
 *   recovery run is as short as the connection allows, not as long as the queue of new requests;
 * - a request that has done most of its work (its attempt committed, the provider answered) is not
 *   queued again behind requests that have done none. Under load a payment or an upsell waits for a
 *   connection twice and a lead once; the second wait is what made their tail (bench/README.md,
 *   thirty-first round).
 * Within each line it is first come, first served, and ahead-of-line transactions are few (one per
 * provider call) and short (one round trip), so new work is never starved.
 *
 * At most `size` connections are checked out through the gate (the pool's own `max`); pg-pool never
 * queues one of them itself. A waiter gives up after `timeoutMs` (0: never) with pg-pool's own
 * words (a database that hangs reads as unavailable: faults.ts), as pg-pool's queue did.
 *
 * It also holds the one PipelinedConnection of each client, shared by the drivers of both lines:
 * a client's named statements are known once, whichever line used it.
 */
export class ConnectionGate {
  private free: number;
  private readonly ahead: Waiter[] = [];
  private readonly behind: Waiter[] = [];
  private ended: Promise<void> | null = null;
  readonly connections = new WeakMap<pg.PoolClient, PipelinedConnection>();
  /** Connections handed out since start, per line (`checkstand_db_checkouts_total`). */
  readonly checkouts = { outcome: 0, new: 0 };

  constructor(
    readonly pool: pg.Pool,
    readonly size: number,
    private readonly timeoutMs: number,
  ) {
    this.free = size;
  }

  /** Transactions waiting for a connection, in both lines. */
  get waitingCount(): number {
    return this.ahead.length + this.behind.length;
  }

  /** A client of the pool once one is free for this line; release() gives it back. */
  async connect(ahead: boolean): Promise<pg.PoolClient> {
    if (this.free > 0) this.free--;
    else await this.wait(ahead ? this.ahead : this.behind);
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      this.release();
      throw err;
    }
    if (ahead) this.checkouts.outcome++;
    else this.checkouts.new++;
    return client;
  }

  /** After the client went back to the pool: the next waiter (ahead of line first) takes its place. */
  release(): void {
    const next = this.ahead.shift() ?? this.behind.shift();
    if (next) {
      clearTimeout(next.timer);
      next.resolve();
    } else {
      this.free++;
    }
  }

  end(): Promise<void> {
    this.ended ??= this.pool.end();
    return this.ended;
  }

  private wait(line: Waiter[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { resolve, timer: undefined };
      if (this.timeoutMs > 0) {
        waiter.timer = setTimeout(() => {
          const at = line.indexOf(waiter);
          if (at >= 0) line.splice(at, 1);
          reject(new Error('timeout exceeded when trying to connect'));
        }, this.timeoutMs);
      }
      line.push(waiter);
    });
  }
}

interface Waiter {
  resolve: () => void;
  timer: NodeJS.Timeout | undefined;
}
