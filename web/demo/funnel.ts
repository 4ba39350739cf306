/**
 * The demo funnel: three pages (checkout → one upsell → thank you), the page a 3-D Secure payment
 * or the external checkout provider's hosted page comes back to (/demo/return), and the small
 * backend a merchant's funnel would have. The API token is secret, so the browser never sees it:
 * the pages call /demo/api/*, which holds the token and calls the public API over HTTP exactly as
 * a merchant's server would — no shortcut into the services.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Checkstand, CURRENCY_EXPONENTS, type ProcessPaymentInput } from '@checkstand/client';
import { z } from 'zod';
import type { AppContext } from '../../src/app/context.ts';
import { errorBody } from '../../src/app/envelope.ts';
import type { Http } from '../../src/app/http.ts';
import { fromRoot } from '../../src/app/project-root.ts';
import { configureExtpaySandboxCompany, configureThreeDsSandboxAccount, type DemoSeed } from '../../src/app/seed.ts';
import { SANDBOX_CARD_CODES, SANDBOX_CARDS, type SandboxCardName } from '../../src/sandbox/cards.ts';
import { EXTPAY_CARDS, type ExtpayCardName } from '../../src/sandbox/extpay-provider.ts';
import { THREEDS_CARDS, type ThreeDsCardName } from '../../src/sandbox/threeds-gateway.ts';

export interface DemoFunnelOptions {
  /** An API token of the demo team; kept on the server. */
  token: string;
  campaignId: string;
  /** Offer ids the checkout page sells, one of each. */
  offers: string[];
  /** Upsell ids; the upsell page offers the first. */
  upsells: string[];
  /** Where the API is; default: the address this server listens on. */
  apiBaseUrl?: string | undefined;
  /**
   * A 3-D Secure gateway of the demo team: the checkout page then offers "Card with 3-D Secure",
   * paid through it with Process Payment's `gateway_id`, the hosted page and Capture.
   */
  threeDsGatewayId?: string | undefined;
  /**
   * An `extpay` connection of the demo team: the checkout page then offers the provider's embedded
   * checkout (Create Order pinned to this connection, the embed loaded from `embedScriptUrl`, then
   * Capture with the receipt id).
   */
  extpay?: { connectionId: string; embedScriptUrl: string } | undefined;
}

export const DEMO_TOKEN_NAME = 'demo-funnel';

const DIR = fromRoot('web/demo');

const CARD_EFFECTS: Record<SandboxCardName, string> = {
  approve: 'Approved',
  doNotHonor: 'Declined: do not honor',
  insufficientFunds: 'Declined: insufficient funds',
  overLimit: 'Declined: over limit',
  pickUp: 'Declined: pick up card',
  lost: 'Declined: lost card',
  stolen: 'Declined: stolen card',
  fraud: 'Declined: suspected fraud',
  processingError: 'Declined: processor error',
  slow: 'Approved after a delay (SANDBOX_SLOW_MS)',
  rebillSoftDecline: 'Approved; its rebills decline: insufficient funds (202)',
  rebillHardDecline: 'Approved; its rebills decline: stop all recurring (261)',
};

export const DEMO_TEST_CARDS = (Object.keys(SANDBOX_CARDS) as SandboxCardName[]).map((name) => ({
  name,
  number: SANDBOX_CARDS[name],
  response_code: SANDBOX_CARD_CODES[name],
  effect: CARD_EFFECTS[name],
}));

const THREEDS_CARD_EFFECTS: Record<ThreeDsCardName, string> = {
  frictionless: 'Approved without a challenge (frictionless)',
  challenge: 'Challenge on the hosted 3-D Secure page, then approved',
  challengeThenReview: 'Challenge, then under review; approved after a while',
  decline: 'Declined: do not honor',
  insufficientFunds: 'Declined: insufficient funds',
  rebillSoftDecline: 'Approved without a challenge; its rebills decline: insufficient funds',
  rebillHardDecline: 'Approved without a challenge; its rebills decline: stop all recurring payments',
};

