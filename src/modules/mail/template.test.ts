import { describe, expect, it } from 'vitest';
import { DEFAULT_PURCHASE_TEMPLATE, formatMoney, type MailOrder, renderPurchaseMail, sampleOrder, unknownVariables } from './template.ts';

const order: MailOrder = {
  order_number: 'ord_abc',
  currency: 'USD',
  customer: { email: 'ada@example.com', first_name: 'Ada', last_name: null },
  lines: [
    { name: 'Serum', quantity: 2, line_total: 7800 },
    { name: 'Guide', quantity: 1, line_total: 900 },
  ],
  subtotal: 8700,
  shipping_total: 495,
  discount_total: 0,
  total: 9195,
  created_at: '2026-03-04T10:00:00.000Z',
};

describe('purchase mail templates', () => {
  it('formats minor units in the currency: $43.95, €1,234.50, ¥500', () => {
    expect(formatMoney(4395, 'USD')).toBe('$43.95');
    expect(formatMoney(123450, 'EUR')).toBe('€1,234.50');
    expect(formatMoney(500, 'JPY')).toBe('¥500');
  });

  it('fills variables; unknown ones and object internals render empty', () => {
    const r = renderPurchaseMail({ subject: '{{ order_number }} {{nope}}', body: '{{customer.name}}|{{constructor}}|{{__proto__}}|{{total}}|{{order_date}}|{{}}' }, order, 'Shop');
    expect(r.subject).toBe('ord_abc');
    expect(r.text).toBe('Ada|||$91.95|March 4, 2026|');
    expect(unknownVariables({ subject: '{{nope}}', body: '{{constructor}} {{total}}' })).toEqual(['nope', 'constructor']);
  });

  it('lists lines as text and as an HTML list; the name falls back to the email', () => {
    const r = renderPurchaseMail({ subject: 's', body: 'Hi {{customer.name}}\n\n{{lines}}' }, { ...order, customer: { ...order.customer, first_name: null } }, 'Shop');
    expect(r.text).toBe('Hi ada@example.com\n\n- Serum × 2: $78.00\n- Guide × 1: $9.00');
    expect(r.html).toContain('<p>Hi ada@example.com</p>\n<ul><li>Serum × 2: $78.00</li><li>Guide × 1: $9.00</li></ul>');
  });

  it('escapes the template and every value in the HTML part, and keeps the subject on one line', () => {
    const evil = { ...order, customer: { ...order.customer, first_name: '<script>x</script>' }, lines: [{ name: 'A & "B"', quantity: 1, line_total: 1 }] };
    const r = renderPurchaseMail({ subject: 'Hi {{customer.first_name}}\r\nBcc: x@evil', body: '<i>{{customer.first_name}}</i>\n{{lines}}' }, evil, 'Shop');
    expect(r.subject).toBe('Hi <script>x</script> Bcc: x@evil');
    expect(r.html).toContain('<p>&lt;i&gt;&lt;script&gt;x&lt;/script&gt;&lt;/i&gt;<br>\nA &amp; &quot;B&quot; × 1: $0.01</p>');
    expect(r.html).not.toContain('<script>');
  });

  it('renders the default template with the sample order', () => {
    const r = renderPurchaseMail(DEFAULT_PURCHASE_TEMPLATE, sampleOrder('USD'), 'Glow');
    expect(r.subject).toBe('Your order ord_SAMPLE0000000000000000 is confirmed');
    expect(r.text).toContain('Hi Ada Lovelace,');
    expect(r.text).toContain('Total: $52.95');
    expect(unknownVariables(DEFAULT_PURCHASE_TEMPLATE)).toEqual([]);
  });
});
