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
 * POSTs one webhook. node:http rather than fetch: it never follows redirects, and its `lookup`
 * hook lets the SSRF guard see the address the socket really connects to (fetch resolves names
 * itself, so a check made beforehand could be defeated by DNS rebinding). The connection is not
 * reused (`agent: false`), so each attempt is checked afresh. Only the first 2 KB of the answer
 * are read.
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

  return new Promise<SendResult>((resolve) => {
    let settled = false;
    const settle = (r: SendResult) => {
      if (settled) return;
      settled = true;
      resolve(r);
    };
    const fail = (err: unknown) =>
      settle(
        err instanceof TargetRefusedError
          ? { kind: 'failed', error: err.message, refused: true, durationMs: elapsed() }
          : { kind: 'failed', error: errorText(err, opts.timeoutMs), refused: false, durationMs: elapsed() },
      );

    const req = client.request(
      url,
      {
        method: opts.method ?? 'POST',
        headers: opts.method === 'GET' ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        agent: false,
        signal: AbortSignal.timeout(opts.timeoutMs),
        ...(opts.guard ? { lookup: guardedLookup() } : {}),
      },
      (res) => {
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
          res.destroy();
        };
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          if (size >= MAX_RESPONSE_BODY_BYTES) answered();
        });
        res.on('end', answered);
        // The status line arrived: the answer counts even if its body is cut short.
        res.on('error', answered);
        res.on('close', answered);
      },
    );
    req.on('error', fail);
    req.end(opts.method === 'GET' ? undefined : body);
  });
}
