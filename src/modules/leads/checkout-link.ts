/**
 * The link back to the merchant's checkout in an abandoned-lead follow-up: a URL template set on
 * the campaign, with `{placeholder}`s filled from the lead. Values are URL-encoded; placeholders
 * may appear only after the host, so whatever a customer typed never changes where the link goes.
 */

export const CHECKOUT_URL_PLACEHOLDERS = {
  order_number: "The lead's order number (ord_…): post it back to Create Lead or Process Payment to resume the order",
  email: "The customer's e-mail address",
  campaign_id: 'The campaign id (cmp_…)',
  customer_number: 'The customer number (cus_…)',
  first_name: "The customer's first name (empty when unknown)",
  last_name: "The customer's last name (empty when unknown)",
} as const;

export type CheckoutUrlValues = Record<keyof typeof CHECKOUT_URL_PLACEHOLDERS, string | null>;

const PLACEHOLDER = /\{([A-Za-z0-9_]*)\}/g;

export const SAMPLE_CHECKOUT_VALUES: CheckoutUrlValues = {
  order_number: 'ord_SAMPLE0000000000000000',
  email: 'ada@example.com',
  campaign_id: 'cmp_SAMPLE0000000000000000',
  customer_number: 'cus_SAMPLE0000000000000000',
  first_name: 'Ada',
  last_name: 'Lovelace',
};

/** What is wrong with a checkout URL template, or null when it is usable. */
export function checkoutUrlProblem(template: string): string | null {
  const m = /^(https?):\/\/([^/?#]*)/i.exec(template);
  if (!m) return 'must be an http(s) URL, e.g. https://shop.example/checkout?order={order_number}';
  if (/[{}]/.test(m[2]!)) return 'may use placeholders only after the host (in the path, query or fragment)';
  const unknown = [...template.matchAll(PLACEHOLDER)].map((p) => p[1]!).filter((n) => !Object.hasOwn(CHECKOUT_URL_PLACEHOLDERS, n));
  if (unknown.length > 0) return `has unknown placeholders: ${unknown.map((n) => `{${n}}`).join(', ')} (use ${Object.keys(CHECKOUT_URL_PLACEHOLDERS).map((n) => `{${n}}`).join(', ')})`;
  if (/[{}]/.test(template.replace(PLACEHOLDER, ''))) return 'has a "{" or "}" that is not part of a placeholder';
  try {
    new URL(renderCheckoutUrl(template, SAMPLE_CHECKOUT_VALUES));
  } catch {
    return 'is not a valid URL once its placeholders are filled';
  }
  return null;
}

export function renderCheckoutUrl(template: string, values: CheckoutUrlValues): string {
  return template.replace(PLACEHOLDER, (_m, name: string) => {
    const v = Object.hasOwn(values, name) ? values[name as keyof CheckoutUrlValues] : null;
    return encodeURIComponent(v ?? '');
  });
}
