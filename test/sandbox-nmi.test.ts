import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayAccount, GatewayQueriedTransaction, GatewayQueryResult, GatewayResult, SaleRequest } from '../src/providers/card-gateway.ts';
import { NmiAdapter, nmiAdapter } from '../src/providers/nmi/adapter.ts';
import { nmiProvider } from '../src/providers/nmi/provider.ts';
import { SANDBOX_CARDS } from '../src/sandbox/cards.ts';
import { startSandbox } from '../src/sandbox/server.ts';

// The real adapter against the sandbox over a real socket; no database involved.
const SLOW_MS = 600;
let sandbox: { url: string; close(): Promise<void> };
let keySeq = 0;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, slowMs: SLOW_MS });
});
afterAll(async () => {
  await sandbox?.close();
});

/** Each test gets its own merchant account: every security key is one. */
function gateway(prefix = 'key'): GatewayAccount {
  return { baseUrl: sandbox.url, credentials: { security_key: `${prefix}_${++keySeq}_${Date.now()}` }, testMode: true };
}

function sale(card: string, extra: Partial<SaleRequest> = {}): SaleRequest {
  return {
    amount: 4999,
    currency: 'USD',
    orderId: 'ord_test',
    attemptId: `att_${++keySeq}`,
    card: { number: card, exp: '12/30', cvv: '123' },
    saveCard: false,
    customer: { email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace' },
    billing: { line1: '1 Main St', city: 'Springfield', state: 'IL', postal_code: '62701', country: 'US' },
    ...extra,
  };
}

async function ledger(account: GatewayAccount) {
  const res = await fetch(`${sandbox.url}/sandbox/nmi/ledger?security_key=${encodeURIComponent(account.credentials.security_key!)}`);
  expect(res.status).toBe(200);
  return (await res.json()) as {
    transactions: { transactionid: string | null; type: string; status: string; amount: string | null; amount_minor: number | null; response_code: string; orderid: string | null; last4: string | null; customer_vault_id: string | null; parent_transactionid: string | null; voided?: boolean; refunded_minor?: number }[];
    summary: { approved_sales: number; charged_minor: number; refunded_minor: number; voided: number };
  };
}

async function forceResponse(account: GatewayAccount, code: string | null) {
  const res = await fetch(`${sandbox.url}/sandbox/nmi/accounts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ security_key: account.credentials.security_key, force_response_code: code }),
  });
  expect(res.status).toBe(200);
}

function approved(r: GatewayResult): Extract<GatewayResult, { kind: 'approved' }> {
  expect(r.kind, JSON.stringify(r)).toBe('approved');
  return r as Extract<GatewayResult, { kind: 'approved' }>;
}

function expectNoCardData(r: unknown) {
  const text = JSON.stringify(r);
  for (const pan of Object.values(SANDBOX_CARDS)) expect(text).not.toContain(pan);
}


/** A raw Direct Post request to the sandbox, answered as the fields of its query-string body. */
async function transact(securityKey: string, fields: Record<string, string>): Promise<Record<string, string>> {
  const res = await fetch(`${sandbox.url}/api/transact.php`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ security_key: securityKey, ...fields }).toString(),
  });
  return Object.fromEntries(new URLSearchParams(await res.text()));
}

describe('NMI adapter against the sandbox', () => {
  it('answers the health check', async () => {
    const res = await fetch(`${sandbox.url}/sandbox/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ ok: true, providers: expect.arrayContaining(['nmi']) });
  });

  it('approves a card, saves it to the vault and charges the vault without card fields', async () => {
    const gw = gateway();
    const first = approved(await nmiAdapter.sale(gw, sale(SANDBOX_CARDS.approve, { saveCard: true })));
    expect(first.responseCode).toBe('100');
    expect(first.authCode).toMatch(/^\d{6}$/);
    expect(first.vaultRef).toMatch(/^\d+$/);
    expectNoCardData(first);

    const upsell = approved(await nmiAdapter.sale(gw, sale(SANDBOX_CARDS.approve, { card: undefined, vaultRef: first.vaultRef!, amount: 1900 })));
    expect(upsell.transactionId).not.toBe(first.transactionId);

    const l = await ledger(gw);
    expect(l.transactions).toHaveLength(2);
    expect(l.transactions[0]).toMatchObject({ transactionid: first.transactionId, type: 'sale', status: 'approved', amount: '49.99', amount_minor: 4999, last4: '1111', customer_vault_id: first.vaultRef });
    expect(l.transactions[1]).toMatchObject({ transactionid: upsell.transactionId, amount: '19.00', amount_minor: 1900, last4: '1111', customer_vault_id: first.vaultRef });
    expect(l.summary).toMatchObject({ approved_sales: 2, charged_minor: 6899 });
    expect(JSON.stringify(l)).not.toContain(SANDBOX_CARDS.approve);
  });

  it('does not save a declined card, and refuses an unknown or foreign vault id', async () => {
    const gw = gateway();
    const declined = await nmiAdapter.sale(gw, sale(SANDBOX_CARDS.insufficientFunds, { saveCard: true }));
    expect(declined.kind).toBe('declined');
    const saved = approved(await nmiAdapter.sale(gw, sale(SANDBOX_CARDS.approve, { saveCard: true })));
    const entries = (await ledger(gw)).transactions;
    expect(entries.map((t) => t.customer_vault_id)).toEqual([null, saved.vaultRef]);

    const unknown = await nmiAdapter.sale(gw, sale(SANDBOX_CARDS.approve, { card: undefined, vaultRef: '123' }));
    expect(unknown).toMatchObject({ kind: 'error', responseCode: '300', responseText: 'Invalid Customer Vault Id', retryable: false });
    // A vault belongs to its merchant account.
    const foreign = await nmiAdapter.sale(gateway(), sale(SANDBOX_CARDS.approve, { card: undefined, vaultRef: saved.vaultRef! }));
    expect(foreign).toMatchObject({ kind: 'error', responseCode: '300', responseText: 'Invalid Customer Vault Id' });
  });

  it('charges a vaulted card with its own behaviour', async () => {
    const gw = gateway();
    await forceResponse(gw, '100');
    const saved = approved(await nmiAdapter.sale(gw, sale(SANDBOX_CARDS.insufficientFunds, { saveCard: true })));
    await forceResponse(gw, null);
    const r = await nmiAdapter.sale(gw, sale(SANDBOX_CARDS.approve, { card: undefined, vaultRef: saved.vaultRef! }));
    expect(r).toMatchObject({ kind: 'declined', responseCode: '202', retryable: true, hard: false });
  });

  it.each([
    ['rebillSoftDecline', '202', false],
    ['rebillHardDecline', '261', true],
  ] as const)('approves the %s card when typed, then declines its vault charge (%s, hard %s) as the provider reads it', async (name, code, hard) => {
    const gw = gateway();
    const provider = nmiProvider(nmiAdapter);
    const payer = { email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace' };
    const first = await provider.charge(gw, { attemptId: `att_${++keySeq}`, orderId: 'ord_1', amount: 4999, currency: 'USD', card: { number: SANDBOX_CARDS[name], exp: '12/30', cvv: '123' }, saveCard: true, payer });
    expect(first).toMatchObject({ kind: 'approved', code: '100' });
    const vaultRef = (first as Extract<typeof first, { kind: 'approved' }>).vaultRef!;
    expect(vaultRef).toMatch(/^\d+$/);
    const rebillId = `att_${++keySeq}`;
    const rebill = await provider.charge(gw, { attemptId: rebillId, orderId: 'ord_2', amount: 2900, currency: 'USD', saved: { vaultRef, originalRef: null }, saveCard: false, payer });
    expect(rebill).toMatchObject({ kind: 'declined', code, hard, retryable: !hard });
    // The recovery run reads the same class back from the Query API.
    expect(await provider.findCharge(gw, { id: rebillId, createdAt: new Date() })).toMatchObject({ kind: 'declined', code, hard });
    expect((await ledger(gw)).summary).toMatchObject({ approved_sales: 1, charged_minor: 4999 });

    // A card update (update_customer on the same vault id) makes the next vault charge answer as the new card.
    const updated = await transact(gw.credentials.security_key!, { customer_vault: 'update_customer', customer_vault_id: vaultRef, ccnumber: SANDBOX_CARDS.approve, ccexp: '1231' });
    expect(updated).toMatchObject({ response: '1', response_code: '100', customer_vault_id: vaultRef });
    const again = await provider.charge(gw, { attemptId: `att_${++keySeq}`, orderId: 'ord_3', amount: 2900, currency: 'USD', saved: { vaultRef, originalRef: null }, saveCard: false, payer });
    expect(again).toMatchObject({ kind: 'approved', code: '100' });
    expect((await ledger(gw)).transactions.at(-1)).toMatchObject({ type: 'sale', status: 'approved', last4: '1111', customer_vault_id: vaultRef });
  });

  it('validates a card for $0 with customer_vault=add_customer: nothing charged, the vault id charges later, a declined card saves nothing', async () => {
    const gw = gateway();
    const key = gw.credentials.security_key!;
    const v = await transact(key, { type: 'validate', ccnumber: SANDBOX_CARDS.approve, ccexp: '1230', cvv: '123', amount: '0.00', currency: 'USD', orderid: 'att_v1', customer_vault: 'add_customer' });
    expect(v).toMatchObject({ response: '1', response_code: '100', type: 'validate', orderid: 'att_v1' });
    expect(v.transactionid).toMatch(/^\d{10}$/);
    expect(v.customer_vault_id).toMatch(/^\d+$/);
    approved(await nmiAdapter.sale(gw, sale(SANDBOX_CARDS.approve, { card: undefined, vaultRef: v.customer_vault_id!, amount: 2900 })));
    const declined = await transact(key, { type: 'validate', ccnumber: SANDBOX_CARDS.insufficientFunds, ccexp: '1230', customer_vault: 'add_customer' });
    expect(declined).toMatchObject({ response: '2', response_code: '202' });
    expect(declined.customer_vault_id).toBeUndefined();
    expect(await transact(key, { type: 'validate', ccnumber: SANDBOX_CARDS.approve, ccexp: '1230', amount: '1.00' })).toMatchObject({ response: '3', response_code: '300' });
    const l = await ledger(gw);
    expect(l.transactions.map((t) => [t.type, t.status, t.amount_minor])).toEqual([['validate', 'approved', 0], ['sale', 'approved', 2900], ['validate', 'declined', 0], ['validate', 'error', null]]);
    expect(l.summary).toMatchObject({ approved_sales: 1, charged_minor: 2900 });
    // The Query API finds a validate by its order id, as a transaction of its own.
    const q = await nmiAdapter.query(gw, { orderId: 'att_v1' });
    expect(q).toMatchObject({ kind: 'found', transactions: [{ type: 'validate', status: 'approved', condition: 'complete', vaultRef: v.customer_vault_id }] });
  });

  it('refuses a card update of an unknown vault id, and adds a card to the vault without a transaction', async () => {
    const gw = gateway();
    const key = gw.credentials.security_key!;
    expect(await transact(key, { customer_vault: 'update_customer', customer_vault_id: '999', ccnumber: SANDBOX_CARDS.approve, ccexp: '1231' })).toMatchObject({ response: '3', responsetext: 'Invalid Customer Vault Id' });
    const added = await transact(key, { customer_vault: 'add_customer', ccnumber: SANDBOX_CARDS.rebillHardDecline, ccexp: '1231' });
    expect(added).toMatchObject({ response: '1', responsetext: 'Customer Added', transactionid: '' });
    const r = await nmiAdapter.sale(gw, sale(SANDBOX_CARDS.approve, { card: undefined, vaultRef: added.customer_vault_id! }));
    expect(r).toMatchObject({ kind: 'declined', responseCode: '261', hard: true, retryable: false });
    expect((await ledger(gw)).transactions).toHaveLength(1);
  });

  it.each([
    ['doNotHonor', '201'],
    ['insufficientFunds', '202'],
    ['overLimit', '203'],
  ] as const)('declines %s softly (%s): retryable on another gateway', async (name, code) => {
    const r = await nmiAdapter.sale(gateway(), sale(SANDBOX_CARDS[name]));
    expect(r).toMatchObject({ kind: 'declined', responseCode: code, retryable: true, hard: false });
    expect(r.transactionId).toMatch(/^\d{10}$/);
    expectNoCardData(r);
  });

  it.each([
    ['pickUp', '250'],
    ['lost', '251'],
    ['stolen', '252'],
    ['fraud', '253'],
  ] as const)('declines %s hard (%s): never retried', async (name, code) => {
    const r = await nmiAdapter.sale(gateway(), sale(SANDBOX_CARDS[name]));
    expect(r).toMatchObject({ kind: 'declined', responseCode: code, retryable: false, hard: true });
    expectNoCardData(r);
  });

  it('reports a processor error as a retryable error', async () => {
    const gw = gateway();
    const r = await nmiAdapter.sale(gw, sale(SANDBOX_CARDS.processingError));
    expect(r).toMatchObject({ kind: 'error', responseCode: '400', retryable: true });
    expect((await ledger(gw)).transactions[0]).toMatchObject({ status: 'error', response_code: '400' });
  });

  it('approves any other Luhn-valid card and rejects an invalid one before processing', async () => {
    const gw = gateway();
    approved(await nmiAdapter.sale(gw, sale('5431111111111111')));
    const bad = await nmiAdapter.sale(gw, sale('4111111111111112'));
    expect(bad).toMatchObject({ kind: 'error', responseCode: '300', transactionId: null, retryable: false });
    const badCvv = await nmiAdapter.sale(gw, sale(SANDBOX_CARDS.approve, { card: { number: SANDBOX_CARDS.approve, exp: '12/30', cvv: '12' } }));
    expect(badCvv).toMatchObject({ kind: 'error', responseCode: '300', responseText: 'Invalid CVV' });
    const l = await ledger(gw);
    expect(l.summary.approved_sales).toBe(1);
    expect(l.transactions.map((t) => t.status)).toEqual(['approved', 'error', 'error']);
  });

  it('times out on the slow card without retrying, though the charge went through', async () => {
    const gw = gateway();
    const impatient = new NmiAdapter({ timeoutMs: 150 });
    const started = Date.now();
    const r = await impatient.sale(gw, sale(SANDBOX_CARDS.slow));
    expect(Date.now() - started).toBeLessThan(SLOW_MS);
    expect(r).toMatchObject({ kind: 'error', responseCode: 'timeout', retryable: false, transactionId: null });
    expectNoCardData(r);
    // The gateway finishes the charge anyway: exactly why a timeout is never salvaged elsewhere.
    await new Promise((resolve) => setTimeout(resolve, SLOW_MS + 200));
    expect((await ledger(gw)).summary.approved_sales).toBe(1);
    // With patience the slow card is simply approved.
    approved(await new NmiAdapter({ timeoutMs: 5_000 }).sale(gw, sale(SANDBOX_CARDS.slow)));
  });

  it('refunds part, refuses to refund more than the balance, then refunds the rest', async () => {
    const gw = gateway();
    const s = approved(await nmiAdapter.sale(gw, sale(SANDBOX_CARDS.approve, { amount: 5000 })));
    const part = approved(await nmiAdapter.refund(gw, { transactionId: s.transactionId, amount: 2000, currency: 'USD', attemptId: 'rf_1' }));
    expect(part.transactionId).not.toBe(s.transactionId);
    const over = await nmiAdapter.refund(gw, { transactionId: s.transactionId, amount: 3001, currency: 'USD', attemptId: 'rf_2' });
    expect(over).toMatchObject({ kind: 'error', responseCode: '300', responseText: 'Refund amount may not exceed the transaction balance', retryable: false });
    approved(await nmiAdapter.refund(gw, { transactionId: s.transactionId, amount: 3000, currency: 'USD', attemptId: 'rf_3' }));
    const unknown = await nmiAdapter.refund(gw, { transactionId: '1', amount: 100, currency: 'USD', attemptId: 'rf_4' });
    expect(unknown).toMatchObject({ kind: 'error', responseCode: '300', responseText: 'Transaction not found' });

    const l = await ledger(gw);
    expect(l.transactions.map((t) => [t.type, t.status, t.amount_minor])).toEqual([
      ['sale', 'approved', 5000],
      ['refund', 'approved', 2000],
      ['refund', 'error', null],
      ['refund', 'approved', 3000],
      ['refund', 'error', null],
    ]);
    expect(l.transactions[1]!.parent_transactionid).toBe(s.transactionId);
    expect(l.summary).toMatchObject({ approved_sales: 1, charged_minor: 5000, refunded_minor: 5000 });
  });

  it('voids a sale once, and refuses to void a refunded sale or refund a voided one', async () => {
    const gw = gateway();
    const s = approved(await nmiAdapter.sale(gw, sale(SANDBOX_CARDS.approve)));
    approved(await nmiAdapter.void(gw, { transactionId: s.transactionId, attemptId: 'v_1' }));
    const again = await nmiAdapter.void(gw, { transactionId: s.transactionId, attemptId: 'v_2' });
    expect(again).toMatchObject({ kind: 'error', responseCode: '300', responseText: 'Transaction already voided/refunded', retryable: false });
    const refund = await nmiAdapter.refund(gw, { transactionId: s.transactionId, amount: 100, currency: 'USD', attemptId: 'rf' });
    expect(refund).toMatchObject({ kind: 'error', responseCode: '300' });

    const s2 = approved(await nmiAdapter.sale(gw, sale(SANDBOX_CARDS.approve)));
    approved(await nmiAdapter.refund(gw, { transactionId: s2.transactionId, amount: 100, currency: 'USD', attemptId: 'rf2' }));
    const voidRefunded = await nmiAdapter.void(gw, { transactionId: s2.transactionId, attemptId: 'v_3' });
    expect(voidRefunded).toMatchObject({ kind: 'error', responseText: 'Transaction already voided/refunded' });

    const l = await ledger(gw);
    expect(l.transactions.find((t) => t.transactionid === s.transactionId)).toMatchObject({ voided: true });
    expect(l.summary).toMatchObject({ approved_sales: 2, voided: 1 });
  });

  it('fails authentication for a key starting with "invalid" and records nothing', async () => {
    const gw = gateway('invalid');
    const r = await nmiAdapter.sale(gw, sale(SANDBOX_CARDS.approve));
    expect(r).toMatchObject({ kind: 'error', responseCode: '300', responseText: 'Authentication Failed', retryable: false, transactionId: null });
    expect((await ledger(gw)).transactions).toHaveLength(0);
  });

  it('keeps one ledger per security key, counting only approved sales as charges', async () => {
    const a = gateway();
    const b = gateway();
    await nmiAdapter.sale(a, sale(SANDBOX_CARDS.approve, { amount: 100 }));
    await nmiAdapter.sale(a, sale(SANDBOX_CARDS.approve, { amount: 200 }));
    await nmiAdapter.sale(a, sale(SANDBOX_CARDS.doNotHonor, { amount: 300 }));
    await nmiAdapter.sale(b, sale(SANDBOX_CARDS.approve, { amount: 400 }));
    const la = await ledger(a);
    const lb = await ledger(b);
    expect(la.transactions).toHaveLength(3);
    expect(la.summary).toMatchObject({ approved_sales: 2, charged_minor: 300 });
    expect(lb.summary).toMatchObject({ approved_sales: 1, charged_minor: 400 });
    expect(la.transactions.map((t) => t.orderid)).toEqual(expect.arrayContaining([expect.stringMatching(/^att_/)]));
  });

  it('lets concurrent identical charges through, so double charges stay visible', async () => {
    const gw = gateway();
    const req = sale(SANDBOX_CARDS.approve);
    const results = await Promise.all([nmiAdapter.sale(gw, req), nmiAdapter.sale(gw, req), nmiAdapter.sale(gw, req)]);
    expect(results.map((r) => r.kind)).toEqual(['approved', 'approved', 'approved']);
    const l = await ledger(gw);
    expect(l.summary.approved_sales).toBe(3);
    expect(new Set(l.transactions.map((t) => t.orderid))).toEqual(new Set([req.attemptId]));
  });

  it('forces a whole account to decline softly so the sale can be salvaged on another gateway', async () => {
    const primary = gateway();
    const backup = gateway();
    await forceResponse(primary, '202');
    const first = await nmiAdapter.sale(primary, sale(SANDBOX_CARDS.approve));
    expect(first).toMatchObject({ kind: 'declined', responseCode: '202', retryable: true });
    approved(await nmiAdapter.sale(backup, sale(SANDBOX_CARDS.approve)));

    await forceResponse(primary, '100');
    approved(await nmiAdapter.sale(primary, sale(SANDBOX_CARDS.doNotHonor)));
    await forceResponse(primary, '420');
    expect(await nmiAdapter.sale(primary, sale(SANDBOX_CARDS.approve))).toMatchObject({ kind: 'error', responseCode: '420', retryable: true });
    await forceResponse(primary, null);
    expect(await nmiAdapter.sale(primary, sale(SANDBOX_CARDS.doNotHonor))).toMatchObject({ kind: 'declined', responseCode: '201' });

    const bad = await fetch(`${sandbox.url}/sandbox/nmi/accounts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ security_key: 'k', force_response_code: 'abc' }),
    });
    expect(bad.status).toBe(400);
  });

  it('resets one account or all of them', async () => {
    const a = gateway();
    const b = gateway();
    await nmiAdapter.sale(a, sale(SANDBOX_CARDS.approve));
    await nmiAdapter.sale(b, sale(SANDBOX_CARDS.approve));
    const post = (body: unknown) => fetch(`${sandbox.url}/sandbox/nmi/reset`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await post({ security_key: a.credentials.security_key })).status).toBe(200);
    expect((await ledger(a)).transactions).toHaveLength(0);
    expect((await ledger(b)).transactions).toHaveLength(1);
    expect((await post({})).status).toBe(200);
    expect((await ledger(b)).transactions).toHaveLength(0);
  });

  it('answers a raw form POST to /api/transact.php with the documented query-string fields', async () => {
    const form = new URLSearchParams({
      security_key: 'raw_key',
      type: 'sale',
      ccnumber: SANDBOX_CARDS.approve,
      ccexp: '1230',
      cvv: '999',
      amount: '10.00',
      orderid: 'raw-1',
      address1: '888',
      zip: '77777',
      customer_vault: 'add_customer',
    });
    const res = await fetch(`${sandbox.url}/api/transact.php`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form.toString() });
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(body).not.toContain(SANDBOX_CARDS.approve);
    const a = Object.fromEntries(new URLSearchParams(body));
    expect(Object.keys(a)).toEqual(['response', 'responsetext', 'authcode', 'transactionid', 'avsresponse', 'cvvresponse', 'orderid', 'type', 'response_code', 'customer_vault_id']);
    expect(a).toMatchObject({ response: '1', responsetext: 'SUCCESS', avsresponse: 'Y', cvvresponse: 'M', orderid: 'raw-1', type: 'sale', response_code: '100' });
    expect(a.transactionid).toMatch(/^\d{10}$/);

    const declined = Object.fromEntries(
      new URLSearchParams(
        await (
          await fetch(`${sandbox.url}/api/transact.php`, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ security_key: 'raw_key', type: 'sale', ccnumber: SANDBOX_CARDS.stolen, ccexp: '1230', amount: '1.00' }).toString(),
          })
        ).text(),
      ),
    );
    expect(declined).toMatchObject({ response: '2', response_code: '252', authcode: '' });

    const noType = Object.fromEntries(
      new URLSearchParams(await (await fetch(`${sandbox.url}/api/transact.php`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'security_key=raw_key' })).text()),
    );
    expect(noType).toMatchObject({ response: '3', response_code: '300' });

    const json = await fetch(`${sandbox.url}/api/transact.php`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ security_key: 'raw_key', type: 'sale', ccnumber: SANDBOX_CARDS.approve, ccexp: '1230', amount: '1.00' }),
    });
    expect(Object.fromEntries(new URLSearchParams(await json.text()))).toMatchObject({ response: '3', response_code: '300' });
  });

  it('supports auth then capture, and refunds only what was captured', async () => {
    const gw = gateway();
    const post = (fields: Record<string, string>) => transact(gw.credentials.security_key!, fields);
    const auth = await post({ type: 'auth', ccnumber: SANDBOX_CARDS.approve, ccexp: '1230', amount: '20.00' });
    expect(auth.response).toBe('1');
    expect(await post({ type: 'refund', transactionid: auth.transactionid! })).toMatchObject({ response: '3' });
    expect(await post({ type: 'capture', transactionid: auth.transactionid!, amount: '25.00' })).toMatchObject({ response: '3' });
    expect(await post({ type: 'capture', transactionid: auth.transactionid!, amount: '15.00' })).toMatchObject({ response: '1' });
    approved(await nmiAdapter.refund(gw, { transactionId: auth.transactionid!, amount: 1500, currency: 'USD', attemptId: 'rf' }));
    expect((await ledger(gw)).summary).toMatchObject({ approved_sales: 0, refunded_minor: 1500 });
  });
});

describe('NMI Query API against the sandbox (crash recovery)', () => {
  function found(r: GatewayQueryResult): GatewayQueriedTransaction[] {
    expect(r.kind, JSON.stringify(r)).toBe('found');
    return (r as Extract<GatewayQueryResult, { kind: 'found' }>).transactions;
  }

  it('finds a sale by our attempt id (its orderid), with the vault id it saved, and a saved-card charge with the vault it used', async () => {
    const gw = gateway();
    const req = sale(SANDBOX_CARDS.approve, { saveCard: true });
    const s = approved(await nmiAdapter.sale(gw, req));
    const [t, ...rest] = found(await nmiAdapter.query(gw, { orderId: req.attemptId }));
    expect(rest).toHaveLength(0);
    expect(t).toMatchObject({
      transactionId: s.transactionId,
      orderId: req.attemptId,
      type: 'sale',
      status: 'approved',
      condition: 'pendingsettlement',
      responseCode: '100',
      amountMinor: 4999,
      currency: 'USD',
      authCode: s.authCode,
      vaultRef: s.vaultRef,
      cardLast4: '1111',
      voided: false,
    });
    expect(t!.vaultRef).toMatch(/^\d+$/);
    expectNoCardData(await nmiAdapter.query(gw, { orderId: req.attemptId }));

    const upsell = sale(SANDBOX_CARDS.approve, { card: undefined, vaultRef: s.vaultRef!, amount: 1900 });
    approved(await nmiAdapter.sale(gw, upsell));
    expect(found(await nmiAdapter.query(gw, { orderId: upsell.attemptId }))).toMatchObject([{ type: 'sale', status: 'approved', amountMinor: 1900, vaultRef: s.vaultRef }]);
  });

  it('answers not_found for an order id it never saw, another account’s order, and a request refused before processing', async () => {
    const gw = gateway();
    expect(await nmiAdapter.query(gw, { orderId: 'att_never_sent' })).toEqual({ kind: 'not_found' });
    const req = sale(SANDBOX_CARDS.approve);
    approved(await nmiAdapter.sale(gw, req));
    expect(await nmiAdapter.query(gateway(), { orderId: req.attemptId })).toEqual({ kind: 'not_found' });
    // A number that fails the Luhn check never becomes a transaction.
    const refused = sale('4111111111111112');
    expect(await nmiAdapter.sale(gw, refused)).toMatchObject({ kind: 'error', responseCode: '300', transactionId: null });
    expect(await nmiAdapter.query(gw, { orderId: refused.attemptId })).toEqual({ kind: 'not_found' });
  });

  it('finds a declined sale as declined (condition failed, no vault id) and a processor error as error', async () => {
    const gw = gateway();
    const req = sale(SANDBOX_CARDS.insufficientFunds, { saveCard: true });
    const d = await nmiAdapter.sale(gw, req);
    expect(d).toMatchObject({ kind: 'declined', responseCode: '202' });
    expect(found(await nmiAdapter.query(gw, { orderId: req.attemptId }))).toEqual([
      expect.objectContaining({ transactionId: d.transactionId, status: 'declined', condition: 'failed', responseCode: '202', responseText: 'Insufficient funds.', vaultRef: null, authCode: null }),
    ]);
    const failing = sale(SANDBOX_CARDS.processingError);
    await nmiAdapter.sale(gw, failing);
    expect(found(await nmiAdapter.query(gw, { orderId: failing.attemptId }))).toMatchObject([{ status: 'error', condition: 'failed', responseCode: '400' }]);
  });

  it('finds a refund by our refund attempt id, and the sale keeps its own order id', async () => {
    const gw = gateway();
    const req = sale(SANDBOX_CARDS.approve, { amount: 5000 });
    const s = approved(await nmiAdapter.sale(gw, req));
    const rf = approved(await nmiAdapter.refund(gw, { transactionId: s.transactionId, amount: 2000, currency: 'USD', attemptId: 'rf_attempt_7' }));
    expect((await ledger(gw)).transactions.find((t) => t.transactionid === rf.transactionId)).toMatchObject({ orderid: 'rf_attempt_7', parent_transactionid: s.transactionId });
    expect(found(await nmiAdapter.query(gw, { orderId: 'rf_attempt_7' }))).toEqual([
      expect.objectContaining({ transactionId: rf.transactionId, type: 'refund', status: 'approved', amountMinor: 2000, currency: 'USD', vaultRef: null }),
    ]);
    expect(found(await nmiAdapter.query(gw, { orderId: req.attemptId }))).toMatchObject([{ transactionId: s.transactionId, type: 'sale' }]);
    // Refused (over the balance): never a transaction, so not found — nothing was refunded.
    expect(await nmiAdapter.refund(gw, { transactionId: s.transactionId, amount: 9000, currency: 'USD', attemptId: 'rf_attempt_8' })).toMatchObject({ kind: 'error' });
    expect(await nmiAdapter.query(gw, { orderId: 'rf_attempt_8' })).toEqual({ kind: 'not_found' });
  });

  it('shows a void as an action of the sale it voided, found by the sale’s transaction id', async () => {
    const gw = gateway();
    const s = approved(await nmiAdapter.sale(gw, sale(SANDBOX_CARDS.approve)));
    approved(await nmiAdapter.void(gw, { transactionId: s.transactionId, attemptId: 'v_1' }));
    const [t] = found(await nmiAdapter.query(gw, { transactionId: s.transactionId }));
    expect(t).toMatchObject({ type: 'sale', status: 'approved', condition: 'canceled', voided: true });
    expect(t!.actions.map((a) => [a.type, a.success, a.amountMinor])).toEqual([
      ['sale', true, 4999],
      ['void', true, 4999],
    ]);
  });

  it('answers NMI’s XML on the wire (POST form or GET), with an error_response for a bad key and an empty list for an unknown account', async () => {
    const gw = gateway();
    const req = sale(SANDBOX_CARDS.approve, { saveCard: true });
    const s = approved(await nmiAdapter.sale(gw, req));
    const key = gw.credentials.security_key!;
    const post = await fetch(`${sandbox.url}/api/query.php`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ security_key: key, order_id: req.attemptId }).toString() });
    expect(post.status).toBe(200);
    expect(post.headers.get('content-type')).toMatch(/^text\/xml/);
    const xml = await post.text();
    expect(xml).toMatch(/^<\?xml version="1\.0" encoding="UTF-8"\?>\n<nm_response>\n\t<transaction>/);
    for (const el of [`<transaction_id>${s.transactionId}</transaction_id>`, `<order_id>${req.attemptId}</order_id>`, '<condition>pendingsettlement</condition>', `<customerid>${s.vaultRef}</customerid>`, '<cc_number>4xxxxxxxxxxx1111</cc_number>', '<action>', '<action_type>sale</action_type>', '<amount>49.99</amount>', '<success>1</success>', '<response_code>100</response_code>'])
      expect(xml).toContain(el);
    expect(xml).not.toContain(SANDBOX_CARDS.approve);
    const get = await fetch(`${sandbox.url}/api/query.php?${new URLSearchParams({ security_key: key, transaction_id: `1,${s.transactionId}` })}`);
    expect(await get.text()).toBe(xml);

    const badKey = await (await fetch(`${sandbox.url}/api/query.php?security_key=invalid_key&order_id=${req.attemptId}`)).text();
    expect(badKey).toBe('<?xml version="1.0" encoding="UTF-8"?>\n<nm_response>\n\t<error_response>Invalid Security Key</error_response>\n</nm_response>\n');
    expect(await nmiAdapter.query({ ...gw, credentials: { security_key: 'invalid_key' } }, { orderId: req.attemptId })).toMatchObject({ kind: 'error', code: 'authentication_failed' });
    expect(await (await fetch(`${sandbox.url}/api/query.php?security_key=never_used_${Date.now()}`)).text()).toBe('<?xml version="1.0" encoding="UTF-8"?>\n<nm_response>\n</nm_response>\n');
    expect(await (await fetch(`${sandbox.url}/api/query.php?security_key=${key}&report_type=receipt`)).text()).toContain('<error_response>');
    // The Customer Vault report (the gateway doctor's check) lists vault records, never a full card number.
    const vault = await (await fetch(`${sandbox.url}/api/query.php?security_key=${key}&report_type=customer_vault`)).text();
    expect(vault).not.toContain('<error_response>');
    expect(vault).not.toContain(SANDBOX_CARDS.approve);
  });

  it('shows an auth as pending until captured, with the capture as an action', async () => {
    const gw = gateway();
    const post = (fields: Record<string, string>) => transact(gw.credentials.security_key!, fields);
    const auth = await post({ type: 'auth', ccnumber: SANDBOX_CARDS.approve, ccexp: '1230', amount: '20.00', orderid: 'att_auth' });
    expect(found(await nmiAdapter.query(gw, { orderId: 'att_auth' }))).toMatchObject([{ type: 'auth', status: 'approved', condition: 'pending' }]);
    await post({ type: 'capture', transactionid: auth.transactionid!, amount: '15.00' });
    const [t] = found(await nmiAdapter.query(gw, { orderId: 'att_auth' }));
    expect(t).toMatchObject({ condition: 'pendingsettlement', amountMinor: 2000 });
    expect(t!.actions.map((a) => [a.type, a.amountMinor])).toEqual([
      ['auth', 2000],
      ['capture', 1500],
    ]);
  });
});

describe('NMI adapter transport failures', () => {
  let odd: http.Server;
  let oddUrl: string;

  beforeAll(async () => {
    odd = http.createServer((req, res) => {
      req.resume();
      if (req.url?.startsWith('/redirect/')) {
        // 307 keeps the method and body: following it would post the card on to the sandbox.
        res.writeHead(307, { location: `${sandbox.url}/api/transact.php` }).end();
      } else if (req.url?.startsWith('/html/')) {
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html>Down for maintenance</html>');
      } else {
        res.writeHead(502).end('bad gateway');
      }
    });
    await new Promise<void>((resolve) => odd.listen(0, '127.0.0.1', resolve));
    oddUrl = `http://127.0.0.1:${(odd.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => odd?.close(resolve));
  });

  const at = (baseUrl: string): GatewayAccount => ({ baseUrl, credentials: { security_key: 'k' }, testMode: true });

  it('never follows a redirect', async () => {
    const gw = at(`${oddUrl}/redirect`);
    const r = await nmiAdapter.sale(gw, sale(SANDBOX_CARDS.approve));
    expect(r).toMatchObject({ kind: 'error', responseCode: 'bad_response', retryable: false });
    expect((await ledger({ ...gw, credentials: { security_key: 'k' } })).transactions).toHaveLength(0);
  });

  it('treats a non-200 or a body that is not an NMI answer as a bad response', async () => {
    expect(await nmiAdapter.sale(at(`${oddUrl}/html`), sale(SANDBOX_CARDS.approve))).toMatchObject({ kind: 'error', responseCode: 'bad_response', retryable: false });
    expect(await nmiAdapter.sale(at(`${oddUrl}/502`), sale(SANDBOX_CARDS.approve))).toMatchObject({ kind: 'error', responseCode: 'bad_response', retryable: false });
  });

  it('reads a query answered by a redirect, HTML or a 502 as a bad response, and an unreachable gateway as a network error', async () => {
    for (const path of ['redirect', 'html', '502']) expect(await nmiAdapter.query(at(`${oddUrl}/${path}`), { orderId: 'att_1' }), path).toMatchObject({ kind: 'error', code: 'bad_response' });
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    expect(await nmiAdapter.query(at(`http://127.0.0.1:${port}`), { orderId: 'att_1' })).toMatchObject({ kind: 'error', code: 'network_error' });
  });

  it('reports an unreachable gateway as a network error without throwing', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const r = await nmiAdapter.sale(at(`http://127.0.0.1:${port}`), sale(SANDBOX_CARDS.approve));
    expect(r).toMatchObject({ kind: 'error', responseCode: 'network_error', retryable: false, transactionId: null });
    expectNoCardData(r);
  });
});
