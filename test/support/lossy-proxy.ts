import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * What the proxy does to one request:
 * - `pass`: forwarded, and the provider's answer handed back;
 * - `forward-then-drop`: forwarded, the provider's whole answer awaited, then the client's socket
 *   destroyed without a byte of it: the provider DID process the request, its answer is lost;
 * - `drop`: the client's socket destroyed without forwarding: the provider never saw the request;
 * - `forward-then-hold`: forwarded, the provider's whole answer awaited, then held (the client still
 *   waiting) until the test calls `release()`: what the app does meanwhile (a recovery run) happens
 *   while the provider has done it and the app does not know yet, whatever the machine's speed.
 */
export type ProxyMode = 'pass' | 'drop' | 'forward-then-drop' | 'forward-then-hold';

export interface ProxyFault {
  method: string;
  /** Matched against the path without its query string. */
  path: RegExp;
  mode: Exclude<ProxyMode, 'pass'>;
  /** How many matching requests meet the fault before it disarms itself; 1 unless told. */
  times?: number;
}

export interface ProxiedRequest {
  method: string;
  path: string;
  mode: ProxyMode;
  /** The provider's HTTP status (null when the request was never forwarded or the provider could not be reached). */
  upstreamStatus: number | null;
}

export interface LossyProxy {
  url: string;
  /** Arms a fault: the next matching request(s) meet `mode`; every other request passes. */
  arm(fault: ProxyFault): void;
  /** Disarms every fault not yet used up. */
  disarm(): void;
  /** Every request seen, in arrival order, with what was done to it (logged once it was dealt with). */
  requests: ProxiedRequest[];
  /** The requests that met a fault. */
  faulted(): ProxiedRequest[];
  /** Resolves once a `forward-then-hold` request's answer is held (at once if one is). */
  held(): Promise<void>;
  /** Hands every held answer back to its client. */
  release(): void;
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'host', 'content-length']);

/**
 * A loopback HTTP proxy in front of a provider (the sandbox): a gateway's `base_url`, or an extpay
 * connection's API base, points at it, and the test arms a fault for the one money-moving request
 * (by method and path) so its answer is lost while the lookups that recover it pass through.
 * Every answer it hands back closes the connection, so no kept-alive socket of ours can race a
 * later request.
 */
export async function startLossyProxy(target: string): Promise<LossyProxy> {
  const upstream = new URL(target);
  const faults: Array<ProxyFault & { left: number }> = [];
  const requests: ProxiedRequest[] = [];
  const heldAnswers: Array<() => void> = [];
  const heldWaiters: Array<() => void> = [];

  const take = (method: string, path: string): ProxyMode => {
    const i = faults.findIndex((f) => f.method.toUpperCase() === method.toUpperCase() && f.path.test(path));
    if (i < 0) return 'pass';
    const f = faults[i]!;
    if (--f.left <= 0) faults.splice(i, 1);
    return f.mode;
  };

  const forward = (req: http.IncomingMessage, body: Buffer): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer } | null> =>
    new Promise((resolve) => {
      const headers: http.OutgoingHttpHeaders = {};
      for (const [k, v] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) headers[k] = v;
      headers['content-length'] = String(body.length);
      headers.connection = 'close';
      const out = http.request(
        { protocol: upstream.protocol, hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers, agent: false },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) }));
          res.on('error', () => resolve(null));
        },
      );
      out.on('error', () => resolve(null));
      out.end(body);
    });

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const path = (req.url ?? '/').split('?')[0]!;
        const method = req.method ?? 'GET';
        const mode = take(method, path);
        if (mode === 'drop') {
          requests.push({ method, path, mode, upstreamStatus: null });
          req.socket.destroy();
          return;
        }
        const answer = await forward(req, Buffer.concat(chunks));
        requests.push({ method, path, mode, upstreamStatus: answer?.status ?? null });
        if (mode === 'forward-then-drop' || !answer) {
          req.socket.destroy();
          return;
        }
        const headers: http.OutgoingHttpHeaders = {};
        for (const [k, v] of Object.entries(answer.headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) headers[k] = v;
        headers['content-length'] = String(answer.body.length);
        headers.connection = 'close';
        const send = () => res.writeHead(answer.status, headers).end(answer.body);
        if (mode !== 'forward-then-hold') return send();
        heldAnswers.push(send);
        for (const wake of heldWaiters.splice(0)) wake();
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: base,
    arm(fault) {
      faults.push({ ...fault, left: fault.times ?? 1 });
    },
    disarm() {
      faults.length = 0;
    },
    requests,
    faulted: () => requests.filter((r) => r.mode !== 'pass'),
    held: () => (heldAnswers.length > 0 ? Promise.resolve() : new Promise<void>((resolve) => heldWaiters.push(resolve))),
    release() {
      for (const send of heldAnswers.splice(0)) send();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
