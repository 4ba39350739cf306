import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { ThreeDsPayment } from './types.ts';
import { WirePayment, fromWirePayment } from './wire.ts';
import { type HeaderBag, headerValue, toBytes } from '../raw-webhook.ts';

/**
 * Webhooks from the 3-D Secure gateway. A delivery is a POST whose JSON body is
 * `{ id: 'evt_…', type, created, data: { payment } }`, signed in one header:
 *
 *   x-gateway-signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, `${t}.${raw body}`)>
 *
 * The secret is the gateway's webhook secret taken as UTF-8 bytes, exactly as configured. Several
 * `v1=` entries may appear (the gateway rotating its secret); one match is enough. Verification runs
 * on the raw body bytes, before anything is parsed.
 */
export const THREEDS_SIGNATURE_HEADER = 'x-gateway-signature';
/** Deliveries signed more than this far in the past or the future are refused (replays, clock abuse). */
export const THREEDS_WEBHOOK_TOLERANCE_SECONDS = 300;

export const THREEDS_EVENT_TYPES = ['PAYMENT_SUCCEEDED', 'PAYMENT_FAILED', 'PAYMENT_UNDER_REVIEW'] as const;
export type ThreeDsEventType = (typeof THREEDS_EVENT_TYPES)[number];

interface EventBase {
  id: string;
  /** The type exactly as sent. */
  rawType: string;
  /** Unix seconds, when the gateway created the event (not when this delivery was signed). */
  created: number;
}

/**
 * A verified event. A kind this code does not act on comes back as `unknown` (answer 2xx, do
 * nothing) rather than as a rejection, so the gateway does not retry it for days.
 */
export type ThreeDsWebhookEvent = (EventBase & { type: ThreeDsEventType; payment: ThreeDsPayment }) | (EventBase & { type: 'unknown'; payment: null });

export type ThreeDsWebhookRejection =
  /** No webhook secret saved for the gateway: nothing can be verified (spec §5.4: HTTP 403). */
  | 'no_secret'
  | 'missing_signature'
  | 'malformed_signature'
  | 'timestamp_out_of_range'
  | 'signature_mismatch'
  /** Signed correctly but not an event we can read. */
  | 'malformed_payload';

export type ThreeDsWebhookVerification = { ok: true; event: ThreeDsWebhookEvent } | { ok: false; reason: ThreeDsWebhookRejection };

/** The HTTP status an inbound route answers a rejection with. */
export const THREEDS_WEBHOOK_REJECTION_HTTP = {
  no_secret: 403,
  missing_signature: 400,
  malformed_signature: 400,
  timestamp_out_of_range: 400,
  signature_mismatch: 400,
  malformed_payload: 400,
} as const satisfies Record<ThreeDsWebhookRejection, number>;

/** HMAC-SHA256 over `${timestamp}.` followed by the raw bytes, as lower-case hex. */
export function computeThreeDsSignature(secret: string, timestamp: number, rawBody: Buffer | Uint8Array | string): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(toBytes(rawBody)).digest('hex');
}

/** The header value for a delivery signed now (or at `timestamp`); used by tests and the sandbox docs. */
export function signThreeDsWebhook(secret: string, rawBody: Buffer | Uint8Array | string, timestamp = Math.floor(Date.now() / 1000)): string {
  return `t=${timestamp},v1=${computeThreeDsSignature(secret, timestamp, rawBody)}`;
}

/** `t=…,v1=…[,v1=…]` → the timestamp and the candidate signatures, or null when garbled. */
export function parseSignatureHeader(value: string): { timestamp: number; signatures: Buffer[] } | null {
  let timestamp: number | null = null;
  const signatures: Buffer[] = [];
  for (const part of value.split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) return null;
    const key = part.slice(0, eq).trim();
    const val = part.slice(eq + 1).trim();
    if (key === 't') {
      if (timestamp !== null || !/^\d{1,12}$/.test(val)) return null;
      timestamp = Number(val);
    } else if (key === 'v1') {
      if (!/^[0-9a-fA-F]{64}$/.test(val)) return null;
      signatures.push(Buffer.from(val, 'hex'));
    }
    // Other schemes (a future v2) are skipped, not refused, so the gateway can add one.
  }
  if (timestamp === null || signatures.length === 0) return null;
  return { timestamp, signatures };
}

const WireEvent = z.object({
  id: z.string().min(1),
  type: z.string().min(1),
  created: z.number().int(),
  data: z.unknown(),
});
const PaymentData = z.object({ payment: WirePayment });

function isEventType(type: string): type is ThreeDsEventType {
  return (THREEDS_EVENT_TYPES as readonly string[]).includes(type);
}

export interface VerifyOptions {
  /** The clock, for tests. */
  now?: Date | number;
  toleranceSeconds?: number;
}

/**
 * Verifies one delivery on the raw body bytes and the request headers, then (and only then) parses
 * it. Never throws for anything a sender can put in the request.
 */
export function verifyThreeDsWebhook(
  rawBody: Buffer | Uint8Array | string,
  headers: HeaderBag,
  secret: string | null | undefined,
  opts: VerifyOptions = {},
): ThreeDsWebhookVerification {
  if (!secret) return { ok: false, reason: 'no_secret' };
  const header = headerValue(headers, THREEDS_SIGNATURE_HEADER);
  if (header === undefined || header === '') return { ok: false, reason: 'missing_signature' };
  // Two signature headers is an ambiguity a proxy or an attacker made; refuse rather than pick one.
  if (Array.isArray(header)) return { ok: false, reason: 'malformed_signature' };
  const parsed = parseSignatureHeader(header);
  if (!parsed) return { ok: false, reason: 'malformed_signature' };

  const nowMs = opts.now === undefined ? Date.now() : typeof opts.now === 'number' ? opts.now : opts.now.getTime();
  const tolerance = opts.toleranceSeconds ?? THREEDS_WEBHOOK_TOLERANCE_SECONDS;
  if (Math.abs(Math.floor(nowMs / 1000) - parsed.timestamp) > tolerance) return { ok: false, reason: 'timestamp_out_of_range' };

  const bytes = toBytes(rawBody);
  const expected = Buffer.from(computeThreeDsSignature(secret, parsed.timestamp, bytes), 'hex');
  // Every candidate is compared, in constant time, whatever the outcome of the previous one.
  let matched = false;
  for (const candidate of parsed.signatures) if (timingSafeEqual(candidate, expected)) matched = true;
  if (!matched) return { ok: false, reason: 'signature_mismatch' };

  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch {
    return { ok: false, reason: 'malformed_payload' };
  }
  const event = WireEvent.safeParse(json);
  if (!event.success) return { ok: false, reason: 'malformed_payload' };
  const { id, type, created, data } = event.data;
  const base = { id, rawType: type, created };
  if (!isEventType(type)) return { ok: true, event: { ...base, type: 'unknown', payment: null } };
  const payment = PaymentData.safeParse(data);
  if (!payment.success) return { ok: false, reason: 'malformed_payload' };
  return { ok: true, event: { ...base, type, payment: fromWirePayment(payment.data.payment) } };
}
