import type { ProviderTransport } from './transport.ts';

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
  transport: ProviderTransport,
  url: string,
  req: { method: 'GET' | 'POST'; headers: Record<string, string>; body: unknown; timeoutMs: number },
): Promise<JsonExchange> {
  const headers = { accept: 'application/json', ...req.headers, ...(req.body !== null ? { 'content-type': 'application/json' } : {}) };
  const r = await transport(url, { method: req.method, headers, body: req.body === null ? undefined : JSON.stringify(req.body), timeoutMs: req.timeoutMs });
  if (!r.ok) return r.kind === 'timeout' ? { kind: 'timeout' } : { kind: 'network', code: r.code };
  let json: unknown = null;
  try {
    json = r.body === '' ? null : JSON.parse(r.body);
  } catch {
    json = null;
  }
  return { kind: 'answer', status: r.status, json };
}
