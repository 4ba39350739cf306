import { ApiError, invalid, notFound } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import { type ListQuery } from '../../app/schemas.ts';
import type { Executor, Store, Tx } from '../../db/database.ts';
import { type ListableTable, listPage } from '../../db/pagination.ts';
import type { Row } from '../../db/schema.ts';
import { assertOwnedRouting, type RoutingReferences } from '../gateways/service.ts';
import { abandonmentColumns } from '../leads/settings.ts';
import { CatalogCache } from './cached.ts';
import { type CampaignFilter, campaignView, couponView, type ListPage, offerView, productView, upsellView } from './views.ts';
import { OwnedReferences } from './references.ts';
import * as repo from './repo.ts';

export { type CampaignFilter, campaignView, couponView, type ListPage, offerView, productView, upsellView } from './views.ts';
import type {
  Campaign,
  Coupon,
  CreateCampaign,
  CreateCoupon,
  CreateOffer,
  CreateProduct,
  CreateUpsell,
  Offer,
  Product,
  UpdateCampaign,
  UpdateCoupon,
  UpdateOffer,
  UpdateProduct,
  UpdateUpsell,
  Upsell,
} from './schemas.ts';
import { isUniqueViolation, presentFields } from '../../db/helpers.ts';

/** The gateway and payment orchestrator a campaign's create or patch names (null clears one: nothing to check). */
function routingOf(input: { gateway_id?: string | null | undefined; payment_orchestrator_id?: string | null | undefined }): RoutingReferences {
  return {
    gateways: input.gateway_id ? [{ path: 'gateway_id', id: input.gateway_id }] : [],
    paymentOrchestrators: input.payment_orchestrator_id ? [{ path: 'payment_orchestrator_id', id: input.payment_orchestrator_id }] : [],
  };
}

function skuTaken(sku: string | null | undefined): ApiError {
  return new ApiError('conflict', `A product with the SKU "${sku}" already exists in this team.`, {
    fields: [{ path: 'sku', message: 'is already used by another product' }],
  });
}

export class CatalogService {
  /** Campaigns, offers and upsells as the checkout reads them: cached per process, dropped here after each write (cached.ts). */
  private readonly cache: CatalogCache;

  constructor(private readonly store: Store) {
    this.cache = new CatalogCache(store);
  }

  /** Reads other modules run inside their own transaction: they pass its handle. Cached rows: frozen, at most the cache's TTL behind another process's write. */
  findCampaign(db: Executor, teamId: string, id: string): Promise<Row<'campaigns'> | undefined> {
    return this.cache.campaign(db, teamId, id);
  }

  findOffers(db: Executor, teamId: string, ids: readonly string[]): Promise<Row<'offers'>[]> {
    return this.cache.offersOf(db, teamId, ids);
  }

  findCouponByCode(db: Executor, teamId: string, code: string): Promise<Row<'coupons'> | undefined> {
    return repo.findCouponByCode(db, teamId, code);
  }

  findCoupon(db: Executor, teamId: string, id: string): Promise<Row<'coupons'> | undefined> {
    return repo.findCoupon(db, teamId, id);
  }

  /** Records the coupon's use by a completed order, once per order (called in the completing transaction). */
  async redeemCoupon(trx: Tx, teamId: string, couponId: string, orderId: string, amount: number): Promise<void> {
    if (await repo.insertRedemption(trx, { id: newId('couponRedemption'), team_id: teamId, coupon_id: couponId, order_id: orderId, amount })) {
      await repo.incrementRedemptions(trx, teamId, couponId);
    }
  }

  /**
   * Holds one use of a coupon for an order whose discounted payment is starting: the redemption
   * row and the guarded increment together, so concurrent checkouts can never pass max_redemptions.
   * An order that holds its use already keeps it. False: the coupon is used up.
   */
  async reserveCoupon(trx: Tx, teamId: string, couponId: string, orderId: string, amount: number): Promise<boolean> {
    if (!(await repo.insertRedemption(trx, { id: newId('couponRedemption'), team_id: teamId, coupon_id: couponId, order_id: orderId, amount }))) return true;
    return repo.reserveRedemption(trx, teamId, couponId);
  }

