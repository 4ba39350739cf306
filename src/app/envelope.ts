import { z } from 'zod';
import { ERRORS, type ErrorCode, type FieldError } from './errors.ts';

/** The spec's response envelope: `{ success, message, data }`. */
export function envelope<T>(success: boolean, message: string, data: T) {
  return { success, message, data };
}

export function ok<T>(data: T, message = 'OK') {
  return envelope(true, message, data);
}

/**
 * Errors keep the envelope and add an `error` object in Stripe's manner: a stable `code`,
 * a `type` family, and `fields` (failing paths) on validation errors.
 */
export function errorBody(code: ErrorCode, message: string, fields?: FieldError[], data: Record<string, unknown> | null = null) {
  return {
    success: false as const,
    message,
    data,
    error: { type: ERRORS[code].type, code, ...(fields ? { fields } : {}) },
  };
}

export const EnvelopeError = z
  .object({
    success: z.literal(false),
    message: z.string(),
    data: z
      .record(z.string(), z.unknown())
      .nullable()
      .describe('null, or what the error concerns: the order of a declined or unknown payment, the permission a 403 lacks, a refused card\'s `decline_code`'),
    error: z.object({
      type: z
        .string()
        .describe('`authentication_error`, `permission_error`, `invalid_request_error`, `card_error`, `idempotency_error`, `rate_limit_error` or `api_error`'),
      code: z.string().describe('A stable code from the error catalogue, e.g. `validation_failed`, `payment_declined`, `not_found`'),
      decline_code: z.string().nullable().optional().describe("A payment's refusal: the gateway's reason, e.g. `do_not_honor`"),
      fields: z
        .array(z.object({ path: z.string(), message: z.string() }))
        .optional()
        .describe('A validation error: the failing paths, e.g. `payment.card_exp`'),
    }),
  })
  .meta({ id: 'Error' });

export function Envelope<T extends z.ZodType>(data: T) {
  return z.object({ success: z.boolean(), message: z.string(), data });
}

export function ListEnvelope<T extends z.ZodType>(item: T) {
  return z.object({
    success: z.literal(true),
    message: z.string(),
    data: z.array(item),
    has_more: z.boolean().describe('True when more items follow; pass the last id as `starting_after`.'),
  });
}

/** A cursor page in the list envelope (`ListEnvelope`): the items and whether more follow. */
export function listed<T>(page: { items: T[]; has_more: boolean }) {
  return { success: true as const, message: 'OK', data: page.items, has_more: page.has_more };
}
