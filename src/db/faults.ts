import { EventEmitter } from 'node:events';

/**
 * SQLSTATEs that mean "the database went away", not "your statement is wrong": connection
 * exceptions (class 08), the server shutting down or starting up (57P01 admin shutdown on a
 * fast restart or pg_terminate_backend, 57P02 crash shutdown, 57P03 cannot connect now while it
 * recovers), and no free connection slot (53300).
 */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);
const UNAVAILABLE_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTCONN']);
// node-postgres and pg-pool say these in words, without a code.
const UNAVAILABLE_MESSAGES = [
  'Connection terminated', // …unexpectedly, …due to connection timeout
  'is not queryable',
  'timeout exceeded when trying to connect',
];

/** True when `err` (or an error it wraps) says the database connection failed, whatever the statement was. */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && (UNAVAILABLE_SQLSTATES.has(code) || code.startsWith('08') || UNAVAILABLE_ERRNO.has(code))) return true;
    if (typeof message === 'string' && UNAVAILABLE_MESSAGES.some((m) => message.includes(m))) return true;
    // AggregateError (a connect to localhost tried on ::1 and 127.0.0.1): any of them.
    const errors = (e as { errors?: unknown }).errors;
    if (Array.isArray(errors) && errors.some((x) => isDatabaseUnavailable(x))) return true;
  }
  return false;
}

export interface HealthEvents {
  down: [err: Error];
  up: [outageMs: number];
}

/**
 * Whether the database answers, as this process last saw it. Marked down by a connection error
 * (a statement failing with one, or the driver's `error` event on any connection); marked up by
 * the next statement that succeeds, or by the probe that runs while it is down, so a process with
 * no traffic notices too. `down` and `up` fire once per outage.
 */
export class DatabaseHealth extends EventEmitter<HealthEvents> {
  up = true;
  /** Connection errors seen since start (the `checkstand_db_connection_errors_total` metric). */
  connectionErrors = 0;
  downSince: number | null = null;
  private probeTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly probe: () => Promise<void>,
    private readonly probeEveryMs = 500,
  ) {
    super();
  }

  /** A statement or connection failed: counts it and, when it is a connection failure, marks the database down. */
  observe(err: unknown): void {
    if (!isDatabaseUnavailable(err)) return;
    this.connectionErrors++;
    if (!this.up) return;
    this.up = false;
    this.downSince = Date.now();
    this.emit('down', err instanceof Error ? err : new Error(String(err)));
    this.scheduleProbe();
  }

  /** A statement succeeded. */
  ok(): void {
    if (this.up) return;
    this.up = true;
    const outageMs = Date.now() - (this.downSince ?? Date.now());
    this.downSince = null;
    if (this.probeTimer) clearTimeout(this.probeTimer);
    this.probeTimer = undefined;
    this.emit('up', outageMs);
  }

  close(): void {
    this.closed = true;
    if (this.probeTimer) clearTimeout(this.probeTimer);
  }

  private scheduleProbe(): void {
    if (this.closed || this.probeTimer) return;
    this.probeTimer = setTimeout(() => {
      this.probeTimer = undefined;
      if (this.up || this.closed) return;
      this.probe().then(
        () => this.ok(),
        (err: unknown) => {
          if (isDatabaseUnavailable(err)) this.connectionErrors++;
          this.scheduleProbe();
        },
      );
    }, this.probeEveryMs);
    this.probeTimer.unref();
  }
}
