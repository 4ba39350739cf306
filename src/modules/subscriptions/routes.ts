import type { AppContext } from '../../app/context.ts';
import { EnvelopeError, ListEnvelope, ok } from '../../app/envelope.ts';
import { type Http, teamOf } from '../../app/http.ts';
import { SubscriptionUpdates } from './manage.ts';
import { ReplacePaymentMethodBody, SubscriptionPaymentMethods } from './payment-method.ts';
import { CancelSubscriptionBody, NoFieldsBody, RebillAnswer, RebillBody, RebillRefused, Subscription, SubscriptionEnvelope, SubscriptionParams, SubscriptionsQuery, UpdateSubscriptionBody } from './schemas.ts';

const PROVIDER_FIRST =
  'An externally managed subscription (`externally_managed` true, billed by an extpay connection) is changed at the provider first; ' +
  "the answer shows the provider's membership as mirrored here. When the provider refuses, nothing changes here and the answer is 409 " +
  "`provider_rejected` carrying the provider's own message; when it cannot be reached, 502 `gateway_unavailable` (nothing changed here; " +
  'use Sync from Provider to read the outcome). Without a membership reference yet: 409 `membership_missing` (run Sync from Provider first).';

const CARD_RESTART_DATE =
  'A card subscription keeps its next billing date when it is still ahead; when it passed meanwhile, the next cycle is due at the next ' +
  "rebill hour in the team's time zone: the cycles missed are skipped, never billed after the fact. ";