export const DEMO_THREEDS_TEST_CARDS = (Object.keys(THREEDS_CARDS) as ThreeDsCardName[]).map((name) => ({
  name,
  number: THREEDS_CARDS[name],
  effect: THREEDS_CARD_EFFECTS[name],
}));

const EXTPAY_CARD_EFFECTS: Record<ExtpayCardName, string> = {
  paid: 'Paid at once: Capture answers 200, on to the upsell',
  pending: 'Money held, not settled: Capture answers 202, on to the upsell while the provider confirms',
  failed: 'Declined by the card issuer',
  fraudDenied: "Blocked by the provider's fraud checks",
  offSessionDecline: 'Paid; the one-click upsell on it is declined',
};

export const DEMO_EXTPAY_TEST_CARDS = (Object.keys(EXTPAY_CARDS) as ExtpayCardName[]).map((name) => ({
  name,
  number: EXTPAY_CARDS[name],
  effect: EXTPAY_CARD_EFFECTS[name],
}));

/** Whop's own loader, for a connection to the real provider. */
const WHOP_EMBED_LOADER = 'https://js.whop.com/static/checkout/loader.js';

/**
 * The embed loader for a connection's API base: the sandbox's `{sandbox}/extpay/embed.js` for
 * `{sandbox}/extpay/{env}/api/v1`, Whop's loader otherwise (the attributes are the same).
 */
export function extpayEmbedScriptUrl(connectionBaseUrl: string): string {
  const root = /^(.*\/extpay)\/(?:sandbox|production)\/api\/v1\/?$/.exec(connectionBaseUrl)?.[1];
  return root ? `${root}/embed.js` : WHOP_EMBED_LOADER;
}

/** The payment methods the checkout page offers. */
export const DEMO_PAYMENT_METHODS = {
  card: 'Card (sandbox gateway)',
  threeds: 'Card with 3-D Secure (sandbox 3DS gateway)',
  extpay: 'Pay with extpay (embedded checkout)',
} as const;

type DemoPaymentMethod = keyof typeof DEMO_PAYMENT_METHODS;

const spaced = (number: string) => number.replace(/(\d{4})(?=\d)/g, '$1 ');

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function testCardRows(): string {
  return DEMO_TEST_CARDS.map(
    (c) =>
      `<tr><td><button type="button" class="card-pick" data-card="${c.number}">${spaced(c.number)}</button></td>` +
      `<td>${escapeHtml(c.effect)}</td><td>${c.response_code}</td></tr>`,
  ).join('\n');
}

function threeDsCardRows(): string {
  return DEMO_THREEDS_TEST_CARDS.map(
    (c) => `<tr><td><button type="button" class="card-pick" data-card="${c.number}">${spaced(c.number)}</button></td><td>${escapeHtml(c.effect)}</td></tr>`,
  ).join('\n');
}

/** The payment-method choice; only the card gateway (and no choice) when it is the only one. */
function paymentMethodChoice(methods: DemoPaymentMethod[]): string {
  if (methods.length < 2) return '';
  // data-card: the card number the method starts with (the one that approves, or that shows the
  // hosted page). extpay has none: its card is typed into the provider's embedded checkout.
  const startingCard: Record<DemoPaymentMethod, string | null> = { card: SANDBOX_CARDS.approve, threeds: THREEDS_CARDS.challenge, extpay: null };
  const option = (value: DemoPaymentMethod) => {
    const card = startingCard[value];
    return `<label class="choice"><input type="radio" name="method" value="${value}"${card ? ` data-card="${spaced(card)}"` : ''}${value === 'card' ? ' checked' : ''}> ${escapeHtml(DEMO_PAYMENT_METHODS[value])}</label>`;
  };
  return `<fieldset id="methods">
        <legend>Payment method</legend>
        ${methods.map(option).join('\n        ')}
      </fieldset>`;
}

function threeDsCardsSection(threeDs: boolean): string {
  if (!threeDs) return '';
  return `<section class="cards" id="threeds-cards" hidden>
      <h2>3-D Secure test cards</h2>
      <p>The 3-D Secure gateway sends most cards to its hosted page (your bank's check), then back to this shop, which asks the API to capture the payment. Any expiry in the future and any CVV; click a number to use it.</p>
      <table>
        <thead><tr><th>Card number</th><th>What the sandbox does</th></tr></thead>
        <tbody>
${threeDsCardRows()}
        </tbody>
      </table>
    </section>`;
}

