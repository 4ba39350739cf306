/** What one JSON call to a provider came to, before any provider-specific reading. */
export type JsonExchange =
  | { kind: 'answer'; status: number; json: unknown }
  | { kind: 'timeout' }
  | { kind: 'network'; code: string | null };

/**
 * One JSON request to a provider's API: never follows redirects, never throws for transport
 * trouble, and keeps the body (card data, keys) out of anything it returns. `json` is null when
 * the answer was empty or not JSON.
 */
export async function exchangeJson(
  fetchImpl: typeof fetch,
  url: string,
  req: { method: 'GET' | 'POST'; headers: Record<string, string>; body: unknown; timeoutMs: number },
): Promise<JsonExchange> {
  const headers = { accept: 'application/json', ...req.headers, ...(req.body !== null ? { 'content-type': 'application/json' } : {}) };
  let status: number;
  let text: string;
  try {
    const res = await fetchImpl(url, {
      method: req.method,
      headers,
      body: req.body === null ? undefined : JSON.stringify(req.body),
      redirect: 'manual',
      signal: AbortSignal.timeout(req.timeoutMs),
    });
    status = res.status;
    text = await res.text();
  } catch (err) {
    const e = err as { name?: string; cause?: { code?: unknown } };
    if (e.name === 'TimeoutError' || e.name === 'AbortError') return { kind: 'timeout' };
    return { kind: 'network', code: typeof e.cause?.code === 'string' ? e.cause.code : null };
  }
  let json: unknown = null;
  try {
    json = text === '' ? null : JSON.parse(text);
  } catch {
    json = null;
  }
  return { kind: 'answer', status, json };
}
