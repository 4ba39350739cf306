import { Checkstand, CheckstandError, ok, type paths, type Schemas } from '@checkstand/client';

/** The session's CSRF token: set by the login answer and by GET /v1/session, sent on every unsafe request. */
let csrfToken: string | null = null;
export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

/**
 * The API client: the typed SDK, with the session cookie (`credentials: 'include'`) and the CSRF
 * header. `api.GET('/v1/orders', …)` is typed from the OpenAPI document; `unwrap` turns the answer
 * into its body or throws a CheckstandError (the API's error envelope).
 */
export const client = new Checkstand({
  baseUrl: typeof window === 'undefined' ? 'http://localhost' : window.location.origin,
  credentials: 'include',
  csrfToken: () => csrfToken,
  // A dashboard user repeats a refund by pressing the button again, not by a silent retry.
  maxRetries: 0,
});
export const api = client.api;

/** The 2xx body of an SDK call, or a thrown CheckstandError with the envelope's `code` and message. */
export const unwrap = ok;

export { CheckstandError };
export type { paths, Schemas };
/** The query parameters of a GET path: `Query<'/v1/orders'>`. */
export type Query<P extends keyof paths> = paths[P] extends { get: { parameters: { query?: infer Q } } } ? NonNullable<Q> : never;

/** A fresh Idempotency-Key for one user action (kept while the dialog is open, so a double click is one refund). */
export function newIdempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}
