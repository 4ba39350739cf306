/** Digits after the decimal point of a currency (JPY 0, USD 2, KWD 3), per Intl. */
export function minorDigits(currency: string): number {
  try {
    return new Intl.NumberFormat('en-US', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
  } catch {
    return 2;
  }
}

/** An amount in minor units (the API's integers) as money: `formatMoney(4999, 'USD')` → `$49.99`. */
export function formatMoney(minor: number | null | undefined, currency: string): string {
  if (minor === null || minor === undefined) return '—';
  try {
    return new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(minor / 10 ** minorDigits(currency));
  } catch {
    return `${(minor / 100).toFixed(2)} ${currency}`;
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
