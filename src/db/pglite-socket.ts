/**
 * node-postgres on the embedded database through the wire protocol's bytes (issue 13). The stream
 * stands in for a socket: what node-postgres writes in one turn of the event loop (a statement's
 * Parse, Bind, Describe, Execute and Sync) goes to PGlite as one `execProtocolRawStream` call, and
 * the bytes PGlite answers are parsed by node-postgres's own parser, as a server's would be.
 *
 * It replaces PGlite's node-postgres adapter (`createPgConfig`), which ran `execProtocolStream` once
 * per protocol message (five per statement, each with its own file-system sync) and parsed every
 * answer with PGlite's own JavaScript parser: with it, PGlite's JavaScript was 22% of the server
 * thread in the bench, as much as its WebAssembly.
 */
import { Duplex } from 'node:stream';
import type { PGlite } from '@electric-sql/pglite';

/**
 * `ROLLBACK` as a simple-query protocol message, then a Sync: whatever the connection before left
 * open ends without committing. A transaction between BEGIN and COMMIT, or a protocol transaction
 * (protocol-transactions.ts: statements sent with Flush, no Sync yet), is rolled back by the
 * ROLLBACK; one PostgreSQL already aborted skips the ROLLBACK and ends at the Sync.
 */
const ROLLBACK = (() => {
  const text = Buffer.from('ROLLBACK\0');
  const msg = Buffer.alloc(5 + text.length + 5);
  msg.write('Q', 0, 'latin1');
  msg.writeInt32BE(4 + text.length, 1);
  text.copy(msg, 5);
  msg.write('S', 5 + text.length, 'latin1');
  msg.writeInt32BE(4, 6 + text.length);
  return new Uint8Array(msg);
})();

/** Embedded databases a connection has spoken to: the next one's first batch ends what it left open. */
const used = new WeakSet<PGlite>();

export class PgliteSocket extends Duplex {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private scheduled = false;
  /** Whether this connection's first batch (its startup message) has gone to PGlite. */
  private started = false;
  /** One call at a time, in the order written: PGlite is one session. */
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly pglite: PGlite) {
    super();
  }

  // The socket methods node-postgres calls.
  setNoDelay(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }

  connect(): this {
    this.queue = this.pglite.waitReady.then(
      () => void this.emit('connect'),
      (err: unknown) => void this.destroy(err as Error),
    );
    return this;
  }

  override _read(): void {}

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.enqueue(chunk);
    cb();
  }

  override _writev(chunks: { chunk: Buffer }[], cb: (err?: Error | null) => void): void {
    for (const { chunk } of chunks) this.enqueue(chunk);
    cb();
  }

  private enqueue(chunk: Buffer): void {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    if (this.pending.length === 0) return;
    const bytes = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    this.queue = this.queue.then(async () => {
      if (this.destroyed) return;
      try {
        // This connection's first batch (its startup message): the one before it is gone (the pool
        // holds one), and a transaction it left open is rolled back, as a server does when a client
        // goes away, so this one does not start inside it. (PGlite's isInTransaction() does not see
        // a protocol transaction: every connection after the first sends the ROLLBACK.)
        const first = !this.started;
        this.started = true;
        if (first && (used.has(this.pglite) || this.pglite.isInTransaction())) await this.pglite.execProtocolRawStream(ROLLBACK, { onRawData: () => {} });
        used.add(this.pglite);
        // The answer arrives as views of PGlite's WebAssembly memory: each is copied at once. (The
        // raw call without a callback parses every answer in PGlite's JavaScript and keeps the
        // messages, a list that grows for as long as the instance lives.)
        const answer: Uint8Array[] = [];
        await this.pglite.execProtocolRawStream(bytes, { onRawData: (view) => void answer.push(view.slice()) });
        if (this.destroyed) return;
        for (const a of answer) this.push(Buffer.from(a.buffer, a.byteOffset, a.byteLength));
      } catch (err) {
        this.destroy(err as Error);
      }
    });
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.flush();
    void this.queue.then(() => {
      this.push(null);
      cb();
    });
  }
}
