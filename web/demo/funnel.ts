/**
 * The demo funnel: three pages (checkout → one upsell → thank you), the page a 3-D Secure payment
 * comes back to (/demo/return), and the small backend a merchant's funnel would have. The API
 * token is secret, so the browser never sees it: the pages call /demo/api/*, which holds the token
 * and calls the public API over HTTP exactly as a merchant's server would — no shortcut into the
 * services.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { AppContext } from '../../src/app/context.ts';
import { errorBody } from '../../src/app/envelope.ts';
import type { Http } from '../../src/app/http.ts';
import { configureThreeDsSandboxAccount, type DemoSeed } from '../../src/app/seed.ts';
import { SANDBOX_CARD_CODES, SANDBOX_CARDS, type SandboxCardName } from '../../src/sandbox/cards.ts';
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
}

export const DEMO_TOKEN_NAME = 'demo-funnel';

const DIR = path.dirname(fileURLToPath(import.meta.url));

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
};

export const DEMO_THREEDS_TEST_CARDS = (Object.keys(THREEDS_CARDS) as ThreeDsCardName[]).map((name) => ({
  name,
  number: THREEDS_CARDS[name],
  effect: THREEDS_CARD_EFFECTS[name],
}));

/** The payment methods the checkout page offers. */
export const DEMO_PAYMENT_METHODS = {
  card: 'Card (sandbox gateway)',
  threeds: 'Card with 3-D Secure (sandbox 3DS gateway)',
} as const;

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

