import pg from 'pg';
import type { Store } from './database.ts';

export interface WorkListener {
  /** True while notifications on the channel reach this process. */
  readonly listening: boolean;
  close(): Promise<void>;
}

export interface ListenHandlers {
  /** A notification's payload. */
  notify(payload: string): void;
  /** LISTEN took effect (at start and after every reconnect): anything created meanwhile was not announced. */
  listening(): void;
  /** The connection failed or could not be made; it is retried. */
  error(err: unknown): void;
}

const RECONNECT_MIN_MS = 250;
const RECONNECT_MAX_MS = 5_000;

/**
 * LISTEN on `channel`. On PostgreSQL: a dedicated connection outside the pool (a pooled one would
 * be handed to requests), reconnected with backoff when the server restarts or drops it, LISTEN
 * issued again each time. Embedded (PGlite, one backend for the process): LISTEN once and read the
 * notifications every pooled client receives, which is the one that ran the COMMIT.
 */
export function listen(store: Store, channel: string, h: ListenHandlers): WorkListener {
  if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`bad channel name ${channel}`);
  return store.kind === 'postgres' ? listenPostgres(store, channel, h) : listenPglite(store, channel, h);
}

function listenPostgres(store: Store, channel: string, h: ListenHandlers): WorkListener {
  let client: pg.Client | undefined;
  let listening = false;
  let closed = false;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;

  const retry = () => {
    listening = false;
    if (closed || timer) return;
    const delay = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** failures++);
    timer = setTimeout(() => {
      timer = undefined;
      void connect();
    }, delay);
    timer.unref();
  };

  const connect = async () => {
    const c = new pg.Client({ ...store.pool.options, pipeline: false });
    client = c;
    let lost = false;
    const drop = (err?: unknown) => {
      if (lost) return;
      lost = true;
      if (err) h.error(err);
      c.removeAllListeners('notification');
      void c.end().catch(() => {});
      if (client === c) retry();
    };
    c.on('error', (err) => drop(err));
    c.on('end', () => drop());
    c.on('notification', (n) => h.notify(n.payload ?? ''));
    try {
      await c.connect();
      await c.query(`LISTEN ${channel}`);
    } catch (err) {
      drop(err);
      return;
    }
    if (closed || lost) return;
    failures = 0;
    listening = true;
    h.listening();
  };

  void connect();
  return {
    get listening() {
      return listening;
    },
    async close() {
      closed = true;
      listening = false;
      if (timer) clearTimeout(timer);
      const c = client;
      client = undefined;
      if (c) {
        c.removeAllListeners('notification');
        await c.end().catch(() => {});
      }
    },
  };
}

function listenPglite(store: Store, channel: string, h: ListenHandlers): WorkListener {
  const pool = store.pool;
  const clients = new Set<pg.PoolClient>();
  const onNotification = (n: pg.Notification) => {
    if (n.channel === channel) h.notify(n.payload ?? '');
  };
  const watch = (c: pg.PoolClient) => {
    if (clients.has(c)) return;
    clients.add(c);
    c.on('notification', onNotification);
  };
  let listening = false;
  let closed = false;
  pool.on('connect', watch);
  void (async () => {
    try {
      const c = await pool.connect();
      try {
        watch(c);
        await c.query(`LISTEN ${channel}`);
      } finally {
        c.release();
      }
      if (closed) return;
      listening = true;
      h.listening();
    } catch (err) {
      h.error(err);
    }
  })();
  return {
    get listening() {
      return listening;
    },
    async close() {
      closed = true;
      listening = false;
      pool.off('connect', watch);
      for (const c of clients) c.off('notification', onNotification);
      clients.clear();
    },
  };
}
