import { sandboxApiBaseUrl } from '../providers/extpay/types.ts';
import type { Config } from './config.ts';
import type { AppContext } from './context.ts';
import { randomToken } from './ids.ts';

export interface DemoSeed {
  team_id: string;
  token: string;
  /** The token's id (`tok_…`): what `token revoke` takes. */
  token_id: string;
  /** The demo team's Team Owner, to log in with (POST /v1/sessions): the password is shown once, stored only as a scrypt hash. */
  owner_email: string;
  owner_password: string;
  campaign_id: string;
  gateway_id: string | null;
  /** With `sandboxUrl`: a 3-D Secure gateway on the sandbox (`<sandbox url>/3ds`); the demo funnel offers it beside the card gateway. */
  threeds_gateway_id: string | null;
  /** With `sandboxUrl`: an `extpay` connection to the sandbox's Whop stand-in (`<sandbox url>/extpay`, environment Sandbox). */
  extpay_connection_id: string | null;
  currency: string;
  products: Record<string, string>;
  offers: Record<string, string>;
  upsells: Array<{ upsell_id: string; step: number; offer_id: string }>;
  coupon_code: string;
}

/** Where a warning goes: a pino logger, or by default stderr (never stdout: `seed --json` prints there). */
export interface SeedLog {
  warn(obj: object, msg: string): void;
}

const stderrLog: SeedLog = {
  warn: (obj, msg) => console.warn(`checkstand: ${msg} ${JSON.stringify(obj)}`),
};

/** The demo Team Owner: owner@demo.checkstand.local, or a numbered address when a demo already took it. */
async function seedDemoOwner(ctx: AppContext, teamId: string): Promise<{ email: string; password: string }> {
  const password = randomToken(20);
  for (let n = 1; ; n++) {
    const email = n === 1 ? 'owner@demo.checkstand.local' : `owner${n}@demo.checkstand.local`;
    try {
      await ctx.services.users.createUser({ teamId, email, password, name: 'Demo Owner' });
      return { email, password };
    } catch (err) {
      if ((err as { code?: string }).code !== 'email_taken' || n >= 100) throw err;
    }
  }
}

/**
 * Tells the sandbox's 3-D Secure gateway where to send this gateway's signed webhooks: POST
 * `{base_url}/sandbox/accounts` with the gateway's api key, its webhook secret and the webhook URL
 * the gateway view shows (PUBLIC_BASE_URL or http://HOST:PORT). The sandbox keeps accounts in
 * memory, so `npm start` does this again at each start. Never throws: without it the sandbox sends
 * no webhooks, and Capture still settles every payment. True when the sandbox took it.
 */
export async function configureThreeDsSandboxAccount(ctx: AppContext, teamId: string, gatewayId: string, log: SeedLog = stderrLog): Promise<boolean> {
  const { gateways } = ctx.services;
  const row = await ctx.store.run((db) => gateways.findGateway(db, teamId, gatewayId));
  if (!row || row.kind !== 'threeds') return false;
  const view = gateways.gatewayView(row);
  let credentials: Record<string, string | undefined>;
  try {
    credentials = gateways.account(row).credentials;
  } catch (err) {
    log.warn({ gateway_id: gatewayId, err: (err as Error).message }, 'the demo 3-D Secure gateway\'s credentials cannot be read; the sandbox will send no webhooks');
    return false;
  }
  const url = `${row.base_url}/sandbox/accounts`;
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ api_key: credentials.api_key, webhook_url: view.webhook_url, webhook_secret: credentials.webhook_secret }),
      signal: AbortSignal.timeout(3000),
    });
    await res.text();
    if (res.ok) return true;
    log.warn({ url, status: res.status }, 'the sandbox refused the 3-D Secure account settings; it will send no webhooks (Capture still completes payments)');
  } catch (err) {
    log.warn({ url, err: (err as Error).message }, 'the sandbox is not reachable to set up 3-D Secure webhooks (Capture still completes payments)');
  }
  return false;
}