function extpayCardsSection(extpay: DemoFunnelOptions['extpay']): string {
  if (!extpay) return '';
  const rows = DEMO_EXTPAY_TEST_CARDS.map((c) => `<tr><td><code>${spaced(c.number)}</code></td><td>${escapeHtml(c.effect)}</td></tr>`).join('\n');
  return `<section class="cards" id="extpay-cards" hidden>
      <h2>extpay test cards</h2>
      <p>The card is typed into the provider's embedded checkout, never into this shop: the provider is merchant of record. Any other valid card number is paid.</p>
      <table>
        <thead><tr><th>Card number</th><th>What the sandbox does</th></tr></thead>
        <tbody>
${rows}
        </tbody>
      </table>
    </section>`;
}

/** Where the provider's embedded checkout is mounted once Create Order has answered its `checkout`. */
function extpayCheckoutSection(extpay: DemoFunnelOptions['extpay']): string {
  if (!extpay) return '';
  return `<section id="extpay-checkout" class="embed" data-embed-src="${escapeHtml(extpay.embedScriptUrl)}" hidden>
      <h2>Pay with extpay</h2>
      <div id="extpay-embed-slot"></div>
      <p class="actions">
        <a id="extpay-hosted" href="#">Pay on the provider's page instead</a>
        <button type="button" id="extpay-change" class="secondary">Change payment method</button>
      </p>
    </section>`;
}

function readPage(file: string, methods: DemoPaymentMethod[], extpay: DemoFunnelOptions['extpay']): string {
  return fs
    .readFileSync(path.join(DIR, file), 'utf8')
    .replace('<!-- TEST_CARDS -->', testCardRows())
    .replace('<!-- PAYMENT_METHODS -->', paymentMethodChoice(methods))
    .replace('<!-- THREEDS_CARDS -->', threeDsCardsSection(methods.includes('threeds')))
    .replace('<!-- EXTPAY_CARDS -->', extpayCardsSection(extpay))
    .replace('<!-- EXTPAY_CHECKOUT -->', extpayCheckoutSection(extpay));
}

const Billing = z
  .object({ line1: z.string().max(200), city: z.string().max(100), postal_code: z.string().max(20).optional(), country: z.string().max(2) })
  .strict();

const Lead = z
  .object({
    email: z.string().trim().max(254).pipe(z.email()),
    first_name: z.string().trim().max(100).optional(),
    last_name: z.string().trim().max(100).optional(),
  })
  .strict();

const Pay = z
  .object({
    order_number: z.string().max(100),
    attempt_id: z.string().regex(/^[A-Za-z0-9-]{8,64}$/),
    method: z.enum(['card', 'threeds']).default('card'),
    /** From the 3-D Secure gateway's risk SDK on the page (the demo page makes one up). */
    risk_session_id: z.string().regex(/^[A-Za-z0-9_-]{1,200}$/).optional(),
    card_number: z.string().max(30),
    card_exp: z.string().max(10),
    card_cvv: z.string().max(4),
    billing: Billing.optional(),
  })
  .strict();

const ExtpayOrder = z
  .object({
    attempt_id: z.string().regex(/^[A-Za-z0-9-]{8,64}$/),
    email: z.string().trim().max(254).pipe(z.email()),
    first_name: z.string().trim().max(100).optional(),
    last_name: z.string().trim().max(100).optional(),
    billing: Billing.optional(),
  })
  .strict();

const OrderRef = z.object({ order_number: z.string().max(100) }).strict();
const OrderParam = z.object({ order_number: z.string().regex(/^ord_[A-Za-z0-9]{1,64}$/) }).strict();

const CaptureRef = z
  .object({
    order_number: z.string().max(100),
    /**
     * What the gateway added to the return (or cancel) URL, or the receipt id the provider's embed
     * gave: Capture checks it is this order's payment.
     */
    payment_id: z.string().min(1).max(200).optional(),
  })
  .strict();

interface ApiAnswer {
  status: number;
  body: any;
}

