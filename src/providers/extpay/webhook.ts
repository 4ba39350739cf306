import { timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { z } from 'zod';
import type { ExtpayDispute, ExtpayMembership, ExtpayPayment, ExtpayRefund, ExtpaySetupIntent } from './types.ts';
import {
  WireDispute,
  WireMembership,
  WirePayment,
  WireRefund,
  WireSetupIntent,
  fromWireDispute,
  fromWireMembership,
  fromWirePayment,
  fromWireRefund,
  fromWireSetupIntent,
  toIsoTime,
} from './wire.ts';
import { type HeaderBag, headerValue, toBytes } from '../raw-webhook.ts';

/**
 * Webhooks from Whop, signed the Standard Webhooks way (https://www.standardwebhooks.com):
 *
 *   webhook-id: msg_…              stable across retries of one event
 *   webhook-timestamp: <unix s>    fresh per attempt
 *   webhook-signature: v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<raw body>")> [v1,… …]
 *
 * The key. Standard Webhooks takes `whsec_<base64 key>`. Whop's secrets are `ws_…` strings whose
 * *bytes as given* are the key: Whop's own SDK is set up with `webhookKey: btoa(secret)`, which the
 * `standardwebhooks` library base64-decodes back to those bytes. So we try the secret's UTF-8 bytes
 * and, for a `whsec_` secret, the standard base64-decoded key too; either matching verifies.
 *
 * Verification runs on the raw body bytes, before anything is parsed; the signature is computed with
 * the `standardwebhooks` package. The timestamp is checked here (so tests can move the clock).
 */
export const EXTPAY_WEBHOOK_TOLERANCE_SECONDS = 300;

/** The kinds the service's webhook subscribes to (spec §6.1), exactly. */
export const EXTPAY_EVENT_TYPES = [
  'payment.succeeded',
  'payment.failed',
  'payment.created',
  'membership.activated',
  'membership.deactivated',
  'membership.cancel_at_period_end_changed',
  'refund.created',
  'refund.updated',
  'dispute.created',
  'dispute.updated',
  'setup_intent.succeeded',
] as const;
export type ExtpayEventType = (typeof EXTPAY_EVENT_TYPES)[number];

/**
 * Kinds outside the eleven that are read as one of them. `payment.authorized` (Whop: the card is
 * authorized and the money held, not yet captured) is our pending: it is read like
 * `payment.created` — it changes nothing unless the provider already reports the payment failed —
 * so the order stays awaiting external confirmation (Capture answers 202) until `payment.succeeded`
 * or `payment.failed` settles it. `rawType` keeps the kind as sent. Subscribing to it is optional.
 */
export const EXTPAY_EVENT_ALIASES = { 'payment.authorized': 'payment.created' } as const satisfies Record<string, ExtpayEventType>;

interface EventBase {
  /** `webhook-id`: the dedupe key (Standard Webhooks keeps it across retries). */
  id: string;
  /** The body's own `id`, when it has one. */
  bodyId: string | null;
  /** The type exactly as sent. */
  rawType: string;
  /** ISO 8601: the body's `timestamp`, else the signing time. */
  timestamp: string;
  companyId: string | null;
  /** The body's `api_version` (`v1`). */
  apiVersion: string | null;
  /** The dated version the payload is serialized to (the body's `api_version_date`), when sent. */
  apiVersionDate: string | null;
  /** On some updates, the old values of the fields that changed (the body's `previous_attributes`). */
  previousAttributes: Record<string, unknown> | null;
}

type PaymentEventType = 'payment.succeeded' | 'payment.failed' | 'payment.created';
type MembershipEventType = 'membership.activated' | 'membership.deactivated' | 'membership.cancel_at_period_end_changed';
type RefundEventType = 'refund.created' | 'refund.updated';
type DisputeEventType = 'dispute.created' | 'dispute.updated';

/**
 * A verified event, typed by kind. A kind the service does not subscribe to comes back as `unknown`
 * (answer 2xx and ignore it) rather than as a rejection, so Whop does not retry it for days.
 */
export type ExtpayWebhookEvent =
  | (EventBase & { type: PaymentEventType; payment: ExtpayPayment })
  | (EventBase & { type: MembershipEventType; membership: ExtpayMembership })
  | (EventBase & { type: RefundEventType; refund: ExtpayRefund })
  | (EventBase & { type: DisputeEventType; dispute: ExtpayDispute })
  | (EventBase & { type: 'setup_intent.succeeded'; setupIntent: ExtpaySetupIntent })
  | (EventBase & { type: 'unknown'; data: unknown });

export type ExtpayWebhookRejection =
  /** No webhook secret saved on the connection: nothing can be verified. */
  | 'no_secret'
  /** One of webhook-id, webhook-timestamp, webhook-signature is absent. */
  | 'missing_headers'
  /** A header is garbled, or sent twice. */
  | 'malformed_headers'
  | 'timestamp_out_of_range'
  | 'signature_mismatch'
  /** Signed correctly but not an event we can read. */
  | 'malformed_payload';

export type ExtpayWebhookVerification = { ok: true; event: ExtpayWebhookEvent } | { ok: false; reason: ExtpayWebhookRejection };

/** The HTTP status an inbound route answers a rejection with (spec §5.4: unverifiable → 403). */
export const EXTPAY_WEBHOOK_REJECTION_HTTP = {
  no_secret: 403,
  missing_headers: 400,
  malformed_headers: 400,
  timestamp_out_of_range: 400,
  signature_mismatch: 400,
  malformed_payload: 400,
} as const satisfies Record<ExtpayWebhookRejection, number>;

/**
 * The HMAC keys a secret may stand for, in order: its UTF-8 bytes as given (Whop's `ws_` rule), then,
 * for `whsec_…`, the standard base64-decoded key.
 */
export function extpaySigningKeys(secret: string): Uint8Array[] {
  const keys: Uint8Array[] = [new Uint8Array(Buffer.from(secret, 'utf8'))];
  if (secret.startsWith('whsec_')) {
    const b64 = secret.slice('whsec_'.length);
    if (/^[A-Za-z0-9+/]+={0,2}$/.test(b64) && b64.length % 4 === 0) {
      const decoded = Buffer.from(b64, 'base64');
      if (decoded.length > 0) keys.push(new Uint8Array(decoded));
    }
  }
  return keys;
}

/**
 * The `webhook-signature` value for a delivery (`v1,<base64>`), keyed the way `mode` says: `raw` =
 * the secret's bytes as given (Whop's `ws_` secrets), `standard` = Standard Webhooks' `whsec_` base64
 * decoding. For tests and documentation; the sandbox signs with its own code.
 */
export function signExtpayWebhook(secret: string, msgId: string, timestamp: number, rawBody: Buffer | Uint8Array | string, mode: 'raw' | 'standard' = 'raw'): string {
  const wh = mode === 'raw' ? new Webhook(new Uint8Array(Buffer.from(secret, 'utf8')), { format: 'raw' }) : new Webhook(secret);
  return wh.sign(msgId, new Date(timestamp * 1000), toBytes(rawBody).toString('utf8'));
}

// ignoreBOM: a leading byte-order mark stays in the text, so it is signed (and checked) like any other byte.
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

const WireEvent = z.object({
  id: z.string().nullish(),
  type: z.string().min(1),
  timestamp: z.union([z.string(), z.number()]).nullish(),
  company_id: z.string().nullish(),
  api_version: z.string().nullish(),
  api_version_date: z.string().nullish(),
  previous_attributes: z.record(z.string(), z.unknown()).nullish(),
  data: z.unknown(),
});

function isEventType(type: string): type is ExtpayEventType {
  return (EXTPAY_EVENT_TYPES as readonly string[]).includes(type);
}

function actedOnAs(type: string): ExtpayEventType | null {
  if (isEventType(type)) return type;
  return Object.hasOwn(EXTPAY_EVENT_ALIASES, type) ? EXTPAY_EVENT_ALIASES[type as keyof typeof EXTPAY_EVENT_ALIASES] : null;
}

export interface VerifyOptions {
  /** The clock, for tests. */
  now?: Date | number;
  toleranceSeconds?: number;
}

function parseEvent(type: ExtpayEventType, base: EventBase, data: unknown): ExtpayWebhookEvent | null {
  switch (type) {
    case 'payment.succeeded':
    case 'payment.failed':
    case 'payment.created': {
      const p = WirePayment.safeParse(data);
      return p.success ? { ...base, type, payment: fromWirePayment(p.data) } : null;
    }
    case 'membership.activated':
    case 'membership.deactivated':
    case 'membership.cancel_at_period_end_changed': {
      const m = WireMembership.safeParse(data);
      return m.success ? { ...base, type, membership: fromWireMembership(m.data) } : null;
    }
    case 'refund.created':
    case 'refund.updated': {
      const r = WireRefund.safeParse(data);
      const refund = r.success ? fromWireRefund(r.data) : null;
      return refund ? { ...base, type, refund } : null;
    }
    case 'dispute.created':
    case 'dispute.updated': {
      const d = WireDispute.safeParse(data);
      const dispute = d.success ? fromWireDispute(d.data) : null;
      return dispute ? { ...base, type, dispute } : null;
    }
    case 'setup_intent.succeeded': {
      const s = WireSetupIntent.safeParse(data);
      return s.success ? { ...base, type, setupIntent: fromWireSetupIntent(s.data) } : null;
    }
  }
}

/**
 * Verifies one delivery on the raw body bytes and the request headers, then (and only then) parses
 * it. Never throws for anything a sender can put in the request.
 */
export function verifyExtpayWebhook(
  rawBody: Buffer | Uint8Array | string,
  headers: HeaderBag,
  secret: string | null | undefined,
  opts: VerifyOptions = {},
): ExtpayWebhookVerification {
  if (!secret) return { ok: false, reason: 'no_secret' };
  const id = headerValue(headers, 'webhook-id');
  const ts = headerValue(headers, 'webhook-timestamp');
  const sig = headerValue(headers, 'webhook-signature');
  if (!id || !ts || !sig) return { ok: false, reason: 'missing_headers' };
  // A header sent twice is an ambiguity a proxy or an attacker made; refuse rather than pick one.
  if (Array.isArray(id) || Array.isArray(ts) || Array.isArray(sig)) return { ok: false, reason: 'malformed_headers' };
  if (!/^\d{1,12}$/.test(ts.trim()) || id.length > 256 || /[\s,]/.test(id)) return { ok: false, reason: 'malformed_headers' };
  const timestamp = Number(ts.trim());
  const candidates = sig
    .split(' ')
    .map((s) => s.trim())
    .filter((s) => s.startsWith('v1,'))
    .map((s) => s.slice(3));
  if (candidates.length === 0) return { ok: false, reason: 'malformed_headers' };

  const nowMs = opts.now === undefined ? Date.now() : typeof opts.now === 'number' ? opts.now : opts.now.getTime();
  const tolerance = opts.toleranceSeconds ?? EXTPAY_WEBHOOK_TOLERANCE_SECONDS;
  if (Math.abs(Math.floor(nowMs / 1000) - timestamp) > tolerance) return { ok: false, reason: 'timestamp_out_of_range' };

  const bytes = toBytes(rawBody);
  let text: string;
  try {
    // The library signs a string; strict decoding keeps bytes and string one-to-one.
    text = STRICT_UTF8.decode(bytes);
  } catch {
    return { ok: false, reason: 'signature_mismatch' };
  }
  const given = candidates.map((c) => Buffer.from(c, 'utf8'));
  let matched = false;
  for (const key of extpaySigningKeys(secret)) {
    const expected = Buffer.from(new Webhook(key, { format: 'raw' }).sign(id, new Date(timestamp * 1000), text).slice(3), 'utf8');
    // Every candidate is compared in constant time, whatever the outcome of the previous one.
    for (const g of given) if (g.length === expected.length && timingSafeEqual(g, expected)) matched = true;
  }
  if (!matched) return { ok: false, reason: 'signature_mismatch' };

  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'malformed_payload' };
  }
  const event = WireEvent.safeParse(json);
  if (!event.success) return { ok: false, reason: 'malformed_payload' };
  const { type, data } = event.data;
  const base: EventBase = {
    id,
    bodyId: event.data.id ?? null,
    rawType: type,
    timestamp: toIsoTime(event.data.timestamp) ?? new Date(timestamp * 1000).toISOString(),
    companyId: event.data.company_id ?? null,
    apiVersion: event.data.api_version ?? null,
    apiVersionDate: event.data.api_version_date ?? null,
    previousAttributes: event.data.previous_attributes ?? null,
  };
  const kind = actedOnAs(type);
  if (!kind) return { ok: true, event: { ...base, type: 'unknown', data } };
  const parsed = parseEvent(kind, base, data);
  return parsed ? { ok: true, event: parsed } : { ok: false, reason: 'malformed_payload' };
}
