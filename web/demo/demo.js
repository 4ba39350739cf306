// The demo funnel's pages. They talk only to the funnel's own backend (/demo/api/*), which holds
// the API token; the order travels from page to page in sessionStorage.
(function () {
  const ORDER_KEY = 'checkstand-demo-order';
  const NOTE_KEY = 'checkstand-demo-note';
  const storage = window.sessionStorage;

  const $ = (selector) => document.querySelector(selector);

  function money(minor, currency) {
    const format = new Intl.NumberFormat('en-US', { style: 'currency', currency });
    return format.format(minor / 10 ** (format.resolvedOptions().maximumFractionDigits ?? 2));
  }

  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined) node.textContent = text;
    if (className) node.className = className;
    return node;
  }

  function say(text, isError) {
    const box = $('#message');
    box.hidden = !text;
    box.textContent = text || '';
    box.classList.toggle('error', Boolean(isError));
  }

  async function call(method, path, body) {
    const res = await fetch(path, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    let answer;
    try {
      answer = await res.json();
    } catch {
      answer = { success: false, message: `The funnel backend answered ${res.status}.`, data: null };
    }
    return { status: res.status, ok: res.ok && answer.success !== false, body: answer };
  }

  /** The API's message, with the field errors of a 422 spelled out. */
  function explain(r) {
    const fields = r.body.error && r.body.error.fields;
    if (fields && fields.length) return fields.map((f) => `${f.path}: ${f.message}`).join('; ');
    return r.body.message || `HTTP ${r.status}`;
  }

  function saveOrder(order) {
    if (order) storage.setItem(ORDER_KEY, JSON.stringify(order));
  }

  function loadOrder() {
    try {
      return JSON.parse(storage.getItem(ORDER_KEY) || 'null');
    } catch {
      return null;
    }
  }

  function productBox(box, name, offer, currency) {
    box.replaceChildren(el('h1', name));
    const price =
      offer.billing === 'one_time'
        ? money(offer.price, currency)
        : `${money(offer.price, currency)} today, then ${money(offer.recurring_price, currency)} every ${offer.interval_count > 1 ? `${offer.interval_count} ${offer.interval_unit}s` : offer.interval_unit}`;
    box.append(el('p', price, 'price'));
    if (offer.shipping > 0) box.append(el('p', `+ ${money(offer.shipping, currency)} shipping`));
  }

  async function loadConfig() {
    const r = await call('GET', '/demo/api/config');
    if (!r.ok) throw new Error(explain(r));
    return r.body.data;
  }

  /** Completes the order (Complete Order) and moves on to the thank-you page. */
  async function complete(orderNumber, note) {
    const r = await call('POST', '/demo/api/complete', { order_number: orderNumber });
    if (r.body.data) saveOrder(r.body.data);
    storage.setItem(NOTE_KEY, [note, r.ok ? r.body.message : `Complete Order: ${explain(r)}`].filter(Boolean).join(' '));
    window.location.assign('/demo/thank-you');
  }

  // ---- step 1: checkout

  async function checkoutPage() {
    const form = $('#checkout');
    for (const pick of document.querySelectorAll('.card-pick')) {
      pick.addEventListener('click', () => {
        form.elements.card_number.value = pick.textContent;
        form.elements.card_number.focus();
      });
    }
    try {
      const config = await loadConfig();
      const offer = config.offers[0];
      if (offer) productBox($('#product'), offer.name, offer, config.currency);
    } catch (err) {
      say(`The demo funnel is not ready: ${err.message}`, true);
    }

    let orderNumber = null;
    // One attempt id per click of Pay: the backend sends it as the Idempotency-Key.
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const f = form.elements;
      const button = $('#pay');
      button.disabled = true;
      say('Paying…');
      try {
        const lead = await call('POST', '/demo/api/lead', { email: f.email.value, first_name: f.first_name.value, last_name: f.last_name.value });
        if (!lead.ok) return say(explain(lead), true);
        orderNumber = lead.body.data.order_number;

        const pay = await call('POST', '/demo/api/pay', {
          order_number: orderNumber,
          attempt_id: window.crypto.randomUUID(),
          card_number: f.card_number.value,
          card_exp: f.card_exp.value,
          card_cvv: f.card_cvv.value,
          billing: { line1: f.line1.value, city: f.city.value, postal_code: f.postal_code.value, country: f.country.value.toUpperCase() },
        });
        if (!pay.ok) {
          const code = pay.body.error && pay.body.error.decline_code ? ` (${pay.body.error.decline_code})` : '';
          return say(`${explain(pay)}${code} Try another card from the list below.`, true);
        }
        saveOrder(pay.body.data);
        storage.setItem(NOTE_KEY, pay.body.message || '');
        window.location.assign('/demo/upsell');
      } catch (err) {
        say(`Could not reach the funnel backend: ${err.message}`, true);
      } finally {
        button.disabled = false;
      }
    });
  }

  // ---- step 2: one-click upsell

  async function upsellPage() {
    const order = loadOrder();
    if (!order) return window.location.assign('/demo');
    const accept = $('#accept');
    const decline = $('#decline');
    try {
      const config = await loadConfig();
      if (!config.upsell) return complete(order.order_number, '');
      productBox($('#upsell'), config.upsell.name, config.upsell.offer, config.currency);
    } catch (err) {
      say(`The demo funnel is not ready: ${err.message}`, true);
    }

    accept.addEventListener('click', async () => {
      accept.disabled = decline.disabled = true;
      say('Adding…');
      const r = await call('POST', '/demo/api/upsell', { order_number: order.order_number });
      if (r.body.data) saveOrder(r.body.data);
      if (!r.ok) {
        say(`${explain(r)} You were not charged for it.`, true);
        decline.disabled = false;
        decline.textContent = 'Continue';
        return;
      }
      await complete(order.order_number, r.body.message);
    });
    decline.addEventListener('click', async () => {
      accept.disabled = decline.disabled = true;
      await complete(order.order_number, '');
    });
  }

  // ---- step 3: thank you

  function thankYouPage() {
    const order = loadOrder();
    const note = storage.getItem(NOTE_KEY);
    if (note) say(note, false);
    if (!order) return;
    const box = $('#order');
    const cur = order.currency;
    const table = el('table');
    const head = el('tr');
    head.append(el('th', 'Item'), el('th', 'Qty'), el('th', 'Amount', 'amount'));
    table.append(head);
    for (const line of order.lines) {
      const row = el('tr');
      row.append(el('td', line.name), el('td', String(line.quantity)), el('td', money(line.line_total, cur), 'amount'));
      table.append(row);
    }
    const totals = [
      ['Subtotal', order.subtotal],
      ['Shipping', order.shipping_total],
      ...(order.discount_total ? [['Discount', -order.discount_total]] : []),
      ['Total', order.total],
    ];
    for (const [label, amount] of totals) {
      const row = el('tr');
      row.append(el('th', label), el('td', ''), el('td', money(amount, cur), 'amount'));
      table.append(row);
    }
    box.replaceChildren(
      el('p', `Order ${order.order_number} · ${order.status}${order.is_test ? ' · test' : ''}`),
      el('p', `A confirmation goes to ${order.customer.email}.`),
      table,
    );
  }

  const page = document.body.dataset.page;
  if (page === 'checkout') checkoutPage();
  if (page === 'upsell') upsellPage();
  if (page === 'thank-you') thankYouPage();
})();