/** What the thank-you page shows of an order: no addresses, transactions or timeline. */
function orderSummary(o: any) {
  return {
    order_number: o.order_number,
    status: o.status,
    payment_status: o.payment_status,
    is_test: o.is_test,
    currency: o.currency,
    customer: { email: o.customer?.email ?? null },
    lines: (o.lines ?? []).map((l: any) => ({ name: l.name, quantity: l.quantity, line_total: l.line_total, upsell_id: l.upsell_id ?? null })),
    // extpay upsells accepted (202) and not confirmed yet: their lines come with payment.succeeded.
    upsells_pending: (o.transactions ?? []).filter((t: any) => t.upsell_id && t.status === 'pending').length,
    subtotal: o.subtotal,
    shipping_total: o.shipping_total,
    discount_total: o.discount_total,
    total: o.total,
  };
}

/**
 * Serves the demo pages and their backend on `app` (call before `listen`). Nothing else in the
 * server knows about it: it is a client of the public API like any merchant's funnel.
 */
export function enableDemoFunnel(app: Http, opts: DemoFunnelOptions): void {
  const threeDs = Boolean(opts.threeDsGatewayId);
  const methods = (Object.keys(DEMO_PAYMENT_METHODS) as DemoPaymentMethod[]).filter((m) => m === 'card' || (m === 'threeds' && threeDs) || (m === 'extpay' && opts.extpay));
  const pages = {
    checkout: readPage('checkout.html', methods, opts.extpay),
    return: readPage('return.html', methods, opts.extpay),
    upsell: readPage('upsell.html', methods, opts.extpay),
    thankYou: readPage('thank-you.html', methods, opts.extpay),
  };
  const assets: Record<string, { type: string; body: string }> = {
    // The API's minor units per currency go with the script, so the pages show amounts as charged.
    'demo.js': { type: 'text/javascript; charset=utf-8', body: `window.CHECKSTAND_CURRENCY_EXPONENTS = ${JSON.stringify(CURRENCY_EXPONENTS)};\n${fs.readFileSync(path.join(DIR, 'demo.js'), 'utf8')}` },
    'demo.css': { type: 'text/css; charset=utf-8', body: fs.readFileSync(path.join(DIR, 'demo.css'), 'utf8') },
  };

  const baseUrl = () => {
    if (opts.apiBaseUrl) return opts.apiBaseUrl.replace(/\/$/, '');
    const addr = app.server.address();
    if (!addr || typeof addr === 'string') throw new Error('the demo funnel needs apiBaseUrl when the server is not listening on TCP');
    const host = addr.address === '0.0.0.0' || addr.address === '::' ? '127.0.0.1' : addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
    return `http://${host}:${addr.port}`;
  };

  // The typed client (packages/client), made once the address is known; its answer passed on as is.
  let client: Checkstand | undefined;
  const cs = () => (client ??= new Checkstand({ baseUrl: baseUrl(), token: opts.token }));
  function answer(r: { data?: unknown; error?: unknown; response: Response }): ApiAnswer {
    return { status: r.response.status, body: r.data ?? r.error ?? null };
  }
  const getCampaign = async (id: string) => answer(await cs().api.GET('/v1/campaigns/{id}', { params: { path: { id } } }));
  const getOffer = async (id: string) => answer(await cs().api.GET('/v1/offers/{id}', { params: { path: { id } } }));
  const getOrder = async (order_number: string) => answer(await cs().api.GET('/v1/orders/{order_number}', { params: { path: { order_number } } }));

  const hidden = { schema: { hide: true } };
  const HTML = 'text/html; charset=utf-8';
  app.get('/demo', hidden, async (_req, reply) => reply.type(HTML).send(pages.checkout));
  // The 3-D Secure gateway, and the provider's hosted page, send the customer back here
  // (payment.return_url): the page calls Capture.
  app.get('/demo/return', hidden, async (_req, reply) => reply.type(HTML).header('cache-control', 'no-store').send(pages.return));
  app.get('/demo/upsell', hidden, async (_req, reply) => reply.type(HTML).send(pages.upsell));
  app.get('/demo/thank-you', hidden, async (_req, reply) => reply.type(HTML).send(pages.thankYou));
  app.get('/demo/assets/:file', { schema: { hide: true, params: z.object({ file: z.string().max(50) }) } }, async (req, reply) => {
    const asset = Object.hasOwn(assets, req.params.file) ? assets[req.params.file] : undefined;
    if (!asset) return reply.code(404).send(errorBody('not_found', 'No such file.'));
    return reply.type(asset.type).send(asset.body);
  });

  // ---- the funnel's backend: each route is one call to the public API, its answer passed on

  app.get('/demo/api/config', { schema: { hide: true } }, async (_req, reply) => {
    const campaign = await getCampaign(opts.campaignId);
    if (campaign.status !== 200) return reply.code(campaign.status).send(campaign.body);
    const offers = await Promise.all(opts.offers.map((id) => getOffer(id)));
    const failed = offers.find((o) => o.status !== 200);
    if (failed) return reply.code(failed.status).send(failed.body);
    let upsell: Record<string, unknown> | null = null;
    const upsellId = opts.upsells[0];
    if (upsellId) {
      const u = answer(await cs().api.GET('/v1/upsells/{id}', { params: { path: { id: upsellId } } }));
      if (u.status !== 200) return reply.code(u.status).send(u.body);
      const offer = await getOffer(u.body.data.offer_id);
      if (offer.status !== 200) return reply.code(offer.status).send(offer.body);
      upsell = { id: upsellId, name: u.body.data.name, offer: offer.body.data };
    }
    return {
      success: true,
      message: 'OK',
      data: {
        campaign_id: opts.campaignId,
        currency: campaign.body.data.currency,
        offers: offers.map((o) => o.body.data),
        upsell,
        payment_methods: methods.map((id) => ({ id, label: DEMO_PAYMENT_METHODS[id] })),
        test_cards: DEMO_TEST_CARDS,
        threeds_test_cards: threeDs ? DEMO_THREEDS_TEST_CARDS : [],
        extpay_test_cards: opts.extpay ? DEMO_EXTPAY_TEST_CARDS : [],
        extpay_embed_script_url: opts.extpay?.embedScriptUrl ?? null,
      },
    };
  });

  app.post('/demo/api/lead', { schema: { hide: true, body: Lead } }, async (req, reply) => {
    const { email, first_name, last_name } = req.body;
    const r = answer(
      await cs().api.POST('/checkout/leads', {
        body: {
          campaign_id: opts.campaignId,
          customer: { email, ...(first_name ? { first_name } : {}), ...(last_name ? { last_name } : {}) },
          products: opts.offers.map((offer_id) => ({ offer_id, quantity: 1 })),
        },
      }),
    );
    return reply.code(r.status).send(r.body);
  });

  app.post('/demo/api/pay', { schema: { hide: true, body: Pay } }, async (req, reply) => {
    const { order_number, attempt_id, method, risk_session_id, card_number, card_exp, card_cvv, billing } = req.body;
    const card = { card_number: card_number.replace(/[\s-]/g, ''), card_exp, card_cvv };
    let body: ProcessPaymentInput = { order_number, ...(billing ? { billing } : {}), payment: card };
    if (method === 'threeds') {
      if (!opts.threeDsGatewayId) return reply.code(422).send(errorBody('validation_failed', 'This demo funnel has no 3-D Secure gateway.'));
      // Where the gateway's hosted page sends the browser back: this funnel, at the address the
      // browser reached it (it adds payment_id to both).
      const origin = `${req.protocol}://${req.host}`;
      const order = encodeURIComponent(order_number);
      body = {
        ...body,
        gateway_id: opts.threeDsGatewayId,
        payment: {
          ...card,
          return_url: `${origin}/demo/return?order_number=${order}`,
          cancel_url: `${origin}/demo?cancelled=1&order_number=${order}`,
          // The risk SDK's session, which a real page gets from the gateway's script (loaded with
          // the gateway's risk_sdk_key); the demo page makes one up, and so does this without it.
          risk_session_id: risk_session_id ?? `rs_demo_${randomBytes(12).toString('hex')}`,
        },
      };
    }
    // One key per checkout attempt: a double-clicked Pay button replays the first answer.
    const r = answer(await cs().api.POST('/checkout/orders/payment', { body, headers: { 'idempotency-key': `demo-pay-${attempt_id}` } }));
    return reply.code(r.status).send(r.body);
  });

  // extpay (spec 4.1 rules 8-9): no lead, Create Order with payment.method extpay and no card
  // fields. The answer's `checkout` (plan_id, session_id, environment, setup_future_usage,
  // prefill) is what the page mounts the provider's embed with.
  let currency: string | undefined;
  app.post('/demo/api/extpay-order', { schema: { hide: true, body: ExtpayOrder } }, async (req, reply) => {
    if (!opts.extpay) return reply.code(422).send(errorBody('validation_failed', 'This demo funnel has no extpay connection.'));
    const { attempt_id, email, first_name, last_name, billing } = req.body;
    if (!currency) {
      const campaign = await getCampaign(opts.campaignId);
      if (campaign.status !== 200) return reply.code(campaign.status).send(campaign.body);
      currency = campaign.body.data.currency as string;
    }
    const r = answer(
      await cs().api.POST('/checkout/orders', {
        body: {
          campaign_id: opts.campaignId,
          currency,
          customer: { email, ...(first_name ? { first_name } : {}), ...(last_name ? { last_name } : {}) },
          products: opts.offers.map((offer_id) => ({ offer_id, quantity: 1 })),
          ...(billing ? { billing } : {}),
          payment: {
            method: 'extpay',
            // The provider's hosted page sends the browser back here with payment_id (the order
            // number is not known yet: the page adds it to the embed's return URL and keeps it).
            return_url: `${req.protocol}://${req.host}/demo/return?method=extpay`,
            external_payment_id: opts.extpay.connectionId,
          },
        },
        headers: { 'idempotency-key': `demo-order-${attempt_id}` },
      }),
    );
    return reply.code(r.status).send(r.body);
  });

  // Capture asks the gateway or the provider. 3-D Secure: 200 (paid, the order completed), 202
  // (under review: do not advance), 422 (not completed) or 404. extpay (spec 4.2): 200 completed,
  // 202 pending_external_confirmation (not a decline: advance), 422 capture failed, 404.
  app.post('/demo/api/capture', { schema: { hide: true, body: CaptureRef } }, async (req, reply) => {
    const { order_number, payment_id } = req.body;
    const r = answer(await cs().api.POST('/checkout/orders/capture', { body: { order_number, ...(payment_id ? { payment_id } : {}) } }));
    return reply.code(r.status).send(r.body);
  });

  app.post('/demo/api/upsell', { schema: { hide: true, body: OrderRef } }, async (req, reply) => {
    const upsell_id = opts.upsells[0];
    if (!upsell_id) return reply.code(404).send(errorBody('not_found', 'This demo funnel has no upsell.'));
    const r = answer(await cs().api.POST('/checkout/orders/upsell', { body: { order_number: req.body.order_number, upsell_id, quantity: 1 } }));
    return reply.code(r.status).send(r.body);
  });

  // The thank-you page shows the order as the API has it now (an extpay upsell or payment may have
  // been confirmed since); only what that page shows.
  app.get('/demo/api/orders/:order_number', { schema: { hide: true, params: OrderParam } }, async (req, reply) => {
    const r = await getOrder(req.params.order_number);
    if (r.status !== 200) return reply.code(r.status).send(r.body);
    return { success: true, message: 'OK', data: orderSummary(r.body.data) };
  });

  app.post('/demo/api/complete', { schema: { hide: true, body: OrderRef } }, async (req, reply) => {
    const r = answer(await cs().api.POST('/checkout/orders/complete', { body: { order_number: req.body.order_number } }));
    if (r.status === 404 && r.body?.error?.code === 'route_not_found') {
      // An API without Complete Order: show the order as it stands.
      const order = await getOrder(req.body.order_number);
      return reply.code(200).send({ success: true, message: 'This API has no Complete Order endpoint yet; the order is paid but not completed.', data: order.body?.data ?? null });
    }
    return reply.code(r.status).send(r.body);
  });
}

