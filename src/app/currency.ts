/**
 * A currency's minor unit: how many decimals the API's integer amounts have in that currency
 * (`4395` USD is 43.95, `500` JPY is 500, `1234` KWD is 1.234). ISO 4217's exponents, and the
 * one table the server reads for it, with the two conversions between minor units and the decimal
 * string: what a gateway is sent (providers), what a purchase e-mail shows (mail) and what an
 * affiliate postback carries (affiliates) agree with what was charged.
 *
 * Not Intl's digits: CLDR shows some currencies with fewer decimals than ISO 4217 gives them
 * (HUF, COP, IDR, PKR with 0 instead of 2; IQD with 0 instead of 3), which would show an amount
 * 100 or 1 000 times what the gateway took. `@checkstand/client` exports the same table for the
 * dashboard and integrations (test/currency.test.ts holds the two equal).
 */
export const CURRENCY_EXPONENTS: Readonly<Record<string, number>> = {
  BIF: 0, CLP: 0, DJF: 0, GNF: 0, ISK: 0, JPY: 0, KMF: 0, KRW: 0, PYG: 0, RWF: 0, UGX: 0, UYI: 0, VND: 0, VUV: 0, XAF: 0, XOF: 0, XPF: 0,
  BHD: 3, IQD: 3, JOD: 3, KWD: 3, LYD: 3, OMR: 3, TND: 3,
};

/** Decimals of a currency's amounts: 0, 2 (every currency not in the table) or 3. */
export function currencyExponent(currency: string): number {
  return CURRENCY_EXPONENTS[currency.toUpperCase()] ?? 2;
}

/** Minor units → the decimal string gateways expect: 1234 USD → "12.34", 1234 JPY → "1234", 1234 KWD → "1.234". */
export function formatMajorAmount(minor: number, currency: string): string {
  if (!Number.isSafeInteger(minor) || minor < 0) throw new RangeError(`amount must be a non-negative integer in minor units, got ${minor}`);
  const exp = currencyExponent(currency);
  if (exp === 0) return String(minor);
  const digits = String(minor).padStart(exp + 1, '0');
  return `${digits.slice(0, -exp)}.${digits.slice(-exp)}`;
}

/**
 * The decimal string → minor units, or null when it is not a plain non-negative decimal or has more
 * fractional digits than the currency allows ("12.345" USD). Trailing zeros are fine ("1000.00" JPY).
 */
export function parseMajorAmount(text: string, currency: string): number | null {
  const m = /^(\d{1,15})(?:\.(\d{1,6}))?$/.exec(text.trim());
  if (!m) return null;
  const exp = currencyExponent(currency);
  const fraction = (m[2] ?? '').replace(/0+$/, '');
  if (fraction.length > exp) return null;
  const minor = Number(m[1]) * 10 ** exp + Number(fraction.padEnd(exp, '0') || '0');
  return Number.isSafeInteger(minor) ? minor : null;
}
