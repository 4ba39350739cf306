import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { EXTPAY_EVENT_TYPES, EXTPAY_WEBHOOK_REJECTION_HTTP, extpaySigningKeys, signExtpayWebhook, verifyExtpayWebhook } from './webhook.ts';

const WS_SECRET = 'ws_28c2a0ba7b871781f3e69297d36443e0748ba95ca48b627483daf94564bd613a';
const WHSEC_KEY = Buffer.from('a-standard-webhooks-key-of-32-by');
const WHSEC_SECRET = `whsec_${WHSEC_KEY.toString('base64')}`;
const NOW = 1_750_000_000;
const at = { now: NOW * 1000 };
const MSG = 'msg_2abcDEF';

const payment = {
  id: 'pay_1',
  status: 'paid',
  substatus: 'succeeded',
  total: 49.99,
  subtotal: 49.99,
  currency: 'usd',
  refunded_amount: 0,
  billing_reason: 'one_time',
  plan: { id: 'plan_1' },
  membership: null,
  member: { id: 'mber_1', phone: null },
  user: { id: 'user_1', email: 'ada@example.com', name: null, username: 'ada' },
  metadata: { order_number: 'ord_1' },
  created_at: '2025-06-15T10:00:00.000Z',
  paid_at: '2025-06-15T10:00:01.000Z',
};
const event = { id: MSG, api_version: 'v1', timestamp: '2025-06-15T10:00:02.000Z', type: 'payment.succeeded', company_id: 'biz_1', data: payment };
const raw = Buffer.from(JSON.stringify(event));

