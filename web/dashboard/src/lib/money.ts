import { currencyExponent } from '@checkstand/client';

/**
 * Digits after the decimal point of a currency's amounts in the API (JPY 0, USD 2, KWD 3): the
 * client's ISO 4217 table, the server's. Not Intl's digits, which give HUF, COP, IDR, PKR and IQD
 * none and would show and parse their amounts 100 or 1 000 times off what the gateway takes.
 */
export const minorDigits: (currency: string) => number = currencyExponent;

/** An amount in minor units (the API's integers) as money: `formatMoney(4999, 'USD')` → `$49.99`. */
export function formatMoney(minor: number | null | undefined, currency: string): string {
  if (minor === null || minor === undefined) return '—';
  const digits = minorDigits(currency);
  try {
    return new Intl.NumberFormat(undefined, { style: 'currency', currency, minimumFractionDigits: digits, maximumFractionDigits: digits }).format(minor / 10 ** digits);
  } catch {
    return `${(minor / 10 ** digits).toFixed(digits)} ${currency}`;
  }
}

/** A typed amount (`12.5`, `12,50`) in minor units, or null when it is not an amount of that currency. */
export function parseMoney(input: string, currency: string): number | null {
  const digits = minorDigits(currency);
  const text = input.trim().replace(',', '.');
  const pattern = digits === 0 ? /^\d+$/ : new RegExp(`^\\d+(\\.\\d{1,${digits}})?$`);
  if (!pattern.test(text)) return null;
  const [whole, frac = ''] = text.split('.');
  return Number(whole) * 10 ** digits + Number(frac.padEnd(digits, '0') || 0);
}

/** Minor units as the plain decimal an input shows (`4999` → `49.99`). */
export function toDecimalString(minor: number, currency: string): string {
  return (minor / 10 ** minorDigits(currency)).toFixed(minorDigits(currency));
}
