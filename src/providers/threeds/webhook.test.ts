import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { THREEDS_WEBHOOK_REJECTION_HTTP, computeThreeDsSignature, parseSignatureHeader, signThreeDsWebhook, verifyThreeDsWebhook } from './webhook.ts';

const SECRET = 'whsec_test_3ds';
const NOW = 1_750_000_000;
const at = { now: NOW * 1000 };

const event = {
  id: 'evt_1',
  type: 'PAYMENT_SUCCEEDED',
  created: NOW - 3,
  data: { payment: { id: 'pay_1', status: 'succeeded', amount: 4999, currency: 'USD', reference: 'att_1', payment_method: 'pm_1', merchant_initiated: false } },
};
const raw = Buffer.from(JSON.stringify(event));

function headers(value: string | string[] | undefined): Record<string, string | string[] | undefined> {
  return { 'content-type': 'application/json', 'x-gateway-signature': value };
}

describe('3DS gateway webhook signatures', () => {
  it('signs HMAC-SHA256 over "<t>.<raw body>" as hex, the documented recipe', () => {
    const expected = createHmac('sha256', SECRET).update(`${NOW}.${raw.toString()}`).digest('hex');
    expect(computeThreeDsSignature(SECRET, NOW, raw)).toBe(expected);
    expect(signThreeDsWebhook(SECRET, raw, NOW)).toBe(`t=${NOW},v1=${expected}`);
  });

  it('accepts a good delivery and only then parses it into a typed event', () => {
    const r = verifyThreeDsWebhook(raw, headers(signThreeDsWebhook(SECRET, raw, NOW)), SECRET, at);
    expect(r).toEqual({
      ok: true,
      event: {
        id: 'evt_1',
        type: 'PAYMENT_SUCCEEDED',
        rawType: 'PAYMENT_SUCCEEDED',
        created: NOW - 3,
        payment: expect.objectContaining({ id: 'pay_1', status: 'succeeded', reference: 'att_1', paymentMethod: 'pm_1' }),
      },
    });
    // The same bytes as a string, a Uint8Array view, or with Fetch-style headers.
    const padded = Buffer.concat([Buffer.from('xx'), raw]);
    const view = new Uint8Array(padded.buffer, padded.byteOffset + 2, raw.length);
    expect(verifyThreeDsWebhook(raw.toString('utf8'), headers(signThreeDsWebhook(SECRET, raw, NOW)), SECRET, at).ok).toBe(true);
    expect(verifyThreeDsWebhook(view, new Headers({ 'X-Gateway-Signature': signThreeDsWebhook(SECRET, raw, NOW) }), SECRET, at).ok).toBe(true);
    expect(verifyThreeDsWebhook(raw, { 'X-Gateway-Signature': signThreeDsWebhook(SECRET, raw, NOW) }, SECRET, at).ok).toBe(true);
  });

  it('refuses a tampered body, even by one byte or by re-serialising the same JSON', () => {
    const header = signThreeDsWebhook(SECRET, raw, NOW);
    const tampered = Buffer.from(raw.toString().replace('4999', '1'));
    expect(verifyThreeDsWebhook(tampered, headers(header), SECRET, at)).toEqual({ ok: false, reason: 'signature_mismatch' });
    const reformatted = Buffer.from(JSON.stringify(event, null, 2));
    expect(verifyThreeDsWebhook(reformatted, headers(header), SECRET, at)).toEqual({ ok: false, reason: 'signature_mismatch' });
  });

  it('refuses the wrong secret, and answers 403 when no secret is saved', () => {
    const header = signThreeDsWebhook('whsec_other', raw, NOW);
    expect(verifyThreeDsWebhook(raw, headers(header), SECRET, at)).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(verifyThreeDsWebhook(raw, headers(header), null, at)).toEqual({ ok: false, reason: 'no_secret' });
    expect(verifyThreeDsWebhook(raw, headers(header), '', at)).toEqual({ ok: false, reason: 'no_secret' });
    expect(THREEDS_WEBHOOK_REJECTION_HTTP.no_secret).toBe(403);
  });

  it('refuses timestamps more than five minutes old or ahead', () => {
    const old = signThreeDsWebhook(SECRET, raw, NOW - 360);
    expect(verifyThreeDsWebhook(raw, headers(old), SECRET, at)).toEqual({ ok: false, reason: 'timestamp_out_of_range' });
    const ahead = signThreeDsWebhook(SECRET, raw, NOW + 360);
    expect(verifyThreeDsWebhook(raw, headers(ahead), SECRET, at)).toEqual({ ok: false, reason: 'timestamp_out_of_range' });
    expect(verifyThreeDsWebhook(raw, headers(signThreeDsWebhook(SECRET, raw, NOW - 299)), SECRET, at).ok).toBe(true);
  });

  it('refuses missing, duplicated and garbled headers', () => {
    const good = signThreeDsWebhook(SECRET, raw, NOW);
    expect(verifyThreeDsWebhook(raw, headers(undefined), SECRET, at)).toEqual({ ok: false, reason: 'missing_signature' });
    expect(verifyThreeDsWebhook(raw, {}, SECRET, at)).toEqual({ ok: false, reason: 'missing_signature' });
    expect(verifyThreeDsWebhook(raw, headers(''), SECRET, at)).toEqual({ ok: false, reason: 'missing_signature' });
    expect(verifyThreeDsWebhook(raw, headers([good, good]), SECRET, at)).toEqual({ ok: false, reason: 'malformed_signature' });
    const sig = good.split('v1=')[1]!;
    for (const garbled of [
      sig,
      `v1=${sig}`,
      `t=${NOW}`,
      `t=${NOW},v1=`,
      `t=${NOW},v1=${sig.slice(0, 63)}`,
      `t=${NOW},v1=${sig}zz`,
      `t=abc,v1=${sig}`,
      `t=${NOW},t=${NOW},v1=${sig}`,
      `t=-1,v1=${sig}`,
      'garbage',
    ])
      expect(verifyThreeDsWebhook(raw, headers(garbled), SECRET, at), garbled).toEqual({ ok: false, reason: 'malformed_signature' });
  });

  it('accepts any one matching v1 (secret rotation) and skips schemes it does not know', () => {
    const stale = computeThreeDsSignature('whsec_old', NOW, raw);
    const fresh = computeThreeDsSignature(SECRET, NOW, raw);
    expect(verifyThreeDsWebhook(raw, headers(`t=${NOW},v1=${stale},v1=${fresh}`), SECRET, at).ok).toBe(true);
    expect(verifyThreeDsWebhook(raw, headers(`t=${NOW}, v0=abc, v1=${fresh}`), SECRET, at).ok).toBe(true);
    expect(verifyThreeDsWebhook(raw, headers(`t=${NOW},v1=${stale}`), SECRET, at)).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(parseSignatureHeader(`t=${NOW},v1=${fresh.toUpperCase()}`)?.signatures).toHaveLength(1);
  });

  it('refuses a correctly signed body it cannot read, and passes unknown kinds through as unknown', () => {
    const signed = (body: string) => verifyThreeDsWebhook(body, headers(signThreeDsWebhook(SECRET, body, NOW)), SECRET, at);
    expect(signed('not json')).toEqual({ ok: false, reason: 'malformed_payload' });
    expect(signed(JSON.stringify({ ...event, data: { payment: { id: 'pay_1', status: 'weird' } } }))).toEqual({ ok: false, reason: 'malformed_payload' });
    expect(signed(JSON.stringify({ id: 'evt_1', type: 'PAYMENT_FAILED', created: NOW }))).toEqual({ ok: false, reason: 'malformed_payload' });
    expect(signed(JSON.stringify({ id: 'evt_2', type: 'REFUND_SETTLED', created: NOW, data: { refund: {} } }))).toEqual({
      ok: true,
      event: { id: 'evt_2', type: 'unknown', rawType: 'REFUND_SETTLED', created: NOW, payment: null },
    });
  });
});