function headers(secret: string, body: Buffer | string = raw, opts: { ts?: number; id?: string; mode?: 'raw' | 'standard' } = {}) {
  const ts = opts.ts ?? NOW;
  const id = opts.id ?? MSG;
  return { 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': signExtpayWebhook(secret, id, ts, body, opts.mode ?? 'raw'), 'content-type': 'application/json' };
}

describe('extpay webhook signatures (Standard Webhooks, Whop key rule)', () => {
  it('signs v1,<base64 HMAC-SHA256(secret bytes as given, "<id>.<ts>.<body>")>', () => {
    const expected = createHmac('sha256', Buffer.from(WS_SECRET, 'utf8')).update(`${MSG}.${NOW}.${raw.toString()}`).digest('base64');
    expect(signExtpayWebhook(WS_SECRET, MSG, NOW, raw)).toBe(`v1,${expected}`);
    const standard = createHmac('sha256', WHSEC_KEY).update(`${MSG}.${NOW}.${raw.toString()}`).digest('base64');
    expect(signExtpayWebhook(WHSEC_SECRET, MSG, NOW, raw, 'standard')).toBe(`v1,${standard}`);
  });

  it('tries the raw bytes, and for whsec_ also the base64-decoded key', () => {
    expect(extpaySigningKeys(WS_SECRET).map((k) => Buffer.from(k).toString('utf8'))).toEqual([WS_SECRET]);
    const keys = extpaySigningKeys(WHSEC_SECRET).map((k) => Buffer.from(k));
    expect(keys).toHaveLength(2);
    expect(keys[0]!.toString('utf8')).toBe(WHSEC_SECRET);
    expect(keys[1]!.equals(WHSEC_KEY)).toBe(true);
    // A whsec_ secret whose tail is not base64 has only its raw bytes.
    expect(extpaySigningKeys('whsec_not base64!')).toHaveLength(1);
  });

  it('accepts a ws_ secret signed with its bytes, and parses a typed event only then', () => {
    const r = verifyExtpayWebhook(raw, headers(WS_SECRET), WS_SECRET, at);
    expect(r).toEqual({
      ok: true,
      event: expect.objectContaining({
        id: MSG,
        bodyId: MSG,
        type: 'payment.succeeded',
        rawType: 'payment.succeeded',
        companyId: 'biz_1',
        timestamp: '2025-06-15T10:00:02.000Z',
        payment: expect.objectContaining({ id: 'pay_1', status: 'paid', amount: 4999, currency: 'USD', planId: 'plan_1', memberId: 'mber_1', metadata: { order_number: 'ord_1' } }),
      }),
    });
  });

  it('accepts a whsec_ secret signed either way: standard decoding or its bytes as given', () => {
    expect(verifyExtpayWebhook(raw, headers(WHSEC_SECRET, raw, { mode: 'standard' }), WHSEC_SECRET, at).ok).toBe(true);
    expect(verifyExtpayWebhook(raw, headers(WHSEC_SECRET, raw, { mode: 'raw' }), WHSEC_SECRET, at).ok).toBe(true);
  });

  it('takes the body as a Buffer, a string or a Uint8Array view, and Fetch or mixed-case headers', () => {
    const h = headers(WS_SECRET);
    const padded = Buffer.concat([Buffer.from('xx'), raw]);
    const view = new Uint8Array(padded.buffer, padded.byteOffset + 2, raw.length);
    expect(verifyExtpayWebhook(raw.toString('utf8'), h, WS_SECRET, at).ok).toBe(true);
    expect(verifyExtpayWebhook(view, new Headers(h), WS_SECRET, at).ok).toBe(true);
    expect(verifyExtpayWebhook(raw, { 'Webhook-Id': h['webhook-id'], 'Webhook-Timestamp': h['webhook-timestamp'], 'Webhook-Signature': h['webhook-signature'] }, WS_SECRET, at).ok).toBe(true);
  });

  it('accepts any one matching v1 signature among several (secret rotation) and skips other versions', () => {
    const good = headers(WS_SECRET)['webhook-signature'];
    const other = headers('ws_old_secret')['webhook-signature'];
    expect(verifyExtpayWebhook(raw, { ...headers(WS_SECRET), 'webhook-signature': `v2,abc ${other} ${good}` }, WS_SECRET, at).ok).toBe(true);
  });

  it('rejects a tampered body, even re-serialised, and the wrong secret', () => {
    const h = headers(WS_SECRET);
    expect(verifyExtpayWebhook(Buffer.from(raw.toString().replace('49.99', '0.01')), h, WS_SECRET, at)).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(verifyExtpayWebhook(Buffer.from(JSON.stringify(event, null, 2)), h, WS_SECRET, at)).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(verifyExtpayWebhook(raw, h, 'ws_wrong', at)).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(verifyExtpayWebhook(raw, h, WHSEC_SECRET, at)).toEqual({ ok: false, reason: 'signature_mismatch' });
    // The id is signed too: the same signature under another webhook-id does not verify.
    expect(verifyExtpayWebhook(raw, { ...h, 'webhook-id': 'msg_other' }, WS_SECRET, at)).toEqual({ ok: false, reason: 'signature_mismatch' });
    // Bytes that are not UTF-8 never verify.
    expect(verifyExtpayWebhook(Buffer.from([0xff, 0xfe]), h, WS_SECRET, at)).toEqual({ ok: false, reason: 'signature_mismatch' });
    // A byte-order mark put in front of a signed body is a changed body (the decoder must not drop it).
    expect(verifyExtpayWebhook(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), raw]), h, WS_SECRET, at)).toEqual({ ok: false, reason: 'signature_mismatch' });
  });

  it('rejects timestamps more than five minutes old or ahead, and accepts them inside', () => {
    for (const ts of [NOW - 360, NOW + 360]) expect(verifyExtpayWebhook(raw, headers(WS_SECRET, raw, { ts }), WS_SECRET, at)).toEqual({ ok: false, reason: 'timestamp_out_of_range' });
    for (const ts of [NOW - 299, NOW + 299]) expect(verifyExtpayWebhook(raw, headers(WS_SECRET, raw, { ts }), WS_SECRET, at).ok).toBe(true);
  });

  it('rejects missing, duplicated or garbled headers, and answers 403 when no secret is saved', () => {
    const h = headers(WS_SECRET);
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const) {
      const { [name]: _gone, ...rest } = h;
      expect(verifyExtpayWebhook(raw, rest, WS_SECRET, at), name).toEqual({ ok: false, reason: 'missing_headers' });
    }
    expect(verifyExtpayWebhook(raw, { ...h, 'webhook-signature': [h['webhook-signature'], h['webhook-signature']] }, WS_SECRET, at)).toEqual({ ok: false, reason: 'malformed_headers' });
    expect(verifyExtpayWebhook(raw, { ...h, 'webhook-timestamp': 'yesterday' }, WS_SECRET, at)).toEqual({ ok: false, reason: 'malformed_headers' });
    expect(verifyExtpayWebhook(raw, { ...h, 'webhook-signature': 'v2,abc' }, WS_SECRET, at)).toEqual({ ok: false, reason: 'malformed_headers' });
    expect(verifyExtpayWebhook(raw, h, null, at)).toEqual({ ok: false, reason: 'no_secret' });
    expect(verifyExtpayWebhook(raw, h, '', at)).toEqual({ ok: false, reason: 'no_secret' });
    expect(EXTPAY_WEBHOOK_REJECTION_HTTP.no_secret).toBe(403);
    expect(EXTPAY_WEBHOOK_REJECTION_HTTP.signature_mismatch).toBe(400);
  });

  it('reads an unsubscribed kind as unknown, and a signed but unreadable body as malformed', () => {
    const other = Buffer.from(JSON.stringify({ ...event, type: 'invoice.paid', data: { id: 'inv_1' } }));
    expect(verifyExtpayWebhook(other, headers(WS_SECRET, other), WS_SECRET, at)).toMatchObject({ ok: true, event: { type: 'unknown', rawType: 'invoice.paid', data: { id: 'inv_1' } } });
    const notJson = Buffer.from('not json');
    expect(verifyExtpayWebhook(notJson, headers(WS_SECRET, notJson), WS_SECRET, at)).toEqual({ ok: false, reason: 'malformed_payload' });
    const badData = Buffer.from(JSON.stringify({ ...event, data: { nope: true } }));
    expect(verifyExtpayWebhook(badData, headers(WS_SECRET, badData), WS_SECRET, at)).toEqual({ ok: false, reason: 'malformed_payload' });
  });

  it('types each of the eleven subscribed kinds', () => {
    const membership = { id: 'mem_1', status: 'active', cancel_at_period_end: true, payment_collection_paused: false, plan: { id: 'plan_1' }, member: { id: 'mber_1' }, renewal_period_end: '2025-07-15T10:00:00.000Z', metadata: { order_number: 'ord_1' } };
    const refund = { id: 'rfnd_1', status: 'succeeded', amount: 12.5, currency: 'usd', payment: { id: 'pay_1' }, created_at: '2025-06-16T00:00:00.000Z' };
    const dispute = { id: 'dspt_1', status: 'needs_response', reason: 'fraudulent', amount: 49.99, currency: 'usd', payment: { id: 'pay_1' } };
    const setupIntent = { id: 'sint_1', status: 'succeeded', payment_method: { id: 'payt_1', card: { brand: 'visa', last4: '4242' } }, member: { id: 'mber_1' }, checkout_configuration: { id: 'ch_1' }, metadata: {} };
    const data: Record<string, unknown> = { payment: payment, membership, refund, dispute, setup_intent: setupIntent };
    const expected: Record<string, Record<string, unknown>> = {
      payment: { payment: expect.objectContaining({ id: 'pay_1', amount: 4999 }) },
      membership: { membership: expect.objectContaining({ id: 'mem_1', status: 'active', cancelAtPeriodEnd: true, renewalPeriodEnd: '2025-07-15T10:00:00.000Z' }) },
      refund: { refund: { id: 'rfnd_1', status: 'succeeded', amount: 1250, currency: 'USD', paymentId: 'pay_1', createdAt: '2025-06-16T00:00:00.000Z' } },
      dispute: { dispute: expect.objectContaining({ id: 'dspt_1', status: 'needs_response', reason: 'fraudulent', amount: 4999, paymentId: 'pay_1' }) },
      setup_intent: { setupIntent: expect.objectContaining({ id: 'sint_1', paymentMethodId: 'payt_1', memberId: 'mber_1', cardLast4: '4242' }) },
    };
    expect(EXTPAY_EVENT_TYPES).toHaveLength(11);
    for (const type of EXTPAY_EVENT_TYPES) {
      const family = type.split('.')[0]!;
      const body = Buffer.from(JSON.stringify({ ...event, type, data: data[family] }));
      const r = verifyExtpayWebhook(body, headers(WS_SECRET, body), WS_SECRET, at);
      expect(r, type).toMatchObject({ ok: true, event: { type, ...expected[family] } });
    }
  });
});

