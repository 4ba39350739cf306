import { request } from 'undici';

/** What one HTTP exchange with a provider came to: an answer (any status), a timeout, or a transport failure. */
export type Exchange = { ok: true; status: number; body: string } | { ok: false; kind: 'timeout' | 'network'; code: string | null };

export interface ExchangeRequest {
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body: string | undefined;
  /** The whole exchange, answer's body included. */
  timeoutMs: number;
}

/**
 * How adapters talk to a provider's API: never follows a redirect (it would re-send the card or
 * the key to wherever it points), never throws for transport trouble, and gives back only the
 * status and the body's text.
 */
export type ProviderTransport = (url: string, req: ExchangeRequest) => Promise<Exchange>;

function failed(err: unknown): Exchange {
  const e = err as { name?: string; code?: unknown; cause?: { code?: unknown } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return { ok: false, kind: 'timeout', code: null };
  const code = typeof e?.code === 'string' ? e.code : typeof e?.cause?.code === 'string' ? e.cause.code : null;
  return { ok: false, kind: 'network', code };
}

/**
 * The default: undici's `request` on its keep-alive pool. It does what `fetch` does for us
 * (connection reuse that honours the server's Keep-Alive timeout, no redirects followed) without
 * fetch's Request, Response and web-stream objects: a provider call costs the API's thread a
 * fraction of what it cost through `fetch` (issue 13).
 */
export const undiciTransport: ProviderTransport = async (url, req) => {
  // A timer cleared when the exchange ends, not AbortSignal.timeout(): that one's timer stays and
  // fires long after every answered call, building a DOMException each time (≈ 0.3% of the API
  // thread on the card funnel).
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), req.timeoutMs);
  try {
    const res = await request(url, { method: req.method, headers: req.headers, body: req.body, signal: controller.signal });
    return { ok: true, status: res.statusCode, body: await res.body.text() };
  } catch (err) {
    return failed(err);
  } finally {
    clearTimeout(timer);
  }
};

/** A `fetch` of the caller's (the adapters' unit tests pass fakes) as a transport. */
export function fetchTransport(fetchImpl: typeof fetch): ProviderTransport {
  return async (url, req) => {
    try {
      const res = await fetchImpl(url, { method: req.method, headers: req.headers, body: req.body, redirect: 'manual', signal: AbortSignal.timeout(req.timeoutMs) });
      return { ok: true, status: res.status, body: await res.text() };
    } catch (err) {
      return failed(err);
    }
  };
}
