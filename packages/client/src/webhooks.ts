import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { components } from './schema.ts';

/** The body of a webhook delivery: the event as GET /v1/events/{id} answers it. */
export type WebhookEvent = components['schemas']['Event'];

export { WebhookVerificationError };

type HeaderBag = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderBag, name: string): string {
  if (headers instanceof Headers) return headers.get(name) ?? '';
  const v = headers[name] ?? headers[name.toLowerCase()];
  return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
}

/**
 * Verifies a Checkstand webhook the Standard Webhooks way (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature`, signed with the endpoint's `whsec_…` secret) and returns the event.
 * Pass the raw body exactly as received (a string or the bytes), not re-serialised JSON.
 * Throws WebhookVerificationError on a bad signature or a timestamp more than 5 minutes off.
 * During a secret rotation both signatures are sent; either secret verifies.
 */
export function verifyWebhook(secret: string, rawBody: string | Uint8Array, headers: HeaderBag): WebhookEvent {
  const body = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody);
  const wanted = {
    'webhook-id': header(headers, 'webhook-id'),
    'webhook-timestamp': header(headers, 'webhook-timestamp'),
    'webhook-signature': header(headers, 'webhook-signature'),
  };
  return new Webhook(secret).verify(body, wanted) as WebhookEvent;
}

/** The same, for a receiver that keeps one verifier per endpoint secret. */
export class WebhookVerifier {
  constructor(private readonly secret: string) {}

  verify(rawBody: string | Uint8Array, headers: HeaderBag): WebhookEvent {
    return verifyWebhook(this.secret, rawBody, headers);
  }
}