describe("Whop's current payloads", () => {
  it('reads api_version_date and previous_attributes, and null when an older payload has neither', () => {
    const body = Buffer.from(JSON.stringify({ ...event, api_version_date: '2026-07-01', previous_attributes: { status: 'pending' } }));
    const r = verifyExtpayWebhook(body, headers(WS_SECRET, body), WS_SECRET, at);
    expect(r).toMatchObject({ ok: true, event: { apiVersion: 'v1', apiVersionDate: '2026-07-01', previousAttributes: { status: 'pending' } } });
    expect(verifyExtpayWebhook(raw, headers(WS_SECRET), WS_SECRET, at)).toMatchObject({ ok: true, event: { apiVersionDate: null, previousAttributes: null } });
  });

  it('reads payment.authorized as a payment event acted on like payment.created, keeping the kind as sent', () => {
    const body = Buffer.from(JSON.stringify({ ...event, type: 'payment.authorized', data: { ...payment, status: 'pending', substatus: 'pending' } }));
    const r = verifyExtpayWebhook(body, headers(WS_SECRET, body), WS_SECRET, at);
    expect(r).toMatchObject({ ok: true, event: { type: 'payment.created', rawType: 'payment.authorized', payment: { id: 'pay_1', status: 'pending' } } });
  });
});