/**
 * Where the API receives the provider's webhooks, as the provider is told: PUBLIC_BASE_URL or
 * http://HOST:PORT, the same base the 3-D Secure gateway's `webhook_url` is built on (context.ts).
 */
export function extpayWebhookUrl(config: Pick<Config, 'publicBaseUrl' | 'host' | 'port'>): string {
  const base = (config.publicBaseUrl ?? `http://${config.host}:${config.port}`).replace(/\/+$/, '');
  return `${base}/webhooks/extpay`;
}

/**
 * Registers the demo connection's company with the sandbox's Whop stand-in: POST
 * `{sandbox}/extpay/{env}/sandbox/companies` with the connection's company id, its API key, its
 * webhook secret and where to send the webhooks. The sandbox keeps companies in memory, so
 * `npm start` does this at each start; the endpoint creates or updates, so doing it again is
 * harmless. Never throws, and never logs a key or a secret: without it the sandbox refuses the
 * key (Create Order then fails with the provider's 401) until the next start. True when the
 * sandbox took it.
 */
export async function configureExtpaySandboxCompany(ctx: AppContext, teamId: string, connectionId: string, log: SeedLog = stderrLog): Promise<boolean> {
  const { connections } = ctx.services;
  const row = await ctx.store.run((db) => connections.findLive(db, teamId, connectionId));
  if (!row) return false;
  // Only a connection on a Checkstand sandbox has a control API: …/extpay/{env}/api/v1.
  const root = /^(.*\/extpay\/(?:sandbox|production))\/api\/v1\/?$/.exec(row.base_url)?.[1];
  if (!root) return false;
  let conn: ReturnType<typeof connections.connection>;
  try {
    conn = connections.connection(row);
  } catch (err) {
    log.warn({ connection_id: connectionId, err: (err as Error).message }, "the demo extpay connection's credentials cannot be read; the sandbox will not know its key");
    return false;
  }
  const url = `${root}/sandbox/companies`;
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        company_id: conn.companyId,
        title: 'Checkstand Demo Store',
        api_keys: [{ key: conn.apiKey }],
        webhook_url: extpayWebhookUrl(ctx.config),
        webhook_secret: conn.webhookSecret,
      }),
      signal: AbortSignal.timeout(3000),
    });
    await res.text();
    if (res.ok) return true;
    log.warn({ url, status: res.status }, 'the sandbox refused the demo extpay company; extpay payments will fail until the next start');
  } catch (err) {
    log.warn({ url, err: (err as Error).message }, 'the sandbox is not reachable to register the demo extpay company; extpay payments will fail until it is');
  }
  return false;
}

/**
 * A demo team with a whole funnel: one campaign, a physical product, a subscription, a digital
 * upsell; with `sandboxUrl`, a test-mode card gateway on the sandbox as the campaign's gateway, and
 * a test-mode 3-D Secure gateway on the sandbox's `/3ds` whose webhooks the sandbox is told to send
 * here, and an `extpay` connection (environment Sandbox) to the sandbox's Whop stand-in, whose
 * company the sandbox is told about (when the sandbox is up; nothing fails when it is not).
 */
