/** Starting the bench's TypeScript worker threads (driver, sandbox, webhook receiver). */
import { Worker } from 'node:worker_threads';
import type { DriverInput, DriverMessage } from './stats.ts';

/**
 * A worker thread running `file` (a .ts module next to this one). Worker threads do not inherit
 * tsx's loader on Node 20, so the thread registers it itself before importing the module.
 */
export function startTsWorker(file: string, workerData: unknown): Worker {
  const tsxApi = import.meta.resolve('tsx/esm/api');
  const target = new URL(file, import.meta.url).href;
  const boot = `import(${JSON.stringify(tsxApi)}).then(({ tsImport }) => tsImport(${JSON.stringify(target)}, ${JSON.stringify(import.meta.url)}))`;
  return new Worker(boot, { eval: true, workerData });
}

/** Resolves with the first message of `type` the thread posts; rejects if the thread fails or exits first. */
export function nextMessage<T extends { type: string }>(worker: Worker, type: T['type'], timeoutMs = 30_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      clearTimeout(timer);
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
    };
    const onMessage = (m: T) => {
      if (m?.type !== type) return;
      cleanup();
      resolve(m);
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    const onExit = (code: number) => {
      cleanup();
      reject(new Error(`thread exited (code ${code}) before answering "${type}"`));
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`thread did not answer "${type}" within ${timeoutMs} ms`));
    }, timeoutMs);
    worker.on('message', onMessage);
    worker.once('error', onError);
    worker.once('exit', onExit);
  });
}

export type DriverResult = Extract<DriverMessage, { type: 'result' }>;

/**
 * Runs the load driver (driver.ts) in its thread with `input` and resolves with its result; the
 * thread is ended once it has answered (its kept-alive sockets would keep it alive).
 */
export function runDriver(
  input: DriverInput,
  onStart: (worker: Worker) => void,
  onPhase: (phase: 'measure' | 'drain' | 'done') => void,
  onProgress: (m: Extract<DriverMessage, { type: 'progress' }>) => void,
  registerStop: (stop: () => void) => void,
  onThreadId: (tid: number | null) => void = () => {},
): Promise<DriverResult> {
  const worker = startTsWorker('./driver.ts', input);
  onStart(worker);
  registerStop(() => worker.postMessage({ type: 'stop' }));
  return new Promise((resolve, reject) => {
    let result: DriverResult | undefined;
    worker.on('message', (m: DriverMessage) => {
      if (m.type === 'phase') {
        onThreadId(m.tid);
        onPhase(m.phase);
      }
      else if (m.type === 'progress') onProgress(m);
      else if (m.type === 'result') {
        result = m;
        // The thread's keep-alive sockets would keep it alive: end it once it has answered.
        void worker.terminate();
      }
    });
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (result) resolve(result);
      else reject(new Error(`the load driver thread exited (code ${code}) without a result`));
    });
  });
}
