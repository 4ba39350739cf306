import { describe, expect, it } from 'vitest';
import { formatMajorAmount, parseMajorAmount, type GatewayAccount, type SaleRequest } from '../card-gateway.ts';
import { buildRefundForm, buildSaleForm, interpretNmiAnswer, toNmiExpiry } from './adapter.ts';

const account: GatewayAccount = { baseUrl: 'https://secure.nmi.com', credentials: { security_key: 'k_123' }, testMode: true, descriptor: 'ACME*SERUM' };
const card = { number: '4111111111111111', exp: '12/30', cvv: '123' };
const sale: SaleRequest = {
  amount: 1234,
  currency: 'usd',
  orderId: 'ord_1',
  attemptId: 'att_1',
  card,
  saveCard: true,
  customer: { email: 'ada@example.com', first_name: 'Ada', last_name: null },
  billing: { line1: '1 Main St', city: 'Springfield', state: 'IL', postal_code: '62701', country: 'US' },
};

describe('amounts', () => {
  it('writes minor units as the currency writes them', () => {
    expect(formatMajorAmount(1234, 'USD')).toBe('12.34');
    expect(formatMajorAmount(5, 'EUR')).toBe('0.05');
    expect(formatMajorAmount(0, 'USD')).toBe('0.00');
    expect(formatMajorAmount(1234, 'JPY')).toBe('1234');
    expect(formatMajorAmount(1234, 'kwd')).toBe('1.234');
    expect(() => formatMajorAmount(12.5, 'USD')).toThrow(RangeError);
    expect(() => formatMajorAmount(-1, 'USD')).toThrow(RangeError);
  });

  it('reads decimal strings back, refusing more precision than the currency has', () => {
    expect(parseMajorAmount('12.34', 'USD')).toBe(1234);
    expect(parseMajorAmount('12.3', 'USD')).toBe(1230);
    expect(parseMajorAmount('12', 'USD')).toBe(1200);
    expect(parseMajorAmount('1000.00', 'JPY')).toBe(1000);
    expect(parseMajorAmount('12.345', 'USD')).toBeNull();
    expect(parseMajorAmount('-1.00', 'USD')).toBeNull();
    expect(parseMajorAmount('1e3', 'USD')).toBeNull();
    expect(parseMajorAmount('', 'USD')).toBeNull();
  });
});

describe('NMI request forms', () => {
  it('sends a card sale with billing, descriptor and a vault request', () => {
    const f = Object.fromEntries(buildSaleForm(account, sale));
    expect(f).toEqual({
      security_key: 'k_123',
      type: 'sale',
      amount: '12.34',
      currency: 'USD',
      orderid: 'att_1',
      order_description: 'ord_1',
      ccnumber: '4111111111111111',
      ccexp: '1230',
      cvv: '123',
      customer_vault: 'add_customer',
      first_name: 'Ada',
      email: 'ada@example.com',
      address1: '1 Main St',
      city: 'Springfield',
      state: 'IL',
      zip: '62701',
      country: 'US',
      descriptor: 'ACME*SERUM',
    });
  });

  it('charges a saved card without any card field', () => {
    const f = Object.fromEntries(buildSaleForm(account, { ...sale, card: undefined, vaultRef: '998877', billing: null }));
    expect(f.customer_vault_id).toBe('998877');
    for (const k of ['ccnumber', 'ccexp', 'cvv', 'customer_vault', 'address1']) expect(f).not.toHaveProperty(k);
  });

  it('refuses a sale with both or neither of card and vaultRef, and an account without a key', () => {
    expect(() => buildSaleForm(account, { ...sale, vaultRef: '1' })).toThrow(/exactly one/);
    expect(() => buildSaleForm(account, { ...sale, card: undefined })).toThrow(/exactly one/);
    try {
      buildSaleForm({ ...account, credentials: {} }, sale);
      expect.unreachable();
    } catch (err) {
      expect(String((err as Error).message)).not.toContain(card.number);
    }
  });

  it('writes NMI expiry as MMYY', () => {
    expect(toNmiExpiry('12/30')).toBe('1230');
    expect(toNmiExpiry('1230')).toBe('1230');
    expect(toNmiExpiry('12/2030')).toBe('1230');
  });

  it('sends refunds with the gateway transaction id', () => {
    expect(Object.fromEntries(buildRefundForm(account, { transactionId: '1000000001', amount: 500, currency: 'USD' }))).toEqual({
      security_key: 'k_123',
      type: 'refund',
      transactionid: '1000000001',
      amount: '5.00',
    });
  });
});

describe('NMI answers', () => {
  it('reads an approval', () => {
    expect(interpretNmiAnswer('response=1&responsetext=SUCCESS&authcode=123456&transactionid=42&avsresponse=N&cvvresponse=M&orderid=a&type=sale&response_code=100&customer_vault_id=77\n')).toEqual({
      kind: 'approved',
      transactionId: '42',
      authCode: '123456',
      responseCode: '100',
      responseText: 'SUCCESS',
      vaultRef: '77',
    });
  });

  it('tells soft from hard declines', () => {
    expect(interpretNmiAnswer('response=2&responsetext=DECLINE&transactionid=43&response_code=202')).toMatchObject({ kind: 'declined', retryable: true, hard: false, transactionId: '43' });
    expect(interpretNmiAnswer('response=2&responsetext=Stolen&transactionid=44&response_code=252')).toMatchObject({ kind: 'declined', retryable: false, hard: true });
    expect(interpretNmiAnswer('response=2&response_code=100')).toMatchObject({ kind: 'declined', retryable: false, hard: false });
  });

  it('reads errors and treats garbage as a bad response, never an approval', () => {
    expect(interpretNmiAnswer('response=3&responsetext=Authentication Failed&response_code=300')).toMatchObject({ kind: 'error', responseCode: '300', retryable: false, transactionId: null });
    expect(interpretNmiAnswer('response=3&responsetext=Processor+error&transactionid=45&response_code=420')).toMatchObject({ kind: 'error', retryable: true });
    for (const body of ['', '<html>Maintenance</html>', 'response=7', 'response=1&responsetext=SUCCESS'])
      expect(interpretNmiAnswer(body), body).toMatchObject({ kind: 'error', responseCode: 'bad_response', retryable: false });
  });

  it('masks a card number that comes back in the gateway text', () => {
    const r = interpretNmiAnswer('response=3&responsetext=Invalid card 4111111111111111&response_code=300');
    expect(JSON.stringify(r)).not.toContain('4111111111111111');
  });
});
