/**
 * The provider sandbox (src/sandbox/server.ts: the NMI-compatible card gateway) in its own worker
 * thread of the bench process, so its HTTP handling and ledger work run on their own event loop
 * and not on the server's. Posts `{ type: 'ready', url, tid }` (tid: its kernel thread id, for its CPU); on `{ type: 'close' }` closes the
 * sandbox and posts `{ type: 'closed' }`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { startSandbox } from '../src/sandbox/server.ts';
import { ownThreadId } from './sched.ts';

const port = parentPort!;
const { slowMs } = workerData as { slowMs: number };
const sandbox = await startSandbox({ host: '127.0.0.1', port: 0, slowMs });
port.on('message', (m: { type?: string }) => {
  if (m?.type !== 'close') return;
  void sandbox.close().finally(() => {
    port.postMessage({ type: 'closed' });
    port.close();
  });
});
port.postMessage({ type: 'ready', url: sandbox.url, tid: ownThreadId() });
