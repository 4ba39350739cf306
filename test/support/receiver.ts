import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Delivery {
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
  answered: number;
}

export interface RecordingReceiver {
  url: string;
  /** Every delivery, in arrival order, with the raw bytes and what it was answered. */
  deliveries: Delivery[];
  /** Receiver paths that answer 500 to their next N deliveries. */
  failures: Map<string, number>;
  close(): Promise<void>;
}

/** A local webhook receiver for the provider sandboxes' tests: records each delivery, answers 204 (or 500 on demand). */
export async function startRecordingReceiver(): Promise<RecordingReceiver> {
  const deliveries: Delivery[] = [];
  const failures = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '';
      const left = failures.get(path) ?? 0;
      const answered = left > 0 ? 500 : 204;
      if (left > 0) failures.set(path, left - 1);
      deliveries.push({ path, headers: req.headers, raw: Buffer.concat(chunks), answered });
      res.writeHead(answered).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    deliveries,
    failures,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Polls `find` (every 20 ms) until it answers something, or fails naming `what` after `timeoutMs`. */
export async function waitFor<T>(find: () => T | undefined, what: string, timeoutMs = 5_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
