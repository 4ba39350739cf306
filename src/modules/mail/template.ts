/**
 * Purchase-confirmation templates: plain text with `{{variable}}` placeholders, nothing else —
 * no expressions, no loops, no access beyond the fixed variable table below. The text part is
 * the template with values filled in; the HTML part is built from the same template with the
 * template's own text and every value HTML-escaped, so neither a merchant's template nor a
 * customer's name can inject markup. An unknown placeholder renders as nothing.
 */
import { currencyExponent } from '../../app/currency.ts';

export interface MailTemplate {
  subject: string;
  body: string;
}

/** The part of the order view (orders module) a purchase mail reads. */
export interface MailOrder {
  order_number: string;
  currency: string;
  customer: { email: string; first_name: string | null; last_name: string | null };
  lines: Array<{ name: string; quantity: number; line_total: number }>;
  subtotal: number;
  shipping_total: number;
  discount_total: number;
  total: number;
  created_at: string | null;
}

export interface RenderedMail {
  subject: string;
  text: string;
  html: string;
}

export const DEFAULT_PURCHASE_TEMPLATE: MailTemplate = {
  subject: 'Your order {{order_number}} is confirmed',
  body: [
    'Hi {{customer.name}},',
    '',
    'Thank you for your order from {{campaign.name}}. Here is what you bought:',
    '',
    '{{lines}}',
    '',
    'Subtotal: {{subtotal}}',
    'Shipping: {{shipping_total}}',
    'Total: {{total}}',
    '',
    'Order number: {{order_number}}',
    '',
    'If you have a question about your order, reply to this e-mail.',
  ].join('\n'),
};

/** Every variable a template may use, with what it shows: the API documents this table. */
export const TEMPLATE_VARIABLES = {
  order_number: 'The order number, e.g. ord_…',
  order_date: 'The day the order was placed, e.g. March 4, 2026',
  'customer.name': "The customer's first and last name, or their e-mail address when no name is known",
  'customer.first_name': "The customer's first name (empty when unknown)",
  'customer.last_name': "The customer's last name (empty when unknown)",
  'customer.email': "The customer's e-mail address",
  'campaign.name': 'The name of the campaign the order came through',
  lines: 'The order lines, one per line: "- Glow Serum × 2: $78.00" (a list in the HTML part)',
  subtotal: 'Sum of the lines, formatted in the order currency, e.g. $78.00',
  shipping_total: 'Shipping, formatted',
  discount_total: 'Coupon discount, formatted',
  total: 'What the customer paid, formatted, e.g. $43.95',
  currency: 'The ISO 4217 currency code, e.g. USD',
} as const;

export type TemplateVariable = keyof typeof TEMPLATE_VARIABLES;

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_.]*)\s*\}\}/g;

// Building an Intl formatter costs far more than using one: keep one per currency, with the
// currency's ISO 4217 decimals (what its gateway is sent), not Intl's (0 for HUF, COP, IDR, IQD…).
const moneyFormats = new Map<string, { format: Intl.NumberFormat; unit: number }>();
const dateFormat = new Intl.DateTimeFormat('en-US', { dateStyle: 'long', timeZone: 'UTC' });

function moneyFormat(currency: string): { format: Intl.NumberFormat; unit: number } {
  let f = moneyFormats.get(currency);
  if (!f) {
    const digits = currencyExponent(currency);
    f = { format: new Intl.NumberFormat('en-US', { style: 'currency', currency, minimumFractionDigits: digits, maximumFractionDigits: digits }), unit: 10 ** digits };
    moneyFormats.set(currency, f);
  }
  return f;
}

/** Minor units to a display amount in the currency's own number of decimals ($43.95, ¥500). */
export function formatMoney(minor: number, currency: string): string {
  const { format, unit } = moneyFormat(currency);
  return format.format(minor / unit);
}

function formatDate(isoTime: string | null): string {
  if (!isoTime) return '';
  const d = new Date(isoTime);
  if (Number.isNaN(d.getTime())) return '';
  return dateFormat.format(d);
}

export function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

function lineText(l: MailOrder['lines'][number], currency: string): string {
  return `${l.name} × ${l.quantity}: ${formatMoney(l.line_total, currency)}`;
}

/** The placeholders a template uses that are not variables (they would render empty); `more`: variables a kind of mail adds. */
export function unknownVariables(t: MailTemplate, more: Record<string, string> = {}): string[] {
  const found = new Set<string>();
  for (const text of [t.subject, t.body]) {
    for (const m of text.matchAll(PLACEHOLDER)) if (!Object.hasOwn(TEMPLATE_VARIABLES, m[1]!) && !Object.hasOwn(more, m[1]!)) found.add(m[1]!);
  }
  return [...found];
}

