import type { AppContext } from '../../app/context.ts';
import { Envelope, listed, ListEnvelope, ok } from '../../app/envelope.ts';
import { type Http, teamOf } from '../../app/http.ts';
import { ListQuery } from '../../app/schemas.ts';
import {
  ByCampaignListQuery,
  Campaign,
  Coupon,
  CreateCampaign,
  CreateCoupon,
  CreateOffer,
  CreateProduct,
  CreateUpsell,
  IdParams,
  Offer,
  Product,
  UpdateCampaign,
  UpdateCoupon,
  UpdateOffer,
  UpdateProduct,
  UpdateUpsell,
  Upsell,
} from './schemas.ts';

const tags = ['catalog'];

const CampaignEnvelope = Envelope(Campaign);
const ProductEnvelope = Envelope(Product);
const OfferEnvelope = Envelope(Offer);
const UpsellEnvelope = Envelope(Upsell);
const CouponEnvelope = Envelope(Coupon);

export function registerCatalogRoutes(app: Http, ctx: AppContext): void {
  const catalog = ctx.services.catalog;

  // ---- campaigns

  app.post(
    '/v1/campaigns',
    { config: { permission: 'catalog:manage', audit: 'campaign.created' }, schema: { tags, summary: 'Create a campaign', body: CreateCampaign, response: { 201: CampaignEnvelope } } },
    async (req, reply) => reply.code(201).send(ok(await catalog.createCampaign(teamOf(req), req.body))),
  );
  app.get(
    '/v1/campaigns',
    { config: { permission: 'catalog:view' }, schema: { tags, summary: 'List campaigns, newest first', querystring: ListQuery, response: { 200: ListEnvelope(Campaign) } } },
    async (req) => listed(await catalog.listCampaigns(teamOf(req), req.query)),
  );
  app.get(
    '/v1/campaigns/:id',
    { config: { permission: 'catalog:view' }, schema: { tags, summary: 'Retrieve a campaign', params: IdParams, response: { 200: CampaignEnvelope } } },
    async (req) => ok(await catalog.getCampaign(teamOf(req), req.params.id)),
  );
  app.patch(
    '/v1/campaigns/:id',
    { config: { permission: 'catalog:manage', audit: 'campaign.updated' }, schema: { tags, summary: 'Update a campaign', description: 'The currency is fixed once created.', params: IdParams, body: UpdateCampaign, response: { 200: CampaignEnvelope } } },
    async (req) => ok(await catalog.updateCampaign(teamOf(req), req.params.id, req.body)),
  );

  // ---- products

  app.post(
    '/v1/products',
    { config: { permission: 'catalog:manage', audit: 'product.created' }, schema: { tags, summary: 'Create a product', description: 'A `sku` already used in the team answers 409.', body: CreateProduct, response: { 201: ProductEnvelope } } },
    async (req, reply) => reply.code(201).send(ok(await catalog.createProduct(teamOf(req), req.body))),
  );
  app.get(
    '/v1/products',
    { config: { permission: 'catalog:view' }, schema: { tags, summary: 'List products, newest first', querystring: ListQuery, response: { 200: ListEnvelope(Product) } } },
    async (req) => listed(await catalog.listProducts(teamOf(req), req.query)),
  );
  app.get(
    '/v1/products/:id',
    { config: { permission: 'catalog:view' }, schema: { tags, summary: 'Retrieve a product', params: IdParams, response: { 200: ProductEnvelope } } },
    async (req) => ok(await catalog.getProduct(teamOf(req), req.params.id)),
  );
  app.patch(
    '/v1/products/:id',
    { config: { permission: 'catalog:manage', audit: 'product.updated' }, schema: { tags, summary: 'Update a product', params: IdParams, body: UpdateProduct, response: { 200: ProductEnvelope } } },
    async (req) => ok(await catalog.updateProduct(teamOf(req), req.params.id, req.body)),
  );

  // ---- offers

  app.post(
    '/v1/offers',
    {
      config: { permission: 'catalog:manage', audit: 'offer.created' },
      schema: {
        tags,
        summary: 'Create an offer',
        description:
          'A product sold in a campaign at a price in the campaign currency. `billing` decides the other fields: `recurring` needs ' +
          '`interval_unit`, `interval_count` and `recurring_price`; `trial` needs those and `trial_days`.',
        body: CreateOffer,
        response: { 201: OfferEnvelope },
      },
    },
    async (req, reply) => reply.code(201).send(ok(await catalog.createOffer(teamOf(req), req.body))),
  );
  app.get(
    '/v1/offers',
    { config: { permission: 'catalog:view' }, schema: { tags, summary: 'List offers, newest first', querystring: ByCampaignListQuery, response: { 200: ListEnvelope(Offer) } } },
    async (req) => listed(await catalog.listOffers(teamOf(req), req.query)),
  );
  app.get(
    '/v1/offers/:id',
    { config: { permission: 'catalog:view' }, schema: { tags, summary: 'Retrieve an offer', params: IdParams, response: { 200: OfferEnvelope } } },
    async (req) => ok(await catalog.getOffer(teamOf(req), req.params.id)),
  );
  app.patch(
    '/v1/offers/:id',
    { config: { permission: 'catalog:manage', audit: 'offer.updated' }, schema: { tags, summary: 'Update an offer', params: IdParams, body: UpdateOffer, response: { 200: OfferEnvelope } } },
    async (req) => ok(await catalog.updateOffer(teamOf(req), req.params.id, req.body)),
  );

  // ---- upsells

  app.post(
    '/v1/upsells',
    { config: { permission: 'catalog:manage', audit: 'upsell.created' }, schema: { tags, summary: 'Create an upsell', description: 'The offer must belong to the same campaign.', body: CreateUpsell, response: { 201: UpsellEnvelope } } },
    async (req, reply) => reply.code(201).send(ok(await catalog.createUpsell(teamOf(req), req.body))),
  );
  app.get(
    '/v1/upsells',
    { config: { permission: 'catalog:view' }, schema: { tags, summary: 'List upsells, newest first', querystring: ByCampaignListQuery, response: { 200: ListEnvelope(Upsell) } } },
    async (req) => listed(await catalog.listUpsells(teamOf(req), req.query)),
  );
  app.get(
    '/v1/upsells/:id',
    { config: { permission: 'catalog:view' }, schema: { tags, summary: 'Retrieve an upsell', params: IdParams, response: { 200: UpsellEnvelope } } },
    async (req) => ok(await catalog.getUpsell(teamOf(req), req.params.id)),
  );
  app.patch(
    '/v1/upsells/:id',
    { config: { permission: 'catalog:manage', audit: 'upsell.updated' }, schema: { tags, summary: 'Update an upsell', params: IdParams, body: UpdateUpsell, response: { 200: UpsellEnvelope } } },
    async (req) => ok(await catalog.updateUpsell(teamOf(req), req.params.id, req.body)),
  );

  // ---- coupons

  app.post(
    '/v1/coupons',
    {
      config: { permission: 'coupons:manage', audit: 'coupon.created' },
      schema: {
        tags,
        summary: 'Create a coupon',
        description:
          'Either `percent_off` or `amount_off` (with `currency`, which must be the campaign currency when a campaign is given). ' +
          'Codes are unique within the team regardless of case: a taken code answers 409.',
        body: CreateCoupon,
        response: { 201: CouponEnvelope },
      },
    },
    async (req, reply) => reply.code(201).send(ok(await catalog.createCoupon(teamOf(req), req.body))),
  );
  app.get(
    '/v1/coupons',
    { config: { permission: 'catalog:view' }, schema: { tags, summary: 'List coupons, newest first', querystring: ByCampaignListQuery, response: { 200: ListEnvelope(Coupon) } } },
    async (req) => listed(await catalog.listCoupons(teamOf(req), req.query)),
  );
  app.get(
    '/v1/coupons/:id',
    { config: { permission: 'catalog:view' }, schema: { tags, summary: 'Retrieve a coupon', params: IdParams, response: { 200: CouponEnvelope } } },
    async (req) => ok(await catalog.getCoupon(teamOf(req), req.params.id)),
  );
  app.patch(
    '/v1/coupons/:id',
    {
      config: { permission: 'coupons:manage', audit: 'coupon.updated' },
      schema: {
        tags,
        summary: 'Update a coupon',
        description: 'The code and the discount are fixed once created; `max_redemptions` cannot go below `times_redeemed`.',
        params: IdParams,
        body: UpdateCoupon,
        response: { 200: CouponEnvelope },
      },
    },
    async (req) => ok(await catalog.updateCoupon(teamOf(req), req.params.id, req.body)),
  );
}
