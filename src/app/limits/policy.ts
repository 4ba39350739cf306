/**
 * Which budgets a request spends, decided by its path alone (before routing matters):
 * operations and docs spend none and are never shed; provider webhooks spend a per-address
 * budget of their own; the API (/checkout, /v1) spends per-address and per-token budgets and
 * the failed-authentication budget; everything else (demo pages, unknown paths) per address.
 */
export type RouteClass = 'exempt' | 'webhook' | 'api' | 'other';

const EXEMPT = new Set(['/healthz', '/readyz', '/metrics', '/openapi.json', '/docs']);

function under(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(prefix + '/');
}

export function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

export function classify(url: string): RouteClass {
  const path = pathOf(url);
  if (EXEMPT.has(path) || path.startsWith('/docs/')) return 'exempt';
  if (under(path, '/webhooks')) return 'webhook';
  if (under(path, '/checkout') || under(path, '/v1')) return 'api';
  return 'other';
}

/** Reads are GET and HEAD (and OPTIONS); every other method is a write, money-moving or not. */
export function isWrite(method: string): boolean {
  return method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS';
}
