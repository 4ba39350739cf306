/**
 * A currency's minor unit, as the Checkstand API counts it: every amount is an integer in minor
 * units, `4395` USD is 43.95, `500` JPY is 500, `1234` KWD is 1.234. ISO 4217's exponents, the
 * server's own table (src/app/currency.ts; a test holds the two equal). Not Intl's digits: CLDR
 * shows HUF, COP, IDR, PKR with 0 decimals and IQD with 0, where ISO 4217 (and the gateways) have
 * 2 and 3, so `minor / 10 ** resolvedOptions().maximumFractionDigits` is 100 or 1 000 times off.
 */
export const CURRENCY_EXPONENTS: Readonly<Record<string, number>> = {
  BIF: 0, CLP: 0, DJF: 0, GNF: 0, ISK: 0, JPY: 0, KMF: 0, KRW: 0, PYG: 0, RWF: 0, UGX: 0, UYI: 0, VND: 0, VUV: 0, XAF: 0, XOF: 0, XPF: 0,
  BHD: 3, IQD: 3, JOD: 3, KWD: 3, LYD: 3, OMR: 3, TND: 3,
};

/** Decimals of a currency's amounts in the API: 0, 2 (every currency not in the table) or 3. */
export function currencyExponent(currency: string): number {
  return CURRENCY_EXPONENTS[currency.toUpperCase()] ?? 2;
}