  /** The discounted payment declined or failed: its use goes back to the coupon. */
  releaseCoupon(trx: Tx, teamId: string, couponId: string, orderId: string): Promise<boolean> {
    return repo.releaseRedemption(trx, teamId, couponId, orderId);
  }

  findUpsell(db: Executor, teamId: string, id: string): Promise<Row<'upsells'> | undefined> {
    return this.cache.upsell(db, teamId, id);
  }

  /** The mail module keeps the campaign's purchase-confirmation template here; null resets it (outside a transaction: the cached campaign is dropped once it is written). */
  async setCampaignPurchaseEmail(db: Executor, teamId: string, id: string, template: { subject: string; body: string } | null): Promise<Row<'campaigns'> | undefined> {
    const row = await repo.setCampaignPurchaseEmail(db, teamId, id, template);
    this.cache.forgetCampaign(teamId, id);
    return row;
  }

  // ---- campaigns

  async createCampaign(teamId: string, input: CreateCampaign): Promise<Campaign> {
    const row = await this.store.transaction(async (trx) => {
      await this.requireRouting(trx, teamId, input);
      const abandonment = abandonmentColumns(null, input.abandonment ?? {});
      const inserted = await repo.insertCampaign(trx, {
        id: newId('campaign'),
        team_id: teamId,
        name: input.name,
        currency: input.currency,
        gateway_id: input.gateway_id ?? null,
        payment_orchestrator_id: input.payment_orchestrator_id ?? null,
        ...abandonment.patch,
      });
      return abandonment.switchedOn ? (await repo.stampAbandonmentEnabled(trx, teamId, inserted.id))! : inserted;
    });
    return campaignView(row);
  }

  async getCampaign(teamId: string, id: string): Promise<Campaign> {
    const row = await this.store.run((db) => repo.findCampaign(db, teamId, id));
    if (!row) throw notFound('Campaign');
    return campaignView(row);
  }

  async updateCampaign(teamId: string, id: string, patch: UpdateCampaign): Promise<Campaign> {
    const fields = presentFields(patch);
    if (!fields) return this.getCampaign(teamId, id);
    const row = await this.store.transaction(async (trx) => {
      // An unknown campaign is a 404 before its references are judged.
      const current = await repo.findCampaign(trx, teamId, id, { forUpdate: true });
      if (!current) throw notFound('Campaign');
      await this.requireRouting(trx, teamId, fields);
      const { abandonment: input, ...columns } = fields;
      const abandonment = input ? abandonmentColumns(current, input) : null;
      const updated = await repo.updateCampaign(trx, teamId, id, { ...columns, ...abandonment?.patch });
      return abandonment?.switchedOn ? repo.stampAbandonmentEnabled(trx, teamId, id) : updated;
    });
    this.cache.forgetCampaign(teamId, id);
    if (!row) throw notFound('Campaign');
    return campaignView(row);
  }

  async listCampaigns(teamId: string, query: ListQuery): Promise<ListPage<Campaign>> {
    return this.listPage('campaigns', teamId, query, (db, w) => repo.listCampaigns(db, teamId, w), campaignView);
  }

  // ---- products

  async createProduct(teamId: string, input: CreateProduct): Promise<Product> {
    try {
      const row = await this.store.run((db) =>
        repo.insertProduct(db, {
          id: newId('product'),
          team_id: teamId,
          name: input.name,
          sku: input.sku ?? null,
          description: input.description ?? null,
        }),
      );
      return productView(row);
    } catch (err) {
      if (isUniqueViolation(err, 'products_team_sku')) throw skuTaken(input.sku);
      throw err;
    }
  }

  async getProduct(teamId: string, id: string): Promise<Product> {
    const row = await this.store.run((db) => repo.findProduct(db, teamId, id));
    if (!row) throw notFound('Product');
    return productView(row);
  }

