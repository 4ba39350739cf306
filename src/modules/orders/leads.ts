/*
 * Create Lead, apart from the orders service's other writes: a new lead in one statement (the
 * customer's upsert, the order, its lines and its timeline row: repo.insertNewLeadQuery), or the
 * same order number / the open lead of the same email and campaign updated under its lock.
 */
import { ApiError, invalid, notFound } from '../../app/errors.ts';
import { newId } from '../../app/ids.ts';
import type { Executor, Store, Tx } from '../../db/database.ts';
import type { Row } from '../../db/schema.ts';
import type { AffiliatesService } from '../affiliates/service.ts';
import type { CatalogService } from '../catalog/service.ts';
import type { CustomersService } from '../customers/service.ts';
import { discountOf, type LineDraft, totalsOf } from './pricing.ts';
import * as repo from './repo.ts';
import type { CreateLeadBody } from './schemas.ts';
import { orderView, type OrderView } from './views.ts';

/** What Create Lead needs of the orders service and the modules around it. */
export interface LeadDeps {
  store: Store;
  catalog: CatalogService;
  customers: CustomersService;
  affiliates: AffiliatesService;
  priceLines(db: Executor, teamId: string, campaignId: string, products: Array<{ offer_id: string; quantity: number }>): Promise<LineDraft[]>;
  usableCoupon(db: Executor, teamId: string, code: string, order: { campaign_id: string; currency: string }): Promise<Row<'coupons'>>;
  /** An existing lead, locked by this transaction, updated with the request's fields (a `lead.updated` row), and its view. */
  updateLead(trx: Tx, teamId: string, order: Row<'orders'>, body: CreateLeadBody): Promise<OrderView>;
}

/**
 * Create Lead: 201 with a new order number for a new email + campaign; 200 when the same
 * order number, or an open lead of the same email + campaign, is posted again.
 */
export async function createLead(deps: LeadDeps, teamId: string, body: CreateLeadBody): Promise<{ created: boolean; order: OrderView }> {
  if (body.order_number) {
    const orderNumber = body.order_number;
    return deps.store.transaction(async (trx) => {
      const order = await repo.findOrder(trx, teamId, orderNumber, { forUpdate: true });
      if (!order) throw notFound('Order');
      if (order.status !== 'lead') throw new ApiError('order_not_a_lead', `Order ${order.id} is ${order.status}, no longer a lead.`);
      if (body.campaign_id && body.campaign_id !== order.campaign_id) throw invalid('campaign_id', 'does not match the order');
      return { created: false, order: await deps.updateLead(trx, teamId, order, body) };
    });
  }

  // What the new lead is made of: configuration (cached per team) and the request, read before
  // anything is written.
  const campaign = await deps.store.run((db) => deps.catalog.findCampaign(db, teamId, body.campaign_id!));
  if (!campaign) throw notFound('Campaign');
  const drafts = body.products ? await deps.store.run((db) => deps.priceLines(db, teamId, campaign.id, body.products!)) : [];
  const coupon = body.coupon_code ? await deps.store.run((db) => deps.usableCoupon(db, teamId, body.coupon_code!, { campaign_id: campaign.id, currency: campaign.currency })) : null;
  const attributed = await deps.store.run((db) => deps.affiliates.attribution(db, teamId, null, body.affiliate));
  const row = {
    team_id: teamId,
    campaign_id: campaign.id,
    status: 'lead' as const,
    currency: campaign.currency,
    phone: body.phone ?? null,
    shipping_address: body.shipping_address ? JSON.stringify(body.shipping_address) : null,
    ip_address: body.customer?.ip_address ?? null,
    is_throttle: body.is_throttle === true,
    coupon_id: coupon?.id ?? null,
    ...attributed,
    ...totalsOf(drafts, coupon ? discountOf(coupon, drafts) : 0),
  };
  // Twice at most: an open lead found by the insert may be paid (no longer a lead) before it is
  // locked below; the second insert then makes the new lead.
  for (let attempt = 0; attempt < 2; attempt++) {
    const orderId = newId('order');
    const inserted = await deps.store.run(async (db) => {
      const customer = deps.customers.newRow(teamId, { email: body.customer!.email!, first_name: body.customer?.first_name, last_name: body.customer?.last_name, phone: body.phone });
      const event = { id: newId('orderEvent'), type: 'lead.created', data: { campaign_id: campaign.id, is_throttled: row.is_throttle } };
      // One row whatever happens: the customer's upsert always answers its row.
      return (await db.executeQuery(repo.insertNewLeadQuery(db, deps.customers.upsertRowQuery, customer, { ...row, id: orderId }, drafts, event))).rows[0]!;
    });
    const { customer_row: customerJson, ...order } = inserted;
    const customer = deps.customers.fromJson(customerJson);
    // The new lead's view from the rows in hand: the order and customer as written, the lines as priced.
    if (order.id !== null) return { created: true, order: orderView(order as Row<'orders'>, customer, drafts) };
    const updated = await deps.store.transaction(async (trx) => {
      const existing = await repo.findOpenLead(trx, teamId, campaign.id, customer.id);
      return existing ? deps.updateLead(trx, teamId, existing, body) : null;
    });
    if (updated) return { created: false, order: updated };
  }
  throw new ApiError('conflict', 'The lead changed while it was being updated; retry.');
}
