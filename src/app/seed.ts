import type { AppContext } from './context.ts';
import { randomToken } from './ids.ts';

export interface DemoSeed {
  team_id: string;
  token: string;
  campaign_id: string;
  gateway_id: string | null;
  currency: string;
  products: Record<string, string>;
  offers: Record<string, string>;
  upsells: Array<{ upsell_id: string; step: number; offer_id: string }>;
  coupon_code: string;
}

/**
 * A demo team with a whole funnel: one campaign, a physical product, a subscription, a digital
 * upsell; with `sandboxUrl`, a test-mode card gateway on the sandbox as the campaign's gateway.
 */
export async function seedDemo(ctx: AppContext, opts: { teamName?: string; sandboxUrl?: string | undefined } = {}): Promise<DemoSeed> {
  const { teams, catalog, gateways } = ctx.services;
  const team = await teams.createTeam(opts.teamName ?? 'Demo Store');
  const { secret } = await teams.createToken(team.id, 'demo');
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
    campaign_id: campaign.id,
    gateway_id: gateway?.id ?? null,
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
