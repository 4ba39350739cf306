/** Starting the bench's TypeScript worker threads (driver, sandbox, webhook receiver). */
import { Worker } from 'node:worker_threads';

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
