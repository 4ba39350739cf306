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
    data: z.record(z.string(), z.unknown()).nullable(),
    error: z.object({
      type: z.string(),
      code: z.string(),
      fields: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
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
