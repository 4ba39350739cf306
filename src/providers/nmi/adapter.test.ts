import { describe, expect, it } from 'vitest';
import { formatMajorAmount, parseMajorAmount } from '../../app/currency.ts';
import type { GatewayAccount, SaleRequest } from '../card-gateway.ts';
import { buildQueryForm, buildRefundForm, buildSaleForm, buildValidateForm, buildVoidForm, interpretNmiAnswer, interpretNmiQuery, nmiDateToIso, parseXml, toNmiExpiry } from './adapter.ts';

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

  it('verifies and vaults a card for $0: type=validate, amount 0.00, customer_vault=add_customer, our attempt id as orderid', () => {
    const { amount: _amount, saveCard: _save, ...rest } = sale;
    const f = Object.fromEntries(buildValidateForm(account, { ...rest, card }));
    expect(f).toMatchObject({ type: 'validate', amount: '0.00', currency: 'USD', orderid: 'att_1', ccnumber: card.number, ccexp: '1230', customer_vault: 'add_customer' });
    expect(f).not.toHaveProperty('customer_vault_id');
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

  it('sends our refund attempt id as the refund’s orderid, so the Query API finds the refund by it; a void carries none', () => {
    expect(Object.fromEntries(buildRefundForm(account, { transactionId: '1000000001', amount: 500, currency: 'USD', attemptId: 'rf_att_1' }))).toEqual({
      security_key: 'k_123',
      type: 'refund',
      transactionid: '1000000001',
      amount: '5.00',
      orderid: 'rf_att_1',
    });
    expect(Object.fromEntries(buildVoidForm(account, { transactionId: '1000000001' }))).toEqual({ security_key: 'k_123', type: 'void', transactionid: '1000000001' });
  });

  it('queries by order id or transaction id, never with neither', () => {
    expect(Object.fromEntries(buildQueryForm(account, { orderId: 'att_9' }))).toEqual({ security_key: 'k_123', order_id: 'att_9' });
    expect(Object.fromEntries(buildQueryForm(account, { transactionId: '42' }))).toEqual({ security_key: 'k_123', transaction_id: '42' });
    expect(() => buildQueryForm(account, { orderId: '' })).toThrow(/orderId or a transactionId/);
  });
});

/** A transaction as NMI's Query API writes it (trimmed to what matters), with its actions. */
function txn(fields: Record<string, string>, actions: Record<string, string>[]): string {
  const el = (k: string, v: string) => `<${k}>${v}</${k}>`;
  return `<transaction>${Object.entries(fields).map(([k, v]) => el(k, v)).join('')}${actions.map((a) => `<action>${Object.entries(a).map(([k, v]) => el(k, v)).join('')}</action>`).join('')}</transaction>`;
}

const SALE = txn(
  { transaction_id: '2612675976', transaction_type: 'cc', condition: 'pendingsettlement', order_id: 'att_1', authorization_code: '123456', customerid: '906770526', cc_number: '4xxxxxxxxxxx1111', cc_exp: '1230', currency: 'USD' },
  [{ amount: '49.99', action_type: 'sale', date: '20260120152810', success: '1', source: 'api', response_text: 'SUCCESS', response_code: '100' }],
);

