import { z } from 'zod';
import type { AppContext } from '../../app/context.ts';
import { Envelope, EnvelopeError, ListEnvelope, ok } from '../../app/envelope.ts';
import { type Http, principalOf, teamOf } from '../../app/http.ts';
import {
  AffiliateOut,
  AffiliateSettingsOut,
  CommissionOut,
  OrderPixelsOut,
  PostbackOut,
  PostbackWithAttemptsOut,
  ReportRowOut,
  SimulationOut,
  ThrottleDecisionOut,
  AffiliateOrdersQuery,
  AffiliateParams,
  AffiliateSettings,
  AffiliatesQuery,
  CommissionsQuery,
  CreateAffiliate,
  OrderNumberParams,
  PostbackParams,
  PostbacksQuery,
  ReportQuery,
  SimulateBody,
  ThrottleLedgerQuery,
  UpdateAffiliate,
} from './schemas.ts';
import { PLACEHOLDERS } from './render.ts';
import { AffiliateOrder } from '../orders/affiliate-view.ts';
import { postbackView } from './views.ts';

const tags = ['affiliates'];

const listed = <T>(page: { items: T[]; has_more: boolean }) => ({ success: true as const, message: 'OK', data: page.items, has_more: page.has_more });

const THROTTLE_RULE =
  'Throttling (spec 2.3) is decided once per attributed order, when its first payment is approved (the conversion), under the affiliate\'s row lock: ' +
  'an order that arrived with `is_throttle: true` is throttled (reason `requested`) and counts toward the rate; otherwise, with `automatic_throttling` on and a rate set, ' +
  'the conversion is throttled (reason `automatic`) iff (throttled_before + 1) ≤ ⌊rate × (conversions_before + 1)⌋, so the throttled share equals the rate as closely ' +
  'as whole orders allow and never exceeds it; otherwise reason `none`. `is_throttle: false` never un-throttles. Counts are per affiliate, or per campaign for a campaign ' +
  'with its own rate, since that rate was last set (changing a rate or switching automatic throttling starts the count over).';

const SCOPE_NOTE = ' An affiliate-scoped caller (the Affiliate role, an Affiliate Provider, a token with affiliate ids) sees only its affiliates and never a throttled order.';

