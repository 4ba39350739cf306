// @ts-check
/**
 * The embedded database's own thread (see pglite-thread.ts, which starts it). PGlite runs here and
 * speaks PostgreSQL's wire protocol: each connection is a MessagePort, its messages are the bytes a
 * client would write to a socket and the answers the bytes a server would write back. Nothing is
 * parsed here. Plain JavaScript, so the thread loads without the TypeScript loader.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';

/** @type {{ dataDir?: string; loadDataDir?: Uint8Array; startParams?: string[] }} */
const options = workerData;
const port = /** @type {import('node:worker_threads').MessagePort} */ (parentPort);

/** One statement batch at a time, in arrival order, over every connection: PGlite is one session. */
let queue = Promise.resolve();
/** @type {PGlite | undefined} */
let db;

/** A tight copy whose buffer can be handed over without copying again (PGlite may answer with a view). */
function own(/** @type {Uint8Array} */ bytes) {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
}

function serve(/** @type {import('node:worker_threads').MessagePort} */ conn) {
  conn.on('message', (/** @type {Uint8Array} */ bytes) => {
    queue = queue.then(async () => {
      try {
        const answer = own(await /** @type {PGlite} */ (db).execProtocolRaw(bytes));
        conn.postMessage(answer, [answer.buffer]);
      } catch (err) {
        conn.postMessage({ error: err instanceof Error ? err.message : String(err) });
      }
    });
  });
  // Like a server whose client went away: a transaction it left open is rolled back, so the next
  // connection (PGlite has one session) does not start inside it.
  conn.on('close', () => {
    conn.removeAllListeners();
    queue = queue.then(async () => {
      if (db?.isInTransaction()) await db.execProtocolRaw(ROLLBACK).catch(() => {});
    });
  });
}

/** `ROLLBACK` as a simple-query protocol message. */
const ROLLBACK = (() => {
  const text = Buffer.from('ROLLBACK\0');
  const msg = Buffer.alloc(5 + text.length);
  msg.write('Q', 0, 'latin1');
  msg.writeInt32BE(4 + text.length, 1);
  text.copy(msg, 5);
  return new Uint8Array(msg);
})();

port.on('message', (/** @type {{ type: string; port?: import('node:worker_threads').MessagePort }} */ m) => {
  if (m.type === 'connect' && m.port) serve(m.port);
  else if (m.type === 'close') {
    queue = queue.then(async () => {
      await db?.close();
      port.postMessage({ type: 'closed' });
      port.close();
    });
  }
});

try {
  const loadDataDir = options.loadDataDir ? new Blob([options.loadDataDir]) : undefined;
  db = new PGlite(options.dataDir, { startParams: [...PGlite.defaultStartParams, ...(options.startParams ?? [])], ...(loadDataDir ? { loadDataDir } : {}) });
  await db.waitReady;
  port.postMessage({ type: 'ready' });
} catch (err) {
  port.postMessage({ type: 'failed', message: err instanceof Error ? err.message : String(err) });
}
