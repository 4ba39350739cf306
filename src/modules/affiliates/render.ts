/**
 * Postback URL and pixel templates: `{placeholder}` replaced by the conversion's values, each
 * URL-encoded (encodeURIComponent, plus `'` so a value cannot close an HTML attribute in a pixel).
 * An unknown placeholder is refused when the template is saved; a value the order lacks renders empty.
 */
import { formatMajorAmount } from '../../app/currency.ts';

export const PLACEHOLDERS = [
  'affiliate_id',
  'click_id',
  'sub1',
  'sub2',
  'sub3',
  'sub4',
  'sub5',
  'order_number',
  'transaction_id',
  'event',
  'amount',
  'amount_minor',
  'currency',
  'commission',
  'campaign_id',
] as const;
export type Placeholder = (typeof PLACEHOLDERS)[number];
export type TemplateValues = Partial<Record<Placeholder, string | number | null>>;

const PATTERN = /\{([a-z0-9_]+)\}/g;

export function unknownPlaceholders(template: string): string[] {
  const known = new Set<string>(PLACEHOLDERS);
  return [...new Set([...template.matchAll(PATTERN)].map((m) => m[1]!).filter((n) => !known.has(n)))];
}

/**
 * Whether a URL template has a placeholder in its scheme-and-authority part (`https://{sub1}.example/`,
 * `https://{click_id}@host/`): a click id or sub id comes from the customer's link, so it may fill the
 * path, query or fragment but never choose the host a postback is sent to.
 */
export function placeholderBeforePath(template: string): boolean {
  const m = /^([^:/?#]*:)?(\/\/[^/?#]*)?/.exec(template);
  return /[{}]/.test(m?.[0] ?? '');
}

export function encodeValue(v: string | number | null | undefined): string {
  if (v === null || v === undefined) return '';
  return encodeURIComponent(String(v)).replace(/'/g, '%27');
}

export function renderTemplate(template: string, values: TemplateValues): string {
  return template.replace(PATTERN, (whole, name: string) => ((PLACEHOLDERS as readonly string[]).includes(name) ? encodeValue(values[name as Placeholder]) : whole));
}

/**
 * Minor units as the decimal a gateway is sent (`formatMajorAmount`): 4395 USD → "43.95", 500 JPY →
 * "500". A negative amount keeps its sign rather than failing the postback's transaction.
 */
export function decimalAmount(minor: number, currency: string): string {
  return minor < 0 ? `-${formatMajorAmount(-minor, currency)}` : formatMajorAmount(minor, currency);
}