/**
 * What `npm start` passes to enableDemoFunnel: the demo team's ids (from the fresh seed, or
 * from data/demo.json on later starts) and a new token named `demo-funnel`, which replaces the
 * one minted at the previous start. Undefined when there is no demo team to serve.
 */
export async function demoFunnelOptions(ctx: AppContext, seed?: DemoSeed): Promise<DemoFunnelOptions | undefined> {
  const ids = seed ?? readDemoIds(ctx.config.dataDir);
  if (!ids) return undefined;
  const campaign = await ctx.store.run((db) => ctx.services.catalog.findCampaign(db, ids.team_id, ids.campaign_id));
  if (!campaign) return undefined;
  const { teams } = ctx.services;
  for (const t of await teams.listTokens(ids.team_id)) {
    if (t.name === DEMO_TOKEN_NAME && !t.revoked_at) await teams.revokeToken(t.id);
  }
  const { secret } = await teams.createToken(ids.team_id, DEMO_TOKEN_NAME);
  const mainOffer = ids.offers.serum ?? Object.values(ids.offers)[0];
  // The 3-D Secure gateway, while it is there and active. The sandbox keeps its accounts in memory:
  // on a later start (no fresh seed) it is told again where to send the gateway's webhooks.
  let threeDsGatewayId: string | undefined;
  if (ids.threeds_gateway_id) {
    const gw = await ctx.store.run((db) => ctx.services.gateways.findGateway(db, ids.team_id, ids.threeds_gateway_id!));
    if (gw && gw.kind === 'threeds' && gw.is_active) {
      threeDsGatewayId = gw.id;
      if (!seed) await configureThreeDsSandboxAccount(ctx, ids.team_id, gw.id);
    }
  }
  // The extpay connection, while it is there and active; the sandbox is told again about its company.
  let extpay: DemoFunnelOptions['extpay'];
  if (ids.extpay_connection_id) {
    const conn = await ctx.store.run((db) => ctx.services.connections.findLive(db, ids.team_id, ids.extpay_connection_id!));
    if (conn && conn.is_active) {
      extpay = { connectionId: conn.id, embedScriptUrl: extpayEmbedScriptUrl(conn.base_url) };
      if (!seed) await configureExtpaySandboxCompany(ctx, ids.team_id, conn.id);
    }
  }
  // The upsell page offers the first upsell that charges something: the gateway refuses a
  // $0 sale, and a free trial upsell would only show that decline.
  const offers = await ctx.store.run((db) => ctx.services.catalog.findOffers(db, ids.team_id, ids.upsells.map((u) => u.offer_id)));
  const charge = new Map(offers.map((o) => [o.id, o.price + o.shipping]));
  const upsells = [...ids.upsells].sort((a, b) => Number((charge.get(b.offer_id) ?? 0) > 0) - Number((charge.get(a.offer_id) ?? 0) > 0) || a.step - b.step);
  return {
    token: secret,
    campaignId: ids.campaign_id,
    offers: mainOffer ? [mainOffer] : [],
    upsells: upsells.map((u) => u.upsell_id),
    threeDsGatewayId,
    extpay,
  };
}

type DemoIds = Pick<DemoSeed, 'team_id' | 'campaign_id' | 'offers' | 'upsells'> & {
  threeds_gateway_id?: string | null | undefined;
  extpay_connection_id?: string | null | undefined;
};

const DemoIdsFile = z.object({
  team_id: z.string(),
  campaign_id: z.string(),
  offers: z.record(z.string(), z.string()),
  upsells: z.array(z.object({ upsell_id: z.string(), step: z.number(), offer_id: z.string() })),
  // Absent in a demo.json written before the 3-D Secure gateway was seeded.
  threeds_gateway_id: z.string().nullable().optional(),
  // Absent in a demo.json written before the extpay connection was seeded.
  extpay_connection_id: z.string().nullable().optional(),
});

function readDemoIds(dataDir: string): DemoIds | undefined {
  try {
    return DemoIdsFile.parse(JSON.parse(fs.readFileSync(path.join(dataDir, 'demo.json'), 'utf8')));
  } catch {
    return undefined;
  }
}