  async updateProduct(teamId: string, id: string, patch: UpdateProduct): Promise<Product> {
    const fields = presentFields(patch);
    if (!fields) return this.getProduct(teamId, id);
    try {
      const row = await this.store.run((db) => repo.updateProduct(db, teamId, id, fields));
      if (!row) throw notFound('Product');
      return productView(row);
    } catch (err) {
      if (isUniqueViolation(err, 'products_team_sku')) throw skuTaken(patch.sku);
      throw err;
    }
  }

  async listProducts(teamId: string, query: ListQuery): Promise<ListPage<Product>> {
    return this.listPage('products', teamId, query, (db, w) => repo.listProducts(db, teamId, w), productView);
  }

  // ---- offers

  async createOffer(teamId: string, input: CreateOffer): Promise<Offer> {
    const row = await this.store.transaction(async (trx) => {
      const refs = new OwnedReferences(trx, teamId);
      await refs.campaign(input.campaign_id);
      await refs.product(input.product_id);
      refs.assert();
      const renewal = input.billing === 'one_time' ? null : input;
      return repo.insertOffer(trx, {
        id: newId('offer'),
        team_id: teamId,
        campaign_id: input.campaign_id,
        product_id: input.product_id,
        name: input.name,
        price: input.price,
        shipping: input.shipping,
        billing_type: input.billing,
        interval_unit: renewal?.interval_unit ?? null,
        interval_count: renewal?.interval_count ?? null,
        trial_days: input.billing === 'trial' ? input.trial_days : null,
        recurring_price: renewal?.recurring_price ?? null,
        recurring_shipping: renewal?.recurring_shipping ?? null,
        fulfillment_type: input.fulfillment_type,
      });
    });
    return offerView(row);
  }

  async getOffer(teamId: string, id: string): Promise<Offer> {
    const row = await this.store.run((db) => repo.findOffer(db, teamId, id));
    if (!row) throw notFound('Offer');
    return offerView(row);
  }

  async updateOffer(teamId: string, id: string, patch: UpdateOffer): Promise<Offer> {
    const fields = presentFields(patch);
    if (!fields) return this.getOffer(teamId, id);
    const row = await this.store.run((db) => repo.updateOffer(db, teamId, id, fields));
    this.cache.forgetOffer(teamId, id);
    if (!row) throw notFound('Offer');
    return offerView(row);
  }

  async listOffers(teamId: string, query: CampaignFilter): Promise<ListPage<Offer>> {
    return this.listPage('offers', teamId, query, (db, w) => repo.listOffers(db, teamId, query.campaign_id, w), offerView);
  }

  // ---- upsells

  async createUpsell(teamId: string, input: CreateUpsell): Promise<Upsell> {
    const row = await this.store.transaction(async (trx) => {
      const refs = new OwnedReferences(trx, teamId);
      const { campaign, offer } = refs.ensure({ campaign: await refs.campaign(input.campaign_id), offer: await refs.offer(input.offer_id) });
      if (offer.campaign_id !== campaign.id) throw invalid('offer_id', 'belongs to another campaign; an upsell sells an offer of its own campaign');
      return repo.insertUpsell(trx, {
        id: newId('upsell'),
        team_id: teamId,
        campaign_id: campaign.id,
        offer_id: offer.id,
        step: input.step,
        name: input.name,
      });
    });
    return upsellView(row);
  }

  async getUpsell(teamId: string, id: string): Promise<Upsell> {
    const row = await this.store.run((db) => repo.findUpsell(db, teamId, id));
    if (!row) throw notFound('Upsell');
    return upsellView(row);
  }

  async updateUpsell(teamId: string, id: string, patch: UpdateUpsell): Promise<Upsell> {
    const fields = presentFields(patch);
    if (!fields) return this.getUpsell(teamId, id);
    const row = await this.store.run((db) => repo.updateUpsell(db, teamId, id, fields));
    this.cache.forgetUpsell(teamId, id);
    if (!row) throw notFound('Upsell');
    return upsellView(row);
  }