export function registerAffiliateRoutes(app: Http, ctx: AppContext): void {
  const affiliates = ctx.services.affiliates;
  const scopeOf = (req: Parameters<typeof principalOf>[0]) => principalOf(req).affiliateIds;

  app.post(
    '/v1/affiliates',
    {
      config: { permission: 'affiliates:manage', audit: 'affiliate.created' },
      schema: {
        tags,
        summary: 'Create an affiliate',
        description:
          'The merchant chooses the `id` (409 when taken, deleted ones included). ' +
          THROTTLE_RULE +
          ` Postback URL and pixel placeholders (values URL-encoded; \`amount\` and \`commission\` in major units, e.g. 43.95): ${PLACEHOLDERS.map((p) => `\`{${p}}\``).join(', ')}. ` +
          'The postback URL must reach a public address (422 otherwise, unless WEBHOOK_ALLOW_PRIVATE_TARGETS).',
        body: CreateAffiliate,
        response: { 201: Envelope(AffiliateOut), 409: EnvelopeError },
      },
    },
    async (req, reply) => reply.code(201).send(ok(await affiliates.create(teamOf(req), req.body))),
  );
  app.get(
    '/v1/affiliates',
    { config: { permission: 'affiliates:view', affiliateScope: true }, schema: { tags, summary: 'List affiliates, newest first', description: SCOPE_NOTE.trim(), querystring: AffiliatesQuery, response: { 200: ListEnvelope(AffiliateOut) } } },
    async (req) => listed(await affiliates.list(teamOf(req), req.query, scopeOf(req))),
  );
  app.get(
    '/v1/affiliates/:id',
    { config: { permission: 'affiliates:view', affiliateScope: true }, schema: { tags, summary: 'Retrieve an affiliate', description: 'Affiliate-scoped callers do not see the throttling settings.', params: AffiliateParams, response: { 200: Envelope(AffiliateOut) } } },
    async (req) => ok(await affiliates.get(teamOf(req), req.params.id, scopeOf(req))),
  );
  app.patch(
    '/v1/affiliates/:id',
    {
      config: { permission: 'affiliates:manage', audit: 'affiliate.updated' },
      schema: { tags, summary: 'Update an affiliate', description: 'Changing a throttle rate or `automatic_throttling` starts the count over. ' + THROTTLE_RULE, params: AffiliateParams, body: UpdateAffiliate, response: { 200: Envelope(AffiliateOut) } },
    },
    async (req) => ok(await affiliates.update(teamOf(req), req.params.id, req.body)),
  );
  app.delete(
    '/v1/affiliates/:id',
    {
      config: { permission: 'affiliates:manage', audit: 'affiliate.deleted' },
      schema: { tags, summary: 'Delete an affiliate', description: 'A soft delete: new orders can no longer name it (422), its ledgers stay readable, the id is never reused.', params: AffiliateParams, response: { 200: Envelope(AffiliateOut) } },
    },
    async (req) => ok(await affiliates.remove(teamOf(req), req.params.id)),
  );

  app.get('/v1/affiliate-settings', { config: { permission: 'affiliates:view' }, schema: { tags, summary: "The team's affiliate settings", description: 'Team-wide: an affiliate-scoped caller is refused (403).', response: { 200: Envelope(AffiliateSettingsOut) } } }, async (req) => ok(await affiliates.getSettings(teamOf(req))));
  app.put(
    '/v1/affiliate-settings',
    {
      config: { permission: 'affiliates:manage', audit: 'affiliate_settings.updated' },
      schema: { tags, summary: "Change the team's affiliate settings", description: '`attribution`: `first_touch` (default) or `last_touch`; `commission_hold_days`: the default hold (30).', body: AffiliateSettings, response: { 200: Envelope(AffiliateSettingsOut) } },
    },
    async (req) => ok(await affiliates.updateSettings(teamOf(req), req.body)),
  );

  app.get(
    '/v1/affiliates/:id/throttle/ledger',
    {
      config: { permission: 'affiliates:view', affiliateScope: true },
      schema: {
        tags,
        summary: "The affiliate's throttle ledger, newest first",
        description: 'One row per conversion: the counts before it, the rate, whether automatic throttling was on, the decision and its reason (`requested`, `automatic`, `none`). Merchant only (404 for affiliate-scoped callers). ' + THROTTLE_RULE,
        params: AffiliateParams,
        querystring: ThrottleLedgerQuery,
        response: { 200: ListEnvelope(ThrottleDecisionOut) },
      },
    },
    async (req) => listed(await affiliates.throttleLedger(teamOf(req), req.params.id, req.query, scopeOf(req))),
  );
  app.post(
    '/v1/affiliates/:id/throttle/simulate',
    {
      config: { permission: 'affiliates:view', affiliateScope: true },
      schema: {
        tags,
        summary: 'Replay a period with another throttle rate (dry run)',
        description:
          "The affiliate's conversions of the period (optionally one campaign's), in the order they were decided, replayed from a zero count with `throttle_rate` and " +
          '`automatic_throttling`, each keeping whether it arrived with `is_throttle: true`. Answers the counts (and each decision with `include_decisions`) beside what actually happened. Nothing is written. Merchant only (404 for affiliate-scoped callers).',
        params: AffiliateParams,
        body: SimulateBody,
        response: { 200: Envelope(SimulationOut) },
      },
    },
    async (req) => ok(await affiliates.simulate(teamOf(req), req.params.id, req.body, scopeOf(req))),
  );

  app.get(
    '/v1/affiliate-commissions',
    {
      config: { permission: 'affiliates:view', affiliateScope: true },
      schema: {
        tags,
        summary: 'The commission ledger, newest first',
        description:
          'One row per commissioned charge (`conversion`, and with the rule\'s options `upsell` and `rebill`): `pending` until its hold ends (the affiliate\'s `hold_days`, else the team\'s), then `payable`; ' +
          '`reversed` when the charge is refunded (any amount), voided or charged back. Never for a throttled order.' +
          SCOPE_NOTE,
        querystring: CommissionsQuery,
        response: { 200: ListEnvelope(CommissionOut) },
      },
    },
    async (req) => listed(await affiliates.reads.commissions(teamOf(req), req.query, scopeOf(req))),
  );

  app.get(
    '/v1/affiliate-postbacks',
    {
      config: { permission: 'affiliates:view', affiliateScope: true },
      schema: {
        tags,
        summary: 'The postback delivery log, newest first',
        description: 'Postbacks are GETs of the rendered URL, sent by the worker with the webhooks\' retries (WEBHOOK_RETRY_SCHEDULE_MS), delivery log and SSRF guard; never for a throttled order.' + SCOPE_NOTE,
        querystring: PostbacksQuery,
        response: { 200: ListEnvelope(PostbackOut) },
      },
    },
    async (req) => listed(await affiliates.reads.postbacks(teamOf(req), req.query, scopeOf(req))),
  );
  app.get(
    '/v1/affiliate-postbacks/:id',
    { config: { permission: 'affiliates:view', affiliateScope: true }, schema: { tags, summary: 'A postback with its attempts', params: PostbackParams, response: { 200: Envelope(PostbackWithAttemptsOut) } } },
    async (req) => ok(await affiliates.reads.postback(teamOf(req), req.params.id, scopeOf(req))),
  );
  app.post(
    '/v1/affiliate-postbacks/:id/replay',
    {
      config: { permission: 'affiliates:manage', audit: 'affiliate_postback.replayed' },
      schema: { tags, summary: 'Send a postback again', description: 'Queued at once with the same URL; the attempt is logged like any other.', params: PostbackParams, response: { 202: Envelope(PostbackOut), 409: EnvelopeError } },
    },
    async (req, reply) => reply.code(202).send(ok(postbackView(await affiliates.postbacks.replay(teamOf(req), req.params.id, scopeOf(req))), 'Postback queued.')),
  );

  const AFFILIATE_ORDERS =
    'What the affiliates see of orders: only orders whose first payment was approved (no leads), never a throttled or a test order, ' +
    'and without the customer (no name, e-mail, phone or addresses), transactions or timeline. An affiliate-scoped caller sees its affiliate ids\' orders ' +
    '(GET /v1/orders, the merchant\'s view, refuses it); the merchant sees every affiliate\'s (or one, with `affiliate_id`) as they do.';
  app.get(
    '/v1/affiliate-orders',
    {
      config: { permission: 'orders:view', affiliateScope: true },
      schema: { tags, summary: "List the affiliates' orders, newest first", description: AFFILIATE_ORDERS, querystring: AffiliateOrdersQuery, response: { 200: ListEnvelope(AffiliateOrder) } },
    },
    async (req) => listed(await affiliates.affiliateOrders(teamOf(req), req.query, scopeOf(req))),
  );
  app.get(
    '/v1/affiliate-orders/:order_number',
    {
      config: { permission: 'orders:view', affiliateScope: true },
      schema: { tags, summary: "Retrieve an order as the affiliates see it", description: `${AFFILIATE_ORDERS} Any other order is 404.`, params: OrderNumberParams, response: { 200: Envelope(AffiliateOrder) } },
    },
    async (req) => ok(await affiliates.affiliateOrder(teamOf(req), req.params.order_number, scopeOf(req))),
  );

  app.get(
    '/v1/orders/:order_number/pixels',
    {
      config: { permission: 'orders:view', affiliateScope: true },
      schema: {
        tags,
        summary: "The order's affiliate pixels for the thank-you page",
        description: "The affiliate's `pixel_html` rendered with the order's values, only when the order converted, is not throttled and its affiliate is active (`fire` false and no pixels otherwise).",
        params: OrderNumberParams,
        response: { 200: Envelope(OrderPixelsOut) },
      },
    },
    async (req) => ok(await affiliates.pixels(teamOf(req), req.params.order_number, scopeOf(req))),
  );

  app.get(
    '/v1/reports/affiliates',
    {
      config: { permission: 'affiliates:view', affiliateScope: true },
      schema: {
        tags,
        summary: 'Affiliate report',
        description:
          'One row per affiliate (or per affiliate and sub id with `group_by`) and currency over the period, test orders left out, throttled orders excluded from every column but `leads`: ' +
          '`leads` (attributed orders created, throttled ones included, so that leads minus conversions does not tell which were throttled), `conversions` (first payments approved), `conversion_rate` (% of leads), `revenue` (first payments), `upsell_revenue`, `rebill_revenue`, ' +
          '`refunds` (refunded and voided amounts), `chargebacks` (count) and `chargeback_amount`, `commission` (not reversed), `epc` (commission per lead, minor units: clicks are not tracked, a lead stands for one). ' +
          'Amounts in minor units. The merchant\'s own view adds `throttled: { conversions, revenue }`.' +
          SCOPE_NOTE,
        querystring: ReportQuery,
        response: { 200: Envelope(z.array(ReportRowOut)) },
      },
    },
    async (req) => ok(await affiliates.reads.report(teamOf(req), req.query, scopeOf(req))),
  );
}