function variablesOf(order: MailOrder, campaignName: string): Map<string, string> {
  const money = (n: number) => formatMoney(n, order.currency);
  const c = order.customer;
  const name = [c.first_name, c.last_name].filter(Boolean).join(' ');
  const values: Record<Exclude<TemplateVariable, 'lines'>, string> = {
    order_number: order.order_number,
    order_date: formatDate(order.created_at),
    'customer.name': name || c.email,
    'customer.first_name': c.first_name ?? '',
    'customer.last_name': c.last_name ?? '',
    'customer.email': c.email,
    'campaign.name': campaignName,
    subtotal: money(order.subtotal),
    shipping_total: money(order.shipping_total),
    discount_total: money(order.discount_total),
    total: money(order.total),
    currency: order.currency,
  };
  // A Map, not an object: a placeholder like {{constructor}} must find nothing.
  return new Map(Object.entries(values));
}

function fill(template: string, value: (name: string) => string): string {
  return template.replace(PLACEHOLDER, (_m, name: string) => value(name));
}

/**
 * `links`: URL variables a kind of mail adds (the abandonment mail's `checkout_url`): the text part
 * shows the URL, the HTML part a link to it. Only URLs we built go here (http(s), values encoded).
 */
export function renderPurchaseMail(template: MailTemplate, order: MailOrder, campaignName: string, links: Record<string, string> = {}): RenderedMail {
  const vars = variablesOf(order, campaignName);
  for (const [name, url] of Object.entries(links)) vars.set(name, url);
  const linkNames = new Set(Object.keys(links));
  const lineTexts = order.lines.map((l) => lineText(l, order.currency));

  // Header injection: whatever a value contains, the subject stays one line.
  const subject = fill(template.subject, (n) => vars.get(n) ?? '')
    .replace(/[\r\n\t]+/g, ' ')
    .trim();
  const text = fill(template.body, (n) => (n === 'lines' ? lineTexts.map((l) => `- ${l}`).join('\n') : (vars.get(n) ?? '')));
  return { subject, text, html: htmlDocument(subject, bodyHtml(template.body, vars, lineTexts, linkNames)) };
}

/**
 * Paragraphs at blank lines of the template, line breaks kept. The template's own text and
 * every value are escaped separately; `{{lines}}` alone in its paragraph becomes a list.
 */
function bodyHtml(body: string, vars: Map<string, string>, lineTexts: string[], linkNames: ReadonlySet<string> = new Set()): string {
  const value = (n: string) => {
    if (n === 'lines') return lineTexts.map(escapeHtml).join('<br>\n');
    const v = escapeHtml(vars.get(n) ?? '');
    return linkNames.has(n) && v ? `<a href="${v}">${v}</a>` : v;
  };
  const escaped = (text: string) => fill(escapeHtml(text), value);
  return body
    .replace(/\r\n/g, '\n')
    .split(/\n\s*\n/)
    .map((para) => para.trim())
    .filter(Boolean)
    .map((para) => {
      if (/^\{\{\s*lines\s*\}\}$/.test(para)) return `<ul>${lineTexts.map((l) => `<li>${escapeHtml(l)}</li>`).join('')}</ul>`;
      return `<p>${escaped(para).replace(/\n/g, '<br>\n')}</p>`;
    })
    .join('\n');
}

function htmlDocument(title: string, content: string): string {
  return [
    '<!doctype html>',
    '<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">',
    `<title>${escapeHtml(title)}</title></head>`,
    '<body style="font-family: -apple-system, Segoe UI, Helvetica, Arial, sans-serif; line-height: 1.5; color: #222; max-width: 36rem; margin: 1.5rem auto; padding: 0 1rem;">',
    content,
    '</body></html>',
  ].join('\n');
}

/** An order to preview a template with: three lines in the campaign's currency. */
export function sampleOrder(currency: string): MailOrder {
  const { unit } = moneyFormat(currency);
  const lines = [
    { name: 'Glow Serum, one bottle', quantity: 1, line_total: 39 * unit },
    { name: 'Refill Club: 14-day trial', quantity: 1, line_total: 0 },
    { name: 'Skin Routine Guide', quantity: 1, line_total: 9 * unit },
  ];
  const subtotal = lines.reduce((s, l) => s + l.line_total, 0);
  const shipping = Math.round(4.95 * unit);
  return {
    order_number: 'ord_SAMPLE0000000000000000',
    currency,
    customer: { email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace' },
    lines,
    subtotal,
    shipping_total: shipping,
    discount_total: 0,
    total: subtotal + shipping,
    created_at: new Date().toISOString(),
  };
}