/** The payment-method choice; only the card gateway (and no choice) without a 3-D Secure gateway. */
function paymentMethodChoice(threeDs: boolean): string {
  if (!threeDs) return '';
  // data-card: the card number the method starts with (the one that approves, or that shows the hosted page).
  const option = (value: keyof typeof DEMO_PAYMENT_METHODS, card: string, checked: boolean) =>
    `<label class="choice"><input type="radio" name="method" value="${value}" data-card="${spaced(card)}"${checked ? ' checked' : ''}> ${escapeHtml(DEMO_PAYMENT_METHODS[value])}</label>`;
  return `<fieldset id="methods">
        <legend>Payment method</legend>
        ${option('card', SANDBOX_CARDS.approve, true)}
        ${option('threeds', THREEDS_CARDS.challenge, false)}
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

function readPage(file: string, threeDs: boolean): string {
  return fs
    .readFileSync(path.join(DIR, file), 'utf8')
    .replace('<!-- TEST_CARDS -->', testCardRows())
    .replace('<!-- PAYMENT_METHODS -->', paymentMethodChoice(threeDs))
    .replace('<!-- THREEDS_CARDS -->', threeDsCardsSection(threeDs));
}

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
    billing: z
      .object({ line1: z.string().max(200), city: z.string().max(100), postal_code: z.string().max(20).optional(), country: z.string().max(2) })
      .strict()
      .optional(),
  })
  .strict();

const OrderRef = z.object({ order_number: z.string().max(100) }).strict();

const CaptureRef = z
  .object({
    order_number: z.string().max(100),
    /** What the gateway added to the return (or cancel) URL: Capture checks it is this order's payment. */
    payment_id: z.string().min(1).max(200).optional(),
  })
  .strict();

interface ApiAnswer {
  status: number;
  body: any;
}

/**
 * Serves the demo pages and their backend on `app` (call before `listen`). Nothing else in the
 * server knows about it: it is a client of the public API like any merchant's funnel.
 */
export function enableDemoFunnel(app: Http, opts: DemoFunnelOptions): void {
  const threeDs = Boolean(opts.threeDsGatewayId);
  const pages = {
    checkout: readPage('checkout.html', threeDs),
    return: readPage('return.html', threeDs),
    upsell: readPage('upsell.html', threeDs),
    thankYou: readPage('thank-you.html', threeDs),
  };
  const assets: Record<string, { type: string; body: string }> = {
    'demo.js': { type: 'text/javascript; charset=utf-8', body: fs.readFileSync(path.join(DIR, 'demo.js'), 'utf8') },
    'demo.css': { type: 'text/css; charset=utf-8', body: fs.readFileSync(path.join(DIR, 'demo.css'), 'utf8') },
  };

  const baseUrl = () => {
    if (opts.apiBaseUrl) return opts.apiBaseUrl.replace(/\/$/, '');
    const addr = app.server.address();
    if (!addr || typeof addr === 'string') throw new Error('the demo funnel needs apiBaseUrl when the server is not listening on TCP');
    const host = addr.address === '0.0.0.0' || addr.address === '::' ? '127.0.0.1' : addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
    return `http://${host}:${addr.port}`;
  };

  async function callApi(method: 'GET' | 'POST', pathname: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiAnswer> {
    const res = await fetch(baseUrl() + pathname, {
      method,
      headers: { authorization: `Bearer ${opts.token}`, accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = { success: false, message: `The API answered ${res.status} with a body that is not JSON.`, data: null };
    }
    return { status: res.status, body: parsed };
  }

  const hidden = { schema: { hide: true } };
  const HTML = 'text/html; charset=utf-8';
  app.get('/demo', hidden, async (_req, reply) => reply.type(HTML).send(pages.checkout));
  // The 3-D Secure gateway sends the customer back here (payment.return_url): the page calls Capture.
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
    const campaign = await callApi('GET', `/v1/campaigns/${opts.campaignId}`);
    if (campaign.status !== 200) return reply.code(campaign.status).send(campaign.body);
    const offers = await Promise.all(opts.offers.map((id) => callApi('GET', `/v1/offers/${id}`)));
    const failed = offers.find((o) => o.status !== 200);
    if (failed) return reply.code(failed.status).send(failed.body);
    let upsell: Record<string, unknown> | null = null;
    const upsellId = opts.upsells[0];
    if (upsellId) {
      const u = await callApi('GET', `/v1/upsells/${upsellId}`);
      if (u.status !== 200) return reply.code(u.status).send(u.body);
      const offer = await callApi('GET', `/v1/offers/${u.body.data.offer_id}`);
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
        payment_methods: (Object.keys(DEMO_PAYMENT_METHODS) as Array<keyof typeof DEMO_PAYMENT_METHODS>)
          .filter((m) => m === 'card' || threeDs)
          .map((id) => ({ id, label: DEMO_PAYMENT_METHODS[id] })),
        test_cards: DEMO_TEST_CARDS,
        threeds_test_cards: threeDs ? DEMO_THREEDS_TEST_CARDS : [],
      },
    };
  });

  app.post('/demo/api/lead', { schema: { hide: true, body: Lead } }, async (req, reply) => {
    const { email, first_name, last_name } = req.body;
    const r = await callApi('POST', '/checkout/leads', {
      campaign_id: opts.campaignId,
      customer: { email, ...(first_name ? { first_name } : {}), ...(last_name ? { last_name } : {}) },
      products: opts.offers.map((offer_id) => ({ offer_id, quantity: 1 })),
    });
    return reply.code(r.status).send(r.body);
  });

  app.post('/demo/api/pay', { schema: { hide: true, body: Pay } }, async (req, reply) => {
    const { order_number, attempt_id, method, risk_session_id, card_number, card_exp, card_cvv, billing } = req.body;
    const card = { card_number: card_number.replace(/[\s-]/g, ''), card_exp, card_cvv };
    let body: Record<string, unknown> = { order_number, ...(billing ? { billing } : {}), payment: card };
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
    const r = await callApi('POST', '/checkout/orders/payment', body, { 'idempotency-key': `demo-pay-${attempt_id}` });
    return reply.code(r.status).send(r.body);
  });

  // After the hosted 3-D Secure page: Capture asks the gateway and answers 200 (paid, the order
  // completed), 202 (under review: do not advance), 422 (not completed) or 404.
  app.post('/demo/api/capture', { schema: { hide: true, body: CaptureRef } }, async (req, reply) => {
    const { order_number, payment_id } = req.body;
    const r = await callApi('POST', '/checkout/orders/capture', { order_number, ...(payment_id ? { payment_id } : {}) });
    return reply.code(r.status).send(r.body);
  });

  app.post('/demo/api/upsell', { schema: { hide: true, body: OrderRef } }, async (req, reply) => {
    const upsell_id = opts.upsells[0];
    if (!upsell_id) return reply.code(404).send(errorBody('not_found', 'This demo funnel has no upsell.'));
    const r = await callApi('POST', '/checkout/orders/upsell', { order_number: req.body.order_number, upsell_id, quantity: 1 });
    return reply.code(r.status).send(r.body);
  });

  app.post('/demo/api/complete', { schema: { hide: true, body: OrderRef } }, async (req, reply) => {
    const r = await callApi('POST', '/checkout/orders/complete', { order_number: req.body.order_number });
    if (r.status === 404 && r.body?.error?.code === 'route_not_found') {
      // An API without Complete Order: show the order as it stands.
      const order = await callApi('GET', `/v1/orders/${req.body.order_number}`);
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
  };
}

type DemoIds = Pick<DemoSeed, 'team_id' | 'campaign_id' | 'offers' | 'upsells'> & { threeds_gateway_id?: string | null | undefined };

const DemoIdsFile = z.object({
  team_id: z.string(),
  campaign_id: z.string(),
  offers: z.record(z.string(), z.string()),
  upsells: z.array(z.object({ upsell_id: z.string(), step: z.number(), offer_id: z.string() })),
  // Absent in a demo.json written before the 3-D Secure gateway was seeded.
  threeds_gateway_id: z.string().nullable().optional(),
});

function readDemoIds(dataDir: string): DemoIds | undefined {
  try {
    return DemoIdsFile.parse(JSON.parse(fs.readFileSync(path.join(dataDir, 'demo.json'), 'utf8')));
  } catch {
    return undefined;
  }
}
