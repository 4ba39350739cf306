/**
 * The embedded database on its own thread (issue 13): PGlite runs in a worker thread
 * (pglite-thread.mjs) and node-postgres talks to it through a stream that stands in for a socket.
 * Each client's stream is a MessagePort to the thread: what node-postgres writes (a statement's
 * Parse/Bind/Execute/Sync, written in one go) is posted as one message, PGlite answers with the
 * bytes a server would send, and node-postgres parses them as it parses a socket's. HTTP, Kysely and
 * the protocol parsing stay on the main thread, PostgreSQL's own work moves to the other core.
 *
 * The data dir's lock stays with the process (database.ts), so one process still owns it; the
 * thread dies with the process (SIGKILL included), as PGlite did on the main thread.
 */
import { Duplex } from 'node:stream';
import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads';

export interface PgliteThreadOptions {
  /** The database folder (`<data dir>/pg`); without it an in-memory database. */
  dataDir?: string;
  /** An in-memory database's starting contents (a `dumpDataDir` tarball: the tests' migrated snapshot). */
  loadDataDir?: Uint8Array;
  /** Added to PGlite's own start parameters (e.g. `-c shared_buffers=16MB`). */
  startParams?: string[];
}

const THREAD_FILE = new URL('./pglite-thread.mjs', import.meta.url);

/** The stream node-postgres reads and writes in place of a socket, over one MessagePort. */
class ThreadStream extends Duplex {
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  private scheduled = false;
  private opened = false;

  private port!: MessagePort;

  constructor(private readonly thread: PgliteThread) {
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
    this.port?.ref();
    return this;
  }
  unref(): this {
    this.port?.unref();
    return this;
  }

  connect(): this {
    const failure = this.thread.failure;
    if (failure) {
      process.nextTick(() => this.destroy(failure));
      return this;
    }
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.opened = true;
    port1.on('message', (m: Uint8Array | { error: string }) => {
      if (m instanceof Uint8Array) this.push(Buffer.from(m.buffer, m.byteOffset, m.byteLength));
      else this.destroy(new Error(`embedded database: ${m.error}`));
    });
    this.thread.attach(this, port2);
    process.nextTick(() => this.emit('connect'));
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

  /** What is written in one turn of the event loop goes as one message (a statement's five protocol messages, one batch). */
  private enqueue(chunk: Buffer): void {
    if (!this.opened) throw new Error('embedded database: write before connect');
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    if (this.pending.length === 0 || this.destroyed) return;
    const bytes = new Uint8Array(this.pendingBytes);
    let at = 0;
    for (const c of this.pending) {
      bytes.set(c, at);
      at += c.length;
    }
    this.pending = [];
    this.pendingBytes = 0;
    this.port.postMessage(bytes, [bytes.buffer]);
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.flush();
    this.push(null);
    cb();
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.thread.detach(this);
    this.port?.close();
    cb(err);
  }
}

/** The worker thread running PGlite, and the streams of its connections. */
export class PgliteThread {
  private readonly worker: Worker;
  private readonly streams = new Set<ThreadStream>();
  /** Why the thread can no longer answer (it failed to start, crashed or was closed). */
  failure: Error | null = null;

  private constructor(options: PgliteThreadOptions) {
    this.worker = new Worker(THREAD_FILE, { workerData: options });
    this.worker.on('error', (err) => this.fail(new Error(`embedded database thread failed: ${err.message}`)));
    this.worker.on('exit', (code) => this.fail(new Error(`embedded database thread exited (code ${code})`)));
  }

  /** Starts the thread and waits until PGlite is ready (or failed to open the data dir). */
  static async start(options: PgliteThreadOptions): Promise<PgliteThread> {
    const thread = new PgliteThread(options);
    await new Promise<void>((resolve, reject) => {
      const onMessage = (m: { type: string; message?: string }) => {
        if (m.type === 'ready') done();
        else if (m.type === 'failed') done(new Error(m.message));
      };
      const onExit = (code: number) => done(new Error(`embedded database thread exited (code ${code}) while opening`));
      const onError = (err: Error) => done(err);
      const done = (err?: Error) => {
        thread.worker.off('message', onMessage).off('exit', onExit).off('error', onError);
        if (err) reject(err);
        else resolve();
      };
      thread.worker.on('message', onMessage).on('exit', onExit).on('error', onError);
    }).catch(async (err: unknown) => {
      await thread.worker.terminate();
      throw err;
    });
    return thread;
  }

  /** A new connection's stream (node-postgres's `stream` option). */
  stream(): Duplex {
    return new ThreadStream(this);
  }

  attach(stream: ThreadStream, port: MessagePort): void {
    this.streams.add(stream);
    this.worker.postMessage({ type: 'connect', port }, [port]);
  }

  detach(stream: ThreadStream): void {
    this.streams.delete(stream);
  }

  private fail(cause: Error): void {
    if (this.failure) return;
    // Like a connection reset: the request answers 503 database_unavailable (faults.ts).
    const err = Object.assign(cause, { code: 'ECONNRESET' });
    this.failure = err;
    for (const s of this.streams) s.destroy(err);
    this.streams.clear();
  }

  /** Closes PGlite (a clean shutdown of the database) and ends the thread. */
  async close(): Promise<void> {
    if (this.failure) return;
    const closed = new Promise<void>((resolve) => {
      const onMessage = (m: { type: string }) => {
        if (m.type === 'closed') resolve();
      };
      this.worker.on('message', onMessage);
      this.worker.once('exit', () => resolve());
    });
    this.worker.postMessage({ type: 'close' });
    await closed;
    this.fail(new Error('embedded database closed'));
    await this.worker.terminate();
  }
}