  async listUpsells(teamId: string, query: CampaignFilter): Promise<ListPage<Upsell>> {
    return this.listPage('upsells', teamId, query, (db, w) => repo.listUpsells(db, teamId, query.campaign_id, w), upsellView);
  }

  // ---- coupons

  async createCoupon(teamId: string, input: CreateCoupon): Promise<Coupon> {
    try {
      const row = await this.store.transaction(async (trx) => {
        if (input.campaign_id) {
          const refs = new OwnedReferences(trx, teamId);
          const { campaign } = refs.ensure({ campaign: await refs.campaign(input.campaign_id) });
          if (input.currency !== undefined && input.currency !== campaign.currency) {
            throw invalid('currency', `must be the campaign's currency, ${campaign.currency}`);
          }
        }
        return repo.insertCoupon(trx, {
          id: newId('coupon'),
          team_id: teamId,
          code: input.code,
          campaign_id: input.campaign_id ?? null,
          percent_off: input.percent_off ?? null,
          amount_off: input.amount_off ?? null,
          currency: input.currency ?? null,
          max_redemptions: input.max_redemptions ?? null,
          expires_at: input.expires_at ? new Date(input.expires_at) : null,
        });
      });
      return couponView(row);
    } catch (err) {
      if (isUniqueViolation(err, 'coupons_team_code')) {
        throw new ApiError('conflict', `A coupon with the code "${input.code}" already exists in this team (codes are compared ignoring case).`, {
          fields: [{ path: 'code', message: 'is already used by another coupon' }],
        });
      }
      throw err;
    }
  }

  async getCoupon(teamId: string, id: string): Promise<Coupon> {
    const row = await this.store.run((db) => repo.findCoupon(db, teamId, id));
    if (!row) throw notFound('Coupon');
    return couponView(row);
  }

  async updateCoupon(teamId: string, id: string, patch: UpdateCoupon): Promise<Coupon> {
    const fields = presentFields(patch);
    if (!fields) return this.getCoupon(teamId, id);
    const row = await this.store.transaction(async (trx) => {
      const current = await repo.lockCoupon(trx, teamId, id);
      if (!current) throw notFound('Coupon');
      const max = fields.max_redemptions;
      if (typeof max === 'number' && max < current.times_redeemed) {
        throw invalid('max_redemptions', `must be at least the ${current.times_redeemed} redemptions already made`);
      }
      const { expires_at, ...rest } = fields;
      return repo.updateCoupon(trx, teamId, id, {
        ...rest,
        ...(expires_at !== undefined ? { expires_at: expires_at === null ? null : new Date(expires_at) } : {}),
      });
    });
    if (!row) throw notFound('Coupon');
    return couponView(row);
  }

  async listCoupons(teamId: string, query: CampaignFilter): Promise<ListPage<Coupon>> {
    return this.listPage('coupons', teamId, query, (db, w) => repo.listCoupons(db, teamId, query.campaign_id, w), couponView);
  }

  // ---- shared

  /** A campaign's gateway and payment orchestrator must be the team's: another team's would decline every payment. */
  private requireRouting(trx: Tx, teamId: string, input: Parameters<typeof routingOf>[0]): Promise<void> {
    return assertOwnedRouting(trx, teamId, routingOf(input));
  }

  /** The module's lists: the shared cursor pagination with this module's created-at window. */
  private listPage<R, V>(
    table: ListableTable,
    teamId: string,
    query: ListQuery,
    fetch: (db: Executor, w: repo.ListWindow) => Promise<R[]>,
    view: (row: R) => V,
  ): Promise<ListPage<V>> {
    return this.store.run((db) =>
      listPage(db, table, teamId, query, (afterSeq) => fetch(db, { afterSeq, limit: query.limit, createdGte: query.created_gte, createdLte: query.created_lte }), view),
    );
  }

}
