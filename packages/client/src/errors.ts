import type { components } from './schema.ts';

export type ErrorBody = components['schemas']['Error'];
export interface FieldError {
  path: string;
  message: string;
}

/**
 * A Checkstand answer that is not a success: the HTTP status and the error envelope's stable
 * `code` (e.g. `validation_failed`, `payment_outcome_unknown`, `order_not_payable`), its `type`,
 * a refused payment's `declineCode`, a validation error's `fields`, and the envelope's `data`.
 * Branch on `code`, never on `message`.
 */
export class CheckstandError extends Error {
  override readonly name = 'CheckstandError';
  readonly status: number;
  readonly code: string;
  readonly type: string;
  readonly declineCode: string | null;
  readonly fields: FieldError[];
  readonly data: unknown;
  readonly requestId: string | null;
  /** Seconds the server asked to wait (429, 503), when it said. */
  readonly retryAfter: number | null;
  readonly body: unknown;

  constructor(status: number, body: unknown, headers?: Headers) {
    const envelope = isEnvelope(body) ? body : null;
    super(envelope?.message ?? `HTTP ${status}`);
    this.status = status;
    this.body = body;
    this.code = envelope?.error.code ?? (status >= 500 ? 'api_error' : 'http_error');
    this.type = envelope?.error.type ?? 'api_error';
    this.declineCode = envelope?.error.decline_code ?? null;
    this.fields = envelope?.error.fields ?? [];
    this.data = envelope?.data ?? null;
    this.requestId = headers?.get('x-request-id') ?? null;
    const retryAfter = Number(headers?.get('retry-after'));
    this.retryAfter = Number.isFinite(retryAfter) && headers?.get('retry-after') ? retryAfter : null;
  }

  /** The gateway refused a payment (402 `payment_declined`). */
  get isDecline(): boolean {
    return this.code === 'payment_declined';
  }

  /** The provider did not answer: the outcome is confirmed later. Do not charge again. */
  get isOutcomeUnknown(): boolean {
    return this.code === 'payment_outcome_unknown';
  }
}

function isEnvelope(body: unknown): body is ErrorBody {
  if (!body || typeof body !== 'object') return false;
  const e = (body as { error?: unknown }).error;
  return !!e && typeof e === 'object' && typeof (e as { code?: unknown }).code === 'string';
}