export async function seedDemo(ctx: AppContext, opts: { teamName?: string; sandboxUrl?: string | undefined; log?: SeedLog } = {}): Promise<DemoSeed> {
  const { teams, catalog, gateways, connections } = ctx.services;
  const team = await teams.createTeam(opts.teamName ?? 'Demo Store');
  const { token, secret } = await teams.createToken(team.id, 'demo');
  const owner = await seedDemoOwner(ctx, team.id);
  const gateway = opts.sandboxUrl
    ? await gateways.createGateway(team.id, {
        name: 'Sandbox card gateway (NMI-compatible)',
        kind: 'nmi',
        base_url: opts.sandboxUrl,
        credentials: { security_key: `demo_${randomToken(24)}` },
        test_mode: true,
        is_active: true,
      })
    : null;
  const threeds = opts.sandboxUrl
    ? await gateways.createGateway(team.id, {
        name: 'Sandbox 3-D Secure gateway',
        kind: 'threeds',
        base_url: `${opts.sandboxUrl.replace(/\/+$/, '')}/3ds`,
        credentials: { api_key: `sk_test_demo_${randomToken(24)}`, risk_sdk_key: 'pk_test_demo', webhook_secret: `whsec_${randomToken(32)}` },
        is_active: true,
      })
    : null;
  if (threeds) await configureThreeDsSandboxAccount(ctx, team.id, threeds.id, opts.log);
  const extpay = opts.sandboxUrl
    ? await connections.create(team.id, {
        name: 'Sandbox extpay (Whop stand-in)',
        api_key: `apik_demo_${randomToken(32)}`,
        company_id: `biz_demo${randomToken(14)}`,
        environment: 'sandbox',
        webhook_secret: `ws_${randomToken(40)}`,
        base_url: sandboxApiBaseUrl(opts.sandboxUrl, 'sandbox'),
      })
    : null;
  if (extpay) await configureExtpaySandboxCompany(ctx, team.id, extpay.id, opts.log);
  const campaign = await catalog.createCampaign(team.id, { name: 'Glow Serum funnel', currency: 'USD', ...(gateway ? { gateway_id: gateway.id } : {}) });
  const serum = await catalog.createProduct(team.id, { name: 'Glow Serum', sku: 'GLOW-30ML', description: '30 ml bottle' });
  const club = await catalog.createProduct(team.id, { name: 'Glow Refill Club', sku: 'GLOW-CLUB' });
  const guide = await catalog.createProduct(team.id, { name: 'Skin Routine Guide (PDF)', sku: 'GUIDE-PDF' });

  const serumOffer = await catalog.createOffer(team.id, {
    campaign_id: campaign.id,
    product_id: serum.id,
    name: 'Glow Serum, one bottle',
    price: 3900,
    shipping: 495,
    billing: 'one_time',
    fulfillment_type: 'physical',
  });
  const clubOffer = await catalog.createOffer(team.id, {
    campaign_id: campaign.id,
    product_id: club.id,
    name: 'Refill Club: 14-day trial, then monthly',
    price: 0,
    shipping: 0,
    billing: 'trial',
    trial_days: 14,
    interval_unit: 'month',
    interval_count: 1,
    recurring_price: 2900,
    recurring_shipping: 0,
    fulfillment_type: 'physical',
  });
  const guideOffer = await catalog.createOffer(team.id, {
    campaign_id: campaign.id,
    product_id: guide.id,
    name: 'Skin Routine Guide',
    price: 900,
    shipping: 0,
    billing: 'one_time',
    fulfillment_type: 'digital',
  });
  const up1 = await catalog.createUpsell(team.id, { campaign_id: campaign.id, offer_id: clubOffer.id, step: 1, name: 'Join the Refill Club' });
  const up2 = await catalog.createUpsell(team.id, { campaign_id: campaign.id, offer_id: guideOffer.id, step: 2, name: 'Add the routine guide' });
  const coupon = await catalog.createCoupon(team.id, { code: 'WELCOME10', campaign_id: campaign.id, percent_off: 10 });

  return {
    team_id: team.id,
    token: secret,
    owner_email: owner.email,
    owner_password: owner.password,
    token_id: token.id,
    campaign_id: campaign.id,
    gateway_id: gateway?.id ?? null,
    threeds_gateway_id: threeds?.id ?? null,
    extpay_connection_id: extpay?.id ?? null,
    currency: campaign.currency,
    products: { serum: serum.id, club: club.id, guide: guide.id },
    offers: { serum: serumOffer.id, club_trial: clubOffer.id, guide: guideOffer.id },
    upsells: [
      { upsell_id: up1.id, step: 1, offer_id: clubOffer.id },
      { upsell_id: up2.id, step: 2, offer_id: guideOffer.id },
    ],
    coupon_code: coupon.code,
  };
}
