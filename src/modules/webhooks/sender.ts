import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import { addressRefusal, guardedLookup, literalHost, TargetRefusedError } from './targets.ts';

/** How much of a receiver's answer is kept in the attempt log. */
export const MAX_RESPONSE_BODY_BYTES = 2048;

export type SendResult =
  | { kind: 'answered'; statusCode: number; body: string; retryAfter: string | undefined; location: string | undefined; durationMs: number }
  /** No HTTP answer: connection refused, DNS, TLS, timeout, or a refused target (`refused`). */
  | { kind: 'failed'; error: string; refused: boolean; durationMs: number };

export interface SendOptions {
  timeoutMs: number;
  /** Refuse non-public addresses (the SSRF guard); off only when the operator allows private targets. */
  guard: boolean;
  /** GET sends no body (affiliate postbacks: the values travel in the URL). Default POST. */
  method?: 'GET' | 'POST';
}

function errorText(err: unknown, timeoutMs: number): string {
  const e = err as NodeJS.ErrnoException;
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `timed out after ${timeoutMs} ms`;
  const text = e?.code ? `${e.code}: ${e.message}` : String(e?.message ?? err);
  return text.slice(0, 500);
}

/** Text fit for a Postgres text column: NUL bytes are dropped. */
function storable(buf: Buffer): string {
  return buf.subarray(0, MAX_RESPONSE_BODY_BYTES).toString('utf8').replaceAll('\u0000', '');
}

/**
 * Connections kept open between attempts, one pool per scheme and per guard setting (a socket
 * opened without the guard is never lent to a guarded attempt). The guard checks the address
 * of every new connection in its `lookup`; a kept connection stays on the address that was
 * checked when it opened, so reusing it cannot reach another host (DNS rebinding changes what a
 * name resolves to next, not where an open socket goes). Idle connections close after
 * `IDLE_SOCKET_MS`, or sooner when the receiver's `Keep-Alive: timeout` says so.
 */
const IDLE_SOCKET_MS = 4000;
const agents = new Map<string, http.Agent>();
function agentFor(scheme: 'http:' | 'https:', guard: boolean): http.Agent {
  const key = `${scheme}${guard ? 'guarded' : 'open'}`;
  let agent = agents.get(key);
  if (!agent) {
    const options = { keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' as const, ...(guard ? { lookup: guardedLookup() } : {}) };
    agent = scheme === 'https:' ? new https.Agent(options) : new http.Agent(options);
    agents.set(key, agent);
  }
  return agent;
}

/** Closes the kept connections (tests; a process that exits needs nothing). */
export function closeWebhookConnections(): void {
  for (const agent of agents.values()) agent.destroy();
  agents.clear();
}

/**
 * POSTs one webhook. node:http rather than fetch: it never follows redirects, and its `lookup`
 * hook lets the SSRF guard see the address the socket really connects to (fetch resolves names
 * itself, so a check made beforehand could be defeated by DNS rebinding). Connections are kept
 * open between attempts (`agentFor`); an attempt that finds its kept connection closed by the
 * receiver before any answer (ECONNRESET on a reused socket) is sent once more on a new one.
 * Only the first 2 KB of the answer are read.
 */
export function postWebhook(target: string, body: string, headers: Record<string, string>, opts: SendOptions): Promise<SendResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const url = new URL(target);
  if (opts.guard) {
    const literal = literalHost(url);
    const why = literal ? addressRefusal(literal) : null;
    if (why) return Promise.resolve({ kind: 'failed', error: new TargetRefusedError(why).message, refused: true, durationMs: elapsed() });
  }
  const client = url.protocol === 'https:' ? https : http;
  const agent = agentFor(url.protocol === 'https:' ? 'https:' : 'http:', opts.guard);

  return new Promise<SendResult>((resolve) => {
    let settled = false;
    let current: http.ClientRequest | undefined;
    const settle = (r: SendResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(r);
    };
    const fail = (err: unknown) =>
      settle(
        err instanceof TargetRefusedError
          ? { kind: 'failed', error: err.message, refused: true, durationMs: elapsed() }
          : { kind: 'failed', error: errorText(err, opts.timeoutMs), refused: false, durationMs: elapsed() },
      );

    const send = (retried: boolean) => {
      let answeredAtAll = false;
      const req = client.request(
        url,
        {
          method: opts.method ?? 'POST',
          headers: opts.method === 'GET' ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
          agent,
        },
        (res) => {
          answeredAtAll = true;
          const chunks: Buffer[] = [];
          let size = 0;
          const answered = () => {
            const retryAfter = res.headers['retry-after'];
            settle({
              kind: 'answered',
              statusCode: res.statusCode ?? 0,
              body: storable(Buffer.concat(chunks)),
              retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
              location: res.headers.location,
              durationMs: elapsed(),
            });
          };
          res.on('data', (chunk: Buffer) => {
            chunks.push(chunk);
            size += chunk.length;
            if (size >= MAX_RESPONSE_BODY_BYTES) {
              answered();
              // The rest is not read: this connection is not kept.
              res.destroy();
            }
          });
          // Read to its end, the connection goes back to the pool.
          res.on('end', answered);
          // The status line arrived: the answer counts even if its body is cut short.
          res.on('error', answered);
          res.on('close', answered);
        },
      );
      current = req;
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (settled) return;
        // A kept connection the receiver had just closed: nothing was answered, so send again once.
        if (!retried && !answeredAtAll && req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) return send(true);
        fail(err);
      });
      req.end(opts.method === 'GET' ? undefined : body);
    };
    // The whole attempt's deadline (connection, answer and body), retry included.
    const timer = setTimeout(() => {
      const err = Object.assign(new Error(`timed out after ${opts.timeoutMs} ms`), { name: 'TimeoutError' });
      fail(err);
      current?.destroy(err);
    }, opts.timeoutMs);
    send(false);
  });
}
