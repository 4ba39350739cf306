/**
 * One minor unit per currency (src/app/currency.ts, ISO 4217): the amount a gateway is sent, a
 * purchase e-mail shows, an affiliate postback carries and the client SDK (so the dashboard)
 * shows and parses agree, for every currency Intl knows, including those whose CLDR display
 * digits differ from ISO 4217 (HUF, COP, IDR, PKR, IQD, …).
 */
import { describe, expect, it } from 'vitest';
import { CURRENCY_EXPONENTS as SDK_EXPONENTS, currencyExponent as sdkExponent } from '../packages/client/src/money.ts';
import { CURRENCY_EXPONENTS, currencyExponent, formatMajorAmount } from '../src/app/currency.ts';
import { decimalAmount } from '../src/modules/affiliates/render.ts';
import { formatMoney } from '../src/modules/mail/template.ts';

const currencies = Intl.supportedValuesOf('currency');
// Intl's display digits that are not ISO 4217's: the cases a formatter's own digits got wrong.
const cldrDiffers = currencies.filter((c) => new Intl.NumberFormat('en', { style: 'currency', currency: c }).resolvedOptions().maximumFractionDigits !== currencyExponent(c));

describe('currency minor units', () => {
  it('has the ISO 4217 exponents the gateways use (JPY 0, USD 2, KWD 3, HUF 2, IQD 3)', () => {
    expect([currencyExponent('JPY'), currencyExponent('usd'), currencyExponent('KWD'), currencyExponent('HUF'), currencyExponent('IQD')]).toEqual([0, 2, 3, 2, 3]);
    expect(formatMajorAmount(123_456, 'IQD')).toBe('123.456');
    expect(cldrDiffers).toEqual(expect.arrayContaining(['HUF', 'COP', 'IDR', 'PKR', 'IQD']));
  });

  it('the client SDK carries the same table as the server', () => {
    expect(SDK_EXPONENTS).toEqual(CURRENCY_EXPONENTS);
    for (const c of currencies) expect(sdkExponent(c), c).toBe(currencyExponent(c));
  });

  it("an affiliate postback's amount is the decimal a gateway is sent, in every currency", () => {
    for (const c of currencies) {
      for (const minor of [0, 7, 4395, 123_456_789]) expect(decimalAmount(minor, c), `${minor} ${c}`).toBe(formatMajorAmount(minor, c));
    }
  });

  it("a purchase e-mail's amount has the currency's ISO 4217 decimals and the gateway's value", () => {
    const plain = (s: string) => s.replace(/\u00a0/g, ' ');
    expect(plain(formatMoney(489_050, 'HUF'))).toBe('HUF 4,890.50');
    expect(plain(formatMoney(123_456, 'IQD'))).toBe('IQD 123.456');
    expect(formatMoney(4395, 'USD')).toBe('$43.95');
    expect(formatMoney(500, 'JPY')).toBe('¥500');
    for (const c of [...cldrDiffers, 'USD', 'JPY', 'KWD', 'EUR']) {
      const shown = plain(formatMoney(123_456, c)).replace(/[^\d.]/g, '');
      expect(shown, c).toBe(formatMajorAmount(123_456, c));
    }
  });
});
