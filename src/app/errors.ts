/**
 * One catalogue of the errors a client can cause, each with a stable code, an HTTP status
 * and a default message. Services throw `ApiError`; one handler turns it into the envelope.
 */
export const ERRORS = {
  // authentication_error
  unauthenticated: { status: 401, type: 'authentication_error', message: 'A valid API token is required: send Authorization: Bearer <token>.' },
  token_revoked: { status: 401, type: 'authentication_error', message: 'This API token has been revoked.' },
  token_expired: { status: 401, type: 'authentication_error', message: 'This API token has expired.' },
  invalid_credentials: { status: 401, type: 'authentication_error', message: 'The e-mail address or the password is wrong.' },
  totp_required: { status: 401, type: 'authentication_error', message: 'This account has two-factor authentication on: send the code of the authenticator app as totp_code.' },
  totp_invalid: { status: 401, type: 'authentication_error', message: 'The two-factor code is wrong or too old.' },
  login_throttled: { status: 429, type: 'rate_limit_error', message: 'Too many failed logins for this account: try again after the time in the Retry-After header.' },
  // permission_error: authenticated, but the role, token or provider grant does not allow it
  permission_denied: { status: 403, type: 'permission_error', message: 'You do not have the permission this request needs.' },
  csrf_failed: {
    status: 403,
    type: 'permission_error',
    message: 'A request authenticated by the session cookie must carry the session\'s CSRF token in the x-csrf-token header (GET /v1/session gives it).',
  },
  // invalid_request_error
  validation_failed: { status: 422, type: 'invalid_request_error', message: 'The request is invalid.' },
  malformed_json: { status: 400, type: 'invalid_request_error', message: 'The request body is not valid JSON.' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error', message: 'Send the request body as application/json.' },
  headers_too_large: { status: 431, type: 'invalid_request_error', message: 'The request headers (or the URL) are too large.' },
  malformed_request: { status: 400, type: 'invalid_request_error', message: 'The request is not valid HTTP.' },
  request_timeout: { status: 408, type: 'invalid_request_error', message: 'The request was not received in time.' },
  body_too_large: { status: 413, type: 'invalid_request_error', message: 'The request body is too large.' },
  not_found: { status: 404, type: 'invalid_request_error', message: 'Not found.' },
  route_not_found: { status: 404, type: 'invalid_request_error', message: 'No such endpoint.' },
  conflict: { status: 409, type: 'invalid_request_error', message: 'The request conflicts with the current state.' },
  session_required: { status: 400, type: 'invalid_request_error', message: 'This endpoint acts on a browser session (log in with POST /v1/sessions); an API token has none.' },
  weak_password: { status: 422, type: 'invalid_request_error', message: 'The password is too weak.' },
  email_taken: { status: 409, type: 'invalid_request_error', message: 'An account already uses this e-mail address.' },
  member_exists: { status: 409, type: 'invalid_request_error', message: 'This person is already a member of the team.' },
  owner_required: { status: 409, type: 'invalid_request_error', message: 'A team always has exactly one Team Owner: transfer ownership first.' },
  invitation_expired: { status: 410, type: 'invalid_request_error', message: 'This invitation has expired or was already used: ask for a new one.' },
  reset_expired: { status: 410, type: 'invalid_request_error', message: 'This password reset link has expired or was already used: ask for a new one.' },
  order_not_payable: { status: 409, type: 'invalid_request_error', message: 'This order cannot be paid in its current state.' },
  order_not_a_lead: { status: 409, type: 'invalid_request_error', message: 'This order is no longer a lead and cannot be updated through Create Lead.' },
  order_not_completable: { status: 409, type: 'invalid_request_error', message: 'This order cannot be completed in its current state.' },
  no_capturable_transaction: { status: 404, type: 'invalid_request_error', message: 'No capturable transaction found for this order.' },
  capture_failed: { status: 422, type: 'card_error', message: 'Payment capture failed.' },
  webhook_secret_missing: { status: 403, type: 'authentication_error', message: 'No webhook secret is saved for this gateway: its webhooks cannot be verified and are refused.' },
  webhook_signature_invalid: { status: 400, type: 'authentication_error', message: 'The webhook signature could not be verified.' },
  gateway_unavailable: { status: 502, type: 'api_error', message: 'The payment gateway could not be reached.' },
  payment_in_progress: { status: 409, type: 'invalid_request_error', message: 'A payment for this order is already in progress; retry in a moment.' },
  no_saved_payment_method: { status: 422, type: 'invalid_request_error', message: 'No saved payment method found for this order.' },
  provider_not_configured: { status: 422, type: 'invalid_request_error', message: 'The external checkout provider is not configured for this team.' },
  provider_rejected: { status: 409, type: 'invalid_request_error', message: 'The external checkout provider refused the request.' },
  subscription_externally_managed: { status: 409, type: 'invalid_request_error', message: 'Subscription is managed by a third party and cannot be billed manually.' },
  membership_missing: {
    status: 409,
    type: 'invalid_request_error',
    message: 'This subscription is billed by the provider but has no membership reference yet: run Sync from Provider to recover it.',
  },
  subscription_not_actionable: { status: 409, type: 'invalid_request_error', message: 'This subscription cannot do that in its current state.' },
  rebill_unavailable: { status: 409, type: 'invalid_request_error', message: 'Rebill Now is not available for this subscription.' },
  webhook_not_ready: { status: 409, type: 'invalid_request_error', message: 'The payment this event names is still being recorded; deliver it again.' },
  // card_error: the payment was attempted and refused
  payment_declined: { status: 402, type: 'card_error', message: 'The payment was declined.' },
  card_verification_declined: { status: 422, type: 'card_error', message: 'The card was declined when it was verified; nothing was saved.' },
  // idempotency_error
  idempotency_in_flight: { status: 409, type: 'idempotency_error', message: 'A request with this Idempotency-Key is still being processed; retry later.' },
  idempotency_key_reused: { status: 422, type: 'idempotency_error', message: 'This Idempotency-Key was already used with a different request body.' },
  // api_error
  payment_outcome_unknown: {
    status: 502,
    type: 'api_error',
    message: 'The provider did not answer, so the outcome is not known yet; it is confirmed with the provider within minutes. Do not send it again.',
  },
  rate_limited: { status: 429, type: 'rate_limit_error', message: 'Too many requests: slow down and retry after the time in the Retry-After header.' },
  overloaded: { status: 503, type: 'api_error', message: 'The server is overloaded; retry after the time in the Retry-After header.' },
  database_unavailable: {
    status: 503,
    type: 'api_error',
    message: 'The database is unavailable; nothing was changed by the part that failed. Retry with the same Idempotency-Key after the time in the Retry-After header.',
  },
  internal: { status: 500, type: 'api_error', message: 'Something went wrong on our side. The error has been logged.' },
} as const satisfies Record<string, { status: number; type: string; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

export interface FieldError {
  /** Dotted path of the failing field, e.g. `payment.card_exp` or `products.0.quantity`. */
  path: string;
  message: string;
}

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly fields: FieldError[] | undefined;
  readonly data: Record<string, unknown> | null;

  constructor(code: ErrorCode, message?: string, opts: { fields?: FieldError[]; data?: Record<string, unknown> } = {}) {
    super(message ?? ERRORS[code].message);
    this.code = code;
    this.status = ERRORS[code].status;
    this.fields = opts.fields;
    this.data = opts.data ?? null;
  }
}

export function notFound(what: string): ApiError {
  return new ApiError('not_found', `${what} not found.`);
}

export function invalid(path: string, message: string): ApiError {
  return new ApiError('validation_failed', `${path}: ${message}`, { fields: [{ path, message }] });
}