export function registerSubscriptionRoutes(app: Http, ctx: AppContext): void {
  const subscriptions = ctx.services.subscriptions;
  const updates = new SubscriptionUpdates(subscriptions, ctx.services.catalog);
  const tags = ['records'];
  const action = {
    params: SubscriptionParams,
    response: { 200: SubscriptionEnvelope },
    errors: ['subscription_not_actionable', 'subscription_externally_managed', 'membership_missing', 'provider_rejected', 'gateway_unavailable', 'payment_in_progress', 'conflict', 'card_verification_declined'] as const,
  };

  app.get('/v1/subscriptions', { config: { permission: 'orders:view' }, schema: { tags, summary: 'List subscriptions, newest first', querystring: SubscriptionsQuery, response: { 200: ListEnvelope(Subscription) } } }, async (req) => {
    const page = await subscriptions.list(teamOf(req), req.query);
    return { success: true as const, message: 'OK', data: page.items, has_more: page.has_more };
  });

  app.get('/v1/subscriptions/:id', { config: { permission: 'orders:view' }, schema: { tags, summary: 'Retrieve a subscription', params: SubscriptionParams, response: { 200: SubscriptionEnvelope } } }, async (req) =>
    ok(await subscriptions.get(teamOf(req), req.params.id)),
  );

  app.patch(
    '/v1/subscriptions/:id',
    {
      config: { permission: 'subscriptions:manage', audit: 'subscription.updated' },
      schema: {
        tags,
        summary: 'Change a card subscription: next billing date, quantity, offer',
        description:
          'A card subscription (billed here) only; one billed by an external provider answers 409 `subscription_externally_managed` (the provider ' +
          'holds its plan). Refused on a `cancelled`, `completed` or `expired` subscription (409 `subscription_not_actionable`) and while a rebill of ' +
          'it is being charged (409 `payment_in_progress`, retry shortly). A date in the past, a quantity outside 1–100, or an offer that is one-time, ' +
          'inactive, of another campaign or currency: 422 naming the field. A `paused` subscription keeps a new date for its restart. ' +
          'Answers the subscription and announces `subscription.updated`.',
        body: UpdateSubscriptionBody,
        ...action,
      },
    },
    async (req) => ok(await updates.update(teamOf(req), req.params.id, req.body), 'Subscription updated.'),
  );

  const cards = new SubscriptionPaymentMethods({ ...ctx.services, store: ctx.store, clock: ctx.clock });
  app.post(
    '/v1/subscriptions/:id/payment-method',
    {
      config: { permission: 'subscriptions:manage', audit: 'subscription.payment_method_replaced' },
      schema: {
        tags,
        summary: "Replace a card subscription's card",
        description:
          'Verifies the new card at $0 and saves it in the gateway vault (NMI `validate` with `add_customer`), at the gateway that saved the old card, ' +
          "or — when that gateway is gone or inactive — the gateway the order's campaign routes to; the subscription then charges it (the answer " +
          'shows its brand, last 4 and expiry; the number is never stored) and `subscription.updated` is sent. A `past_due` subscription is retried ' +
          'now with the new card (its `retry_at` becomes now). The old card is left untouched. A declined card: 422 `card_verification_declined` ' +
          'with `decline_code`, `decline_text` and `transaction_id` in `data`, nothing saved. An externally managed subscription: 409 ' +
          '`subscription_externally_managed` (the provider holds its card); `completed` or `expired`: 409 `subscription_not_actionable`; a replacement ' +
          'still being answered: 409 `payment_in_progress`; no answer from the gateway: 502 `payment_outcome_unknown` (the subscription keeps its card). ' +
          'A gateway that demands 3-D Secure to save a card cannot do it here (no customer to redirect): 422 with `decline_code` `authentication_required`.',
        body: ReplacePaymentMethodBody,
        ...action,
      },
    },
    async (req) => ok(await cards.replaceCard(teamOf(req), req.params.id, { number: req.body.card_number, exp: req.body.card_exp, cvv: req.body.card_cvv }), 'Payment method replaced.'),
  );

  app.post(
    '/v1/subscriptions/:id/cancel',
    {
      config: { permission: 'subscriptions:manage', audit: 'subscription.canceled' },
      schema: {
        tags,
        summary: 'Cancel a subscription',
        description:
          'At once by default (`cancelled`; a card subscription records `ended_at` and `end_reason` `cancelled_by_merchant` and is never charged ' +
          'again, dunning included); with `at_period_end` true it runs until the end of the period already paid for (`cancel_at_period_end`; ' +
          'a card subscription keeps `next_billing_at` and is ended then instead of charged). A card subscription is changed here; 409 `subscription_not_actionable` when its state does not allow it. ' +
          PROVIDER_FIRST,
        body: CancelSubscriptionBody,
        ...action,
      },
    },
    async (req) => {
      const atPeriodEnd = req.body?.at_period_end ?? false;
      const s = await subscriptions.cancelSubscription(teamOf(req), req.params.id, { atPeriodEnd });
      return ok(s, atPeriodEnd ? 'Subscription set to cancel at the end of its period.' : 'Subscription cancelled.');
    },
  );

  app.post(
    '/v1/subscriptions/:id/pause',
    {
      config: { permission: 'subscriptions:manage', audit: 'subscription.paused' },
      schema: {
        tags,
        summary: 'Pause a subscription',
        description: 'Stops billing until Restart (`paused`). A card subscription must be `active` or `trialing` (else 409 `subscription_not_actionable`). ' + PROVIDER_FIRST,
        body: NoFieldsBody,
        ...action,
      },
    },
    async (req) => ok(await subscriptions.pauseSubscription(teamOf(req), req.params.id), 'Subscription paused.'),
  );

  app.post(
    '/v1/subscriptions/:id/resume',
    {
      config: { permission: 'subscriptions:manage', audit: 'subscription.resumed' },
      schema: {
        tags,
        summary: 'Restart a paused subscription',
        description: 'Paused → `active`. A card subscription that is not paused: 409 `subscription_not_actionable`. ' + CARD_RESTART_DATE + PROVIDER_FIRST,
        body: NoFieldsBody,
        ...action,
      },
    },
    async (req) => ok(await subscriptions.restartSubscription(teamOf(req), req.params.id), 'Subscription restarted.'),
  );

  app.post(
    '/v1/subscriptions/:id/reactivate',
    {
      config: { permission: 'subscriptions:manage', audit: 'subscription.reactivated' },
      schema: {
        tags,
        summary: 'Reactivate a cancelled subscription',
        description:
          '`cancelled` or `cancel_at_period_end` → `active`. ' +
          CARD_RESTART_DATE +
          'For an externally managed subscription this un-cancels the membership at the ' +
          'provider, which accepts only a membership still set to cancel at period end (an ended one is refused: 409 `provider_rejected`). ' +
          PROVIDER_FIRST,
        body: NoFieldsBody,
        ...action,
      },
    },
    async (req) => ok(await subscriptions.reactivateSubscription(teamOf(req), req.params.id), 'Subscription reactivated.'),
  );

  app.post(
    '/v1/subscriptions/:id/sync',
    {
      config: { permission: 'subscriptions:manage', audit: 'subscription.synced' },
      schema: {
        tags,
        summary: 'Sync from Provider',
        description:
          "Reads the provider's membership again and mirrors its status and next billing date (e.g. after a missed webhook). A subscription " +
          'without a membership reference recovers it from the order\'s first payment at the provider; 409 `membership_missing` when the ' +
          'provider has no membership for it yet. Only externally managed subscriptions can be synced (else 409 `subscription_not_actionable`). ' +
          "A provider that refuses: 409 `provider_rejected` with its message; one that cannot be reached: 502 `gateway_unavailable`.",
        body: NoFieldsBody,
        ...action,
      },
    },
    async (req) => ok(await subscriptions.syncFromProvider(teamOf(req), req.params.id), 'Subscription synced from the provider.'),
  );

  app.post(
    '/v1/subscriptions/:id/rebill',
    {
      config: { permission: 'subscriptions:manage', audit: 'subscription.rebilled' },
      schema: {
        tags,
        summary: 'Rebill Now',
        description:
          "Charges a card subscription's next cycle now on its saved card (merchant-initiated: no redirect, no 3-D Secure, chained to the " +
          'original payment), as a new rebill order (`rebill_of`, `subscription_id`); a past-due subscription retries its failing cycle. ' +
          'The schedule does not move: later cycles stay on their days. Send `cycle` (the number of the cycle you mean to bill) to make a ' +
          'repeat safe: a cycle already paid answers 409 `conflict`; one being charged 409 `payment_in_progress`. 200 charged; 402 ' +
          '`payment_declined` (with `decline_code`; dunning goes on as for the nightly queue); 502 `payment_outcome_unknown` (do not repeat: ' +
          'it is confirmed with the gateway). An externally managed subscription is billed by its provider: 409 `subscription_externally_managed`, ' +
          '"Subscription is managed by a third party and cannot be billed manually." (spec 4.5). Paused or ended: 409 `subscription_not_actionable`.',
        params: SubscriptionParams,
        body: RebillBody,
        errors: ['conflict', 'payment_in_progress', 'subscription_externally_managed', 'subscription_not_actionable', 'gateway_unavailable'],
        response: { 200: RebillAnswer, 402: RebillRefused, 502: RebillRefused.or(EnvelopeError) },
      },
    },
    async (req, reply) => {
      const r = await ctx.services.checkout.rebill.rebillNow(teamOf(req), req.params.id, req.body?.cycle);
      return reply.code(r.httpStatus as 200).send(r.body as never);
    },
  );
}
