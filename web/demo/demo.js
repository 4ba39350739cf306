// The demo funnel's pages. They talk only to the funnel's own backend (/demo/api/*), which holds
// the API token; the order travels from page to page in sessionStorage.
(function () {
  const ORDER_KEY = 'checkstand-demo-order';
  const NOTE_KEY = 'checkstand-demo-note';
  /** A message for the checkout page, from the return page (a payment not completed). */
  const CHECKOUT_NOTE_KEY = 'checkstand-demo-checkout-note';
  /** The payment method to show chosen with that message. */
  const CHECKOUT_METHOD_KEY = 'checkstand-demo-checkout-method';
  /**
   * The extpay order waiting for the provider: the hosted page's return URL (payment.return_url,
   * sent before the order number existed) carries only the payment_id.
   */
  const EXTPAY_ORDER_KEY = 'checkstand-demo-extpay-order';
  /** The global functions the provider's embed calls (data-whop-checkout-on-complete / -on-payment-error). */
  const EXTPAY_ON_COMPLETE = 'checkstandDemoExtpayComplete';
  const EXTPAY_ON_PAYMENT_ERROR = 'checkstandDemoExtpayPaymentError';
  const EXTPAY_CONFIRMING =
    'Your payment is being confirmed by the payment provider. It is not a decline and you do not need to pay again: the order completes as soon as the provider confirms it.';
  /** Who is paying, kept across the 3-D Secure round trip so a retry needs no retyping (never the card). */
  const FORM_KEY = 'checkstand-demo-form';
  const KEPT_FIELDS = ['email', 'first_name', 'last_name', 'line1', 'city', 'postal_code', 'country'];
  const storage = window.sessionStorage;

  const $ = (selector) => document.querySelector(selector);

  /** Minor units as money, in the API's decimals for the currency (ISO 4217, served with this script), not Intl's. */
  function money(minor, currency) {
    const digits = (window.CHECKSTAND_CURRENCY_EXPONENTS || {})[currency] ?? 2;
    const format = new Intl.NumberFormat('en-US', { style: 'currency', currency, minimumFractionDigits: digits, maximumFractionDigits: digits });
    return format.format(minor / 10 ** digits);
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
    const order = loadOrder();
    // The order's status, not payment_status: an accepted extpay upsell answers the upsell's.
    if (order && order.order_number === orderNumber && order.status === 'pending_external_confirmation') {
      // extpay, not settled yet: the provider's confirmation completes the order, not this page.
      storage.setItem(NOTE_KEY, [note, EXTPAY_CONFIRMING].filter(Boolean).join(' '));
      window.location.assign('/demo/thank-you');
      return;
    }
    const r = await call('POST', '/demo/api/complete', { order_number: orderNumber });
    if (r.body.data) saveOrder(r.body.data);
    storage.setItem(NOTE_KEY, [note, r.ok ? r.body.message : `Complete Order: ${explain(r)}`].filter(Boolean).join(' '));
    window.location.assign('/demo/thank-you');
  }

  /** Capture: asks the API (which asks the gateway or the provider) how the payment ended. */
  function capture(orderNumber, paymentId) {
    return call('POST', '/demo/api/capture', { order_number: orderNumber, ...(paymentId ? { payment_id: paymentId } : {}) });
  }

  /**
   * extpay Capture (spec 4.2): 200 (completed) and 202 (pending_external_confirmation: not a
   * decline, the provider's webhook completes the order) both go on to the upsell. True when it did.
   */
  function advanceAfterExtpayCapture(r, replace) {
    if (r.status !== 200 && r.status !== 202) return false;
    saveOrder(r.body.data);
    storage.setItem(NOTE_KEY, r.body.message || '');
    storage.removeItem(EXTPAY_ORDER_KEY);
    storage.removeItem(FORM_KEY);
    if (replace) window.location.replace('/demo/upsell');
    else window.location.assign('/demo/upsell');
    return true;
  }

  function extpayReturnUrl(orderNumber) {
    return `${window.location.origin}/demo/return?method=extpay&order_number=${encodeURIComponent(orderNumber)}`;
  }

  /** Stands in for the 3-D Secure gateway's risk SDK, which a real page loads with the gateway's risk_sdk_key. */
  function riskSessionId() {
    const bytes = window.crypto.getRandomValues(new Uint8Array(12));
    return `rs_demo_${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
  }

  // ---- step 1: checkout

  /**
   * The payment method chosen: `card` (the sandbox gateway), `threeds` (the 3-D Secure one) or
   * `extpay` (the external checkout provider's embedded checkout).
   */
  function chosenMethod(form) {
    const checked = form.querySelector('input[name=method]:checked');
    return checked ? checked.value : 'card';
  }

  /** Shows the test cards of the chosen gateway, and swaps the prefilled card for that gateway's. */
  function showMethod(form) {
    const method = chosenMethod(form);
    const threeds = $('#threeds-cards');
    if (threeds) threeds.hidden = method !== 'threeds';
    const extpay = $('#extpay-cards');
    if (extpay) extpay.hidden = method !== 'extpay';
    $('#sandbox-cards').hidden = method !== 'card';
    // extpay: the card is typed into the provider's checkout, never into this page.
    $('#card-fields').hidden = method === 'extpay';
    $('#pay').textContent = method === 'extpay' ? 'Continue to payment' : 'Pay now';
    const radios = [...form.querySelectorAll('input[name=method]')].filter((r) => r.dataset.card !== undefined);
    const field = form.elements.card_number;
    // Only a card the visitor did not type: the other method's starting card.
    if (radios.some((r) => !r.checked && r.dataset.card === field.value)) {
      const current = radios.find((r) => r.checked);
      if (current) field.value = current.dataset.card;
    }
  }

  /**
   * Back from the hosted 3-D Secure page on cancel_url ("Fail" or "Abandon"): a decline, unless
   * Capture says the payment went through after all. Capture also records a failed check.
   */
  function chooseMethod(form, method) {
    const radio = form.querySelector(`input[name=method][value=${method}]`);
    if (radio) {
      radio.checked = true;
      showMethod(form);
    }
  }

  async function cancelledThreeDs(form, params) {
    chooseMethod(form, 'threeds');
    window.history.replaceState(null, '', '/demo');
    const orderNumber = params.get('order_number');
    if (orderNumber) {
      try {
        const r = await capture(orderNumber, params.get('payment_id'));
        if (r.status === 200) {
          saveOrder(r.body.data);
          storage.setItem(NOTE_KEY, r.body.message || '');
          window.location.replace('/demo/upsell');
          return true;
        }
      } catch {
        /* the message below says it all */
      }
    }
    say('3-D Secure was cancelled — try again.', true);
    return false;
  }

  function keepForm(form) {
    storage.setItem(FORM_KEY, JSON.stringify(Object.fromEntries(KEPT_FIELDS.map((name) => [name, form.elements[name].value]))));
  }

  function restoreForm(form) {
    let kept = null;
    try {
      kept = JSON.parse(storage.getItem(FORM_KEY) || 'null');
    } catch {
      kept = null;
    }
    storage.removeItem(FORM_KEY);
    if (!kept) return;
    for (const name of KEPT_FIELDS) if (typeof kept[name] === 'string') form.elements[name].value = kept[name];
  }

  function billingOf(f) {
    return { line1: f.line1.value, city: f.city.value, postal_code: f.postal_code.value, country: f.country.value.toUpperCase() };
  }

  // ---- step 1 with extpay: Create Order, the provider's embedded checkout, Capture

  /** While the provider's checkout is up, the order is made: who pays cannot change, Pay is gone. */
  function lockForm(form, locked) {
    for (const fieldset of form.querySelectorAll('fieldset')) fieldset.disabled = locked;
    const button = $('#pay');
    button.hidden = locked;
    button.disabled = locked;
  }

  function closeExtpay(form) {
    window[EXTPAY_ON_COMPLETE] = window[EXTPAY_ON_PAYMENT_ERROR] = () => {};
    $('#extpay-embed-slot').replaceChildren();
    $('#extpay-checkout').hidden = true;
    storage.removeItem(EXTPAY_ORDER_KEY);
    lockForm(form, false);
  }

  /** The provider's loader mounts every element carrying its attributes, when it loads or when asked. */
  function loadEmbed(src, mount) {
    if (window.extpayCheckout && typeof window.extpayCheckout.mount === 'function') {
      window.extpayCheckout.mount(mount);
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const script = document.createElement('script');
      script.src = src;
      script.async = true;
      script.addEventListener('load', () => resolve());
      script.addEventListener('error', () => reject(new Error(`The provider's checkout could not be loaded from ${new window.URL(src).host}.`)));
      document.head.append(script);
    });
  }

  /** The embed's on-complete: the funnel's server captures that receipt (spec 4.4). */
  async function extpayCompleted(form, orderNumber, receiptId) {
    say('Payment received by the provider; confirming it…');
    let r;
    try {
      r = await capture(orderNumber, receiptId);
    } catch {
      r = null;
    }
    if (r && advanceAfterExtpayCapture(r, false)) return;
    if (r && (r.status === 422 || r.status === 404)) {
      closeExtpay(form);
      return say(`${explain(r)} Try again, or use another card.`, true);
    }
    // Nothing decided (the provider or the API could not be asked): the return page asks again.
    window.location.assign(`${extpayReturnUrl(orderNumber)}&payment_id=${encodeURIComponent(receiptId)}`);
  }

  /**
   * The embed's on-payment-error. That checkout session is spent (the provider reports the failure
   * and the order declines): the next try makes a new order.
   */
  function extpayFailed(form, message) {
    closeExtpay(form);
    say(`${message || 'The payment failed.'} Try again, or use another card.`, true);
  }

  /** Mounts the provider's embed with what Create Order answered in `checkout` (spec 2.4, 4.4). */
  async function mountExtpay(form, order) {
    const c = order.checkout;
    const section = $('#extpay-checkout');
    const returnUrl = extpayReturnUrl(order.order_number);
    const mount = el('div');
    mount.id = 'extpay-embed';
    // Whop's attribute names (data-whop-checkout-*): Whop's own loader reads the same element.
    const attributes = {
      PlanId: c.plan_id,
      Session: c.session_id,
      Environment: c.environment,
      SetupFutureUsage: c.setup_future_usage,
      ReturnUrl: returnUrl,
      PrefillEmail: c.prefill && c.prefill.email,
      PrefillName: c.prefill && c.prefill.name,
      OnComplete: EXTPAY_ON_COMPLETE,
      OnPaymentError: EXTPAY_ON_PAYMENT_ERROR,
    };
    for (const [name, value] of Object.entries(attributes)) if (value) mount.dataset[`whopCheckout${name}`] = value;
    $('#extpay-embed-slot').replaceChildren(mount);
    window[EXTPAY_ON_COMPLETE] = (planId, receiptId) => extpayCompleted(form, order.order_number, receiptId);
    window[EXTPAY_ON_PAYMENT_ERROR] = (error) => extpayFailed(form, error && error.message);

    // The same checkout on the provider's own page, coming back to /demo/return with payment_id.
    const hosted = new window.URL(c.purchase_url);
    hosted.searchParams.set('setup_future_usage', c.setup_future_usage);
    hosted.searchParams.set('return_url', returnUrl);
    if (c.prefill && c.prefill.email) hosted.searchParams.set('email', c.prefill.email);
    if (c.prefill && c.prefill.name) hosted.searchParams.set('name', c.prefill.name);
    $('#extpay-hosted').href = hosted.toString();

    lockForm(form, true);
    section.hidden = false;
    say(`Order ${order.order_number} is waiting for its payment: complete it in the provider's checkout below.`);
    try {
      await loadEmbed(section.dataset.embedSrc, mount);
    } catch (err) {
      say(`${err.message} Use "Pay on the provider's page instead".`, true);
    }
  }

  /** Create Order with payment.method extpay (no lead, no card fields), then the embed. True when it is up. */
  async function startExtpay(form) {
    const f = form.elements;
    say('Creating the order…');
    const r = await call('POST', '/demo/api/extpay-order', {
      attempt_id: window.crypto.randomUUID(),
      email: f.email.value,
      first_name: f.first_name.value,
      last_name: f.last_name.value,
      billing: billingOf(f),
    });
    if (!r.ok || !r.body.data || !r.body.data.checkout) {
      say(explain(r), true);
      return false;
    }
    storage.setItem(EXTPAY_ORDER_KEY, r.body.data.order_number);
    await mountExtpay(form, r.body.data);
    return true;
  }

  async function checkoutPage() {
    const form = $('#checkout');
    for (const pick of document.querySelectorAll('.card-pick')) {
      pick.addEventListener('click', () => {
        form.elements.card_number.value = pick.textContent;
        form.elements.card_number.focus();
      });
    }
    for (const radio of form.querySelectorAll('input[name=method]')) radio.addEventListener('change', () => showMethod(form));
    showMethod(form);
    const change = $('#extpay-change');
    if (change) {
      change.addEventListener('click', () => {
        closeExtpay(form);
        say('');
      });
      // Leaving for the provider's page: who is paying is kept for a retry.
      $('#extpay-hosted').addEventListener('click', () => keepForm(form));
    }

    let orderNumber = null;
    let leaving = false;
    // One attempt id per click of Pay: the backend sends it as the Idempotency-Key.
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const f = form.elements;
      const method = chosenMethod(form);
      const button = $('#pay');
      button.disabled = true;
      say('Paying…');
      try {
        if (method === 'extpay') {
          leaving = await startExtpay(form);
          return;
        }
        const lead = await call('POST', '/demo/api/lead', { email: f.email.value, first_name: f.first_name.value, last_name: f.last_name.value });
        if (!lead.ok) return say(explain(lead), true);
        orderNumber = lead.body.data.order_number;

        const pay = await call('POST', '/demo/api/pay', {
          order_number: orderNumber,
          attempt_id: window.crypto.randomUUID(),
          card_number: f.card_number.value,
          card_exp: f.card_exp.value,
          card_cvv: f.card_cvv.value,
          billing: billingOf(f),
          ...(method === 'threeds' ? { method, risk_session_id: riskSessionId() } : {}),
        });
        if (!pay.ok) {
          const code = pay.body.error && pay.body.error.decline_code ? ` (${pay.body.error.decline_code})` : '';
          return say(`${explain(pay)}${code} Try another card from the list below.`, true);
        }
        if (pay.body.data.redirect_required) {
          // 3-D Secure: the bank's page, which sends the browser back to /demo/return (or, cancelled,
          // to /demo?cancelled=1); no upsell before Capture has said the payment went through.
          const url = pay.body.data.redirect_url;
          leaving = true;
          keepForm(form);
          say(`${pay.body.message} Taking you to the 3-D Secure page (${new window.URL(url).host})…`);
          const link = el('a', 'Go there now');
          link.href = url;
          $('#message').append(' ', link);
          window.location.assign(url);
          return;
        }
        saveOrder(pay.body.data);
        storage.setItem(NOTE_KEY, pay.body.message || '');
        window.location.assign('/demo/upsell');
      } catch (err) {
        say(`Could not reach the funnel backend: ${err.message}`, true);
      } finally {
        if (!leaving) button.disabled = false;
      }
    });

    const params = new window.URLSearchParams(window.location.search);
    const note = storage.getItem(CHECKOUT_NOTE_KEY);
    const noteMethod = storage.getItem(CHECKOUT_METHOD_KEY);
    storage.removeItem(CHECKOUT_NOTE_KEY);
    storage.removeItem(CHECKOUT_METHOD_KEY);
    if (params.get('cancelled') === '1' || note) restoreForm(form);
    else storage.removeItem(FORM_KEY);
    if (params.get('cancelled') === '1') {
      if (await cancelledThreeDs(form, params)) return;
    } else if (note) {
      chooseMethod(form, noteMethod === 'extpay' ? 'extpay' : 'threeds');
      say(note, true);
    }
    try {
      const config = await loadConfig();
      const offer = config.offers[0];
      if (offer) productBox($('#product'), offer.name, offer, config.currency);
    } catch (err) {
      say(`The demo funnel is not ready: ${err.message}`, true);
    }
  }

  // ---- back from the 3-D Secure page or the provider's hosted checkout (payment.return_url)

  async function returnPage() {
    const params = new window.URLSearchParams(window.location.search);
    const method = params.get('method') === 'extpay' ? 'extpay' : 'threeds';
    const orderNumber = params.get('order_number') || (method === 'extpay' ? storage.getItem(EXTPAY_ORDER_KEY) : null);
    const paymentId = params.get('payment_id');
    const check = $('#check');
    const back = $('#back');
    if (!orderNumber) {
      back.hidden = false;
      return say('There is no order to confirm here.', true);
    }
    // Under review: Capture again now and then (it is idempotent), never in a tight loop; or by hand.
    const delays = [5000, 10000, 20000, 30000, 60000];
    let tries = 0;
    let timer = null;
    async function confirm() {
      window.clearTimeout(timer);
      check.disabled = true;
      let r;
      try {
        r = await capture(orderNumber, paymentId);
      } catch (err) {
        say(`Could not reach the funnel backend: ${err.message}`, true);
        check.hidden = back.hidden = check.disabled = false;
        return;
      }
      if (method === 'extpay' && advanceAfterExtpayCapture(r, true)) return;
      if (r.status === 200) {
        // Paid, and the order completed by Capture: on to the one-click upsell.
        saveOrder(r.body.data);
        storage.setItem(NOTE_KEY, r.body.message || '');
        return window.location.replace('/demo/upsell');
      }
      if (r.status === 202) {
        say('Your payment is under review by the bank. You do not need to pay again: this page checks again by itself (or press "Check again") and moves on once it is approved.');
        check.hidden = check.disabled = false;
        if (tries < delays.length) timer = window.setTimeout(confirm, delays[tries++]);
        return;
      }
      if (r.status === 422 || r.status === 404) {
        // Not completed (declined, failed or abandoned authentication): back to the checkout.
        storage.setItem(CHECKOUT_NOTE_KEY, `${explain(r)} Try again, or use another card.`);
        storage.setItem(CHECKOUT_METHOD_KEY, method);
        if (method === 'extpay') storage.removeItem(EXTPAY_ORDER_KEY);
        return window.location.replace('/demo');
      }
      say(`${explain(r)} Check again in a moment.`, true);
      check.hidden = back.hidden = check.disabled = false;
    }
    check.addEventListener('click', confirm);
    await confirm();
  }

  // ---- step 2: one-click upsell

  async function upsellPage() {
    const order = loadOrder();
    if (!order) return window.location.assign('/demo');
    const accept = $('#accept');
    const decline = $('#decline');
    // extpay, Capture 202: on to the upsell while the provider confirms (spec 4.2).
    if (order.status === 'pending_external_confirmation') say(EXTPAY_CONFIRMING, false);
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
      if (r.status === 202) {
        // extpay (spec 4.3): accepted; the provider charges the saved card and the item is added
        // to the order when it confirms.
        return complete(order.order_number, 'Upsell accepted: the payment provider is confirming the charge, and the item is added to your order once it does.');
      }
      if (!r.ok) {
        // 402: declined (extpay: by the provider), so on to the next offer, here the thank-you page.
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

  /** The order as the API has it now (an extpay payment or upsell may have been confirmed since). */
  async function refreshOrder(orderNumber) {
    try {
      const r = await call('GET', `/demo/api/orders/${encodeURIComponent(orderNumber)}`);
      return r.ok ? r.body.data : null;
    } catch {
      return null;
    }
  }

  async function thankYouPage() {
    const note = storage.getItem(NOTE_KEY);
    if (note) say(note, false);
    const stored = loadOrder();
    if (!stored) return;
    showOrder(stored);
    // While the provider has not confirmed: read again now and then, never in a tight loop.
    const delays = [3000, 5000, 10000, 20000, 30000, 60000];
    for (let i = 0; ; i++) {
      const order = await refreshOrder(stored.order_number);
      if (!order) return;
      saveOrder(order);
      showOrder(order);
      if ((order.status !== 'pending_external_confirmation' && !order.upsells_pending) || i >= delays.length) return;
      await new Promise((resolve) => window.setTimeout(resolve, delays[i]));
    }
  }

  function showOrder(order) {
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
      ...(order.status === 'pending_external_confirmation' ? [el('p', EXTPAY_CONFIRMING, 'pending-note')] : []),
      ...(order.upsells_pending ? [el('p', 'Your upsell is being confirmed by the payment provider: it joins this order once the charge is confirmed.', 'pending-note')] : []),
      el('p', `A confirmation goes to ${order.customer.email}.`),
      table,
    );
  }

  const page = document.body.dataset.page;
  if (page === 'checkout') checkoutPage();
  if (page === 'return') returnPage();
  if (page === 'upsell') upsellPage();
  if (page === 'thank-you') thankYouPage();
})();