describe('NMI Query API answers', () => {
  it('reads XML: declaration, entities, CDATA, comments, attributes and self-closing elements', () => {
    const root = parseXml('\uFEFF<?xml version="1.0" encoding="UTF-8"?>\n<!-- c --><a x="1>2"><b>Tom &amp; Jerry &#38; &#x26; &lt;3</b><c/><d><![CDATA[<raw>]]></d></a>');
    expect(root?.name).toBe('a');
    expect(root?.children.map((c) => [c.name, c.text])).toEqual([
      ['b', 'Tom & Jerry & & <3'],
      ['c', ''],
      ['d', '<raw>'],
    ]);
    for (const bad of ['', '<a>', '<a></b>', '<a></a><b></b>', 'text<a/>', '<!DOCTYPE a [<!ENTITY x "y">]><a>&x;</a>', '<a><b></a></b>']) expect(parseXml(bad), bad).toBeNull();
  });

  it('reads a sale with its vault id, amount, currency and auth code', () => {
    const r = interpretNmiQuery(`<?xml version="1.0" encoding="UTF-8"?>\n<nm_response>\n\t${SALE}\n</nm_response>\n`, { orderId: 'att_1' });
    expect(r).toEqual({
      kind: 'found',
      transactions: [
        {
          transactionId: '2612675976',
          orderId: 'att_1',
          type: 'sale',
          status: 'approved',
          condition: 'pendingsettlement',
          responseCode: '100',
          responseText: 'SUCCESS',
          amountMinor: 4999,
          currency: 'USD',
          authCode: '123456',
          vaultRef: '906770526',
          cardLast4: '1111',
          refunds: [],
          voided: false,
          actions: [{ type: 'sale', amountMinor: 4999, success: true, responseCode: '100', responseText: 'SUCCESS', at: '2026-01-20T15:28:10.000Z' }],
          createdAt: '2026-01-20T15:28:10.000Z',
        },
      ],
    });
  });

  it('answers not_found for an empty <nm_response>, in either spelling, and for transactions of other orders', () => {
    for (const body of ['<nm_response/>', '<?xml version="1.0" encoding="UTF-8"?>\n<nm_response>\n</nm_response>\n']) expect(interpretNmiQuery(body, { orderId: 'att_1' }), body).toEqual({ kind: 'not_found' });
    // A gateway that matched loosely must not hand us another attempt's charge.
    expect(interpretNmiQuery(`<nm_response>${SALE}</nm_response>`, { orderId: 'att_10' })).toEqual({ kind: 'not_found' });
    expect(interpretNmiQuery(`<nm_response>${SALE}</nm_response>`, { transactionId: '2612675976' })).toMatchObject({ kind: 'found', transactions: [{ orderId: 'att_1' }] });
    expect(interpretNmiQuery(`<nm_response>${SALE}</nm_response>`, { orderId: 'att_1', transactionId: '1' })).toEqual({ kind: 'not_found' });
  });

  it('reads an error_response as an error, telling a bad key from other refusals', () => {
    expect(interpretNmiQuery('<nm_response><error_response>Invalid Security Key REFID:3612</error_response></nm_response>', { orderId: 'a' })).toEqual({
      kind: 'error',
      code: 'authentication_failed',
      message: 'Invalid Security Key REFID:3612',
    });
    expect(interpretNmiQuery('<nm_response><error_response>Invalid Username/Password REFID:201239399</error_response></nm_response>', { orderId: 'a' })).toMatchObject({ code: 'authentication_failed' });
    expect(interpretNmiQuery('<nm_response><error_response>Too many requests</error_response></nm_response>', { orderId: 'a' })).toMatchObject({ kind: 'error', code: 'rejected' });
    expect(JSON.stringify(interpretNmiQuery('<nm_response><error_response>Bad card 4111111111111111</error_response></nm_response>', { orderId: 'a' }))).not.toContain('4111111111111111');
  });

  it('reads anything else as a bad response, never as not_found', () => {
    for (const body of ['', 'response=3&responsetext=Error', '<html><body>Maintenance</body></html>', '<nm_response><transaction>', `<nm_response><transaction><order_id>att_1</order_id></transaction></nm_response>`])
      expect(interpretNmiQuery(body, { orderId: 'att_1' }), body).toMatchObject({ kind: 'error', code: 'bad_response' });
  });

  it('reads declines and processor errors, with or without a response code', () => {
    const declined = txn({ transaction_id: '7', condition: 'failed', order_id: 'att_2', customerid: '', currency: 'USD' }, [
      { amount: '10.00', action_type: 'sale', date: '20260120152810', success: '0', response_text: 'Insufficient funds', response_code: '202' },
    ]);
    expect(interpretNmiQuery(`<nm_response>${declined}</nm_response>`, { orderId: 'att_2' })).toMatchObject({
      kind: 'found',
      transactions: [{ status: 'declined', responseCode: '202', responseText: 'Insufficient funds', vaultRef: null, amountMinor: 1000, authCode: null }],
    });
    const errored = declined.replace('<response_code>202<', '<response_code>420<').replace('Insufficient funds', 'Communication error');
    expect(interpretNmiQuery(`<nm_response>${errored}</nm_response>`, { orderId: 'att_2' })).toMatchObject({ transactions: [{ status: 'error', responseCode: '420' }] });
    // The 2010-era report has no response_code on actions: an unsuccessful sale reads as a generic decline.
    const bare = txn({ transaction_id: '8', condition: 'failed', order_id: 'att_3' }, [{ amount: '1.00', action_type: 'sale', success: '0', response_text: 'DECLINE' }]);
    expect(interpretNmiQuery(`<nm_response>${bare}</nm_response>`, { orderId: 'att_3' })).toMatchObject({ transactions: [{ status: 'declined', responseCode: '200', currency: null, amountMinor: 100 }] });
    // A failed condition overrides a success flag.
    const odd = bare.replace('<success>0</success>', '<success>1</success>');
    expect(interpretNmiQuery(`<nm_response>${odd}</nm_response>`, { orderId: 'att_3' })).toMatchObject({ transactions: [{ status: 'declined' }] });
  });

  it('reads voids, captures and refunds NMI lists as actions, and the vault id under either name', () => {
    const auth = txn({ transaction_id: '9', condition: 'canceled', order_id: 'att_4', customer_vault_id: '55', currency: 'JPY' }, [
      { amount: '1200', action_type: 'auth', date: '20260120152810', success: '1', response_code: '100' },
      { amount: '1200', action_type: 'capture', date: '20260120152811', success: '1', response_code: '100' },
      { amount: '-200', action_type: 'refund', date: '20260120152812', success: '1', response_code: '100' },
      { amount: '1000', action_type: 'void', date: '20260120152813', success: '1', response_code: '100' },
    ]);
    const r = interpretNmiQuery(`<nm_response>${auth}</nm_response>`, { orderId: 'att_4' });
    expect(r).toMatchObject({ kind: 'found', transactions: [{ type: 'auth', status: 'approved', amountMinor: 1200, currency: 'JPY', vaultRef: '55', voided: true, refunds: [{ type: 'refund', amountMinor: 200 }] }] });
    if (r.kind === 'found') expect(r.transactions[0]!.actions.map((a) => a.type)).toEqual(['auth', 'capture', 'refund', 'void']);
  });

  it('reads NMI dates as UTC', () => {
    expect(nmiDateToIso('20100120152810')).toBe('2010-01-20T15:28:10.000Z');
    expect(nmiDateToIso('2010-01-20')).toBeNull();
    expect(nmiDateToIso(null)).toBeNull();
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
